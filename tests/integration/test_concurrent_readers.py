"""Readers in other processes can query while a sync writes: the sync makes room between committed batches.

The sync runs as a process against the sandbox through the latency proxy, which holds its requests after the
``HELD_AFTER``-th: the sync is then mid-run whatever the machine's speed. The reader asks for the file while the
sync waits for that answer; once it has asked, the answers flow again, and the sync's next batch lets it in."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from benchmarks.support.latency_proxy import LatencyProxy
from tests.support.kill import start_sync, wait_until_held
from toolkit.warehouse import Warehouse

pytestmark = pytest.mark.slow

#: Requests let through before the proxy holds the rest: past the organisation's lists, into the event pages (the
#: sync makes about 90 requests in all on this sandbox, so many batches are still to come).
HELD_AFTER = 12


@pytest.fixture(scope="module")
def busy_server():
    from tests.conftest import TEST_KEY
    from toolkit.sandbox import Sandbox

    sandbox = Sandbox(orgs=(TEST_KEY,), seed=9, days=2, operations_per_day=300)
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


def test_a_reader_gets_in_while_a_sync_runs(busy_server, tmp_path) -> None:
    path = tmp_path / "shared.duckdb"
    asked = Path(f"{path}.readers")  # how a reader asks a running sync to make room (toolkit.warehouse.store)
    read: dict[str, object] = {}

    def reader() -> None:
        with Warehouse(path, read_only=True, wait=60) as wh:
            read["sync running"] = proc.poll() is None
            read["events"] = wh.count("events")

    with LatencyProxy(busy_server.base_url, 0.0) as proxy:
        proxy.hold_after(HELD_AFTER)
        proc = start_sync(proxy.base_url, path)
        try:
            assert wait_until_held(proxy, proc), proc.communicate()
            assert path.exists(), "the sync had written nothing before its held request"
            thread = threading.Thread(target=reader)
            thread.start()
            while not asked.exists() and thread.is_alive():
                thread.join(0.02)  # the reader asks, or has got in already
        finally:
            proxy.release()
        thread.join(120)
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert read.get("sync running") is True, "the reader got in only once the sync had ended"
    with Warehouse(path, read_only=True) as wh:
        assert wh.count("events") >= read["events"]
