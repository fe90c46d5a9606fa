"""Time spent in each operation status."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pandas as pd

from .common import (
    Filters,
    WarehouseLike,
    bucket_sql,
    bucket_to_time,
    grouping,
    run,
    select_groups,
    sort_rows,
    status_categorical,
    takes_filters,
)
from .stats import quantiles, with_quantiles

STATUS_LATENCY_GROUPS = ("network", "chain_selector", "channel_id", "status")

_LATENCY_COUNTS = ("entered", "n", "mean_s")


@takes_filters("channel", "network", "status", "since", "until")
def status_latency(
    warehouse: WarehouseLike = None,
    *,
    where: Filters,
    by: Sequence[str] = ("network", "status"),
    bucket: str | int | timedelta | None = None,
) -> pd.DataFrame:
    """Seconds spent in each status: n, mean, p50, p90, p99, max, and the time from creation to reaching it.

    One row per group of ``by`` (any of ``network``, ``chain_selector``, ``channel_id``, ``status``), and per time
    bucket of ``entered_at`` when ``bucket`` is given (column ``bucket``). ``entered`` counts operations that
    entered the status; ``n`` those that have left it (so their time in it is known). Filters select transitions by
    channel, network (name or selector), status, and ``entered_at`` in ``[since, until)``.

    Returns the DataFrame (``status`` an ordered categorical, ``bucket`` tz-aware UTC).

    >>> status_latency("data/demo.duckdb", by=["network", "status"], bucket="1d")  # doctest: +SKIP
    """
    cols = grouping(by, STATUS_LATENCY_GROUPS, "status_latency")
    q = where.sql("entered_at", status_column="status")
    bucket_expr = bucket_sql(q, "entered_at", bucket)
    select, group = select_groups(cols, bucket_expr)
    q_in, out_in = quantiles("seconds_in_status", "in", (0.5, 0.9, 0.99))
    q_created, out_created = quantiles("seconds_since_created", "created")
    inner = f"""
        SELECT {select}
            count(*) AS entered,
            count(seconds_in_status) AS n,
            avg(seconds_in_status) AS mean_s,
            max(seconds_in_status) AS max_s,
            {q_in},
            {q_created}
        FROM operation_transitions
        {q.where()}
        GROUP BY {group}
    """
    keys = [*cols, *(["bucket"] if bucket_expr else [])]
    outer = [*out_in, "max_s", *out_created]
    df = run(warehouse, with_quantiles(inner, [*keys, *_LATENCY_COUNTS], outer), q.params)
    df = df.rename(
        columns={
            "in_p50_s": "p50_s",
            "in_p90_s": "p90_s",
            "in_p99_s": "p99_s",
            "created_p50_s": "since_created_p50_s",
            "created_p90_s": "since_created_p90_s",
        }
    )
    if "status" in df.columns:
        df["status"] = status_categorical(df["status"])
    return sort_rows(bucket_to_time(df), keys)


@takes_filters("channel", "network", "status", "since", "until")
def status_durations(
    warehouse: WarehouseLike = None,
    *,
    where: Filters,
) -> pd.DataFrame:
    """Raw seconds-in-status per transition (network, status, seconds): the input of distribution plots.

    Arguments: the common filters (on ``entered_at``). Returns one row per transition that has ended.
    """
    q = where.sql("entered_at", status_column="status")
    q.clauses.append("seconds_in_status IS NOT NULL")
    sql = f"""
        SELECT network, status, seconds_in_status AS seconds
        FROM operation_transitions {q.where()}
        ORDER BY network, stage_rank
    """
    df = run(warehouse, sql, q.params)
    df["status"] = status_categorical(df["status"])
    return df
