"""The audit row of a sync run in ``sync_runs``: written when the run starts and again when it ends, and the rows
of runs that were killed (SIGKILL, a power cut) before they could write their end marked ``killed``.

Each function takes the :class:`~toolkit.warehouse.Warehouse` of the unit of work (run them through
:meth:`~toolkit.loader.unit_of_work.UnitOfWork.call`).
"""

from __future__ import annotations

import json
import logging

from ..warehouse import Warehouse
from .result import SyncResult

log = logging.getLogger("toolkit.loader")

#: The outcome of a run found still ``running`` by a later run (the others: running, ok, partial, failed,
#: interrupted).
KILLED = "killed"

#: The message of a run found still ``running`` by a later run that holds the sync lock.
KILLED_MESSAGE = (
    "the run was killed before it could record its end (SIGKILL, a crash or a power cut); "
    "a later run found it still marked running and continued from its last commit"
)


def write_run(wh: Warehouse, result: SyncResult, base_url: str) -> None:
    """Insert or replace the run's row with what ``result`` says now."""
    rows = {t: {"new": result.rows[t], "updated": result.updated[t]} for t in set(result.rows) | set(result.updated)}
    wh.record_sync_run(
        {
            "run_id": result.run_id,
            "started_at": result.started_at,
            "finished_at": result.finished_at,
            "outcome": result.outcome,
            "base_url": base_url,
            "full_sync": result.full,
            "requests": result.requests,
            "retries": result.retries,
            "rows_written": json.dumps(rows),
            "rejected": len(result.rejected),
            "gaps": json.dumps(result.gaps),
            "message": result.message,
            "event_window": None if result.event_window is None else json.dumps(result.event_window),
            "models": None if result.models is None else json.dumps(result.models),
        }
    )


def mark_killed_runs(wh: Warehouse) -> list[str]:
    """Mark ``killed`` every run still ``running``: call only while holding the sync lock, which proves that no
    other sync runs. Returns their run ids."""
    killed = wh.close_running_sync_runs(KILLED, KILLED_MESSAGE)
    for run_id in killed:
        log.warning("sync run %s was killed before it recorded its end: marked %r", run_id, KILLED)
    return killed
