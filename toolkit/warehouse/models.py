"""Modelled data kept up to date at sync time: the materialised tables behind the public views.

:func:`refresh_models` runs at the end of every sync, inside the sync's writer connection, after all raw rows are
committed. It is incremental (it recomputes only the operations whose events or record arrived since its last run,
found by the watermark it keeps in ``sync_state`` under the stream ``models``) and idempotent (a second run with
nothing new changes nothing). The rows it writes are exactly what the live views compute (see
:mod:`toolkit.warehouse.views`), so the public views give the same answer before and after it runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .store import Warehouse
from .views import (
    LIFECYCLE_COLUMNS,
    LIFECYCLE_TABLE,
    MODELS_STREAM,
    TRANSITION_COLUMNS,
    TRANSITIONS_TABLE,
    lifecycle_select,
    transitions_select,
)

#: Bump when the model tables' definition changes: the next refresh rebuilds them from the raw tables.
MODEL_VERSION = 1


@dataclass(frozen=True)
class RefreshResult:
    """What one refresh did: operations recomputed, rows written, whether it rebuilt everything, and seconds."""

    operations: int
    transitions: int
    rebuilt: bool
    seconds: float


def _watermarks(wh: Warehouse) -> tuple[str | None, str | None]:
    """The newest ``synced_at`` of events and operations, as text with its UTC offset (exact to the microsecond)."""
    row = wh.con.execute(
        "SELECT CAST((SELECT max(synced_at) FROM events) AS VARCHAR), "
        "CAST((SELECT max(synced_at) FROM operations) AS VARCHAR)"
    ).fetchone()
    return row[0], row[1]


def _needs_rebuild(wh: Warehouse, full: bool) -> bool:
    state = wh.get_cursor(MODELS_STREAM)
    return full or not isinstance(state, dict) or state.get("version") != MODEL_VERSION


def _rebuild(wh: Warehouse) -> None:
    """Empty the model tables and forget the watermark: every operation becomes stale."""
    wh.con.execute(f"DELETE FROM {TRANSITIONS_TABLE}")
    wh.con.execute(f"DELETE FROM {LIFECYCLE_TABLE}")
    wh.con.execute("DELETE FROM sync_state WHERE stream = ?", [MODELS_STREAM])


def _fold_in(wh: Warehouse, rebuilt: bool) -> tuple[int, int]:
    """Replace the model rows of every stale operation (all of them after a rebuild) by a fresh computation from the
    raw tables, with the same SELECTs the live views use; returns (operations, transitions) written."""
    con = wh.con
    scope: str | None = None
    if not rebuilt:
        con.execute("CREATE OR REPLACE TEMP TABLE _model_scope AS SELECT operation_id FROM model_stale_operations")
        if con.execute("SELECT count(*) FROM _model_scope").fetchone()[0] == 0:
            return 0, 0
        scope = "_model_scope"
        for table in (TRANSITIONS_TABLE, LIFECYCLE_TABLE):
            con.execute(f"DELETE FROM {table} WHERE operation_id IN (SELECT operation_id FROM {scope})")
    t_cols = ", ".join(c for c, _ in TRANSITION_COLUMNS)
    l_cols = ", ".join(c for c, _ in LIFECYCLE_COLUMNS)
    n_rows = con.execute(f"INSERT INTO {TRANSITIONS_TABLE} ({t_cols}) {transitions_select(scope)}").fetchone()[0]
    n_ops = con.execute(
        f"INSERT INTO {LIFECYCLE_TABLE} ({l_cols}) {lifecycle_select(TRANSITIONS_TABLE, scope)}"
    ).fetchone()[0]
    con.execute("DROP TABLE IF EXISTS _model_scope")
    return int(n_ops), int(n_rows)


def refresh_models(wh: Warehouse, *, full: bool = False) -> RefreshResult:
    """Bring the model tables up to date with the raw tables, in one transaction.

    Arguments: ``wh`` a writable warehouse; ``full`` rebuilds from scratch (also done on the first run and when
    :data:`MODEL_VERSION` changes). Returns a :class:`RefreshResult`.
    """
    started = time.perf_counter()
    with wh.transaction():
        rebuilt = _needs_rebuild(wh, full)
        if rebuilt:
            _rebuild(wh)
        events_wm, ops_wm = _watermarks(wh)
        n_ops, n_rows = _fold_in(wh, rebuilt)
        wh.set_cursor(MODELS_STREAM, {
            "version": MODEL_VERSION, "events_synced_at": events_wm, "operations_synced_at": ops_wm,
        })
    return RefreshResult(n_ops, n_rows, rebuilt, time.perf_counter() - started)
