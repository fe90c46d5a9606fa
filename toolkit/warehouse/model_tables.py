"""Modelled data kept up to date at sync time: the materialised tables behind the public views.

:func:`refresh_models` runs at the end of every sync, inside the sync's writer connection, after all raw rows are
committed. It is incremental (it recomputes only the operations whose events or record arrived since its last run,
found by the watermark it keeps in ``sync_state`` under the stream ``models``: the newest ``write_seq`` it folded
in) and idempotent (a second run with
nothing new changes nothing), and it works in pieces that fit DuckDB's memory limit, retried smaller or with more
memory when one does not (see :mod:`.memory`). The rows it writes are exactly what the live views compute (see
:mod:`toolkit.warehouse.views`), so the public views give the same answer before and after it runs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import duckdb

from .dictionary import apply_comments
from .memory import is_out_of_memory, memory_limit, raise_memory_limit, with_more_memory
from .store import Warehouse
from .views import (
    LIFECYCLE_MODEL_COLUMNS,
    LIFECYCLE_TABLE,
    MODEL_TABLES,
    MODEL_VERSION,
    MODELS_STREAM,
    REFERENCE_COLUMNS,
    REFERENCE_TABLE,
    TRANSITION_COLUMNS,
    TRANSITIONS_TABLE,
    lifecycle_select,
    model_table_statements,
    record_hash,
    stay_reference_select,
    transitions_select,
)

#: Operations recomputed per piece, per byte of DuckDB's memory limit (a first build over a long history then fits
#: the models' memory limit: 256 MB gives pieces of about 32,000 operations, which a piece's grouping and window hold
#: on two threads; measured at 10M events, a first build took 38 s this way against 58-61 s on one thread under
#: 128 MB, and pieces twice as large spilled and ran out of memory on two threads), and the bounds. A piece that runs
#: out of memory anyway is retried on one thread, then split, and at :data:`MIN_PIECE` with a higher limit
#: (:mod:`.memory`).
BYTES_PER_OPERATION = 8_000
CHUNK_BOUNDS = (10_000, 1_000_000)
MIN_PIECE = 500
#: Under a memory limit below this, the refresh runs on one thread (each thread holds its own working set) unless
#: its caller asks for more (a sync asks for two: see ``toolkit.loader.tuning.Tuning.models_threads``).
ONE_THREAD_BELOW = 1e9
#: Time buckets the stale operations are counted in to plan the pieces (by creation time, without sorting them).
PLAN_BUCKETS = 4096


@dataclass(frozen=True)
class RefreshResult:
    """What one refresh did: operations recomputed, rows written, whether it rebuilt everything, seconds, and the
    retries an out-of-memory error took (``retries``) with the highest memory limit used (``memory_limit``)."""

    operations: int
    transitions: int
    rebuilt: bool
    seconds: float
    pieces: int = 0
    retries: int = 0
    memory_limit: str | None = None


@dataclass(frozen=True)
class _Piece:
    """Stale operations created in ``[lo, hi)`` (unix seconds) whose id hashes to ``part`` modulo ``parts``;
    ``size`` is how many there are (halved, as an estimate, when a piece is split)."""

    lo: int
    hi: int
    parts: int
    part: int
    size: int

    def predicate(self) -> str:
        cut = f" AND hash(operation_id) % {self.parts} = {self.part}" if self.parts > 1 else ""
        return f"created_s >= {self.lo} AND created_s < {self.hi}{cut}"

    def split(self) -> tuple[_Piece, _Piece]:
        half = max(self.size // 2, 1)
        return (
            _Piece(self.lo, self.hi, self.parts * 2, self.part, half),
            _Piece(self.lo, self.hi, self.parts * 2, self.part + self.parts, half),
        )


def _watermarks(wh: Warehouse) -> tuple[int | None, int | None]:
    """The newest ``write_seq`` of events and operations (the number of the last transaction that wrote one: see
    :mod:`.write_seq`; never the clock, which may step backwards)."""
    row = wh.con.execute(
        "SELECT (SELECT max(write_seq) FROM events), (SELECT max(write_seq) FROM operations)"
    ).fetchone()
    return row[0], row[1]


def _needs_rebuild(wh: Warehouse, full: bool) -> bool:
    state = wh.get_cursor(MODELS_STREAM)
    return full or not isinstance(state, dict) or state.get("version") != MODEL_VERSION


def _rebuild(wh: Warehouse) -> None:
    """Recreate the model tables empty (their definition may have changed) and forget the watermark: every
    operation becomes stale, and a run stopped before the end rebuilds again."""
    with wh.transaction() as con:
        for table in MODEL_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in model_table_statements():
            con.execute(statement)
        con.execute("DELETE FROM sync_state WHERE stream = ?", [MODELS_STREAM])
    apply_comments(wh.con)  # the new tables' dictionary entries


def _stage_stale(wh: Warehouse) -> None:
    """The stale operations with their creation second, in the temp table ``_model_stale`` (no sort: a sort of a
    long history's ids does not spill and outgrew the sync's memory at 1.6M operations)."""
    wh.con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _model_stale AS
        SELECT s.operation_id, s.new_events, coalesce(CAST(epoch(o.created_at) AS BIGINT), {_NO_TIME}) AS created_s
        FROM model_stale_operations s LEFT JOIN operations o USING (operation_id)
    """)


#: ``created_s`` of an operation without a record (events only): after every real time.
_NO_TIME = 2**62


def _plan(wh: Warehouse, size: int) -> list[_Piece]:
    """Pieces of about ``size`` stale operations each, oldest first: the model tables then keep operations in about
    creation order, and the next syncs, which mostly touch recent operations, delete rows from few storage vectors
    (a delete's bookkeeping grows with the vectors it touches). The stale operations are counted per time bucket
    and consecutive buckets grouped; a bucket busier than ``size`` is split by id hash."""
    con = wh.con
    lo, hi = con.execute(
        f"SELECT min(created_s), max(created_s) FROM _model_stale WHERE created_s < {_NO_TIME}"
    ).fetchone()
    lo, hi = (int(lo), int(hi)) if lo is not None else (0, 0)
    width = max(1, -(-(hi - lo + 1) // PLAN_BUCKETS))
    # operations without a record (known from events only) go last, in a bucket of their own
    counts = con.execute(
        f"SELECT CASE WHEN created_s >= {_NO_TIME} THEN {PLAN_BUCKETS} ELSE (created_s - ?) // ? END AS b, count(*) "
        "FROM _model_stale GROUP BY b ORDER BY b",
        [lo, width],
    ).fetchall()
    if not counts:
        return []

    def edge(bucket: int) -> int:
        """Where a bucket starts, in unix seconds (the last bucket, of operations without a record, at _NO_TIME)."""
        return lo + bucket * width if bucket < PLAN_BUCKETS else _NO_TIME + bucket - PLAN_BUCKETS

    pieces: list[_Piece] = []
    start, held = None, 0

    def close(end_bucket: int) -> None:
        nonlocal start, held
        if start is not None:
            pieces.append(_Piece(edge(start), edge(end_bucket), 1, 0, held))
        start, held = None, 0

    for bucket, count in counts:
        bucket, count = int(bucket), int(count)
        if count >= size:
            close(bucket)
            parts = -(-count // size)
            pieces += [_Piece(edge(bucket), edge(bucket + 1), parts, p, count // parts) for p in range(parts)]
            continue
        if start is not None and held + count > size:
            close(bucket)
        if start is None:
            start = bucket
        held += count
    close(int(counts[-1][0]) + 1)
    return pieces


def _fold_in(wh: Warehouse, rebuilt: bool, between: Callable[[], bool] | None) -> tuple[int, int, int, int]:
    """Replace the model rows of every stale operation by a fresh computation from the raw tables, with the same
    SELECTs the live views use; returns (operations, transitions, pieces, retries).

    Each piece is its own transaction (a piece that fails leaves the others, and the watermark is written only once
    every piece is in), so an out-of-memory error costs one piece, which is retried on one thread, then split, then
    with a higher limit. ``between`` runs between two pieces; when it returns True the connection was reopened
    (a reader was let in) and the stale set is staged again (it has not changed: the watermark has not moved)."""

    def stage() -> None:
        _stage_stale(wh)
        if not rebuilt:  # before planning: the pieces are sized by what changed, not by what was listed again
            _drop_unchanged_records(wh, "_model_stale")

    def stage_and_plan() -> list[_Piece]:
        stage()
        return _plan(wh, _chunk_operations(wh))

    queue = with_more_memory(lambda: wh.con, stage_and_plan)
    n_pieces = len(queue)
    n_ops = n_rows = retries = 0
    while queue:
        piece = queue.pop(0)
        try:
            with wh.transaction():
                wh.con.execute(
                    "CREATE OR REPLACE TEMP TABLE _model_scope AS SELECT operation_id, new_events FROM _model_stale "
                    f"WHERE {piece.predicate()}"
                )
                ops, rows = _fold_in_scope(wh, "_model_scope", delete=not rebuilt)
        except duckdb.Error as exc:
            if not is_out_of_memory(exc):
                raise
            retries += 1
            queue[:0] = _smaller(wh, piece, exc)
            continue
        n_ops, n_rows = n_ops + ops, n_rows + rows
        if queue and between is not None:
            settings = _current(wh.con, _PIECE_SETTINGS)
            if between():  # a new connection: this refresh's settings again, and its temp table
                for name, value in settings.items():
                    wh.con.execute(f"SET {name} = ?", [value])
                with_more_memory(lambda: wh.con, stage)
    for table in ("_model_scope", "_model_stale", "_model_same", *_STAGED):
        wh.con.execute(f"DROP TABLE IF EXISTS {table}")
    return n_ops, n_rows, n_pieces, retries


#: Settings a refresh changes for its pieces (see :func:`_lean_settings` and :func:`_smaller`).
_PIECE_SETTINGS = ("threads", "preserve_insertion_order", "memory_limit")


def _current(con: duckdb.DuckDBPyConnection, names: tuple[str, ...]) -> dict[str, object]:
    """The current values of DuckDB settings, by name."""
    return {name: con.execute(f"SELECT current_setting('{name}')").fetchone()[0] for name in names}


def _smaller(wh: Warehouse, piece: _Piece, exc: BaseException) -> list[_Piece]:
    """What to retry after ``piece`` ran out of memory: the same piece on one thread, else its two halves, else (at
    :data:`MIN_PIECE` operations) the same piece under a doubled limit. Raises ``exc`` when none is left."""
    con = wh.con
    if int(con.execute("SELECT current_setting('threads')").fetchone()[0]) > 1:
        con.execute("SET threads = 1")
        return [piece]
    if piece.size > MIN_PIECE:
        return list(piece.split())
    if raise_memory_limit(con):
        return [piece]
    raise exc


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


def _chunk_operations(wh: Warehouse) -> int:
    """How many operations one piece may recompute under the connection's memory limit."""
    limit = memory_limit(wh.con)
    if limit == float("inf"):
        return CHUNK_BOUNDS[1]
    return int(min(max(limit // BYTES_PER_OPERATION, CHUNK_BOUNDS[0]), CHUNK_BOUNDS[1]))


#: Temp tables of one piece: its new transitions and lifecycles, and the changes to the stays reference.
_STAGED = ("_model_t", "_model_l", "_model_ref_delta")


def _fold_in_scope(wh: Warehouse, scope: str, *, delete: bool) -> tuple[int, int]:
    """(Delete and) recompute the model rows of the operations listed in the temp table ``scope``, and move the
    stays reference (``model_stay_reference``) by what their stays took away and brought: it is the count over
    every operation, kept by adding and removing the contributions of the operations recomputed."""
    con = wh.con
    ref_cols = ", ".join(c for c, _ in REFERENCE_COLUMNS)
    keys = ", ".join(c for c, _ in REFERENCE_COLUMNS if c != "stays")
    con.execute(f"CREATE OR REPLACE TEMP TABLE _model_ref_delta AS SELECT {ref_cols} FROM {REFERENCE_TABLE} LIMIT 0")
    if delete:
        old = stay_reference_select(
            f"(SELECT * FROM {TRANSITIONS_TABLE} WHERE operation_id IN (SELECT operation_id FROM {scope}))",
            f"(SELECT * FROM {LIFECYCLE_TABLE} WHERE operation_id IN (SELECT operation_id FROM {scope}))",
        )
        con.execute(f"INSERT INTO _model_ref_delta SELECT * REPLACE (-stays AS stays) FROM ({old})")
        for table in (TRANSITIONS_TABLE, LIFECYCLE_TABLE):
            con.execute(f"DELETE FROM {table} WHERE operation_id IN (SELECT operation_id FROM {scope})")
    t_cols = ", ".join(c for c, _ in TRANSITION_COLUMNS)
    l_cols = ", ".join(c for c, _ in LIFECYCLE_MODEL_COLUMNS)
    con.execute(f"CREATE OR REPLACE TEMP TABLE _model_t AS {transitions_select(scope)}")
    rows = con.execute(f"INSERT INTO {TRANSITIONS_TABLE} ({t_cols}) SELECT {t_cols} FROM _model_t").fetchone()[0]
    con.execute(f"CREATE OR REPLACE TEMP TABLE _model_l AS {lifecycle_select('_model_t', scope)}")
    ops = con.execute(f"INSERT INTO {LIFECYCLE_TABLE} ({l_cols}) SELECT {l_cols} FROM _model_l").fetchone()[0]
    con.execute(f"INSERT INTO _model_ref_delta {stay_reference_select('_model_t', '_model_l')}")
    # the reference is small (networks x statuses x age bins x outcome attributes): rewritten whole
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _model_ref_new AS
        SELECT {keys}, sum(stays)::BIGINT AS stays
        FROM (SELECT {ref_cols} FROM {REFERENCE_TABLE} UNION ALL SELECT {ref_cols} FROM _model_ref_delta)
        GROUP BY ALL HAVING sum(stays) <> 0
    """)
    con.execute(f"DELETE FROM {REFERENCE_TABLE}")
    con.execute(f"INSERT INTO {REFERENCE_TABLE} ({ref_cols}) SELECT {ref_cols} FROM _model_ref_new")
    con.execute("DROP TABLE _model_ref_new")
    return int(ops), int(rows)


@contextlib.contextmanager
def _lean_settings(wh: Warehouse, threads: int | None) -> Iterator[None]:
    """While the block runs: model rows written in any order, and ``threads`` threads (by default one under a memory
    limit below :data:`ONE_THREAD_BELOW` bytes, else the connection's setting); the settings, and the memory limit
    a retry may have raised, are restored after (read again: ``between`` may have reopened the connection)."""
    con = wh.con
    before = _current(con, _PIECE_SETTINGS)
    con.execute("SET preserve_insertion_order = false")
    if threads is None and memory_limit(con) < ONE_THREAD_BELOW:
        threads = 1
    if threads is not None:
        con.execute(f"SET threads = {max(1, int(threads))}")
    try:
        yield
    finally:
        for name, value in before.items():
            wh.con.execute(f"SET {name} = ?", [value])


def refresh_models(
    wh: Warehouse, *, full: bool = False, threads: int | None = None, between: Callable[[], bool] | None = None
) -> RefreshResult:
    """Bring the model tables up to date with the raw tables.

    Arguments: ``wh`` a writable warehouse; ``full`` rebuilds from scratch (also done on the first run and when
    :data:`MODEL_VERSION` changes); ``threads`` DuckDB threads for the refresh (default: one under a memory limit
    below :data:`ONE_THREAD_BELOW`, else the connection's setting); ``between``, called between two pieces, may
    let a reader in (returning True when it reopened the connection, as :meth:`Warehouse.yield_to_readers` does).
    The work goes in pieces, each its own transaction, and the watermark is written once all are in: a run stopped
    anywhere leaves the views exact and the next refresh redoes what is missing. An out-of-memory error is retried
    (see :func:`_smaller`), so the memory limit is a target, not a cause of failure, up to
    :func:`~toolkit.warehouse.memory.memory_ceiling`. Returns a :class:`RefreshResult`.
    """
    started = time.perf_counter()
    with _lean_settings(wh, threads):
        rebuilt = _needs_rebuild(wh, full)
        if rebuilt:
            with_more_memory(lambda: wh.con, lambda: _rebuild(wh))
        events_wm, ops_wm = with_more_memory(lambda: wh.con, lambda: _watermarks(wh))
        n_ops, n_rows, pieces, retries = _fold_in(wh, rebuilt, between)
        used = wh.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        with wh.transaction():
            wh.set_cursor(
                MODELS_STREAM,
                {
                    "version": MODEL_VERSION,
                    "events_write_seq": events_wm,
                    "operations_write_seq": ops_wm,
                },
            )
    return RefreshResult(n_ops, n_rows, rebuilt, time.perf_counter() - started, pieces, retries, str(used))
