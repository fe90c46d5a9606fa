"""A deliberately naive Kaplan–Meier percentile, written from the textbook definition with plain loops: the
independent reference the tests compare the vectorised :mod:`toolkit.metrics.survival` against."""

from __future__ import annotations

import math
from collections.abc import Sequence


def km_percentile(durations: Sequence[float], censored: Sequence[bool], q: float, *, rule: bool = True) -> float:
    """Percentile ``q`` of the product-limit estimate: the first event time where survival is at most ``1 - q``, the
    midpoint to the next event time where it equals ``1 - q`` (the lower end when no event follows); NaN when the
    curve never gets there. With ``rule``, a percentile no open observation can change (every censored one lasted
    at least as long as the event times it rests on) is always kept; any other is NaN when there are fewer than
    ``ceil(1 / (1 - q))`` observations, or when fewer than ``max(2, ceil(n (1 - q) / 2))`` observations are still
    at risk at the event time it is read at, or fewer than 10 once one was censored before it (the at-risk rule of
    docs/metrics.md), or where the curve stays at exactly ``1 - q`` from it to the end (no event after it: the
    percentile is anywhere from there on)."""
    times = sorted(set(float(t) for t, c in zip(durations, censored, strict=True) if not c))
    surv, curve = 1.0, []
    target = 1 - q
    for t in times:
        at_risk = sum(1 for d in durations if d >= t)  # censored at t are still at risk at t: events first
        died = sum(1 for d, c in zip(durations, censored, strict=True) if d == t and not c)
        surv *= 1 - died / at_risk
        curve.append((t, surv))
    for i, (t, s) in enumerate(curve):
        if abs(s - target) <= 1e-9 or s < target:
            if abs(s - target) <= 1e-9 and i + 1 == len(curve):
                # flat at exactly 1 - q to the end: somewhere from t on (censored later), no value under the rules
                return math.nan if rule else t
            value, rests_on = ((t + curve[i + 1][0]) / 2, curve[i + 1][0]) if abs(s - target) <= 1e-9 else (t, t)
            if not rule or all(d >= rests_on for d, c in zip(durations, censored, strict=True) if c):
                return value  # final: nothing still open can move it
            if len(durations) < math.ceil(round(1 / (1 - q), 9)):
                return math.nan
            at_risk = sum(1 for d in durations if d >= t)
            need = max(2, math.ceil(round(len(durations) * (1 - q) / 2, 9)))
            if any(c and d < t for d, c in zip(durations, censored, strict=True)):
                need = max(need, 10)  # censored before the percentile: at least 10 still at risk
            return math.nan if at_risk < need else value
    return math.nan
