"""The write sequence: a number per transaction that writes rows, increasing whatever the wall clock does.

Each raw table's ``write_seq`` holds the number of the transaction that last wrote the row (``synced_at`` keeps the
wall time, for people). The sync decides with it, never with the clock: which stored copies of an event a
transaction supersedes (those of another number), which events the patch has not applied yet (past its watermark)
and which operations the model tables have not folded in (past theirs). A clock stepped backwards between two
runs, or within one, would make ``now()`` misclassify rows; a counter in the warehouse, taken in the transaction
that writes, cannot.

The counter is the ``sync_state`` row ``write_seq`` (``{"last": n}``): taken and written in the writing
transaction, so a rolled-back transaction gives its number back along with its rows.
"""

from __future__ import annotations

import duckdb

#: The ``sync_state`` stream holding the last number taken.
STREAM = "write_seq"
#: The tables whose rows carry ``write_seq`` (every raw table with ``synced_at``).
TABLES = ("networks", "channels", "wallets", "watchers", "operations", "queries", "events")


def next_write_seq(con: duckdb.DuckDBPyConnection) -> int:
    """Take the next number (call inside the transaction that writes with it)."""
    rows = con.execute(
        "UPDATE sync_state SET cursor = json_object('last', CAST(cursor->>'last' AS BIGINT) + 1), updated_at = now() "
        "WHERE stream = ? RETURNING CAST(cursor->>'last' AS BIGINT)",
        [STREAM],
    ).fetchall()
    if rows:
        return int(rows[0][0])
    con.execute("INSERT INTO sync_state VALUES (?, json_object('last', 1), now())", [STREAM])
    return 1


def migrate(con: duckdb.DuckDBPyConnection) -> bool:
    """Give a warehouse written before the write sequence its ``write_seq`` columns, in one transaction; returns
    whether it did.

    Every distinct ``synced_at`` stored (one per transaction that wrote) gets a number in time order, so rows keep
    their order; the patch's and the models' watermarks, kept as times, become the number of the newest write at or
    before them, so what they had seen stays seen and nothing else. A crash leaves the file as it was."""
    missing = [
        t
        for (t,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
            "AND table_schema = 'main' AND list_contains(?, table_name) AND table_name NOT IN ("
            "SELECT table_name FROM information_schema.columns WHERE table_catalog = current_database() "
            "AND column_name = 'write_seq')",
            [list(TABLES)],
        ).fetchall()
    ]
    if not missing:
        return False
    union = " UNION ".join(f"SELECT DISTINCT synced_at FROM {t}" for t in TABLES)
    con.execute("BEGIN TRANSACTION")
    try:
        for table in missing:
            con.execute(f"ALTER TABLE {table} ADD COLUMN write_seq BIGINT")
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _write_seqs AS SELECT synced_at, row_number() OVER (ORDER BY synced_at) "
            f"AS seq FROM ({union}) WHERE synced_at IS NOT NULL"
        )
        for table in TABLES:
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
