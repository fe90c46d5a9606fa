"""Time spent in each operation status."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import numpy as np
import pandas as pd

from .. import spec
from .common import (
    NO_FILTERS,
    Filters,
    Sql,
    WarehouseLike,
    bucket_sql,
    bucket_to_time,
    grouping,
    latest_event_time,
    params_in,
    run,
    select_groups,
    sort_rows,
    status_categorical,
    takes_filters,
)
from .declarations import BY_NAME
from .outcomes import latest_only_sql
from .survival import (
    attach,
    in_flight_operations_sql,
    join_notes,
    km_percentiles,
    percentile_name,
    uncensored_notes,
    uncensored_percentiles_sql,
)

#: The columns it can group by, as declared (:mod:`.declarations`).
STATUS_LATENCY_GROUPS = BY_NAME["status-latency"].by

#: The percentiles of the time in a status, and of the time from creation to entering it.
LATENCY_PERCENTILES = (0.5, 0.9, 0.99)
SINCE_CREATED_PERCENTILES = (0.5, 0.9)
_LATENCY_COLUMNS = (
    "entered",
    "n",
    "mean_s",
    "p50_s",
    "p90_s",
    "p99_s",
    "max_s",
    "since_created_p50_s",
    "since_created_p90_s",
    "censored",
    "reentered",
    "notes",
)


@takes_filters()
def status_latency(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
    by: Sequence[str] = ("network", "status"),
    bucket: str | int | timedelta | None = None,
) -> pd.DataFrame:
    """Seconds spent in each status, censoring-aware: n, mean, p50, p90, p99, max, and the time from creation to
    reaching it.

    One row per group of ``by`` (any of ``network``, ``chain_selector``, ``channel_id``, ``status``), and per time
    bucket of ``entered_at`` when ``bucket`` is given (column ``bucket``). Filters select transitions by channel,
    network (name or selector), status, and ``entered_at`` in ``[since, until)``.

    - ``entered``: operations that entered the status; ``n``: those that have left it (their time in it is known);
      ``censored``: those still in it as of the newest event time (:func:`~.common.latest_event_time`). A terminal
      status (and ``confirmed_latest`` on a latest-only network) is not censored: it has no duration. Nor is the
      last status of an operation that ended without an event saying how (its record is terminal).
    - ``p50_s``/``p90_s``/``p99_s``: Kaplan–Meier percentiles (:mod:`.survival`: the still-in-status are
      right-censored; the midpoint rule of R's ``quantile.survfit``, numpy's ``averaged_inverted_cdf`` when nothing
      is censored), NULL below the sample-size rule (p50 from 2 observations, p90 from 10, p99 from 100) or where
      the survival curve does not reach the level yet; ``notes`` says why for each NULL.
    - ``mean_s``, ``max_s``: of the ended durations only (not censoring-aware).
    - ``since_created_p50_s``/``_p90_s``: time from the operation's creation to entering the status, over the
      operations that entered it (nothing is censored), same method and rule.
    - One observation per operation and status: its **first** entry, timed to the next status it entered for the
      first time, so a reorg's detour (``confirmed_latest → broadcasting → confirmed_latest``) stays inside the
      first ``confirmed_latest`` stay. ``reentered`` counts the operations of the row that entered the status again
      after a later one (:func:`~.revisits.revisits`); the notes name them when there are any.

    Returns the DataFrame (``status`` an ordered categorical, ``bucket`` tz-aware UTC).

    >>> status_latency("data/demo.duckdb", by=["network", "status"], bucket="1d")  # doctest: +SKIP
    """
    cols = grouping(by, STATUS_LATENCY_GROUPS, "status_latency")
    q = where.sql("entered_at", status_column="status")
    _created_in_window(q, where)
    bucket_expr = bucket_sql(q, "entered_at", bucket)
    select, _ = select_groups(cols, bucket_expr)
    keys = [*cols, *(["bucket"] if bucket_expr else [])]
    as_of = latest_event_time(warehouse)
    open_statuses = q.bind([s for s in spec.OPERATION_STATUSES if s not in spec.OPERATION_TERMINAL])
    as_of_ref = q.bind(None if as_of is None else as_of.to_pydatetime())
    key_list = "".join(f"{k}, " for k in keys)
    # the transitions read twice, each aggregated on its own (a shared input would be materialised whole): the
    # ended stays (their time in status) and the last stays (censored while the operation is in flight: only these
    # are looked up among the operations in flight); then every stay's time since creation
    where_sql = q.where()
    ended = f"{where_sql} {'AND' if where_sql else 'WHERE'} seconds_in_status IS NOT NULL"
    last = f"{where_sql} {'AND' if where_sql else 'WHERE'} seconds_in_status IS NULL"
    group = ", ".join([*keys, "duration"])
    sql = f"""
        WITH latest_only AS ({latest_only_sql()}),
        in_flight AS ({in_flight_operations_sql()})
        SELECT {key_list}'in' AS kind, seconds_in_status AS duration,
            count(*) AS entered, count(*) AS events, 0 AS censored, count(*) FILTER (WHERE entries > 1) AS reentered
        FROM (SELECT {select} seconds_in_status, entries FROM operation_transitions {ended}) AS t
        GROUP BY {group}
        UNION ALL
        SELECT {key_list}'in' AS kind,
            CASE WHEN is_censored THEN epoch(CAST({as_of_ref} AS TIMESTAMPTZ)) - epoch(entered_at) END AS duration,
            count(*) AS entered, 0 AS events, count(*) FILTER (WHERE is_censored) AS censored,
            count(*) FILTER (WHERE entries > 1) AS reentered
        FROM (
            SELECT {select} entered_at, entries,
                list_contains({open_statuses}, status) AND operation_id IN (SELECT operation_id FROM in_flight)
                    AS is_censored
            FROM operation_transitions {last}
        ) AS t
        GROUP BY ALL
    """
    # the time since creation is never censored: its percentiles are read off in the database, one row per group
    created_counts = f"""
        SELECT {key_list}seconds_since_created AS duration, count(*) AS k
        FROM (SELECT {select} seconds_since_created FROM operation_transitions {where_sql}) AS t
        WHERE seconds_since_created IS NOT NULL
        GROUP BY {group}"""
    created_sql = uncensored_percentiles_sql(created_counts, keys, SINCE_CREATED_PERCENTILES)
    counts = run(warehouse, sql, q.params)
    since = run(warehouse, created_sql, params_in(created_sql, q.params))
    df = _latency_table(counts, since, keys)
    if "status" in df.columns:
        df["status"] = status_categorical(df["status"])
    return sort_rows(bucket_to_time(df), keys)


def _latency_table(counts: pd.DataFrame, since: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The rows of :func:`status_latency` from the per-(group, duration) counts of the time in status and the
    per-group percentiles of the time since creation (:func:`~.survival.uncensored_percentiles_sql`)."""
    gkeys = keys or ["_all"]
    inside = counts.assign(_all=0) if not keys else counts
    since = since.assign(_all=0) if not keys else since
    ended = inside["events"].to_numpy(dtype=float)
    seconds = inside["duration"].to_numpy(dtype=float)
    summary = (
        inside.assign(
            _sum=np.where(ended > 0, seconds * ended, 0.0),
            _max=np.where(ended > 0, seconds, np.nan),
        )
        .groupby(gkeys, dropna=False, sort=False)
        .agg(entered=("entered", "sum"), reentered=("reentered", "sum"), _sum=("_sum", "sum"), max_s=("_max", "max"))
        .reset_index()
    )
    km = km_percentiles(inside, gkeys, LATENCY_PERCENTILES, pending="still in status")
    km = km.rename(columns={"events": "n"})
    since = uncensored_notes(since, SINCE_CREATED_PERCENTILES, label="since_created")
    since = since.rename(
        columns={f"{percentile_name(p)}_s": f"since_created_{percentile_name(p)}_s" for p in SINCE_CREATED_PERCENTILES}
    )
    since = since.rename(columns={"notes": "_since_notes"}).drop(columns=["observations"])
    df = attach(attach(summary, km, gkeys), since, gkeys)
    with np.errstate(invalid="ignore", divide="ignore"):
        df["mean_s"] = np.where(df["n"] > 0, df["_sum"] / df["n"], np.nan)
    none = (df["observations"] == 0).to_numpy()
    in_notes = np.where(
        none, [f"no durations: {e} entered, none left it or is still in it" for e in df["entered"]], df["notes"]
    )
    again = [
        f"{r} re-entered it after a later status (their time runs to the next new status)" if r else ""
        for r in df["reentered"]
    ]
    df["notes"] = join_notes(in_notes, df["_since_notes"], again)
    for col in ("entered", "n", "censored", "reentered"):
        df[col] = df[col].astype("int64")
    return df[[*keys, *_LATENCY_COLUMNS]]


@takes_filters()
def status_durations(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
) -> pd.DataFrame:
    """Raw seconds-in-status per transition (network, status, seconds): the input of distribution plots.

    Arguments: the common filters (on ``entered_at``). Returns one row per transition that has ended.
    """
    q = where.sql("entered_at", status_column="status")
    _created_in_window(q, where)
    q.clauses.append("seconds_in_status IS NOT NULL")
    sql = f"""
        SELECT network, status, seconds_in_status AS seconds
        FROM operation_transitions {q.where()}
        ORDER BY network, stage_rank
    """
    df = run(warehouse, sql, q.params)
    df["status"] = status_categorical(df["status"])
    return df


def _created_in_window(q: Sql, where: Filters) -> None:
    """Only operations created in the warehouse's event window: those created before it lack their earlier
    statuses, so their times in status would be counted as if complete (see :mod:`.coverage`)."""
    if where.window_start is not None:
        start = q.bind(where.window_start.to_pydatetime())
        q.clauses.append(f"operation_id IN (SELECT operation_id FROM operations WHERE created_at >= {start})")
