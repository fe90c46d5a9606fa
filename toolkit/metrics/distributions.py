"""Distributions as counts: the time in each status and the finality times, one row per distinct duration with how
many observations had it, aggregated in the warehouse; and box-plot statistics computed from such counts.

:func:`~.latency.status_durations` and :func:`~.finality.finality_times` return one row per transition or per
operation: millions of rows over a busy organisation's history. The figures need only the distribution, so they
read these counts instead (as many rows as distinct durations: whole seconds in a week make a few thousand), and
:func:`box_stats` gives exactly the statistics ``matplotlib.cbook.boxplot_stats`` computes from the raw values
(the same quartiles by linear interpolation, whiskers at the most extreme value within 1.5 IQR of the box, the same
floating-point operations), so a box drawn from the counts with ``Axes.bxp`` is the box ``Axes.boxplot`` draws from
the raw values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .common import (
    NO_FILTERS,
    Filters,
    WarehouseLike,
    run,
    sort_rows,
    status_categorical,
    takes_filters,
)
from .coverage import clip_to_coverage, coverage_of
from .finality import FINALITY_TIMES
from .latency import _created_in_window

#: The columns of :func:`status_duration_counts` and :func:`finality_time_counts`.
STATUS_DURATION_COUNT_COLUMNS = ("network", "status", "seconds", "count")
FINALITY_TIME_COUNT_COLUMNS = ("network", "time", "seconds", "count")


def _as_held_as(companion: str, warehouse: WarehouseLike, where: Filters) -> None:
    """Raise :class:`~.coverage.NotHeldError` where ``companion`` (the row-per-observation function whose counts
    these are) would: the event type it needs is not held (the period was clipped by the decorator already)."""
    clip_to_coverage(companion, where, coverage_of(warehouse))


@takes_filters("channel", "network", "status", "since", "until")
def status_duration_counts(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
) -> pd.DataFrame:
    """The seconds-in-status of :func:`~.latency.status_durations` as counts: one row per network, status and
    distinct ``seconds``, with ``count`` the transitions that lasted that long (the same transitions, the same
    filters on ``entered_at``).

    Arguments: the common filters. Returns the DataFrame (``status`` an ordered categorical; rows by network,
    status, seconds). Feed it to :func:`toolkit.presentation.figures.latency_by_status`, or to :func:`box_stats` per
    group.
    """
    _as_held_as("status_durations", warehouse, where)
    q = where.sql("entered_at", status_column="status")
    _created_in_window(q, where)
    q.clauses.append("seconds_in_status IS NOT NULL")
    sql = f"""
        SELECT network, status, seconds_in_status AS seconds, count(*) AS count
        FROM operation_transitions {q.where()}
        GROUP BY network, status, seconds_in_status
    """
    df = run(warehouse, sql, q.params)
    df["status"] = status_categorical(df["status"])
    df["count"] = df["count"].astype("int64")
    return sort_rows(df, ["network", "status", "seconds"])


@takes_filters("channel", "network", "since", "until")
def finality_time_counts(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
) -> pd.DataFrame:
    """The finality times of :func:`~.finality.finality_times` as counts: one row per network, ``time`` (a name of
    :data:`~.finality.FINALITY_TIMES`: ``to_latest``, ``to_safe``, ...) and distinct ``seconds``, with ``count``
    the operations that took that long (the same operations, the same filters on ``created_at``; a time whose
    stage event is missing is not counted, as it is NaN there).

    Arguments: the common filters. Returns the DataFrame (rows by network, time in the order of
    :data:`~.finality.FINALITY_TIMES`, seconds). Feed it to :func:`toolkit.presentation.figures.finality_stage_times`.
    """
    _as_held_as("finality_times", warehouse, where)
    q = where.sql("created_at")
    q.clauses.append("coalesce(confirmed_latest_at, confirmed_safe_at, confirmed_at) IS NOT NULL")
    times = ", ".join(f"epoch({end}) - epoch({start}) AS {name}" for name, (end, start) in FINALITY_TIMES.items())
    parts = " UNION ALL ".join(
        f"""SELECT network, '{name}' AS time, {name} AS seconds, count(*) AS count
            FROM base WHERE {name} IS NOT NULL GROUP BY network, {name}"""
        for name in FINALITY_TIMES
    )
    sql = f"WITH base AS (SELECT network, {times} FROM operation_lifecycle {q.where()}) {parts}"
    df = run(warehouse, sql, q.params)
    df["time"] = pd.Categorical(df["time"], categories=list(FINALITY_TIMES), ordered=True)
    df["count"] = df["count"].astype("int64")
    return sort_rows(df, ["network", "time", "seconds"])


# ---- box statistics from counts ----------------------------------------------------------------------------------


def _percentile(values: np.ndarray, cumulative: np.ndarray, n: int, q: float) -> float:
    """numpy's ``percentile(x, 100 * q)`` (method ``linear``) of the ``n`` values where ``values[i]`` (ascending)
    occurs until the cumulative count ``cumulative[i]``: the same index, weight and interpolation, in the same
    floating-point operations (``numpy.lib._function_base_impl._quantile`` and ``_lerp``)."""
    virtual = (n - 1) * q
    if virtual >= n - 1:  # numpy takes the last value (both neighbours are index -1)
        return float(values[-1])
    previous = np.floor(virtual)
    gamma = virtual - previous
    below = values[np.searchsorted(cumulative, int(previous), side="right")]
    above = values[np.searchsorted(cumulative, int(previous) + 1, side="right")]
    diff = above - below
    if gamma >= 0.5:
        return float(above - diff * (1 - gamma))
    return float(below + diff * gamma)


def box_stats(values: Sequence[float] | np.ndarray, counts: Sequence[int] | np.ndarray, *, whis: float = 1.5) -> dict:
    """The statistics ``matplotlib.cbook.boxplot_stats`` gives for the data where ``values[i]`` occurs
    ``counts[i]`` times, computed from the counts alone, for ``Axes.bxp``.

    The quartiles and median are numpy's linear-interpolation percentiles of the expanded data, bit for bit; the
    whiskers reach the most extreme value within ``whis`` IQR of the box (never inside it), the notch bounds are
    ``med ± 1.57 IQR / √n``; ``mean`` is the weighted mean (equal to numpy's mean up to rounding). ``fliers`` is
    empty: draw with ``showfliers=False``. Values need not be sorted or distinct; counts of 0 are ignored.

    Arguments: ``values`` (no NaN), ``counts``, ``whis``. Returns the dict (``mean``, ``iqr``, ``cilo``, ``cihi``,
    ``whishi``, ``whislo``, ``fliers``, ``q1``, ``med``, ``q3``); NaN statistics when there is no value.
    """
    v = np.asarray(values, dtype=float)
    c = np.asarray(counts, dtype=np.int64)
    keep = c > 0
    v, c = v[keep], c[keep]
    if not len(v):
        return {
            "fliers": np.array([]),
            **dict.fromkeys(("mean", "med", "q1", "q3", "iqr", "cilo", "cihi", "whislo", "whishi"), np.nan),
        }
    order = np.argsort(v, kind="stable")
    v, c = v[order], c[order]
    cumulative = np.cumsum(c)
    n = int(cumulative[-1])
    q1, med, q3 = (_percentile(v, cumulative, n, q) for q in (0.25, 0.5, 0.75))
    iqr = q3 - q1
    loval, hival = q1 - whis * iqr, q3 + whis * iqr
    inside_high = np.searchsorted(v, hival, side="right")  # values <= hival are v[:inside_high]
    whishi = q3 if inside_high == 0 or v[inside_high - 1] < q3 else float(v[inside_high - 1])
    inside_low = np.searchsorted(v, loval, side="left")  # values >= loval are v[inside_low:]
    whislo = q1 if inside_low == len(v) or v[inside_low] > q1 else float(v[inside_low])
    return {
        "mean": float(np.dot(v, c) / n),
        "iqr": iqr,
        "cilo": med - 1.57 * iqr / np.sqrt(n),
        "cihi": med + 1.57 * iqr / np.sqrt(n),
        "whishi": whishi,
        "whislo": whislo,
        "fliers": np.array([]),
        "q1": q1,
        "med": med,
        "q3": q3,
    }


def grouped_box_stats(
    counts: pd.DataFrame,
    keys: Sequence[str],
    *,
    value: str = "seconds",
    count: str = "count",
    lower: float | None = None,
    whis: float = 1.5,
) -> dict[tuple[Any, ...], dict]:
    """:func:`box_stats` of every group of ``keys`` in a table of counts (such as :func:`status_duration_counts`).

    Arguments: ``counts`` with the ``keys``, ``value`` and ``count`` columns (rows with a missing value are left
    out); ``lower`` clips the values from below first, as a plot on a log scale does (``Series.clip(lower=)``);
    ``whis``. Returns ``{group key tuple: stats}`` for the groups with at least one value.
    """
    data = counts.dropna(subset=[value])
    data = data[data[count] > 0]
    out: dict[tuple[Any, ...], dict] = {}
    for key, part in data.groupby(list(keys), observed=True, sort=False, dropna=False):
        values = part[value].to_numpy(dtype=float)
        if lower is not None:
            values = np.maximum(values, lower)
        out[key if isinstance(key, tuple) else (key,)] = box_stats(values, part[count].to_numpy(), whis=whis)
    return out


def value_counts(df: pd.DataFrame, keys: Sequence[str], value: str, *, count: str = "count") -> pd.DataFrame:
    """Raw observations (one row each) as counts: one row per group of ``keys`` and distinct ``value`` with
    ``count`` the rows that had it; a table that has a ``count`` column already is returned as it is.

    Arguments: ``df``, ``keys``, ``value``, ``count`` the name of the counts' column. Returns the counts (rows
    with a missing ``value`` left out).
    """
    if count in df.columns:
        return df
    data = df.dropna(subset=[value])
    grouped = data.groupby([*keys, value], observed=True, sort=False, dropna=False).size()
    return grouped.rename(count).reset_index()


__all__ = [
    "FINALITY_TIME_COUNT_COLUMNS",
    "STATUS_DURATION_COUNT_COLUMNS",
    "box_stats",
    "finality_time_counts",
    "grouped_box_stats",
    "status_duration_counts",
    "value_counts",
]
