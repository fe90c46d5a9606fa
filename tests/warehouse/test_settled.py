"""A writer skips ``ensure_schema`` only on a file whose whole shape is one a full run left behind in this process
(toolkit/warehouse/settled.py); any change by hand brings the full run back, and it repairs the file."""

from __future__ import annotations

import shutil

import duckdb
import pytest

from toolkit.warehouse import Warehouse
from toolkit.warehouse.dictionary import OBJECT_COMMENTS
from toolkit.warehouse.migrations import MIGRATIONS, RECORD_PREFIX
from toolkit.warehouse.settled import catalog_digest, is_settled


@pytest.fixture
def made(tmp_path):
    """A new warehouse (a full ``ensure_schema`` ran) and a copy of it to change."""
    path = tmp_path / "made.duckdb"
    Warehouse(path).close()
    copy = tmp_path / "copy.duckdb"
    shutil.copyfile(path, copy)
    return path, copy


def _digest(path) -> str | None:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return catalog_digest(con)
    finally:
        con.close()


def test_a_writer_open_on_a_settled_file_runs_no_schema_statement(made, monkeypatch) -> None:
    """The skip is real: with the schema's statements made to fail, a settled copy still opens; a changed one does
    not (it needs them)."""
    import toolkit.warehouse.store as store

    _, copy = made

    def refuse() -> str:
        raise AssertionError("ensure_schema ran in full")

    monkeypatch.setattr(store, "schema_sql", refuse)
    Warehouse(copy).close()
    with duckdb.connect(str(copy)) as con:
        con.execute("DROP VIEW operation_lifecycle")
    with pytest.raises(AssertionError, match="ran in full"):
        Warehouse(copy)


def test_files_of_one_shape_share_a_digest_whenever_their_migrations_ran(made) -> None:
    path, copy = made
    with duckdb.connect(str(copy)) as con:  # the same migrations, recorded at another time
        con.execute(
            "UPDATE chainops_meta SET value = '2001-01-01T00:00:00+00:00' WHERE starts_with(key, ?)", [RECORD_PREFIX]
        )
    assert _digest(path) is not None and _digest(path) == _digest(copy)
    with Warehouse(copy) as wh:
        assert is_settled(wh.con)


@pytest.mark.parametrize(
    "change",
    [
        "DROP VIEW operation_lifecycle",
        "CREATE OR REPLACE VIEW query_lifecycle AS SELECT 1 AS query_id",
        "COMMENT ON TABLE events IS 'changed by hand'",
        "COMMENT ON COLUMN events.ts IS NULL",
        f"DELETE FROM chainops_meta WHERE key = '{RECORD_PREFIX}{MIGRATIONS[-1].name}'",
        "DROP TABLE sync_refetch",
    ],
    ids=["view-dropped", "view-replaced", "table-comment", "column-comment", "migration-record", "table-dropped"],
)
def test_any_change_by_hand_gets_the_full_run_which_repairs_it(made, change) -> None:
    path, copy = made
    with duckdb.connect(str(copy)) as con:
        con.execute(change)
    assert _digest(copy) != _digest(path)
    with Warehouse(copy) as wh:  # the writer's open ran ensure_schema in full: the file is as a new one again
        assert is_settled(wh.con)
        comment = wh.con.execute(
            "SELECT comment FROM duckdb_tables() WHERE database_name = current_database() AND table_name = 'events'"
        ).fetchall()[0][0]
        assert comment == OBJECT_COMMENTS["events"]
        assert wh.count("operation_lifecycle") == 0 and "sync_refetch" in wh.tables()
        assert "query_lifecycle" in wh.tables() and "network" in wh.columns("query_lifecycle")
    assert _digest(copy) == _digest(path)


def test_a_file_not_yet_a_warehouse_has_no_digest(tmp_path) -> None:
    path = tmp_path / "plain.duckdb"
    duckdb.connect(str(path)).close()
    assert _digest(path) is None
