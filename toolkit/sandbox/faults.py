"""Fault injection for the /v1 API: 500s, 429s (``Retry-After`` only when asked), slow, truncated, dropped and
malformed answers.

Every decision comes from one seeded RNG, so a run with the same seed and request sequence sees the same faults.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum


class Fault(Enum):
    """What to do to one request."""

    DROP = "drop"
    RATE_LIMIT = "rate_limit"
    FAIL = "fail"
    SLOW = "slow"
    TRUNCATE = "truncate"
    MALFORMED = "malformed"


@dataclass(frozen=True)
class FaultConfig:
    """Rates are probabilities per request; ``rate_limit`` is requests per second per API key (None = off);
    ``limit_rate`` answers a 429 at random, as a limit shared with other clients would, whatever this client's pace
    (tests that must see 429s on a machine of any speed use it; ``rate_limit`` depends on how fast requests come).

    A 429 carries no ``Retry-After``, as the service's does not (WIRE.md section 4); ``retry_after`` (seconds) adds
    one, to exercise a client's header path."""

    fail_rate: float = 0.0
    rate_limit: float | None = None
    limit_rate: float = 0.0
    retry_after: float | None = None
    slow_rate: float = 0.0
    slow_seconds: float = 5.0
    truncate_rate: float = 0.0
    drop_rate: float = 0.0
    malformed_rate: float = 0.0

    def __post_init__(self) -> None:
        if self.rate_limit is not None and not self.rate_limit > 0:
            raise ValueError(f"rate_limit must be a positive number of requests per second, not {self.rate_limit!r}")
        if self.retry_after is not None and not self.retry_after >= 0:
            raise ValueError(f"rate_limit_retry_after must be 0 or more seconds, not {self.retry_after!r}")

    @property
    def active(self) -> bool:
        """Whether any fault can happen."""
        rates = (
            self.fail_rate,
            self.limit_rate,
            self.slow_rate,
            self.truncate_rate,
            self.drop_rate,
            self.malformed_rate,
        )
        return self.rate_limit is not None or any(r > 0 for r in rates)


class _Bucket:
    """A token bucket: ``rate`` tokens per second, burst of ``max(1, rate)``."""

    def __init__(self, rate: float, now: float) -> None:
        self.rate = rate
        self.capacity = max(1.0, rate)
        self.tokens = self.capacity
        self.stamp = now

    def take(self, now: float) -> bool:
        """Refill for the time passed, then take one token if there is one."""
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class FaultInjector:
    """Decides, per request, which fault (if any) applies."""

    def __init__(self, config: FaultConfig, seed: int, wall: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._rng = random.Random(f"{seed}:faults")
        self._wall = wall
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def pick(self, authorization: str | None) -> Fault | None:
        """The fault for one request carrying this ``Authorization`` value (only a digest of it is kept)."""
        c = self.config
        if not c.active:
            return None
        with self._lock:
            if c.rate_limit is not None:
                who = hashlib.sha256((authorization or "").encode()).hexdigest()
                bucket = self._buckets.setdefault(who, _Bucket(c.rate_limit, self._wall()))
                if not bucket.take(self._wall()):
                    return Fault.RATE_LIMIT
            roll = self._rng.random()
            for fault, rate in (
                (Fault.DROP, c.drop_rate),
                (Fault.FAIL, c.fail_rate),
                (Fault.RATE_LIMIT, c.limit_rate),
                (Fault.TRUNCATE, c.truncate_rate),
                (Fault.MALFORMED, c.malformed_rate),
                (Fault.SLOW, c.slow_rate),
            ):
                if roll < rate:
                    return fault
                roll -= rate
            return None

    def truncate_at(self, size: int) -> int:
        """How many bytes of a ``size``-byte body to send before closing."""
        with self._lock:
            return self._rng.randrange(0, max(size, 1))
