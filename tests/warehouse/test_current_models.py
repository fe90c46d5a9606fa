"""A reader of a warehouse whose models are current reads the model tables alone (``read_current_models``): the
same columns, types and rows as the stored views; a warehouse with stale operations keeps the stored views, which
compute those operations live."""

from __future__ import annotations

from pathlib import Path

from tests.support.builders import ETHEREUM, RELAY, T0, build, ladder, op_record, refresh
from toolkit.warehouse import Warehouse

SHADOWED = ("operation_lifecycle", "operation_transitions")


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
