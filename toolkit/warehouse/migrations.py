"""Every change to the shape of a warehouse made since the first release, as one ordered list of migrations.

A writer opening a warehouse (:meth:`toolkit.warehouse.Warehouse.ensure_schema`) creates the tables a file lacks
from :mod:`toolkit.warehouse.schema`, then runs :func:`migrate`: each migration of :data:`MIGRATIONS` the file has
not recorded yet, in order. A migration is a small function that looks at the file, does its change only where the
file still needs it (so running it twice, or on a new warehouse, changes nothing), does it in one transaction (a
crash leaves the file as it was), and returns whether it changed anything. Once it has run, the file records it in
``chainops_meta`` (``migration:<name>``, with when it was applied), so a warehouse knows which it has and a later open
skips it. A migration is never edited or removed once released; a new change to the tables is a new migration at the
end of the list (and a new column in the declarations of :mod:`.schema`, which a new warehouse gets at once).

Columns a migration adds to an older file come after the ones it had: an upgraded file has every column of a new
one, with the same types, though not always in the same order (``SELECT *`` users: name the columns).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from .identity import MARKER_TABLE
from .schema import KEYLESS_TABLES, WRITE_SEQ_TABLES
from .write_seq import STREAM, next_write_seq

Connection = duckdb.DuckDBPyConnection
#: The ``chainops_meta`` key prefix of a recorded migration.
RECORD_PREFIX = "migration:"


@dataclass(frozen=True)
class Migration:
    """One change to the shape of a warehouse: its name (recorded in the file) and the function that applies it
    where needed (returns whether it changed anything)."""

    name: str
    apply: Callable[[Connection], bool]


@contextlib.contextmanager
def _transaction(con: Connection) -> Iterator[Connection]:
    """One transaction that takes a write sequence number, as every writing transaction does (see :mod:`.write_seq`)."""
    con.execute("BEGIN TRANSACTION")
    try:
        next_write_seq(con)
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _column_type(con: Connection, table: str, column: str) -> str | None:
    rows = con.execute(
        "SELECT data_type FROM information_schema.columns WHERE table_catalog = current_database() "
        "AND table_schema = 'main' AND table_name = ? AND column_name = ?",
        [table, column],
    ).fetchall()
    return rows[0][0] if rows else None


def drop_primary_keys(con: Connection) -> bool:
    """Rebuild without its PRIMARY KEY each of :data:`~.schema.KEYLESS_TABLES` that still has one (warehouses made
    before the keys were dropped; see :mod:`.schema`). DuckDB cannot drop a constraint, so the rows are copied to a
    new table that takes the old one's name."""
    keyed = [
        name
        for (name,) in con.execute(
            "SELECT DISTINCT table_name FROM duckdb_constraints() WHERE database_name = current_database() "
            "AND constraint_type = 'PRIMARY KEY' AND list_contains(?, table_name)",
            [list(KEYLESS_TABLES)],
        ).fetchall()
    ]
    if not keyed:
        return False
    with _transaction(con):
        for name in keyed:
            con.execute(f'CREATE TABLE "{name}__keyless" AS SELECT * FROM "{name}"')
            con.execute(f'DROP TABLE "{name}"')
            con.execute(f'ALTER TABLE "{name}__keyless" RENAME TO "{name}"')
    return True


def query_target_text(con: Connection) -> bool:
    """Turn the JSON ``queries.target`` of a warehouse made before 0.8 alignment into the contract address
    (VARCHAR): an object becomes its ``contract_address`` and is kept whole in ``extra.target``; a JSON string
    becomes that string; any other value is kept under ``extra._invalid`` (NULL in the column, or its digits for a
    number), as a sync would store it."""
    if _column_type(con, "queries", "target") != "JSON":
        return False
    with _transaction(con):
        con.execute(
            "UPDATE queries SET extra = json_merge_patch(coalesce(extra, '{}'), "
            "CASE json_type(target) WHEN 'OBJECT' THEN json_object('target', target) "
            "ELSE json_object('_invalid', json_object('target', target)) END) "
            "WHERE target IS NOT NULL AND json_type(target) NOT IN ('VARCHAR', 'NULL')"
        )
        con.execute(
            "ALTER TABLE queries ALTER target SET DATA TYPE VARCHAR USING (CASE json_type(target) "
            "WHEN 'OBJECT' THEN target->>'$.contract_address' WHEN 'VARCHAR' THEN target->>'$' "
            "WHEN 'BIGINT' THEN CAST(target AS VARCHAR) WHEN 'UBIGINT' THEN CAST(target AS VARCHAR) END)"
        )
    return True


def add_write_seq(con: Connection) -> bool:
    """Give a warehouse written before the write sequence (:mod:`.write_seq`) its ``write_seq`` columns.

    Every distinct ``synced_at`` stored (one per transaction that wrote) gets a number in time order, so rows keep
    their order; the patch's and the models' watermarks, kept as times, become the number of the newest write at or
    before them, so what they had seen stays seen and nothing else."""
    tables = list(WRITE_SEQ_TABLES)
    missing = [
        t
        for (t,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
            "AND table_schema = 'main' AND list_contains(?, table_name) AND table_name NOT IN ("
            "SELECT table_name FROM information_schema.columns WHERE table_catalog = current_database() "
            "AND column_name = 'write_seq')",
            [tables],
        ).fetchall()
    ]
    if not missing:
        return False
    union = " UNION ".join(f"SELECT DISTINCT synced_at FROM {t}" for t in tables)
    con.execute("BEGIN TRANSACTION")
    try:
        for table in missing:
            con.execute(f"ALTER TABLE {table} ADD COLUMN write_seq BIGINT")
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _write_seqs AS SELECT synced_at, row_number() OVER (ORDER BY synced_at) "
            f"AS seq FROM ({union}) WHERE synced_at IS NOT NULL"
        )
        for table in tables:
            con.execute(f"UPDATE {table} t SET write_seq = s.seq FROM _write_seqs s WHERE t.synced_at = s.synced_at")

        def seq_at(path: str) -> str:
            """SQL: the number of the newest write at or before the time under ``path`` of the row's cursor."""
            return (
                "(SELECT max(seq) FROM _write_seqs WHERE synced_at <= "
                f"CAST(sync_state.cursor->>'{path}' AS TIMESTAMPTZ))"
            )

        con.execute(
            f"UPDATE sync_state SET cursor = json_object('write_seq', coalesce({seq_at('$.synced_at')}, 0)) "
            "WHERE stream = 'patch'"
        )
        con.execute(
            "UPDATE sync_state SET cursor = json_object('version', cursor->'$.version', "
            f"'events_write_seq', {seq_at('$.events_synced_at')}, "
            f"'operations_write_seq', {seq_at('$.operations_synced_at')}) WHERE stream = 'models'"
        )
        con.execute(
            "INSERT OR REPLACE INTO sync_state SELECT ?, json_object('last', greatest(coalesce(max(seq), 0), "
            "coalesce((SELECT max(CAST(cursor->>'last' AS BIGINT)) FROM sync_state WHERE stream = ?), 0))), now() "
            "FROM _write_seqs",
            [STREAM, STREAM],
        )
        con.execute("DROP TABLE _write_seqs")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return True


def add_sync_runs_event_window(con: Connection) -> bool:
    """``sync_runs.event_window`` came with event windows: NULL in the runs recorded before."""
    if _column_type(con, "sync_runs", "event_window") is not None:
        return False
    con.execute("ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS event_window JSON")
    return True


def add_events_proofs(con: Connection) -> bool:
    """``events.proofs`` came with verification (toolkit.verify): NULL in the rows synced before, until re-read."""
    if _column_type(con, "events", "proofs") is not None:
        return False
    con.execute("ALTER TABLE events ADD COLUMN proofs VARCHAR")
    return True


def add_sync_runs_models(con: Connection) -> bool:
    """``sync_runs.models`` came with the refresh's record (its pieces and retries): NULL in the runs before."""
    if _column_type(con, "sync_runs", "models") is not None:
        return False
    con.execute("ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS models JSON")
    return True


#: Every migration, in the order they are applied (the order they were made in). Append only.
MIGRATIONS: tuple[Migration, ...] = (
    Migration("drop_primary_keys", drop_primary_keys),
    Migration("query_target_text", query_target_text),
    Migration("write_seq", add_write_seq),
    Migration("sync_runs_event_window", add_sync_runs_event_window),
    Migration("events_proofs", add_events_proofs),
    Migration("sync_runs_models", add_sync_runs_models),
)


def applied(con: Connection) -> dict[str, str]:
    """The migrations the warehouse open on ``con`` has recorded: name -> when it was applied (ISO 8601, UTC)."""
    rows = con.execute(f"SELECT key, value FROM {MARKER_TABLE} WHERE starts_with(key, ?)", [RECORD_PREFIX]).fetchall()
    return {key.removeprefix(RECORD_PREFIX): value for key, value in rows}


def migrate(con: Connection, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[str]:
    """Apply, in order, each of ``migrations`` the warehouse has not recorded, and record it; returns the names of
    those that changed the file. Call with the tables and the marker created, between transactions."""
    done = applied(con)
    changed = []
    for migration in migrations:
        if migration.name in done:
            continue
        if migration.apply(con):
            changed.append(migration.name)
        con.execute(
            f"INSERT OR IGNORE INTO {MARKER_TABLE} VALUES (?, ?)",
            [RECORD_PREFIX + migration.name, datetime.now(UTC).isoformat(timespec="seconds")],
        )
    return changed
