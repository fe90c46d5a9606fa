"""Metrics: SQL over the warehouse's modelled views, returned as pandas DataFrames.

Every function takes the warehouse (a :class:`~toolkit.warehouse.Warehouse` or a path), optional filters and a
grouping, and returns a DataFrame with tz-aware UTC times and statuses as an ordered categorical in lifecycle order.
Filter values are bound as SQL parameters, never pasted into the SQL text.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import pandas as pd

from . import spec
from .config import Settings
from .warehouse import Warehouse

TimeLike = datetime | str | pd.Timestamp | None
WarehouseLike = Warehouse | str | os.PathLike[str] | None

STATUS_LATENCY_GROUPS = ("network", "chain_selector", "channel_id", "status")


@contextmanager
def _open(warehouse: WarehouseLike) -> Iterator[Warehouse]:
    if isinstance(warehouse, Warehouse):
        yield warehouse
        return
    path = warehouse if warehouse is not None else Settings.load().warehouse
    with Warehouse(path, read_only=True) as wh:
        yield wh


def to_utc(value: TimeLike) -> pd.Timestamp | None:
    """A tz-aware UTC timestamp from a datetime, an ISO string, or a relative age such as ``7d`` or ``12h``."""
    if value is None:
        return None
    if isinstance(value, str) and value[:-1].isdigit() and value[-1:] in "smhdw":
        unit = {"s": "s", "m": "min", "h": "h", "d": "D", "w": "W"}[value[-1]]
        return pd.Timestamp.now(tz="UTC").floor("s") - pd.Timedelta(int(value[:-1]), unit=unit)
    ts = pd.Timestamp(value)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def status_categorical(values: pd.Series, order: Sequence[str] = spec.OPERATION_STATUSES) -> pd.Series:
    """Statuses as an ordered categorical in lifecycle order; unknown values are kept, after the known ones."""
    present = [v for v in pd.unique(values.dropna()) if v not in order]
    return pd.Categorical(values, categories=[*order, *sorted(present)], ordered=True)  # type: ignore[return-value]


def _filters(
    *, channel: str | Sequence[str] | None, network: str | Sequence[str] | None, since: TimeLike, until: TimeLike,
    status: str | Sequence[str] | None, time_column: str,
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []

    def one_of(column: str, value: str | Sequence[str] | None, *alts: str) -> None:
        if value is None:
            return
        values = [value] if isinstance(value, str) else list(value)
        cols = [column, *alts]
        clauses.append("(" + " OR ".join(f"list_contains(?, {c})" for c in cols) + ")")
        params.extend([values] * len(cols))

    one_of("channel_id", channel)
    one_of("network", network, "chain_selector")
    one_of("status", status)
    if (start := to_utc(since)) is not None:
        clauses.append(f"{time_column} >= ?")
        params.append(start.to_pydatetime())
    if (end := to_utc(until)) is not None:
        clauses.append(f"{time_column} < ?")
        params.append(end.to_pydatetime())
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def status_latency(
    warehouse: WarehouseLike = None,
    *,
    by: Sequence[str] = ("network", "status"),
    channel: str | Sequence[str] | None = None,
    network: str | Sequence[str] | None = None,
    status: str | Sequence[str] | None = None,
    since: TimeLike = None,
    until: TimeLike = None,
) -> pd.DataFrame:
    """Seconds spent in each status: n, mean, p50, p90, p99, and the time from creation to reaching the status.

    One row per group of ``by`` (any of ``network``, ``chain_selector``, ``channel_id``, ``status``). ``entered``
    counts operations that entered the status; ``n`` those that have left it (so their time in it is known).
    Filters select transitions by channel, network (name or selector), status, and ``entered_at`` in
    ``[since, until)``; ``since``/``until`` take datetimes, ISO strings or ages like ``7d``.

    >>> status_latency("data/demo.duckdb", by=["network", "status"])  # doctest: +SKIP
    """
    by = list(by)
    bad = [c for c in by if c not in STATUS_LATENCY_GROUPS]
    if bad:
        raise ValueError(f"cannot group status_latency by {bad}; choose from {list(STATUS_LATENCY_GROUPS)}")
    where, params = _filters(
        channel=channel, network=network, since=since, until=until, status=status, time_column="entered_at"
    )
    group_cols = ", ".join(by) if by else "1"
    select_cols = (", ".join(by) + ",") if by else ""
    order = ", ".join(("min(stage_rank)" if c == "status" else c) for c in by) or "1"
    sql = f"""
        SELECT {select_cols}
            count(*) AS entered,
            count(seconds_in_status) AS n,
            avg(seconds_in_status) AS mean_s,
            quantile_cont(seconds_in_status, 0.5) AS p50_s,
            quantile_cont(seconds_in_status, 0.9) AS p90_s,
            quantile_cont(seconds_in_status, 0.99) AS p99_s,
            max(seconds_in_status) AS max_s,
            quantile_cont(seconds_since_created, 0.5) AS since_created_p50_s,
            quantile_cont(seconds_since_created, 0.9) AS since_created_p90_s
        FROM operation_transitions
        {where}
        GROUP BY {group_cols}
        ORDER BY {order}
    """
    with _open(warehouse) as wh:
        df = wh.query(sql, params)
    if "status" in df.columns:
        df["status"] = status_categorical(df["status"])
    return df.reset_index(drop=True)


def status_durations(
    warehouse: WarehouseLike = None,
    *,
    channel: str | Sequence[str] | None = None,
    network: str | Sequence[str] | None = None,
    since: TimeLike = None,
    until: TimeLike = None,
) -> pd.DataFrame:
    """Raw seconds-in-status per transition (network, status, seconds): the input of distribution plots."""
    where, params = _filters(
        channel=channel, network=network, since=since, until=until, status=None, time_column="entered_at"
    )
    extra = "AND" if where else "WHERE"
    sql = f"""
        SELECT network, status, seconds_in_status AS seconds
        FROM operation_transitions {where} {extra} seconds_in_status IS NOT NULL
        ORDER BY network, stage_rank
    """
    with _open(warehouse) as wh:
        df = wh.query(sql, params)
    df["status"] = status_categorical(df["status"])
    return df


METRICS = {"status-latency": status_latency}
