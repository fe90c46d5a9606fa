"""The write sequence: a number per transaction that writes rows, increasing whatever the wall clock does.

Each raw table's ``write_seq`` holds the number of the transaction that last wrote the row (``synced_at`` keeps the
wall time, for people). The sync decides with it, never with the clock: which stored copies of an event a
transaction supersedes (those of another number), which events the patch has not applied yet (past its watermark)
and which operations the model tables have not folded in (past theirs). A clock stepped backwards between two
runs, or within one, would make ``now()`` misclassify rows; a counter in the warehouse, taken in the transaction
that writes, cannot.

The counter is the ``sync_state`` row ``write_seq`` (``{"last": n}``): taken and written in the writing
transaction, so a rolled-back transaction gives its number back along with its rows. The tables that carry it are
:data:`toolkit.warehouse.schema.WRITE_SEQ_TABLES`; a warehouse written before it gets it from the migration
``write_seq`` (:mod:`toolkit.warehouse.migrations`).
"""

from __future__ import annotations

import duckdb

#: The ``sync_state`` stream holding the last number taken.
STREAM = "write_seq"


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
