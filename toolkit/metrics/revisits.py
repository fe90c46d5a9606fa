"""Revisits and reorganisations: statuses an operation entered again after it had moved on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import spec
from ..times import TimeLike
from .common import (
    NO_FILTERS,
    Engine,
    Filters,
    ParquetPath,
    Values,
    WarehouseLike,
    grouping,
    run,
    select_groups,
    sort_rows,
    takes_filters,
)

REVISIT_GROUPS = ("network", "chain_selector", "channel_id")

#: Statuses a reorganisation moves an operation back from (the finality stages) and to (broadcasting or earlier).
_FINALITY_RANK = spec.OPERATION_STAGE_ORDER[spec.FINALITY_STAGES[0]]
_BROADCASTING_RANK = spec.OPERATION_STAGE_ORDER["broadcasting"]
_LAST_FINALITY_RANK = spec.OPERATION_STAGE_ORDER[spec.FINALITY_STAGES[-1]]


def _rank_sql(column: str) -> str:
    """The stage rank of ``column`` (NULL for a status the vocabulary does not know)."""
    cases = " ".join(f"WHEN '{s}' THEN {r}" for s, r in spec.OPERATION_STAGE_ORDER.items())
    return f"CASE {column} {cases} END"


def revisit_steps_sql() -> str:
    """One row per status step of every operation, from raw ``operation.status`` events: deduplicated by event id
    and by (operation, status, time), ordered by time then stage, consecutive repeats of one status merged.

    Columns: operation_id, status, ts, rank, prev_status, prev_rank, visit (1 for the first entry of the status,
    2 for the second, ...)."""
    return f"""
    ev AS (
        SELECT DISTINCT operation_id, status, ts
        FROM (SELECT DISTINCT ON (event_id) operation_id, status, ts FROM events
              WHERE type = 'operation.status' AND operation_id IS NOT NULL AND status IS NOT NULL
                AND ts IS NOT NULL)
    ),
    ranked AS (
        SELECT *, {_rank_sql("status")} AS rank,
            lag(status) OVER (PARTITION BY operation_id ORDER BY ts, {_rank_sql("status")} NULLS LAST, status)
                AS before
        FROM ev
    ),
    steps AS (
        SELECT operation_id, status, ts, rank,
            lag(status) OVER w AS prev_status, lag(rank) OVER w AS prev_rank,
            row_number() OVER (PARTITION BY operation_id, status ORDER BY ts, rank NULLS LAST) AS visit
        FROM ranked
        WHERE before IS DISTINCT FROM status
        WINDOW w AS (PARTITION BY operation_id ORDER BY ts, rank NULLS LAST, status)
    )"""


@takes_filters()
def revisits(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
    channel: Values = None,
    network: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
    engine: Engine = None,
    parquet: ParquetPath = None,
    spark: Any = None,
    by: Sequence[str] = ("network",),
) -> pd.DataFrame:
    """Operations that entered a status again after moving on, and reorganisations, per group.

    From the raw ``operation.status`` events of operations created in the period. Events are deduplicated by event
    id and by (operation, status, time), so a duplicated event is never a revisit; consecutive events of one status
    are one stay. A **revisit** is an entry into a status the operation had already entered and left (e.g.
    ``broadcasting → confirmed_latest → broadcasting → confirmed_latest`` holds two: ``broadcasting`` and
    ``confirmed_latest`` again). A **reorg** is a move from a finality stage (``confirmed_latest``,
    ``confirmed_safe``, ``confirmed``) back to ``broadcasting`` or an earlier status.

    Grouped by ``by`` (any of ``network``, ``chain_selector``, ``channel_id``): ``operations`` (created in the
    period), ``operations_revisited``, ``revisits``, ``operations_reorged``, ``reorgs``.

    Returns the DataFrame.
    """
    cols = grouping(by, REVISIT_GROUPS, "revisits")
    q = where.sql("l.created_at", alias="l")
    select, group = select_groups(cols, exprs={c: f"l.{c}" for c in cols})
    sql = f"""
        WITH {revisit_steps_sql()},
        per_op AS (
            SELECT operation_id,
                count(*) FILTER (WHERE visit > 1) AS revisits,
                count(*) FILTER (WHERE prev_rank >= {_FINALITY_RANK} AND prev_rank <= {_LAST_FINALITY_RANK}
                                   AND rank <= {_BROADCASTING_RANK}) AS reorgs
            FROM steps GROUP BY operation_id
        )
        SELECT {select}
            count(*) AS operations,
            count(*) FILTER (WHERE coalesce(p.revisits, 0) > 0) AS operations_revisited,
            coalesce(sum(p.revisits), 0)::BIGINT AS revisits,
            count(*) FILTER (WHERE coalesce(p.reorgs, 0) > 0) AS operations_reorged,
            coalesce(sum(p.reorgs), 0)::BIGINT AS reorgs
        FROM operation_lifecycle l
        LEFT JOIN per_op p ON p.operation_id = l.operation_id
        {q.where()}
        GROUP BY {group}
    """
    return sort_rows(run(warehouse, sql, q.params), cols)
