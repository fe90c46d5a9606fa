"""The data dictionary: every table, view and column of a warehouse carries a comment, docs/warehouse.md is what the
comments say, and a warehouse made before the comments existed gets them when a writer opens it."""

from __future__ import annotations

from pathlib import Path

import duckdb

from toolkit.warehouse import Warehouse
from toolkit.warehouse.dictionary import OBJECT_COMMENTS, read_dictionary
from toolkit.warehouse.write_dictionary import build_document

DOC = Path(__file__).resolve().parents[2] / "docs" / "warehouse.md"


def test_every_table_view_and_column_has_a_comment(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "w.duckdb") as wh:
        dictionary = read_dictionary(wh.con)
    names = {name for name, *_ in dictionary}
    assert {"events", "operations", "operation_transitions", "query_lifecycle", "sync_refetch"} <= names
    missing = [name for name, _, comment, _ in dictionary if not comment]
    missing += [f"{name}.{col}" for name, _, _, cols in dictionary for col, _, comment in cols if not comment]
    where = "toolkit/warehouse/schema.py (tables) or dictionary.py (views)"
    assert not missing, f"no comment on {missing}: add them to {where}"
    assert set(OBJECT_COMMENTS) == names, "the dictionary names objects the warehouse does not have, or misses some"


def test_the_document_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == build_document(), (
        "docs/warehouse.md is stale: run `.venv/bin/python -m toolkit.warehouse.write_dictionary`"
    )


def test_the_document_lists_the_drifted_columns() -> None:
    text = DOC.read_text(encoding="utf-8")
    for column in ("to_address", "query_kind", "function_signature", "stage_rank", "current_status"):
        assert f"`{column}`" in text
    for name in ("sync_refetch", "operation_status_order", "model_operation_lifecycle_live"):
        assert f"## {name}\n" in text


def test_comments_reach_a_warehouse_made_before_them(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with Warehouse(path) as wh:
        wh.con.execute("COMMENT ON COLUMN events.ts IS NULL")
        wh.con.execute("COMMENT ON TABLE events IS NULL")
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute(
            "SELECT comment FROM duckdb_columns() WHERE table_name='events' AND column_name='ts'"
        ).fetchall() == [(None,)]
    finally:
        con.close()
    Warehouse(path).close()  # a writer opens it (a sync would)
    con = duckdb.connect(str(path), read_only=True)
    try:
        (comment,) = con.execute(
            "SELECT comment FROM duckdb_columns() WHERE table_name = 'events' AND column_name = 'ts'"
        ).fetchall()[0]
        (table_comment,) = con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'events'").fetchall()[0]
    finally:
        con.close()
    assert "UTC" in comment and table_comment.startswith("One row per event")


def test_chainops_sql_describe_shows_the_comments(tmp_path: Path, capsys) -> None:
    from toolkit.cli import main

    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    assert main(["sql", "describe events", "--warehouse", str(path), "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(",comment")
    ts = next(line for line in lines if line.startswith("ts,"))
    assert "UTC" in ts
