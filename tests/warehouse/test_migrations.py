"""The ordered migrations (toolkit.warehouse.migrations): a warehouse of the oldest shape (the DDL frozen in
data/schema_oldest.sql) opens and is brought to the shape of a new one, rows kept; each migration is recorded and
runs once; each changes nothing where its change is already there."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from toolkit.warehouse import Warehouse
from toolkit.warehouse.migrations import MIGRATIONS, RECORD_PREFIX, applied, migrate

from .schema_snapshot import SNAPSHOT

OLDEST = Path(__file__).parent / "data" / "schema_oldest.sql"
SYNCED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
LATER = datetime(2026, 1, 2, 3, 9, 0, tzinfo=UTC)


def _oldest_warehouse(path: Path) -> None:
    """A warehouse as the toolkit wrote it before the first migration, with a few rows."""
    con = duckdb.connect(str(path))
    con.execute(OLDEST.read_text(encoding="utf-8"))
    con.execute(
        "INSERT INTO operations (operation_id, channel_id, status, synced_at) VALUES ('op-1', 'ch-1', 'signed', ?)",
        [SYNCED],
    )
    con.execute(
        "INSERT INTO queries (query_id, channel_id, target, synced_at) VALUES "
        "('q-1', 'ch-1', '{\"contract_address\": \"0xabc\", \"chain\": 1}', ?), ('q-2', 'ch-1', '\"0xdef\"', ?)",
        [SYNCED, LATER],
    )
    con.execute(
        'INSERT INTO events (event_id, channel_id, type, "offset", payload, synced_at) '
        "VALUES ('e-1', 'ch-1', 'operation.status', 1, '{}', ?)",
        [LATER],
    )
    con.execute("INSERT INTO sync_state VALUES ('patch', json_object('synced_at', ?::VARCHAR), ?)", [SYNCED, SYNCED])
    con.execute("INSERT INTO sync_runs (run_id, started_at, outcome) VALUES ('run-1', ?, 'ok')", [SYNCED])
    con.close()


def _shape(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, set[tuple[str, str]]], set[tuple[str, str, tuple]]]:
    """Each table's (column, type) set and every constraint: the shape, whatever the order of the columns."""
    columns: dict[str, set[tuple[str, str]]] = {}
    for table, column, kind in con.execute(
        "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main'"
    ).fetchall():
        columns.setdefault(table, set()).add((column, kind))
    constraints = {
        (t, kind, tuple(cols))
        for t, kind, cols in con.execute(
            "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints() "
            "WHERE database_name = current_database() AND schema_name = 'main'"
        ).fetchall()
    }
    return columns, constraints


def test_the_oldest_warehouse_opens_and_gets_the_shape_of_a_new_one_rows_kept(tmp_path: Path) -> None:
    old = tmp_path / "old.duckdb"
    _oldest_warehouse(old)
    with Warehouse(old) as wh:
        assert set(applied(wh.con)) == {m.name for m in MIGRATIONS}
        upgraded = _shape(wh.con)
        ops = wh.con.execute("SELECT operation_id, status, write_seq FROM operations").fetchall()
        queries = wh.con.execute("SELECT query_id, target, extra->>'$.target.chain', write_seq FROM queries ORDER BY 1")
        queries = queries.fetchall()
        event_seq = wh.con.execute("SELECT write_seq FROM events").fetchall()
        patch = wh.get_cursor("patch")
        runs = wh.con.execute("SELECT run_id, outcome, event_window FROM sync_runs").fetchall()
    with Warehouse(tmp_path / "new.duckdb") as wh:
        assert upgraded == _shape(wh.con)
    # the snapshot of a new warehouse names the same columns (it holds the contract; see test_schema_snapshot.py)
    snapshot = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert {(t, c, k) for t, cols in upgraded[0].items() for c, k in cols} == {
        (t, c, k) for t, _, c, k, *_ in snapshot["columns"]
    }
    # two transactions wrote rows (SYNCED, then LATER): numbered in that order; the patch had seen the first
    assert ops == [("op-1", "signed", 1)]
    assert queries == [("q-1", "0xabc", "1", 1), ("q-2", "0xdef", None, 2)]
    assert event_seq == [(2,)]
    assert patch == {"write_seq": 1}
    assert runs == [("run-1", "ok", None)]


def test_each_migration_runs_once_and_is_recorded(tmp_path: Path) -> None:
    old = tmp_path / "old.duckdb"
    _oldest_warehouse(old)
    con = duckdb.connect(str(old))
    con.execute("CREATE TABLE chainops_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    calls: list[str] = []
    counted = tuple(
        type(m)(m.name, lambda c, m=m: calls.append(m.name) or m.apply(c))  # type: ignore[misc]
        for m in MIGRATIONS
    )
    assert migrate(con, counted) == [m.name for m in MIGRATIONS]  # the oldest shape needs every one
    assert calls == [m.name for m in MIGRATIONS]  # in order
    recorded = applied(con)
    assert set(recorded) == {m.name for m in MIGRATIONS}
    for when in recorded.values():
        assert datetime.fromisoformat(when).tzinfo is not None
    assert migrate(con, counted) == []
    assert calls == [m.name for m in MIGRATIONS]  # recorded: not run again
    con.close()


def test_every_migration_changes_nothing_where_its_change_is_there(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "w.duckdb") as wh:
        before = _shape(wh.con), wh.get_cursor("write_seq")
        assert [m.name for m in MIGRATIONS if m.apply(wh.con)] == []
        assert (_shape(wh.con), wh.get_cursor("write_seq")) == before


def test_a_warehouse_made_before_the_records_gets_them_without_a_change(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        wh.con.execute("DELETE FROM chainops_meta WHERE starts_with(key, ?)", [RECORD_PREFIX])
        shape = _shape(wh.con)
    with Warehouse(path) as wh:
        assert set(applied(wh.con)) == {m.name for m in MIGRATIONS}
        assert _shape(wh.con) == shape


def test_migration_names_are_unique() -> None:
    names = [m.name for m in MIGRATIONS]
    assert len(set(names)) == len(names) == 6
