"""A read-only warehouse computes what several questions share once while it is open; a writable one every time
(its rows may change between two calls)."""

from __future__ import annotations

from pathlib import Path

from tests.support.builders import build, ladder, refresh
from toolkit.warehouse import Warehouse


def test_a_reader_computes_once_per_key_and_a_writer_every_time(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    refresh(build(path, events=ladder("op-1", ("accepted", "sending"), (0, 5)))).close()
    calls: list[str] = []

    def count() -> int:
        calls.append("x")
        return int(wh.count("operation_transitions"))

    with Warehouse(path, read_only=True) as wh:
        assert [wh.memoized("n", count) for _ in range(3)] == [2, 2, 2]
        assert wh.memoized("other", count) == 2
    assert len(calls) == 2
    with Warehouse(path) as wh:
        assert [wh.memoized("n", count) for _ in range(2)] == [2, 2]
    assert len(calls) == 4
