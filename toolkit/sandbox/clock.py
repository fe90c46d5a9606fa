"""The sandbox's simulated clock: frozen (moved only by :meth:`SimClock.advance`) or following wall time × speed."""

from __future__ import annotations

import time
from collections.abc import Callable


class SimClock:
    """Simulated unix seconds.

    With ``speed == 0`` the clock is frozen and only :meth:`advance` moves it. With ``speed > 0`` it also follows
    the wall clock, ``speed`` simulated seconds per wall second, from the moment of construction.
    """

    def __init__(self, start: int, speed: float = 0.0, wall: Callable[[], float] = time.monotonic) -> None:
        if speed < 0:
            raise ValueError("speed must be >= 0")
        self._start = int(start)
        self._speed = float(speed)
        self._wall = wall
        self._wall0 = wall()
        self._offset = 0

    @property
    def speed(self) -> float:
        """Simulated seconds per wall second (0 = frozen)."""
        return self._speed

    @property
    def now(self) -> int:
        """Current simulated unix seconds."""
        live = int((self._wall() - self._wall0) * self._speed) if self._speed else 0
        return self._start + self._offset + live

    def advance(self, seconds: int) -> int:
        """Move the clock forward by ``seconds`` (>= 0) and answer the new time."""
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        self._offset += int(seconds)
        return self.now
