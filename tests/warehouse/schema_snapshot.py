"""The public shape of a fresh warehouse, as DuckDB reports it: every table's and view's columns (position, type,
default, nullability, comment), constraints, the tables' and views' comments, and the views' SQL.

``tests/warehouse/data/fresh_warehouse_schema.json`` holds this snapshot of a warehouse made by the toolkit before
the schema was declared in one module (toolkit/warehouse/schema.py); ``test_schema_snapshot.py`` holds every fresh
warehouse to it. The tables, columns and views are the PUBLIC CONTRACT (DESIGN.md): regenerate the file
(``python -m tests.warehouse.schema_snapshot``) only for a deliberate, documented change of that contract.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb

SNAPSHOT = Path(__file__).parent / "data" / "fresh_warehouse_schema.json"


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[list[Any]]:
    return [list(r) for r in con.execute(sql).fetchall()]


def snapshot(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """The shape of the warehouse open on ``con`` (JSON-ready; rows in a fixed order)."""
    here = "database_name = current_database() AND schema_name = 'main'"
    return {
        "tables": _rows(con, f"SELECT table_name, sql, comment FROM duckdb_tables() WHERE {here} ORDER BY 1"),
        "views": _rows(
            con, f"SELECT view_name, sql, comment FROM duckdb_views() WHERE {here} AND NOT internal ORDER BY 1"
        ),
        "columns": _rows(
            con,
            "SELECT table_name, column_index, column_name, data_type, column_default, is_nullable, comment "
            f"FROM duckdb_columns() WHERE {here} ORDER BY table_name, column_index",
        ),
        "constraints": _rows(
            con,
            "SELECT table_name, constraint_type, constraint_column_names, constraint_text FROM duckdb_constraints() "
            f"WHERE {here} ORDER BY table_name, constraint_type, constraint_text",
        ),
    }


def fresh_snapshot() -> dict[str, Any]:
    """The snapshot of a new warehouse made by this checkout's toolkit."""
    from toolkit.warehouse import Warehouse

    with tempfile.TemporaryDirectory() as tmp, Warehouse(Path(tmp) / "fresh.duckdb") as wh:
        return json.loads(json.dumps(snapshot(wh.con), default=str))


def main() -> int:
    """Write the snapshot of a fresh warehouse to :data:`SNAPSHOT`."""
    SNAPSHOT.write_text(json.dumps(fresh_snapshot(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {SNAPSHOT}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
