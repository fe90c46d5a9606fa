"""Operations sitting in a non-terminal status for longer than their network usually takes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from .. import spec
from ..times import TimeLike, parse_time
from ..warehouse import Warehouse
from .common import (
    NO_FILTERS,
    Filters,
    Sql,
    WarehouseLike,
    deadlines_sql,
    grouping,
    latest_event_time,
    open_warehouse,
    sort_rows,
    status_categorical,
    takes_filters,
)
from .declarations import BY_NAME
from .outcomes import latest_only_sql
from .survival import uncensored_percentiles_sql

#: The columns it can group by, as declared (:mod:`.declarations`).
STUCK_GROUPS = BY_NAME["stuck-operations"].by

STUCK_COLUMNS = (
    "operation_id",
    "channel_id",
    "chain_selector",
    "network",
    "address",
    "status",
    "entered_at",
    "age_s",
    "threshold_s",
    "threshold_basis",
    "network_p90_s",
)

#: Statuses of the relay ladder that default to :data:`STATE_MACHINE_DEFAULT_S` when no network has history.
RELAY_STATUSES: tuple[str, ...] = ("accepted", "sending", "sent", "broadcasting", *spec.FINALITY_STAGES[:-1])
#: The state machine's default threshold of a relay status (and of a draft whose deadline is unknown): one hour.
STATE_MACHINE_DEFAULT_S = 3600.0


@takes_filters()
def stuck_operations(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
    by: Sequence[str] | None = None,
    now: TimeLike = None,
    multiple: float = 3.0,
    min_seconds: float = 60.0,
    thresholds: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Operations sitting in a non-terminal status for longer than a threshold, as of ``now``.

    ``now`` defaults to the newest event time in the warehouse, so results are reproducible. The threshold of a
    status, and its ``threshold_basis``, is the first of:

    - ``explicit``: ``thresholds[status]`` when given;
    - ``network``: ``multiple`` x the p90 of the time operations on that network spent in that status (every
      stay that ended by ``now``, any period), at least ``min_seconds``. The p90 is the percentile
      ``status_latency`` uses (Hyndman–Fan type 2), over ended stays only: not Kaplan–Meier, because the stays
      still open are the ones being judged, and counting them as censored would let many stuck operations raise
      their own threshold;
    - ``other networks``: for a status no operation on that network has left yet, the same from every network
      that has the status's history;
    - ``state machine``: ``pending_signature`` waits until the operation's own deadline (``operations.deadline``;
      one hour when unknown), a relay status (``accepted`` to ``confirmed_safe``) one hour.

    A status the vocabulary does not know, with no history, has no threshold. ``confirmed_latest`` on a network
    where only the latest stage is active is final, never stuck. Filters: channel, network, status (the status the
    operation is in) and ``created_at`` in ``[since, until)``.

    Returns one row per stuck operation (``age_s``, ``threshold_s``, ``threshold_basis``, ``network_p90_s``), the
    most overdue first; with ``by`` (any of ``network``, ``chain_selector``, ``channel_id``, ``address``,
    ``status``), one row per group with the count and the median and maximum age.
    """
    cols = grouping(by, STUCK_GROUPS, "stuck_operations") if by else []
    with open_warehouse(warehouse) as wh:
        at = parse_time(now) or latest_event_time(wh)
        df = (
            pd.DataFrame(columns=list(STUCK_COLUMNS))
            if at is None
            else _stuck_rows(
                wh,
                at,
                where.sql("l.created_at", alias="c", status_column="c.status"),
                multiple,
                min_seconds,
                thresholds or {},
            )
        )
    df["status"] = status_categorical(df["status"])
    if not cols:
        return df
    grouped = df.groupby(cols, observed=True, dropna=False)["age_s"]
    summary = grouped.agg(stuck="count", median_age_s="median", max_age_s="max").reset_index()
    return sort_rows(summary, cols)


def _stuck_rows(
    wh: Warehouse, at: pd.Timestamp, q: Sql, multiple: float, min_seconds: float, thresholds: Mapping[str, float]
) -> pd.DataFrame:
    now = q.bind(at.to_pydatetime())
    thr_status, thr_seconds = q.bind(list(thresholds)), q.bind([float(v) for v in thresholds.values()])
    terminal = q.bind(sorted(spec.OPERATION_TERMINAL))
    mult, floor = q.bind(float(multiple)), q.bind(float(min_seconds))
    defaults = q.bind(["pending_signature", *RELAY_STATUSES])
    default_s = q.bind(STATE_MACHINE_DEFAULT_S)
    by_status = "SELECT status, duration, sum(k) AS k FROM left_by_now GROUP BY status, duration"
    sql = f"""
        WITH latest_only AS ({latest_only_sql()}),
        left_by_now AS (
            SELECT chain_selector, status, seconds_in_status AS duration, count(*) AS k FROM operation_transitions
            WHERE seconds_in_status IS NOT NULL AND exited_at <= {now}
            GROUP BY chain_selector, status, seconds_in_status
        ),
        -- the p90 status_latency reads off its curve, which with nothing censored is Hyndman–Fan type 2
        p90 AS ({uncensored_percentiles_sql("SELECT * FROM left_by_now", ["chain_selector", "status"], [0.9])}),
        p90_any AS ({uncensored_percentiles_sql(by_status, ["status"], [0.9])}),
        explicit AS (SELECT unnest({thr_status}::VARCHAR[]) AS status, unnest({thr_seconds}::DOUBLE[]) AS seconds),
        current AS (
            SELECT t.operation_id, t.channel_id, t.chain_selector, t.network, t.address, t.status, t.entered_at,
                epoch({now}) - epoch(t.entered_at) AS age_s
            FROM operation_transitions t
            WHERE t.entered_at <= {now} AND (t.exited_at IS NULL OR t.exited_at > {now})
              AND NOT list_contains({terminal}, t.status)
              AND NOT (t.status = 'confirmed_latest' AND t.chain_selector IN (SELECT chain_selector FROM latest_only))
        ),
        -- only a draft's threshold reads its deadline
        deadlines AS ({deadlines_sql("SELECT operation_id FROM current WHERE status = 'pending_signature'")}),
        judged AS (
            SELECT cur.*, p.p90_s AS network_p90_s,
                CASE WHEN x.seconds IS NOT NULL THEN x.seconds
                     WHEN p.p90_s IS NOT NULL THEN greatest({mult} * p.p90_s, {floor})
                     WHEN a.p90_s IS NOT NULL THEN greatest({mult} * a.p90_s, {floor})
                     WHEN cur.status = 'pending_signature' AND o.deadline_at IS NOT NULL
                         THEN epoch(o.deadline_at) - epoch(cur.entered_at)
                     WHEN list_contains({defaults}, cur.status) THEN {default_s}
                END AS threshold_s,
                CASE WHEN x.seconds IS NOT NULL THEN 'explicit'
                     WHEN p.p90_s IS NOT NULL THEN 'network'
                     WHEN a.p90_s IS NOT NULL THEN 'other networks'
                     WHEN (cur.status = 'pending_signature' AND o.deadline_at IS NOT NULL)
                         OR list_contains({defaults}, cur.status) THEN 'state machine'
                END AS threshold_basis
            FROM current cur
            LEFT JOIN p90 p ON p.chain_selector IS NOT DISTINCT FROM cur.chain_selector AND p.status = cur.status
            LEFT JOIN p90_any a ON a.status = cur.status
            LEFT JOIN explicit x ON x.status = cur.status
            LEFT JOIN deadlines o ON o.operation_id = cur.operation_id
        )
        SELECT {", ".join(f"c.{col}" for col in STUCK_COLUMNS)}
        FROM judged c
        JOIN operation_lifecycle l ON l.operation_id = c.operation_id
        WHERE c.age_s > c.threshold_s AND NOT coalesce(l.terminal_at <= {now}, false)
            {q.where("AND")}
        ORDER BY c.age_s / c.threshold_s DESC, c.operation_id
    """
    return wh.query(sql, q.params)
