"""Retry policy, in one place: which failures are transient and how long to wait before the next attempt.

429, 5xx, timeouts and transport errors (dropped connections, truncated or malformed bodies) are retried with
exponential backoff and full jitter; a ``Retry-After`` header is honoured (never below :attr:`RetryPolicy.floor`);
attempts are bounded and so is the overall time. Every other 4xx is final. Built on tenacity.
"""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from typing import Any

import tenacity

from ..errors import ChainopsError


@dataclass(frozen=True)
class RetryPolicy:
    """How a request is retried. ``attempts=1`` disables retries."""

    attempts: int = 6
    deadline: float = 120.0
    initial: float = 0.25
    maximum: float = 20.0
    floor: float = 0.05


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the request that raised ``exc`` may succeed."""
    return isinstance(exc, ChainopsError) and bool(getattr(exc, "transient", False))


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date), or ``None``."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class _Wait(tenacity.wait.wait_base):
    """Exponential backoff with full jitter, replaced by the server's ``Retry-After`` when it sends one."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.backoff = tenacity.wait_random_exponential(multiplier=policy.initial, max=policy.maximum)

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        hinted = getattr(exc, "retry_after", None)
        if hinted is not None:
            return max(self.policy.floor, min(float(hinted), self.policy.maximum))
        return max(self.policy.floor, self.backoff(retry_state))


def retrying(policy: RetryPolicy, *, sleep: Any = time.sleep) -> tenacity.Retrying:
    """A tenacity controller for one request under ``policy``; the last error is re-raised as it is."""
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        wait=_Wait(policy),
        stop=tenacity.stop_after_attempt(policy.attempts) | tenacity.stop_after_delay(policy.deadline),
        reraise=True,
        sleep=sleep,
    )
