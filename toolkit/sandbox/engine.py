"""The scheduler: a heap of timed backend transitions that run, in time order, when the clock passes them."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any


class Engine:
    """Runs scheduled callbacks in (time, insertion) order. ``now`` is the time of the step being run."""

    def __init__(self, now: int) -> None:
        self.now = int(now)
        self._heap: list[tuple[int, int, Callable[..., Any], tuple]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._heap)

    def schedule(self, at: float, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` once the clock reaches ``at`` (never earlier than the current step). Fractional times
        round up: a step due half a second from now waits for the clock to move, never runs before its time."""
        self._seq += 1
        heapq.heappush(self._heap, (max(math.ceil(at), self.now), self._seq, fn, args))

    def run_until(self, until: int) -> int:
        """Run every step due at or before ``until``; afterwards ``now == max(now, until)``. Answers steps run."""
        heap, ran = self._heap, 0
        while heap and heap[0][0] <= until:
            at, _, fn, args = heapq.heappop(heap)
            self.now = max(self.now, at)
            fn(*args)
            ran += 1
        self.now = max(self.now, int(until))
        return ran

    def next_due(self) -> int | None:
        """The time of the next scheduled step, or ``None``."""
        return self._heap[0][0] if self._heap else None
