"""The warehouse's tables as DDL, written from their one declaration.

Each raw table is declared once, in :data:`toolkit.warehouse.arrow.TABLES` (its columns, kinds, key, and how records
become its rows); the sync's own tables, which no record is converted into, are declared here
(:data:`BOOKKEEPING`). :func:`schema_sql` writes the ``CREATE TABLE IF NOT EXISTS`` statements from both, and
:data:`KEYLESS_TABLES` is read from the same declarations; the descriptions of every column live in
:mod:`toolkit.warehouse.dictionary`, whose test fails when a column has none.

What the tables hold: one row per resource, upserted by key. Timestamps are TIMESTAMPTZ (UTC) from unix seconds.
Ids, chain selectors and wei amounts are text (exact; selectors exceed signed 64 bits). Unknown fields of a record
are kept in ``extra`` (JSON); ``synced_at`` is when this row was last written by a sync, ``write_seq`` the number of
the transaction that wrote it (increasing whatever the clock does: :mod:`toolkit.warehouse.write_seq`).

``operations``, ``operation_transactions``, ``queries`` and ``events`` carry no PRIMARY KEY constraint, on purpose:
the loader keeps their key unique (each batch is deduplicated, and rows with the batch's keys are deleted before it
is inserted, in one transaction). DuckDB holds such an index in memory while rows are upserted, and over a long
history it outgrows a sync's memory ceiling (a first sync of 3.5M events ran out of memory in the operations pass).
Warehouses made while the first three had their keys lose them when first opened for writing
(:meth:`toolkit.warehouse.Warehouse.ensure_schema`).

The statements are exactly those of the ``schema.sql`` they replace (``tests/warehouse/test_table_definitions.py``
compares them on a real DuckDB file), so a warehouse made before opens unchanged.
"""

from __future__ import annotations

from .arrow import TABLES, Column, TableSpec

#: The DuckDB type of each column kind, unless the column names its own (:attr:`Column.sql`).
SQL_TYPES = {"text": "VARCHAR", "ts": "TIMESTAMPTZ", "int": "BIGINT", "bool": "BOOLEAN", "json": "JSON"}


def _bookkeeping(name: str, key: tuple[str, ...], columns: list[Column]) -> TableSpec:
    return TableSpec(name, key, tuple(columns), frozenset(), primary_key=True, extra_sql=None, synced_at=False)


#: The sync's own tables: cursors, the audit of each run, and records to fetch one by one.
BOOKKEEPING: dict[str, TableSpec] = {
    t.name: t
    for t in (
        _bookkeeping(
            "sync_state", ("stream",), [Column("stream", "text"), Column("cursor", "json"), Column("updated_at", "ts")]
        ),
        _bookkeeping(
            "sync_runs",
            ("run_id",),
            [
                Column("run_id", "text"),
                Column("started_at", "ts"),
                Column("finished_at", "ts"),
                Column("outcome", "text"),
                Column("base_url", "text"),
                Column("full_sync", "bool"),
                Column("requests", "int"),
                Column("retries", "int"),
                Column("rows_written", "json"),
                Column("rejected", "int"),
                Column("gaps", "json"),
                Column("message", "text"),
                Column("event_window", "json"),
            ],
        ),
        # The verdict of each proof-bearing event's DON proof (toolkit.verify), by event id.
        _bookkeeping(
            "event_verifications",
            ("event_id",),
            [
                Column("event_id", "text"),
                Column("verdict", "text"),
                Column("reason", "text"),
                Column("valid_signers", "int", sql="INTEGER"),
                Column("event_hash_matches", "bool"),
                Column("checked_at", "ts"),
                Column("signers", "text"),
                Column("min_signatures", "int", sql="INTEGER"),
                Column("workflow_owner", "text"),
                Column("event_write_seq", "int"),
            ],
        ),
        # Records events named that the warehouse lacks (or holds incompletely): the next sync fetches them.
        _bookkeeping(
            "sync_refetch", ("kind", "id"), [Column("kind", "text"), Column("channel_id", "text"), Column("id", "text")]
        ),
    )
}

#: Every table of the warehouse, in the order they are created.
ALL_TABLES: dict[str, TableSpec] = {**TABLES, **BOOKKEEPING}

#: The large tables whose key the loader keeps unique and that an older warehouse may still hold a PRIMARY KEY on.
KEYLESS_TABLES: tuple[str, ...] = tuple(name for name, t in ALL_TABLES.items() if t.had_primary_key)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def create_table_sql(table: TableSpec) -> str:
    """The ``CREATE TABLE IF NOT EXISTS`` statement of one declared table."""
    lines = []
    for column in table.columns:
        line = f"{_quoted(column.name)} {column.sql or SQL_TYPES[column.kind]}"
        if table.primary_key and table.key == (column.name,):
            line += " PRIMARY KEY"
        lines.append(line)
    if table.extra_sql is not None:
        lines.append(f'"extra" {table.extra_sql}')
    if table.synced_at:
        lines.append('"synced_at" TIMESTAMPTZ')
        lines.append('"write_seq" BIGINT')  # see toolkit.warehouse.write_seq
    if table.primary_key and len(table.key) > 1:
        lines.append(f"PRIMARY KEY ({', '.join(_quoted(k) for k in table.key)})")
    body = ",\n    ".join(lines)
    return f"CREATE TABLE IF NOT EXISTS {_quoted(table.name)} (\n    {body}\n);"


def schema_sql() -> str:
    """Every table's ``CREATE TABLE IF NOT EXISTS``, one script."""
    return "\n\n".join(create_table_sql(t) for t in ALL_TABLES.values()) + "\n"
