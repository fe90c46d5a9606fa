"""SIGTERM ends `chainops sync` like Ctrl-C: what was written is committed, the run is recorded as `interrupted`,
the exit code is 143, and the next sync completes to the same tables as an uninterrupted one."""

from __future__ import annotations

import signal
import time

import pytest

from tests.conftest import TEST_KEY
from tests.integration.test_concurrent_readers import wait_until_syncing
from tests.integration.test_incremental import TABLES, snapshot
from tests.integration.test_kill_resume import start_sync
from toolkit.config import Settings
from toolkit.loader.run import _outcome_of, sync
from toolkit.warehouse import Warehouse


@pytest.fixture(scope="module")
def slow_enough_server():
    from toolkit.sandbox import Sandbox

    sandbox = Sandbox(orgs=(TEST_KEY,), seed=13, days=2, operations_per_day=2500)
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


@pytest.mark.kill
def test_sigterm_commits_records_interrupted_and_exits_143(slow_enough_server, tmp_path) -> None:
    path = tmp_path / "termed.duckdb"
    proc = start_sync(slow_enough_server.base_url, path)
    wait_until_syncing(proc, path)
    time.sleep(0.5)  # into the sync
    assert proc.poll() is None, "the sync ended before the signal: make the scenario larger"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "terminated (SIGTERM)" in err
    with Warehouse(path, read_only=True) as wh:
        runs = wh.query("SELECT outcome, message, finished_at FROM sync_runs")
    assert runs["outcome"].tolist() == ["interrupted"]
    assert "SIGTERM" in runs["message"].iloc[0] and runs["finished_at"].notna().all()

    resumed = start_sync(slow_enough_server.base_url, path)
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    reference = tmp_path / "reference.duckdb"
    sync(
        Settings.load(base_url=slow_enough_server.base_url, api_key=TEST_KEY, warehouse=reference, environ={}),
        quiet=True,
    )
    got, want = snapshot(path), snapshot(reference)
    for table in TABLES:
        assert got[table] == want[table], table
    with Warehouse(path, read_only=True) as wh:
        assert sorted(wh.query("SELECT outcome FROM sync_runs")["outcome"]) == ["interrupted", "ok"]


def test_ctrl_c_is_recorded_as_interrupted_and_other_errors_as_failed() -> None:
    assert _outcome_of(KeyboardInterrupt())[0] == "interrupted"
    assert _outcome_of(RuntimeError("boom")) == ("failed", "RuntimeError: boom")
    # a signal that arrives while DuckDB runs a statement comes out as DuckDB's own error, not the handler's
    assert _outcome_of(RuntimeError("Query interrupted"))[0] == "interrupted"


def test_a_deferred_stop_waits_for_a_safe_point_and_a_second_signal_stops_at_once() -> None:
    import os

    from toolkit.signals import Terminated, check_stop, pause, sigterm_interrupts

    with sigterm_interrupts(deferred=True):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler has run: nothing was raised in the middle of this
        with pytest.raises(Terminated):
            check_stop()
        began = time.monotonic()
        with pytest.raises(Terminated):
            pause(30)  # a backoff wait ends at once once a stop is asked for
        assert time.monotonic() - began < 5
        with pytest.raises(Terminated):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    check_stop()  # outside the block nothing is pending
    with sigterm_interrupts(), pytest.raises(Terminated):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
