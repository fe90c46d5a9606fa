"""The empty-warehouse template of ``tests/support/builders.py``: a copy is the warehouse a new file would be."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from tests.support.builders import build, empty_warehouse, ladder
from toolkit.warehouse import Warehouse
from toolkit.warehouse.identity import MARKER_TABLE

CATALOG = (
    "SELECT 'table' AS kind, table_name AS name, sql, comment FROM duckdb_tables() WHERE NOT internal "
    "UNION ALL SELECT 'view', view_name, sql, comment FROM duckdb_views() WHERE NOT internal "
    "UNION ALL SELECT 'column', table_name || '.' || column_name, data_type, comment FROM duckdb_columns() "
    "WHERE NOT internal ORDER BY 1, 2"
)


def _catalog_and_rows(wh: Warehouse) -> tuple[list[tuple], dict[str, list[tuple]]]:
    """Every table, view, column and comment, and every table's rows; the times the marker table records for the
    migrations (when the template was made, in a copy) as whether they are UTC times."""
    catalog = wh.con.execute(CATALOG).fetchall()
    tables = [name for kind, name, _, _ in catalog if kind == "table"]
    rows = {t: sorted(wh.con.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables}
    rows[MARKER_TABLE] = [
        (k, datetime.fromisoformat(v).utcoffset() == timedelta(0)) if k.startswith("migration:") else (k, v)
        for k, v in rows[MARKER_TABLE]
    ]
    return catalog, rows


def test_a_copy_of_the_template_is_a_new_warehouse(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "fresh.duckdb") as fresh:
        want = _catalog_and_rows(fresh)
    with empty_warehouse(tmp_path / "a" / "copy.duckdb") as copied:
        got = _catalog_and_rows(copied)
    assert got == want and len(want[0]) > 100  # every table, view, column and comment; the marker rows too
    assert ("format", "chainops-warehouse") in want[1][MARKER_TABLE]
    with empty_warehouse(tmp_path / "copy2.duckdb") as second:  # each caller gets its own file
        assert second.path != copied.path and second.count("events") == 0


def test_build_writes_into_its_own_copy(tmp_path: Path) -> None:
    first = build(tmp_path / "one.duckdb", events=ladder("a", ("accepted", "sending"), (0, 3)))
    second = build(tmp_path / "two.duckdb")
    try:
        assert first.count("events") == 2 and second.count("events") == 0
    finally:
        first.close()
        second.close()
    with empty_warehouse(tmp_path / "one.duckdb") as reopened:  # an existing file is opened, not replaced
        assert reopened.count("events") == 2
