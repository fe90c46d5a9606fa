"""Readers in other processes can query while a sync writes: the sync makes room between committed batches."""

from __future__ import annotations

import fcntl
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.test_kill_resume import start_sync
from toolkit.warehouse import Warehouse

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def busy_server():
    from tests.conftest import TEST_KEY
    from toolkit.sandbox import Sandbox

    sandbox = Sandbox(orgs=(TEST_KEY,), seed=9, days=3, operations_per_day=2500)
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


def lock_is_held(path: Path) -> bool:
    lock = Path(f"{path}.lock")
    if not lock.exists():
        return False
    with open(lock, "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False


def wait_until_syncing(proc: subprocess.Popen, path: Path, timeout: float = 60) -> None:
    """Return once the sync process holds the warehouse's writer lock (it has started writing)."""
    deadline = time.monotonic() + timeout
    while not (path.exists() and lock_is_held(path)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sync never started"
        time.sleep(0.02)


def test_a_reader_gets_in_while_a_sync_runs(busy_server, tmp_path) -> None:
    path = tmp_path / "shared.duckdb"
    proc = start_sync(busy_server.base_url, path)
    wait_until_syncing(proc, path)
    time.sleep(0.5)  # well into the sync
    with Warehouse(path, read_only=True, wait=60) as wh:
        running_when_read = proc.poll() is None
        seen = wh.count("events")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert running_when_read, "the sync ended before the reader got in: make the scenario larger"
    with Warehouse(path, read_only=True) as wh:
        assert wh.count("events") >= seen
