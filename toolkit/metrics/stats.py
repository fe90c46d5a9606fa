"""Statistics of the metrics: binomial intervals and the SQL of percentiles."""

from __future__ import annotations

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
        low = np.where(n > 0, np.clip(center - half, 0, 1), np.nan)
        high = np.where(n > 0, np.clip(center + half, 0, 1), np.nan)
    return low, high


def quantiles(expr: str, name: str, probs: Sequence[float] = (0.5, 0.9)) -> tuple[str, list[str]]:
    """An aggregate computing several quantiles of ``expr`` at once (``_q_<name>``, a list), and the outer-query
    columns ``<name>_p50_s``, ... that pick them out."""
    probs_sql = ", ".join(repr(float(p)) for p in probs)
    outer = [f"_q_{name}[{i + 1}] AS {name}_p{round(p * 100)}_s" for i, p in enumerate(probs)]
    return f"quantile_cont({expr}, [{probs_sql}]) AS _q_{name}", outer


def with_quantiles(inner: str, keep: Sequence[str], outer: Sequence[str]) -> str:
    """Wrap an aggregate query: keep the columns ``keep`` and spread its quantile lists into plain columns."""
    return f"SELECT {', '.join([*keep, *outer])} FROM ({inner}) AS inner_q"


def rates(df: pd.DataFrame, counts: Sequence[str], total: str, names: Sequence[str]) -> pd.DataFrame:
    """Add ``<name>`` = count / total with its Wilson 95% interval ``<name>_low``/``<name>_high`` per count."""
    n = df[total].to_numpy(dtype=float)
    for count, name in zip(counts, names, strict=True):
        k = df[count].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            df[name] = np.where(n > 0, k / n, np.nan)
        df[f"{name}_low"], df[f"{name}_high"] = wilson_interval(k, n)
    return df
