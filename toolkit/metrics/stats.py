"""Statistics of the metrics: binomial intervals (Wilson, Newcombe), the two-proportion test, and the median of a
count of independent chances."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

#: z of a two-sided 95% interval.
Z95 = 1.959963984540054


def wilson_interval(successes: Any, trials: Any, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion (95% by default), vectorised.

    Arguments: ``successes`` and ``trials`` (scalars or arrays), ``z``. Returns ``(low, high)`` arrays; NaN where
    ``trials`` is 0.
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1 + z * z / n
        center = (p + z * z / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
        # at p = 0 (or 1) the bound is 0 (or 1) exactly; rounding would leave it a hair inside
        low = np.where(n > 0, np.where(p <= 0, 0.0, np.clip(center - half, 0, 1)), np.nan)
        high = np.where(n > 0, np.where(p >= 1, 1.0, np.clip(center + half, 0, 1)), np.nan)
    return low, high


def count_median(chances: Any) -> int:
    """The median of the number of independent events with probabilities ``chances`` (a Poisson-binomial
    distribution): the smallest count ``m`` with ``P(count <= m) >= 1/2``.

    The single guess of a count that is off by the least in expectation (the mean is the guess of least squared
    error). Arguments: ``chances`` (each in [0, 1]). Returns the count.
    """
    p = np.asarray(chances, dtype=float)
    certain = int((p >= 1).sum())
    p = p[(p > 0) & (p < 1)]
    if not len(p):
        return certain
    mean, sd = float(p.sum()), math.sqrt(float((p * (1 - p)).sum()))
    # the distribution up to far past its median; what lies beyond stays in the last cell
    size = min(len(p), math.ceil(mean + 8 * sd + 8)) + 1
    pmf = np.zeros(size)
    pmf[0] = 1.0
    for q in p:
        moved = pmf * q
        pmf = pmf - moved
        pmf[1:] += moved[:-1]
        pmf[-1] += moved[-1]
    # a hair under one half: a median exactly between two counts (one chance of 1/2) is the lower one, not rounding
    return certain + int(np.searchsorted(np.cumsum(pmf), 0.5 - 1e-12))


def rates(df: pd.DataFrame, counts: Sequence[str], total: str, names: Sequence[str]) -> pd.DataFrame:
    """Add ``<name>`` = count / total with its Wilson 95% interval ``<name>_low``/``<name>_high`` per count."""
    n = df[total].to_numpy(dtype=float)
    for count, name in zip(counts, names, strict=True):
        k = df[count].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            df[name] = np.where(n > 0, k / n, np.nan)
        df[f"{name}_low"], df[f"{name}_high"] = wilson_interval(k, n)
    return df


def newcombe_interval(k1: Any, n1: Any, k2: Any, n2: Any, z: float = Z95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval (Newcombe 1998, method 10) of the difference ``k1/n1 - k2/n2``, vectorised.

    Built on the Wilson score intervals ``[l1, u1]`` and ``[l2, u2]`` of each proportion (no continuity
    correction): ``low = d - sqrt((p1 - l1)² + (u2 - p2)²)`` and ``high = d + sqrt((u1 - p1)² + (p2 - l2)²)``.

    Arguments: successes and trials of each proportion (scalars or arrays), ``z`` (95% by default). Returns
    ``(difference, low, high)`` arrays; NaN where either trial count is 0.
    """
    k1, n1, k2, n2 = (np.asarray(v, dtype=float) for v in (k1, n1, k2, n2))
    l1, u1 = wilson_interval(k1, n1, z)
    l2, u2 = wilson_interval(k2, n2, z)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff, low, high = difference_interval(k1 / n1, l1, u1, k2 / n2, l2, u2)
    ok = (n1 > 0) & (n2 > 0)
    return np.where(ok, diff, np.nan), np.where(ok, low, np.nan), np.where(ok, high, np.nan)


def difference_interval(
    p1: Any, low1: Any, high1: Any, p2: Any, low2: Any, high2: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The interval of ``p1 - p2`` recovered from an interval of each (Newcombe's square-and-add, the "MOVER"
    construction): ``low = d - sqrt((p1 - low1)² + (high2 - p2)²)``, ``high = d + sqrt((high1 - p1)² + (p2 -
    low2)²)``. With Wilson intervals of plain proportions this is :func:`newcombe_interval`; it also takes the
    metrics' in-flight intervals. Returns ``(difference, low, high)`` arrays (NaN propagates).
    """
    p1, low1, high1, p2, low2, high2 = (np.asarray(v, dtype=float) for v in (p1, low1, high1, p2, low2, high2))
    diff = p1 - p2
    low = diff - np.sqrt((p1 - low1) ** 2 + (high2 - p2) ** 2)
    high = diff + np.sqrt((high1 - p1) ** 2 + (p2 - low2) ** 2)
    return diff, low, high


def two_proportion_p(k1: Any, n1: Any, k2: Any, n2: Any) -> np.ndarray:
    """Two-sided p-value of the pooled two-proportion z-test of ``k1/n1 = k2/n2``, vectorised.

    ``z = (p1 - p2) / sqrt(p(1 - p)(1/n1 + 1/n2))`` with the pooled ``p = (k1 + k2) / (n1 + n2)``, and
    ``p-value = erfc(|z| / √2)``. Equal proportions with no variance (both 0 or both 1) give 1. Returns an array;
    NaN where either trial count is 0.
    """
    k1, n1, k2, n2 = (np.asarray(v, dtype=float) for v in (k1, n1, k2, n2))
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = (k1 + k2) / (n1 + n2)
        se = np.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
        diff = k1 / n1 - k2 / n2
        z = np.where(se > 0, np.abs(diff) / se, 0.0)
        p = np.vectorize(math.erfc, otypes=[float])(z / math.sqrt(2))
    ok = (n1 > 0) & (n2 > 0)
    return np.where(ok, p, np.nan)
