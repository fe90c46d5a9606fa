"""An export into an existing directory is wholly the old one or wholly the new one whenever it is stopped (issue 28
item 10): SIGTERM or Ctrl-C sent while the tables are swapped into place is delivered once the swap is done, and no
staging or ``.old`` directory is left behind. Real DuckDB files from syncs over real HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import duckdb
import pytest

from tests.conftest import TEST_KEY
from tests.support.hostile import HostileServer, Org
from toolkit import atomic
from toolkit.config import Settings
from toolkit.export import export_parquet
from toolkit.loader import sync
from toolkit.signals import Terminated, sigterm_interrupts


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two warehouses told apart by their channels (2 and 3) and events."""
    made = []
    for channels in (2, 3):
        path = tmp_path_factory.mktemp("swap") / f"w{channels}.duckdb"
        with HostileServer(TEST_KEY, org=Org(channels=channels, operations_per_channel=20)) as server:
            sync(Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={}), quiet=True)
        made.append(path)
    return made[0], made[1]


def counts(out: Path) -> dict[str, int]:
    """Rows per exported table, read back from the Parquet files."""
    con = duckdb.connect()
    return {
        d.name: con.execute(f"SELECT count(*) FROM read_parquet('{d}/**/*.parquet')").fetchone()[0]
        for d in sorted(out.iterdir())
        if d.is_dir() and not d.name.startswith(".") and any(d.rglob("*.parquet"))
    }


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("after", [1, 3, 6])
def test_a_signal_during_the_swap_leaves_the_whole_new_export(signum, after, warehouses, monkeypatch, tmp_path):
    old_wh, new_wh = warehouses
    out = tmp_path / "export"
    export_parquet(old_wh, out)
    old = counts(out)
    reference = tmp_path / "reference"
    export_parquet(new_wh, reference)
    new = counts(reference)
    assert old != new and set(old) == set(new)

    calls = 0
    real = atomic._move_into_place

    def move_then_signal(*args, **kwargs):
        nonlocal calls
        calls += 1
        done = real(*args, **kwargs)
        if calls == after:  # part-way through the swap
            os.kill(os.getpid(), signum)
        return done

    monkeypatch.setattr(atomic, "_move_into_place", move_then_signal)
    raised = Terminated if signum == signal.SIGTERM else KeyboardInterrupt
    with pytest.raises(raised), sigterm_interrupts():
        export_parquet(new_wh, out)
    assert calls > after  # the swap went on after the signal
    assert counts(out) == new
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no staging or .old directory left


def test_a_signal_before_the_swap_leaves_the_whole_old_export(warehouses, monkeypatch, tmp_path) -> None:
    old_wh, new_wh = warehouses
    out = tmp_path / "export"
    export_parquet(old_wh, out)
    old = counts(out)
    import toolkit.export as export

    real = export._export_one
    calls = 0

    def write_then_signal(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    monkeypatch.setattr(export, "_export_one", write_then_signal)
    with pytest.raises(Terminated), sigterm_interrupts():
        export_parquet(new_wh, out)
    assert counts(out) == old
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
