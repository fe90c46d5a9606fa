"""`chainops demo` replaces only a warehouse its own mark says it made (issue 28 item 9): a real warehouse synced
from a loopback address (an SSH tunnel, a port-forward) is refused untouched, once synced or more. Real DuckDB files,
a server over real HTTP on 127.0.0.1."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.conftest import TEST_KEY
from tests.support.hostile import HostileServer
from toolkit import cli
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.warehouse import Warehouse
from toolkit.warehouse.identity import is_demo_warehouse


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def synced_from_loopback(path: Path, times: int) -> None:
    with HostileServer(TEST_KEY) as server:  # a service reached on 127.0.0.1, as through a tunnel
        for _ in range(times):
            sync(Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={}), quiet=True)


@pytest.mark.parametrize("times", [1, 2])
def test_a_warehouse_synced_from_loopback_without_the_mark_is_refused_untouched(times, capsys, tmp_path) -> None:
    path = tmp_path / "real.duckdb"
    synced_from_loopback(path, times)
    before = digest(path)
    assert not is_demo_warehouse(path)
    code = cli.main(["demo", "--warehouse", str(path), "--quiet", "--out", str(tmp_path / "reports")])
    err = capsys.readouterr().err
    assert code == 2 and "not a warehouse made by `chainops demo`" in err, err
    assert digest(path) == before


def test_the_demos_own_warehouse_is_recognised_until_it_is_synced_again(tmp_path) -> None:
    from toolkit.cli import _mark_demo

    path = tmp_path / "demo.duckdb"
    _mark_demo(path)
    assert is_demo_warehouse(path)  # marked, never synced (a demo stopped early)
    synced_from_loopback(path, 1)
    assert is_demo_warehouse(path)  # the demo's one sync
    synced_from_loopback(path, 1)
    assert not is_demo_warehouse(path)  # synced again since: someone uses it, the demo must not delete it
    with Warehouse(path, read_only=True) as wh:
        assert wh.count("sync_runs") == 2
