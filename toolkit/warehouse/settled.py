"""Whether a warehouse's shape is already what :meth:`~toolkit.warehouse.Warehouse.ensure_schema` makes it.

Every writer runs ``ensure_schema`` when it opens a file: create the missing tables, run the migrations not yet
recorded, re-create the views and write the data dictionary's comments. On a file that already has all of it, that
is about 60 ms of DuckDB catalog work that changes nothing. So the catalog a full run leaves behind is summed up in
one digest (:func:`catalog_digest`: every table's and view's definition and comment, every column's type and
comment, every index, and the marker's rows with the names of the migrations recorded), and this process remembers
the digests it has seen right after a full run (:func:`remember_settled`). A file whose digest is one of those
already has exactly that shape: ``ensure_schema`` skips it. Anything else (a table or view dropped or replaced by
hand, a comment changed, a migration not recorded, a file made by another version of the toolkit) differs in its
digest, and gets the full run. Nothing is stored in the file: a new process starts with no digest remembered.
"""

from __future__ import annotations

import threading

import duckdb

from .identity import MARKER_TABLE
from .migrations import RECORD_PREFIX

_DIGEST_SQL = f"""
SELECT md5(string_agg(item, chr(10) ORDER BY item)) FROM (
    SELECT concat_ws(chr(9), 'table', table_name, sql, comment) AS item FROM duckdb_tables()
    WHERE database_name = current_database() AND schema_name = 'main' AND NOT temporary
    UNION ALL
    SELECT concat_ws(chr(9), 'view', view_name, sql, comment) FROM duckdb_views()
    WHERE database_name = current_database() AND schema_name = 'main' AND NOT temporary AND NOT internal
    UNION ALL
    SELECT concat_ws(chr(9), 'column', table_name, column_name, data_type, column_default, is_nullable, comment)
    FROM duckdb_columns()
    WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
    UNION ALL
    SELECT concat_ws(chr(9), 'index', table_name, index_name, sql) FROM duckdb_indexes()
    WHERE database_name = current_database()
    UNION ALL
    -- a migration's record carries when it ran, which differs between files of the same shape
    SELECT concat_ws(chr(9), 'marker', key, CASE WHEN starts_with(key, '{RECORD_PREFIX}') THEN '' ELSE value END)
    FROM {MARKER_TABLE}
)
"""

#: Digests of catalogs this process saw right after a full ``ensure_schema``.
_SETTLED: set[str] = set()
_GUARD = threading.Lock()


def catalog_digest(con: duckdb.DuckDBPyConnection) -> str | None:
    """The digest of the current database's shape (see the module's text), or None when it cannot be read (no
    marker table yet: a new or foreign file)."""
    try:
        rows = con.execute(_DIGEST_SQL).fetchall()
    except duckdb.Error:
        return None
    return rows[0][0] if rows else None


def is_settled(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the warehouse open on ``con`` has a shape this process saw a full ``ensure_schema`` leave behind."""
    digest = catalog_digest(con)
    with _GUARD:
        return digest is not None and digest in _SETTLED


def remember_settled(con: duckdb.DuckDBPyConnection) -> None:
    """Remember the shape of the warehouse open on ``con``: call right after a full ``ensure_schema``."""
    digest = catalog_digest(con)
    if digest is not None:
        with _GUARD:
            _SETTLED.add(digest)


__all__ = ["catalog_digest", "is_settled", "remember_settled"]
