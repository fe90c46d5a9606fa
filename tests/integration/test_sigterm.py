"""SIGTERM ends `chainops sync` like Ctrl-C: what was written is committed, the run is recorded as `interrupted`,
the exit code is 143, and the next sync completes to the same tables as an uninterrupted one."""

from __future__ import annotations

import signal
import time

import pytest

from benchmarks.support.latency_proxy import LatencyProxy
from tests.conftest import TEST_KEY
from tests.support.kill import signal_at_request, start_sync
from tests.support.snapshot import TABLES, snapshot
from toolkit.config import Settings
from toolkit.loader.outcome import outcome_of as _outcome_of
from toolkit.loader.run import sync
from toolkit.warehouse import Warehouse


@pytest.fixture(scope="module")
def slow_enough_server():
    from toolkit.sandbox import Sandbox

    sandbox = Sandbox(orgs=(TEST_KEY,), seed=13, days=1, operations_per_day=800)
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


@pytest.mark.kill
def test_sigterm_commits_records_interrupted_and_exits_143(slow_enough_server, tmp_path) -> None:
    reference = tmp_path / "reference.duckdb"
    path = tmp_path / "termed.duckdb"
    with LatencyProxy(slow_enough_server.base_url, 0.0) as proxy:
        sync(Settings.load(base_url=proxy.base_url, api_key=TEST_KEY, warehouse=reference, environ={}), quiet=True)
        # the signal comes while the sync waits for the answer to a request half-way through its run
        termed, proc = signal_at_request(
            proxy, lambda: start_sync(proxy.base_url, path), proxy.requests // 2, signal.SIGTERM, wait=False
        )
        assert termed, "the sync ended before the signal"
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 143, err
        assert "Traceback" not in err and "terminated (SIGTERM)" in err
        with Warehouse(path, read_only=True) as wh:
            runs = wh.query("SELECT outcome, message, finished_at FROM sync_runs")
        assert runs["outcome"].tolist() == ["interrupted"]
        assert "SIGTERM" in runs["message"].iloc[0] and runs["finished_at"].notna().all()

        resumed = start_sync(proxy.base_url, path)
        _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
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


def test_a_deferred_stop_waits_for_a_safe_point_and_a_second_signal_stops_at_once(monkeypatch) -> None:
    import os

    from toolkit import signals
    from toolkit.signals import Terminated, check_stop, pause, sigterm_interrupts

    with sigterm_interrupts(deferred=True):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler has run: nothing was raised in the middle of this
        with pytest.raises(Terminated):
            check_stop()
        waits: list[bool] = []  # what each wait of the stop event answered: True when the event was set
        wait = signals._STATE.stop.wait

        def recorded_wait(timeout: float | None = None) -> bool:
            waits.append(wait(timeout))
            return waits[-1]

        monkeypatch.setattr(signals._STATE.stop, "wait", recorded_wait)
        with pytest.raises(Terminated):
            pause(30)  # a backoff wait ends at once once a stop is asked for
        assert False not in waits  # it ended because the stop was asked for, not because the 30 s passed
        monkeypatch.undo()
        with pytest.raises(Terminated):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    check_stop()  # outside the block nothing is pending
    with sigterm_interrupts(), pytest.raises(Terminated):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)


HELD_FLAG = """
import os, signal, time
from toolkit import signals
with signals.sigterm_interrupts(deferred=True):
    with signals._STATE.stop._changed:  # as the main thread holds it inside a wait, between two bytecodes
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)  # the handler runs here, in this thread
    print("stop asked:", signals._STATE.stop.is_set())
"""


def test_a_stop_asked_while_the_main_thread_holds_the_flags_lock_is_not_a_deadlock() -> None:
    """With threading.Event as the flag, the handler's set() waited for the lock its own thread held, for good."""
    import subprocess
    import sys

    try:
        done = subprocess.run([sys.executable, "-c", HELD_FLAG], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the signal handler waited for a lock its own thread held")
    assert done.returncode == 0 and done.stdout.strip() == "stop asked: True", (done.stdout, done.stderr)
