"""A reader of a warehouse whose models are current reads the model tables alone (``read_current_models``): the
same columns, types and rows as the stored views; a warehouse with stale operations keeps the stored views, which
compute those operations live."""

from __future__ import annotations

from pathlib import Path

from tests.support.builders import ETHEREUM, RELAY, SEPOLIA, T0, build, ladder, op_record, refresh
from toolkit.warehouse import Warehouse
from toolkit.warehouse.views import MODELS_STREAM, REFERENCE_TABLE

SHADOWED = ("operation_lifecycle", "operation_stay_reference", "operation_transitions")


def _warehouse(path: Path) -> Path:
    events, records = [], []
    for i in range(6):
        statuses = RELAY if i % 3 else ("accepted", "sending", "failed")
        times = [T0 + 100 * i + 10 * k for k in range(len(statuses))]
        events += ladder(f"op-{i}", statuses, times, chain=ETHEREUM)
        records.append(op_record(f"op-{i}", statuses[-1], chain=ETHEREUM, created=times[0], updated=times[-1]))
    refresh(build(path, events=events, operations=records)).close()
    return path


def _temp_views(wh: Warehouse) -> list[str]:
    sql = "SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal ORDER BY view_name"
    rows = wh.con.execute(sql).fetchall()
    return [r[0] for r in rows]


def _rows(wh: Warehouse, relation: str) -> list[tuple]:
    return wh.con.execute(f"SELECT * FROM {relation} ORDER BY ALL").fetchall()


def test_a_current_warehouse_is_read_from_its_model_tables(tmp_path) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    with Warehouse(path, read_only=True) as wh:
        assert _temp_views(wh) == sorted(SHADOWED)
        catalog = wh.con.execute("SELECT current_database()").fetchall()[0][0]
        for view in SHADOWED:
            stored = f'"{catalog}".main.{view}'
            assert wh.con.execute(f"DESCRIBE {view}").fetchall() == wh.con.execute(f"DESCRIBE {stored}").fetchall()
            got = _rows(wh, view)
            assert got == _rows(wh, stored) and len(got) >= 6
        # the listing and the columns name each view once
        assert wh.tables().count("operation_lifecycle") == 1
        assert wh.columns("operation_lifecycle").count("operation_id") == 1


def test_a_stale_warehouse_keeps_its_views_and_sees_what_came_after_the_refresh(tmp_path) -> None:
    path = _warehouse(tmp_path / "w.duckdb")
    # an operation stored after the last model refresh, as when a sync stops before refreshing
    later = ladder("op-late", ("accepted", "sending"), (T0 + 5000, T0 + 5010), chain=ETHEREUM)
    record = op_record("op-late", "sending", chain=ETHEREUM, created=T0 + 5000, updated=T0 + 5010)
    build(path, events=later, operations=[record], wh=Warehouse(path)).close()
    with Warehouse(path, read_only=True) as wh:
        assert _temp_views(wh) == []
        late = wh.query("SELECT last_status FROM operation_lifecycle WHERE operation_id = 'op-late'")
        assert late["last_status"].tolist() == ["sending"]
        assert wh.count("operation_lifecycle") == 7


def test_a_writer_never_reads_around_its_views(tmp_path) -> None:
    """A connection that writes may change the raw rows at any time: it always reads the stored views."""
    path = _warehouse(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        assert _temp_views(wh) == []


def _reference_rows(wh: Warehouse) -> tuple[list[tuple], list[tuple]]:
    """(the model table's rows, the rows the stored view computes live from the transitions and lifecycles)."""
    catalog = wh.con.execute("SELECT current_database()").fetchall()[0][0]
    return _rows(wh, REFERENCE_TABLE), _rows(wh, f'"{catalog}".main.operation_stay_reference')


def test_the_stays_reference_follows_every_refresh_as_a_full_computation_would(tmp_path) -> None:
    """model_stay_reference is kept by adding and removing the contributions of the operations a refresh
    recomputes: after changes of every kind (an operation failing, one reorganised, one moving on, new ones, one
    on another network, a record alone), it holds what the live view computes from scratch."""
    path = _warehouse(tmp_path / "w.duckdb")
    with Warehouse(path) as wh:
        stored, live = _reference_rows(wh)
        assert stored == live and sum(r[-1] for r in stored) > 10
    batches = [
        # op-1 (confirmed) reorganised back to broadcasting and confirmed again; op-0 (failed) gets nothing new
        ladder("op-1", ("broadcasting", "confirmed_latest"), (T0 + 200, T0 + 210), chain=ETHEREUM),
        # a new operation in flight, and one on a testnet that stops at confirmed_latest
        ladder("op-new", ("accepted", "sending", "sent"), (T0 + 900, T0 + 905, T0 + 915), chain=ETHEREUM)
        + ladder("op-sep", ("accepted", "sending", "confirmed_latest"), (T0 + 950, T0 + 951, T0 + 960), chain=SEPOLIA),
        # the operation in flight fails
        ladder("op-new", ("failed",), (T0 + 2000,), chain=ETHEREUM),
    ]
    records = [
        [op_record("op-1", "confirmed", chain=ETHEREUM, created=T0 + 100, updated=T0 + 210)],
        [op_record("op-new", "sent", chain=ETHEREUM, created=T0 + 900, updated=T0 + 915)],
        [op_record("op-new", "failed", chain=ETHEREUM, created=T0 + 900, updated=T0 + 2000)],
    ]
    for events, recs in zip(batches, records, strict=True):
        wh = build(path, events=events, operations=recs, wh=Warehouse(path))
        refresh(wh)
        stored, live = _reference_rows(wh)
        wh.close()
        assert stored == live
    with Warehouse(path, read_only=True) as wh:
        reorged = wh.query("SELECT revisits, reorgs FROM operation_lifecycle WHERE operation_id = 'op-1'")
        assert reorged.values.tolist() == [[2, 1]]  # broadcasting and confirmed_latest again; one move back


def test_a_reader_of_models_made_by_another_version_computes_the_views_from_the_raw_tables(tmp_path, caplog) -> None:
    """Until a sync rebuilds them, model tables of another version are not read: the answers are this version's."""
    path = _warehouse(tmp_path / "w.duckdb")
    with Warehouse(path, read_only=True) as wh:
        expected = {v: _rows(wh, v) for v in SHADOWED}
    with Warehouse(path) as wh:  # as an older toolkit would have left it: another version, and a wrong reference
        wh.con.execute(
            "UPDATE sync_state SET cursor = json_object('version', 1, 'events_write_seq', "
            "cursor->'$.events_write_seq', 'operations_write_seq', cursor->'$.operations_write_seq') WHERE stream = ?",
            [MODELS_STREAM],
        )
        wh.con.execute(f"UPDATE {REFERENCE_TABLE} SET stays = stays + 1000")
    with caplog.at_level("WARNING", logger="toolkit.warehouse"), Warehouse(path, read_only=True) as wh:
        assert "model_operation_transitions_live" in _temp_views(wh)
        assert {v: _rows(wh, v) for v in SHADOWED} == expected
    assert "until the next `chainops sync` rebuilds them" in caplog.text  # the reader is told why it is slow


def test_a_writer_replaces_model_tables_of_another_shape_and_the_views_stay_exact(tmp_path) -> None:
    """A model table whose columns differ (made by another version) is dropped when a writer opens the file, so
    the views (which name the new columns) compute every operation live until the next refresh rebuilds them."""
    path = _warehouse(tmp_path / "w.duckdb")
    with Warehouse(path, read_only=True) as wh:
        expected = _rows(wh, "operation_lifecycle")
    with Warehouse(path) as wh:
        wh.con.execute("ALTER TABLE model_operation_lifecycle DROP COLUMN revisits")
        wh.con.execute("CHECKPOINT")
    with Warehouse(path) as wh:  # a writer of this version opens it
        assert "revisits" in wh.columns("model_operation_lifecycle")
        assert wh.count("model_operation_lifecycle") == 0
        assert _rows(wh, "operation_lifecycle") == expected
        refresh(wh)
        assert wh.count("model_operation_lifecycle") == len(expected)
    with Warehouse(path, read_only=True) as wh:
        assert _temp_views(wh) == sorted(SHADOWED)
        assert _rows(wh, "operation_lifecycle") == expected
