"""The large tables carry no PRIMARY KEY (the loader keeps their keys unique), and a warehouse made while they had one
loses it, rows and views intact, the first time it is opened for writing; syncs then go on as before."""

from __future__ import annotations

import duckdb
import pytest

from tests.conftest import TEST_KEY, small_sandbox
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.warehouse import Warehouse
from toolkit.warehouse.schema import KEYLESS_TABLES


@pytest.fixture(scope="module")
def sandbox():
    """Half a day of history: the keys dropped and the rows kept do not depend on how many there are."""
    return small_sandbox()


KEYS = {"operations": "operation_id", "operation_transactions": "operation_id, idx", "queries": "query_id"}


def _primary_keys(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute("SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY'").fetchall()
    return {name for (name,) in rows}


def _contents(con: duckdb.DuckDBPyConnection, *, synced_at: bool = True) -> dict[str, list[str]]:
    """Every row of the tables, and of a public view over them, as text (timestamps in UTC), with or without the
    time and transaction each row was stored in."""
    con.execute("SET TimeZone = 'UTC'")
    out = {}
    for table, key in {**KEYS, "operation_lifecycle": "operation_id"}.items():
        columns = "*" if synced_at else "COLUMNS(lambda c: c NOT IN ('synced_at', 'write_seq'))"
        sql = f"SELECT CAST(t AS VARCHAR) FROM (SELECT {columns} FROM {table}) t ORDER BY {key}"
        rows = con.execute(sql).fetchall()
        out[table] = [row for (row,) in rows]
    return out


def _duplicate_keys(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {
        table: con.execute(f"SELECT count(*) - count(DISTINCT ({key})) FROM {table}").fetchone()[0]
        for table, key in KEYS.items()
    }


@pytest.fixture
def settings(server, tmp_path) -> Settings:
    return Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=tmp_path / "w.duckdb", environ={})


def test_new_warehouses_have_no_primary_key_on_the_large_tables(settings) -> None:
    assert set(KEYS) == set(KEYLESS_TABLES)
    with Warehouse(settings.warehouse) as wh:
        keyed = _primary_keys(wh.con)
    assert not keyed & set(KEYLESS_TABLES)
    assert {"networks", "channels", "sync_state"} <= keyed  # the small tables keep theirs


def test_an_older_warehouse_loses_its_keys_and_keeps_its_rows(settings) -> None:
    result = sync(settings, quiet=True)
    assert result.outcome == "ok", result.summary()
    # the warehouse as the toolkit made it before: the same tables with their primary keys
    con = duckdb.connect(str(settings.warehouse))
    for table, key in KEYS.items():
        con.execute(f"ALTER TABLE {table} ADD PRIMARY KEY ({key})")
    con.execute("DELETE FROM chainops_meta WHERE starts_with(key, 'migration:')")  # nor did it record migrations
    assert set(KEYLESS_TABLES) <= _primary_keys(con)
    before = _contents(con)
    before_without_synced_at = _contents(con, synced_at=False)
    assert all(before.values())
    con.close()

    with Warehouse(settings.warehouse) as wh:
        assert not _primary_keys(wh.con) & set(KEYLESS_TABLES)
        assert _contents(wh.con) == before  # the public view over them too
    with Warehouse(settings.warehouse) as wh:  # opening again changes nothing
        assert _contents(wh.con) == before

    again = sync(settings, quiet=True, full=True)  # every row upserted once more, over the rebuilt tables
    assert again.outcome == "ok", again.summary()
    assert sum(again.updated[t] for t in KEYS) > 0
    with Warehouse(settings.warehouse, read_only=True) as wh:
        assert _duplicate_keys(wh.con) == dict.fromkeys(KEYS, 0)
        # every event was stored again too: each replaced its stored copy, and counts as updated, not new
        assert wh.con.execute("SELECT count(*) - count(DISTINCT event_id) FROM events").fetchone()[0] == 0
        assert (again.rows["events"], again.updated["events"]) == (0, wh.count("events"))
        assert _contents(wh.con, synced_at=False) == before_without_synced_at
