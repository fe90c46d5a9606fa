"""A wall clock that steps backwards between two runs changes nothing: the sync decides which stored events are
superseded, which events the patch has applied and which operations the model tables hold by the number of the
transaction that wrote a row (``write_seq``), never by the time it was written.

DuckDB's ``now()`` cannot be set back, so the step is made the other way round: every time the first run stored
(``synced_at`` in every table, and any time kept in a cursor) is moved ten years ahead, which is what the warehouse
looks like when the clock of the next run is ten years behind the one of the run before."""

from __future__ import annotations

import duckdb
import pytest

from tests.conftest import TEST_KEY
from tests.support.service import InProcess
from tests.support.snapshot import TABLES, snapshot
from toolkit.sandbox import Sandbox

pytestmark = pytest.mark.slow

START = 1_795_000_000
VIEWS = {"operation_lifecycle": "operation_id", "query_lifecycle": "query_id", "operation_transitions": "event_id"}


def step_clock_back(path, years: int = 10) -> None:
    """Move every stored write time ``years`` ahead of the clock (see the module docstring)."""
    with duckdb.connect(str(path)) as con:
        tables = [
            t
            for (t,) in con.execute(
                "SELECT DISTINCT table_name FROM duckdb_columns() WHERE column_name = 'synced_at'"
            ).fetchall()
        ]
        for table in tables:
            con.execute(f"UPDATE {table} SET synced_at = synced_at + INTERVAL {years} YEAR")
        # a cursor that kept a time (how the patch and the models kept their watermark before write_seq)
        for stream, cursor in con.execute("SELECT stream, cursor FROM sync_state").fetchall():
            if cursor and "synced_at" in cursor:
                con.execute(
                    "UPDATE sync_state SET cursor = json_object('synced_at', "
                    f"CAST(CAST(cursor->>'synced_at' AS TIMESTAMPTZ) + INTERVAL {years} YEAR AS VARCHAR)) "
                    "WHERE stream = ? AND cursor->>'synced_at' IS NOT NULL",
                    [stream],
                )
        for key in ("events_synced_at", "operations_synced_at"):
            con.execute(
                f"UPDATE sync_state SET cursor = json_merge_patch(cursor, json_object('{key}', "
                f"CAST(CAST(cursor->>'{key}' AS TIMESTAMPTZ) + INTERVAL {years} YEAR AS VARCHAR))) "
                f"WHERE stream = 'models' AND cursor->>'{key}' IS NOT NULL"
            )


def views(path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(path), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        out = {v: con.execute(f"SELECT * FROM {v} ORDER BY ALL").fetchall() for v in VIEWS}
        out["stale"] = con.execute("SELECT count(*) FROM model_stale_operations").fetchall()
    return out


def test_a_clock_stepped_back_between_two_runs_gives_exact_results(tmp_path) -> None:
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=29, days=1, operations_per_day=800, start=START)
    service = InProcess(sandbox)  # the clock is the warehouse's subject here, not the network
    path = tmp_path / "w.duckdb"
    assert service.sync(path).outcome == "ok"
    step_clock_back(path)
    sandbox.advance(6 * 3600)  # operations move on: their events must move the stored rows, and the models
    later = service.sync(path)
    assert later.outcome == "ok", later.summary()
    assert later.rows["events"] > 0
    fresh = tmp_path / "fresh.duckdb"
    assert service.sync(fresh).outcome == "ok"
    got, want = snapshot(path), snapshot(fresh)
    for table in TABLES:
        assert got[table] == want[table], table
    assert views(path) == views(fresh)
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT count(*) - count(DISTINCT event_id) FROM events").fetchone()[0] == 0


def make_it_as_before_write_seq(path) -> None:
    """Turn a warehouse into what the toolkit wrote before ``write_seq``: no such column, and the patch's and the
    models' watermarks kept as the newest ``synced_at`` they had seen, and no migration recorded."""
    with duckdb.connect(str(path)) as con:
        tables = [
            t
            for (t,) in con.execute(
                "SELECT DISTINCT table_name FROM duckdb_columns() WHERE column_name = 'write_seq'"
            ).fetchall()
        ]
        for table in tables:
            con.execute(f"ALTER TABLE {table} DROP COLUMN write_seq")
        con.execute("DELETE FROM sync_state WHERE stream = 'write_seq'")
        # nor the record of a migration (toolkit.warehouse.migrations): they came after write_seq
        con.execute("DELETE FROM chainops_meta WHERE starts_with(key, 'migration:')")
        con.execute(
            "UPDATE sync_state SET cursor = json_object('synced_at', "
            "(SELECT CAST(max(synced_at) AS VARCHAR) FROM events)) WHERE stream = 'patch'"
        )
        con.execute(
            "UPDATE sync_state SET cursor = json_object('version', cursor->'$.version', "
            "'events_synced_at', (SELECT CAST(max(synced_at) AS VARCHAR) FROM events), "
            "'operations_synced_at', (SELECT CAST(max(synced_at) AS VARCHAR) FROM operations)) "
            "WHERE stream = 'models'"
        )


def test_a_warehouse_from_before_write_seq_is_migrated_and_synced_exactly(tmp_path) -> None:
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=31, days=1, operations_per_day=800, start=START)
    service = InProcess(sandbox)  # the clock is the warehouse's subject here, not the network
    path = tmp_path / "w.duckdb"
    assert service.sync(path).outcome == "ok"
    before = views(path)
    make_it_as_before_write_seq(path)  # (its views are made again when the sync opens it)
    sandbox.advance(6 * 3600)
    later = service.sync(path)  # its first writable open migrates
    assert later.outcome == "ok", later.summary()
    fresh = tmp_path / "fresh.duckdb"
    assert service.sync(fresh).outcome == "ok"
    assert before["stale"] == [(0,)]  # the models had folded everything in before
    got, want = snapshot(path), snapshot(fresh)
    for table in TABLES:
        assert got[table] == want[table], table
    assert views(path) == views(fresh)
    with duckdb.connect(str(path), read_only=True) as con:
        for table in ("events", "operations", "queries", "channels"):
            assert con.execute(f"SELECT count(*) FROM {table} WHERE write_seq IS NULL").fetchone()[0] == 0, table
        last = con.execute("SELECT CAST(cursor->>'last' AS BIGINT) FROM sync_state WHERE stream = 'write_seq'")
        assert last.fetchone()[0] >= con.execute("SELECT max(write_seq) FROM events").fetchone()[0]
