"""Chain queries past their time-to-live with no terminal event: flagged, never silently "in flight"."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .. import spec
from ..times import TimeLike, parse_time
from .common import (
    NO_FILTERS,
    Filters,
    WarehouseLike,
    grouping,
    latest_event_time,
    open_warehouse,
    sort_rows,
    status_categorical,
    takes_filters,
)
from .declarations import BY_NAME

#: The columns it can group by, as declared (:mod:`.declarations`).
OVERDUE_QUERY_GROUPS = BY_NAME["overdue-queries"].by
OVERDUE_QUERY_COLUMNS = (
    "query_id",
    "channel_id",
    "chain_selector",
    "network",
    "status",
    "created_at",
    "expires_at",
    "overdue_s",
)


@takes_filters()
def overdue_queries(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
    by: Sequence[str] | None = None,
    now: TimeLike = None,
) -> pd.DataFrame:
    """Chain queries past their ``expires_at`` with no terminal status (completed, failed, expired) as of ``now``.

    ``now`` defaults to the newest event time in the warehouse (the time the data is as of), so results are
    reproducible. ``expires_at`` is the time-to-live the service stored on the query record (the ``queries``
    table); a query known only from its events has no ``expires_at`` and is never flagged (no default TTL is
    assumed). A terminal status counts when its time is at or before ``now`` (or, with no time, when the record's
    status is terminal). Filters: channel, network and ``created_at`` in ``[since, until)``.

    Returns one row per overdue query (``overdue_s`` = seconds past ``expires_at``), the most overdue first; with
    ``by`` (any of ``network``, ``chain_selector``, ``channel_id``, ``status``), one row per group with the count
    (``overdue``) and the maximum ``overdue_s``.
    """
    cols = grouping(by, OVERDUE_QUERY_GROUPS, "overdue_queries") if by else []
    with open_warehouse(warehouse) as wh:
        at = parse_time(now) or latest_event_time(wh)
        if at is None:
            df = pd.DataFrame(columns=list(OVERDUE_QUERY_COLUMNS))
        else:
            q = where.sql("l.created_at", alias="l")
            ref = q.bind(at.to_pydatetime())
            terminal = q.bind(sorted(spec.QUERY_TERMINAL))
            ended = " OR ".join(f"l.{s}_at <= {ref}" for s in sorted(spec.QUERY_TERMINAL))
            sql = f"""
                SELECT l.query_id, l.channel_id, l.chain_selector, l.network, l.status, l.created_at,
                    r.expires_at, epoch({ref}) - epoch(r.expires_at) AS overdue_s
                FROM query_lifecycle l
                JOIN queries r ON r.query_id = l.query_id
                WHERE r.expires_at IS NOT NULL AND r.expires_at < {ref}
                  AND NOT coalesce({ended}, false)
                  AND NOT (list_contains({terminal}, l.status)
                           AND {" AND ".join(f"l.{s}_at IS NULL" for s in sorted(spec.QUERY_TERMINAL))})
                  {q.where("AND")}
                ORDER BY overdue_s DESC, l.query_id
            """
            df = wh.query(sql, q.params)
    df["status"] = status_categorical(df["status"], spec.QUERY_STATUSES)
    if not cols:
        return df.reset_index(drop=True)
    grouped = df.groupby(cols, observed=True, dropna=False)["overdue_s"]
    return sort_rows(grouped.agg(overdue="count", max_overdue_s="max").reset_index(), cols)
