"""Revisits and reorganisations: statuses an operation entered again after it had moved on."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..warehouse.views import reorg_step_sql, revisit_steps_sql
from .common import (
    NO_FILTERS,
    Filters,
    WarehouseLike,
    grouping,
    run,
    select_groups,
    sort_rows,
    takes_filters,
)
from .declarations import BY_NAME

#: The columns it can group by, as declared (:mod:`.declarations`).
REVISIT_GROUPS = BY_NAME["revisits"].by

#: The status steps of every operation from its raw events, and whether a step is a reorganisation: defined with the
#: models that count them (``operation_transitions.entries``/``reorg_entries``, ``operation_lifecycle.revisits``/
#: ``reorgs``), kept here for code that reads the steps themselves.
__all__ = ["REVISIT_GROUPS", "reorg_step_sql", "revisit_steps_sql", "revisits"]


@takes_filters()
def revisits(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
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
    # each operation's revisits and reorgs are counted by the models (operation_lifecycle), from its status steps
    sql = f"""
        SELECT {select}
            count(*) AS operations,
            count(*) FILTER (WHERE l.revisits > 0) AS operations_revisited,
            coalesce(sum(l.revisits), 0)::BIGINT AS revisits,
            count(*) FILTER (WHERE l.reorgs > 0) AS operations_reorged,
            coalesce(sum(l.reorgs), 0)::BIGINT AS reorgs
        FROM operation_lifecycle l
        {q.where()}
        GROUP BY {group}
    """
    return sort_rows(run(warehouse, sql, q.params), cols)
