"""Modelled data kept up to date at sync time: the materialised tables behind the public views.

:func:`refresh_models` runs at the end of every sync, inside the sync's writer connection, after all raw rows are
committed. It is incremental (it recomputes only the operations whose events or record arrived since its last run,
found by the watermark it keeps in ``sync_state`` under the stream ``models``) and idempotent (a second run with
nothing new changes nothing). The rows it writes are exactly what the live views compute (see
:mod:`toolkit.warehouse.views`), so the public views give the same answer before and after it runs.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

from .store import Warehouse
from .views import (
    LIFECYCLE_MODEL_COLUMNS,
    LIFECYCLE_TABLE,
    MODELS_STREAM,
    TRANSITION_COLUMNS,
    TRANSITIONS_TABLE,
    lifecycle_select,
    model_table_statements,
    record_hash,
    transitions_select,
)

#: Bump when the model tables' definition changes: the next refresh rebuilds them from the raw tables.
MODEL_VERSION = 2
#: Operations recomputed per statement, per byte of DuckDB's memory limit (a first build over a long history then
#: fits the sync's memory ceiling: 192 MB gives chunks of about 100,000 operations), and the bounds.
BYTES_PER_OPERATION = 2_000
CHUNK_BOUNDS = (10_000, 1_000_000)
#: Under a memory limit below this, the refresh runs on one thread (each thread holds its own working set) unless
#: its caller asks for more (a sync asks for two: see ``toolkit.sync.MODELS_THREADS``).
ONE_THREAD_BELOW = 1e9
_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30,
          "TIB": 2**40}


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
    """Recreate the model tables empty (their definition may have changed) and forget the watermark: every
    operation becomes stale."""
    for table in (TRANSITIONS_TABLE, LIFECYCLE_TABLE):
        wh.con.execute(f"DROP TABLE IF EXISTS {table}")
    for statement in model_table_statements():
        wh.con.execute(statement)
    wh.con.execute("DELETE FROM sync_state WHERE stream = ?", [MODELS_STREAM])


def _fold_in(wh: Warehouse, rebuilt: bool) -> tuple[int, int]:
    """Replace the model rows of every stale operation by a fresh computation from the raw tables, with the same
    SELECTs the live views use; returns (operations, transitions) written.

    The work goes in chunks sized to the memory limit (so a first build of a long history fits the sync's memory
    ceiling), oldest operations first: the model tables then keep operations in about creation order, and the next
    syncs, which mostly touch recent operations, delete rows from few storage vectors (a delete's bookkeeping
    grows with the vectors it touches)."""
    con = wh.con
    con.execute("""
        CREATE OR REPLACE TEMP TABLE _model_stale AS
        SELECT s.operation_id, s.new_events,
            row_number() OVER (ORDER BY o.created_at NULLS LAST, s.operation_id) - 1 AS position
        FROM model_stale_operations s LEFT JOIN operations o USING (operation_id)
    """)
    stale = con.execute("SELECT count(*) FROM _model_stale").fetchone()[0]
    size = _chunk_operations(wh)
    n_ops = n_rows = 0
    for start in range(0, stale, size):
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _model_scope AS SELECT operation_id, new_events FROM _model_stale "
            "WHERE position >= ? AND position < ?", [start, start + size],
        )
        if not rebuilt:
            _drop_unchanged_records(wh, "_model_scope")
        ops, rows = _fold_in_scope(wh, "_model_scope", delete=not rebuilt)
        n_ops, n_rows = n_ops + ops, n_rows + rows
    for table in ("_model_scope", "_model_stale", "_model_same"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    return n_ops, n_rows


def _drop_unchanged_records(wh: Warehouse, scope: str) -> None:
    """Leave out of ``scope`` the operations whose only news is their record stored again with the fields the models
    use unchanged (each sync re-lists the operations in flight): recomputing them would give the same rows."""
    con = wh.con
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _model_same AS
        SELECT c.operation_id
        FROM {scope} c
        JOIN operations o ON o.operation_id = c.operation_id
        JOIN {LIFECYCLE_TABLE} m ON m.operation_id = c.operation_id
        WHERE NOT c.new_events AND m.record_hash = {record_hash("o")}
    """)
    con.execute(f"DELETE FROM {scope} WHERE operation_id IN (SELECT operation_id FROM _model_same)")


def _memory_limit(wh: Warehouse) -> float:
    """The connection's memory limit in bytes (infinity when DuckDB reports none)."""
    row = wh.con.execute("SELECT value FROM duckdb_settings() WHERE name = 'memory_limit'").fetchone()
    match = re.match(r"^\s*([0-9.]+)\s*([A-Za-z]+)\s*$", str(row[0]) if row else "")
    limit = float(match.group(1)) * _UNITS.get(match.group(2).upper(), 0) if match else 0
    return limit if limit > 0 else float("inf")


def _chunk_operations(wh: Warehouse) -> int:
    """How many operations one statement may recompute under the connection's memory limit."""
    limit = _memory_limit(wh)
    if limit == float("inf"):
        return CHUNK_BOUNDS[1]
    return int(min(max(limit // BYTES_PER_OPERATION, CHUNK_BOUNDS[0]), CHUNK_BOUNDS[1]))


def _fold_in_scope(wh: Warehouse, scope: str, *, delete: bool) -> tuple[int, int]:
    """(Delete and) recompute the model rows of the operations listed in the temp table ``scope``."""
    con = wh.con
    for table in (TRANSITIONS_TABLE, LIFECYCLE_TABLE) if delete else ():
        con.execute(f"DELETE FROM {table} WHERE operation_id IN (SELECT operation_id FROM {scope})")
    t_cols = ", ".join(c for c, _ in TRANSITION_COLUMNS)
    l_cols = ", ".join(c for c, _ in LIFECYCLE_MODEL_COLUMNS)
    rows = con.execute(f"INSERT INTO {TRANSITIONS_TABLE} ({t_cols}) {transitions_select(scope)}").fetchone()[0]
    ops = con.execute(
        f"INSERT INTO {LIFECYCLE_TABLE} ({l_cols}) {lifecycle_select(TRANSITIONS_TABLE, scope)}"
    ).fetchone()[0]
    return int(ops), int(rows)


@contextlib.contextmanager
def _lean_settings(wh: Warehouse, threads: int | None) -> Iterator[None]:
    """While the block runs: model rows written in any order, and ``threads`` threads (by default one under a memory
    limit below :data:`ONE_THREAD_BELOW` bytes, else the connection's setting); the settings are restored after."""
    con = wh.con
    order = con.execute("SELECT current_setting('preserve_insertion_order')").fetchone()[0]
    before = con.execute("SELECT current_setting('threads')").fetchone()[0]
    con.execute("SET preserve_insertion_order = false")
    if threads is None and _memory_limit(wh) < ONE_THREAD_BELOW:
        threads = 1
    if threads is not None:
        con.execute(f"SET threads = {max(1, int(threads))}")
    try:
        yield
    finally:
        con.execute(f"SET preserve_insertion_order = {'true' if order else 'false'}")
        con.execute(f"SET threads = {int(before)}")


def refresh_models(wh: Warehouse, *, full: bool = False, threads: int | None = None) -> RefreshResult:
    """Bring the model tables up to date with the raw tables, in one transaction.

    Arguments: ``wh`` a writable warehouse; ``full`` rebuilds from scratch (also done on the first run and when
    :data:`MODEL_VERSION` changes); ``threads`` DuckDB threads for the refresh (default: one under a memory limit
    below :data:`ONE_THREAD_BELOW`, else the connection's setting). Returns a :class:`RefreshResult`.
    """
    started = time.perf_counter()
    with _lean_settings(wh, threads), wh.transaction():
        rebuilt = _needs_rebuild(wh, full)
        if rebuilt:
            _rebuild(wh)
        events_wm, ops_wm = _watermarks(wh)
        n_ops, n_rows = _fold_in(wh, rebuilt)
        wh.set_cursor(MODELS_STREAM, {
            "version": MODEL_VERSION, "events_synced_at": events_wm, "operations_synced_at": ops_wm,
        })
    return RefreshResult(n_ops, n_rows, rebuilt, time.perf_counter() - started)
