"""A reader works under a memory limit: the default, the environment's, or the caller's; a statement that needs more
fails with a WarehouseError that says so and what to do, and the process does not grow past the limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.builders import build, ladder, refresh
from toolkit.errors import WarehouseError
from toolkit.warehouse import Warehouse
from toolkit.warehouse.memory import parse_bytes
from toolkit.warehouse.store import READER_MEMORY_ENV, READER_MEMORY_LIMIT


@pytest.fixture
def path(tmp_path: Path) -> Path:
    target = tmp_path / "w.duckdb"
    refresh(build(target, events=ladder("op-1", ("accepted", "sending"), (0, 5)))).close()
    return target


def _limit(wh: Warehouse) -> float:
    return parse_bytes(wh.memory_limit_setting())


def test_a_reader_has_the_default_limit_unless_told_otherwise(path: Path, monkeypatch) -> None:
    monkeypatch.delenv(READER_MEMORY_ENV, raising=False)
    with Warehouse(path, read_only=True) as wh:
        assert _limit(wh) == pytest.approx(parse_bytes(READER_MEMORY_LIMIT), rel=0.05)
    monkeypatch.setenv(READER_MEMORY_ENV, "300MB")
    with Warehouse(path, read_only=True) as wh:
        assert _limit(wh) == pytest.approx(300e6, rel=0.05)
    with Warehouse(path, read_only=True, memory_limit="200MB") as wh:  # the caller's wins
        assert _limit(wh) == pytest.approx(200e6, rel=0.05)


def test_a_statement_that_needs_more_than_the_limit_says_so(path: Path) -> None:
    with Warehouse(path, read_only=True, memory_limit="20MB") as wh:
        with pytest.raises(WarehouseError) as caught:
            wh.query("SELECT list(range) FROM range(50000000)")  # a list cannot spill
        message = str(caught.value)
        assert READER_MEMORY_ENV in message and "narrow it" in message and str(path) in message
        # the connection is still usable, and a statement that fits runs
        assert wh.query("SELECT count(*) AS n FROM operation_transitions")["n"].tolist() == [2]


def test_a_large_aggregation_spills_instead_of_failing(path: Path) -> None:
    with Warehouse(path, read_only=True, memory_limit="30MB") as wh:
        df = wh.query("SELECT count(DISTINCT range % 3000000) AS n FROM range(6000000)")
    assert df["n"].tolist() == [3000000]


def test_two_readers_of_one_file_in_one_process(path: Path) -> None:
    """DuckDB shares one instance per file in a process: the second reader finds it configured and closed to
    changes of its spill folder, and works."""
    with Warehouse(path, read_only=True) as first, Warehouse(path, read_only=True) as second:
        assert first.count("operation_lifecycle") == second.count("operation_lifecycle") == 1
