"""Watchers: status history and event activity."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pandas as pd

from .. import spec
from .common import (
    NO_FILTERS,
    Filters,
    WarehouseLike,
    bucket_seconds,
    bucket_sql,
    bucket_to_time,
    grouping,
    open_warehouse,
    run,
    select_groups,
    sort_rows,
    status_categorical,
    takes_filters,
)
from .coverage import NotHeldError
from .declarations import BY_NAME

#: The columns it can group by, as declared (:mod:`.declarations`).
WATCHER_GROUPS = BY_NAME["watcher-activity"].by


@takes_filters()
def watcher_status_history(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
    by: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Each watcher's status history from ``watcher.status`` events: status, entered_at, exited_at, seconds.

    Filters: channel, network, status and ``entered_at`` in ``[since, until)``; ``by`` is accepted for a uniform
    command line and may only be ``watcher_id``. Returns one row per status a watcher entered, in order
    (``status`` an ordered categorical in the vocabulary's order).
    """
    grouping(by, BY_NAME["watcher-status-history"].by, "watcher_status_history")
    q = where.sql("h.entered_at", alias="h", status_column="h.status")
    rank = (
        "CASE e.status "
        + " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(spec.WATCHER_STATUSES))
        + " ELSE 1000 END"
    )
    sql = f"""
        WITH moves AS (
            SELECT e.watcher_id, e.status, e.ts AS entered_at, {rank} AS stage_rank,
                any_value(e.channel_id) AS channel_id, any_value(e.chain_selector) AS chain_selector,
                any_value(e.status_reason) AS status_reason
            FROM events e
            WHERE e.type = 'watcher.status' AND e.watcher_id IS NOT NULL AND e.status IS NOT NULL AND e.ts IS NOT NULL
            GROUP BY e.watcher_id, e.status, e.ts
        ),
        history AS (
            SELECT m.watcher_id, w.name, coalesce(w.channel_id, m.channel_id) AS channel_id,
                coalesce(w.chain_selector, m.chain_selector) AS chain_selector, m.status, m.entered_at,
                lead(m.entered_at) OVER win AS exited_at, lead(m.status) OVER win AS next_status,
                epoch(lead(m.entered_at) OVER win) - epoch(m.entered_at) AS seconds_in_status, m.status_reason,
                m.stage_rank
            FROM moves m LEFT JOIN watchers w USING (watcher_id)
            WINDOW win AS (PARTITION BY m.watcher_id ORDER BY m.entered_at, m.stage_rank)
        ),
        h AS (
            SELECT history.*, coalesce(n.name, history.chain_selector) AS network
            FROM history LEFT JOIN networks n ON n.chain_selector = history.chain_selector
        )
        SELECT h.watcher_id, h.name, h.channel_id, h.chain_selector, h.network, h.status, h.entered_at, h.exited_at,
            h.next_status, h.seconds_in_status, h.status_reason
        FROM h
        {q.where()}
        ORDER BY h.watcher_id, h.entered_at, h.stage_rank
    """
    df = run(warehouse, sql, q.params)
    for col in ("status", "next_status"):
        df[col] = status_categorical(df[col], spec.WATCHER_STATUSES)
    return df


@takes_filters()
def watcher_activity(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
    by: Sequence[str] = ("watcher_id",),
    bucket: str | int | timedelta = "1h",
) -> pd.DataFrame:
    """``watcher.event`` counts per watcher and hour (or another ``bucket``), with the watcher's status then.

    Events with ``ts`` in the period, grouped by ``by`` (any of ``watcher_id``, ``channel_id``, ``network``,
    ``chain_selector``) and bucket. Columns: ``events``, ``with_proof``; grouped by ``watcher_id``, also the
    watcher's ``name`` and ``status`` (its status at the end of the bucket, from its status history).

    Returns the DataFrame (``bucket`` tz-aware UTC, ``status`` an ordered categorical).
    """
    cols = grouping(by, WATCHER_GROUPS, "watcher_activity")
    network_expr = "coalesce(n.name, e.chain_selector)"
    q = where.events_sql()
    q.clauses.append("e.type = 'watcher.event'")
    bucket_expr = bucket_sql(q, "e.ts", bucket)
    exprs = {
        "watcher_id": "e.watcher_id",
        "channel_id": "e.channel_id",
        "chain_selector": "e.chain_selector",
        "network": network_expr,
    }
    select, group = select_groups(cols, bucket_expr, exprs)
    sql = f"""
        SELECT {select} count(*) AS events, count(*) FILTER (WHERE coalesce(e.proof_count, 0) > 0) AS with_proof
        FROM events e {"LEFT JOIN networks n ON n.chain_selector = e.chain_selector" if "network" in cols else ""}
        {q.where()}
        GROUP BY {group}
    """
    with open_warehouse(warehouse) as wh:
        df = bucket_to_time(wh.query(sql, q.params))
        if "watcher_id" in cols:
            try:
                history = watcher_status_history(wh)
            except NotHeldError:  # watcher.status events not synced: the activity is known, not the statuses
                history = watcher_status_history(wh, channel=[])
            df = _with_watcher_status(history, df, bucket_seconds(bucket))
    return sort_rows(df, [*cols, "bucket"])


def _with_watcher_status(history: pd.DataFrame, df: pd.DataFrame, width: int) -> pd.DataFrame:
    """Add each watcher's name and the status in effect at the end of each bucket (an as-of join on history).

    Events stored without a time (an invalid ``timestamp`` is stored NULL) count in a row of their own with no
    bucket and no status; a status event without a time cannot say when it took effect and sets no status."""
    names = history.drop_duplicates("watcher_id", keep="last")[["watcher_id", "name"]]
    df = df.merge(names, on="watcher_id", how="left")
    df["_end"] = df["bucket"] + pd.Timedelta(seconds=width)
    right = history[["watcher_id", "entered_at", "status"]].assign(status=lambda h: h["status"].astype(object))
    right = right[right["entered_at"].notna()]
    timed = df["_end"].notna()
    if right.empty or not timed.any():
        df["status"] = None
    else:
        joined = pd.merge_asof(
            df[timed].sort_values("_end"),
            right.sort_values("entered_at"),
            left_on="_end",
            right_on="entered_at",
            by="watcher_id",
            allow_exact_matches=False,
            direction="backward",
        ).drop(columns=["entered_at"])
        df = pd.concat([joined, df[~timed].assign(status=None)], ignore_index=True) if not timed.all() else joined
    df["status"] = status_categorical(df["status"], spec.WATCHER_STATUSES)
    return df.drop(columns=["_end"])


#: Every metric by its ``chainops metrics NAME`` name.
