"""Each table is declared once (toolkit.warehouse.schema); the DDL, the Arrow schemas and
KEYLESS_TABLES are read from that declaration. These tests hold the derived forms to each other and to the DDL the
toolkit wrote before (a frozen copy of the old schema.sql), on real DuckDB files, column for column, type for type,
key for key."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from toolkit.warehouse import Warehouse
from toolkit.warehouse.schema import ALL_TABLES, DECLARED_TABLES, KEYLESS_TABLES, RAW_TABLES, schema_sql

BEFORE = Path(__file__).parent / "data" / "schema_before_ddl.sql"

#: How DuckDB names each type a converted batch's column may land in, by the Arrow type of the batch.
ARROW_OF_DUCKDB = {
    "VARCHAR": pa.string(),
    "JSON": pa.string(),
    "BIGINT": pa.int64(),
    "INTEGER": pa.int64(),  # the writer's insert narrows; a value past 32 bits would fail loudly there
    "BOOLEAN": pa.bool_(),
    "TIMESTAMP WITH TIME ZONE": pa.timestamp("us", tz="UTC"),
}


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Each base table's DDL as DuckDB itself renders it (columns, types, compression, constraints)."""
    rows = con.execute("SELECT table_name, sql FROM duckdb_tables() WHERE database_name = current_database()")
    return dict(rows.fetchall())


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    rows = con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
        "AND table_name = ? ORDER BY column_index",
        [table],
    )
    return rows.fetchall()


def _primary_keys(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, ...]]:
    rows = con.execute(
        "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
        "WHERE database_name = current_database() AND constraint_type = 'PRIMARY KEY'"
    )
    return {name: tuple(cols) for name, cols in rows.fetchall()}


#: What came after the old schema.sql: a table, a column of events and one of sync_runs (put in the old DDL's text
#: where each goes).
ADDED_TABLES = {"event_verifications"}
ADDED_COLUMNS = {
    "events": ("signature_count INTEGER, ", "proofs VARCHAR USING COMPRESSION ZSTD, "),
    "sync_runs": ("event_window JSON", ", models JSON"),
}


def test_the_derived_ddl_makes_the_tables_the_old_schema_made(tmp_path: Path) -> None:
    before = duckdb.connect(str(tmp_path / "before.duckdb"))
    before.execute(BEFORE.read_text(encoding="utf-8"))
    now = duckdb.connect(str(tmp_path / "now.duckdb"))
    now.execute(schema_sql())
    old, new = _tables(before), _tables(now)
    assert set(new) == set(old) | ADDED_TABLES == set(ALL_TABLES)
    for name in old:
        expected = old[name]
        if name in ADDED_COLUMNS:
            after, column = ADDED_COLUMNS[name]
            assert after in expected, name
            expected = expected.replace(after, after + column)
        assert new[name] == expected, name
    assert _primary_keys(now) == {**_primary_keys(before), "event_verifications": ("event_id",)}


def test_a_warehouse_has_every_declared_table_column_and_key(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "w.duckdb") as wh:
        keys = _primary_keys(wh.con)
        for name, table in DECLARED_TABLES.items():
            names = [c for c, _ in _columns(wh.con, name)]
            declared = [c.name for c in table.columns]
            declared += ["extra"] * (table.extra_sql is not None) + ["synced_at", "write_seq"] * table.synced_at
            assert names == declared == table.column_names(), name
            assert keys.get(name) == (table.key if table.primary_key else None), name


def test_each_arrow_schema_lands_in_its_table_column_for_column(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "w.duckdb") as wh:
        for name, table in RAW_TABLES.items():
            stored = [(c, t) for c, t in _columns(wh.con, name) if c not in ("synced_at", "write_seq")]
            assert table.schema.names == [c for c, _ in stored], name
            for field, (column, kind) in zip(table.schema, stored, strict=True):
                assert field.type == ARROW_OF_DUCKDB[kind], f"{name}.{column}: Arrow {field.type}, DuckDB {kind}"


def test_the_keyless_tables_are_the_loader_keyed_tables_that_once_had_a_key() -> None:
    assert set(KEYLESS_TABLES) == {"operations", "operation_transactions", "queries"}
    for name in KEYLESS_TABLES:
        assert not ALL_TABLES[name].primary_key
    loader_keyed = {name for name, t in ALL_TABLES.items() if not t.primary_key}
    assert loader_keyed == {*KEYLESS_TABLES, "events"}
