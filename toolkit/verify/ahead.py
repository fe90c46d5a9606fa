"""The first batch of events to verify, read before the warehouse opens for writing, so the pool has work meanwhile.

Opening a warehouse for writing takes a quarter of a second on a small one (every block's checksum is read, the
schema brought up to date: :class:`~toolkit.warehouse.Warehouse`), and a worker of the pool had nothing to check
until it was done. So, with the writer lock already held, verify first reads the first events pending (as many as
say whether the pool is worth its start, 4,000) over a read-only connection of its own, closes it, and hands a
batch of them to the pool; the workers check it while the file is opened for writing. Nothing is written before
that open has checked the file, as before: a file it refuses (damaged, newer, not a warehouse) gets no verdict, and
what the workers said is dropped.

The batch is read only from a warehouse whose migrations are all recorded (the open that follows changes none of
its rows). Anything else, or any error reading it (another process holds the file for writing, a file that is not
a warehouse), and there is no batch ahead: verify goes on as without it, and the open says what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ..warehouse.identity import CONNECTION_CONFIG, MARKER_TABLE, SCHEMA_VERSION
from ..warehouse.migrations import MIGRATIONS, applied
from ..warehouse.store import to_arrow_table

#: The columns verify reads of each event, in the order its batches hold them.
COLUMNS_SQL = "SELECT e.event_id, e.type, e.payload, e.proofs, e.write_seq"


@dataclass(frozen=True)
class Ahead:
    """How many events were pending, ``todo`` (exact when fewer than the pool's threshold, then no batch; else at
    least that many), and the batch for the pool."""

    todo: int
    batch: pa.RecordBatch | None


def read_ahead(
    path: Path, pending_sql: str, params: list[Any], rows: int, least: int, memory_limit: str
) -> Ahead | None:
    """The first ``rows`` events ``pending_sql`` selects when at least ``least`` are pending (no batch otherwise),
    read over a read-only connection closed before this returns; None when the file cannot be read so, or its
    migrations are not all recorded. Call holding the writer lock (nothing may write between this and the open for
    writing).

    No ``count(*)``: it would join the events to their verdicts once more (at ten million events a hash table of
    every verdict); reading up to ``least`` rows says whether the pool is worth starting, and that is all a count
    was for."""
    try:
        con = duckdb.connect(str(path), read_only=True, config=CONNECTION_CONFIG)
    except duckdb.Error:
        return None
    try:
        con.execute("SET memory_limit = ?", [memory_limit])
        if not _settled(con):
            return None
        read = max(int(rows), int(least))
        table = to_arrow_table(con.sql(f"{COLUMNS_SQL} {pending_sql} LIMIT {read}", params=params))
    except duckdb.Error:
        return None
    finally:
        con.close()
    if table.num_rows < least:
        return Ahead(table.num_rows, None)
    batches = table.slice(0, rows).combine_chunks().to_batches()
    return Ahead(table.num_rows, batches[0] if batches else None)


def _settled(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the warehouse has this toolkit's schema version and every migration recorded."""
    version = con.execute(f"SELECT value FROM {MARKER_TABLE} WHERE key = 'schema_version'").fetchall()
    if not version or str(version[0][0]).strip() != SCHEMA_VERSION:
        return False
    done = applied(con)
    return all(m.name in done for m in MIGRATIONS)


__all__ = ["COLUMNS_SQL", "Ahead", "read_ahead"]
