"""`chainops verify` beside readers and when killed (issue 38, items 5 and 6): a reader in another process gets in
between verify's batches and, kept waiting, is told who holds the file; verify's pool workers die with it.

Real DuckDB files and real processes: the reader is `chainops sql` as a process, the killed verify a process of its
own. Nothing is timed: each step waits for the state it needs (the reader asking, the workers started)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from toolkit.errors import WarehouseError
from toolkit.verify import resolve_policy
from toolkit.verify.run import verify_warehouse
from toolkit.warehouse import Warehouse

pytestmark = pytest.mark.slow

#: A bound on any one wait of these tests (a hung step fails the test instead of hanging the run).
PATIENCE = 120.0


def _policy():
    return resolve_policy(org_id="org-under-test", env={})


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def warehouse(synced_template, tmp_path) -> Path:
    path = tmp_path / "w.duckdb"
    shutil.copy(synced_template, path)
    return path


def test_a_reader_gets_in_between_verify_batches(warehouse, monkeypatch) -> None:
    """The first batch is verified only once a reader (`chainops sql`, a process) has asked for the file; the next
    only once that reader has ended. Verify lets it in after committing the first batch, and the reader sees that
    batch's verdicts. Before: verify held the file to its end, and the reader gave up after 30 s (exit 1)."""
    import toolkit.verify.run as verify_run

    asked = Path(f"{warehouse}.readers")  # how a reader asks a writer to make room (toolkit.warehouse.store)
    verify_rows = verify_run.verify_rows
    calls: list[int] = []
    running = threading.Event()
    reader: dict[str, subprocess.Popen] = {}

    def ended() -> bool:
        return "proc" in reader and reader["proc"].poll() is not None

    def gated(rows, policy):
        calls.append(len(rows))
        if len(calls) == 1:
            running.set()
            _wait_for(lambda: asked.exists() or ended(), "the reader to ask")
        elif len(calls) == 2:
            _wait_for(ended, "the reader to end")
        return verify_rows(rows, policy)

    monkeypatch.setattr(verify_run, "verify_rows", gated)
    done: dict[str, object] = {}

    def run() -> None:
        try:
            done["result"] = verify_warehouse(warehouse, _policy(), workers=1, batch_rows=200)
        except BaseException as exc:
            done["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    try:
        _wait_for(lambda: running.is_set() or not thread.is_alive(), "verify to start")
        reader["proc"] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolkit",
                "sql",
                "select count(*) as n from event_verifications",
                "--warehouse",
                str(warehouse),
                "--format",
                "csv",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = reader["proc"].communicate(timeout=PATIENCE)
    finally:
        if "proc" in reader and reader["proc"].poll() is None:
            reader["proc"].kill()
            reader["proc"].wait()
        thread.join(PATIENCE)
    assert "error" not in done, done.get("error")
    assert reader["proc"].returncode == 0, err
    assert out.strip().splitlines()[-1] == "200", out  # it got in while verify ran: one batch committed
    result = done["result"]
    with Warehouse(warehouse, read_only=True) as wh:
        assert wh.count("event_verifications") == result.checked == sum(calls)  # nothing verified twice or skipped


def test_all_after_letting_a_reader_in_verifies_each_event_once(warehouse, monkeypatch) -> None:
    """`--all` re-verifies every event; a stream opened again after a reader goes on where it stopped."""
    import toolkit.verify.run as verify_run

    asked = Path(f"{warehouse}.readers")
    verify_rows = verify_run.verify_rows
    calls: list[int] = []

    def asking(rows, policy):
        calls.append(len(rows))
        if len(calls) in (1, 3):
            asked.touch()  # a reader asks (its own wait is not needed to check what verify does)
        return verify_rows(rows, policy)

    first = verify_warehouse(warehouse, _policy(), workers=1)
    monkeypatch.setattr(verify_run, "verify_rows", asking)
    again = verify_warehouse(warehouse, _policy(), all_events=True, workers=1, batch_rows=300)
    assert again.checked == sum(calls) == first.checked
    assert again.standing == first.standing


def test_a_reader_kept_waiting_is_told_who_holds_the_file(warehouse, tmp_path) -> None:
    """A process holding the file for writing without making room (here a Warehouse opened for writing and kept
    open, as a notebook does): the reader's message names it and its process. Before: it blamed a sync."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from toolkit.warehouse import Warehouse
        with Warehouse({str(warehouse)!r}):
            print("open", flush=True)
            sys.stdin.read()
        """
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(WarehouseError) as refused:
            Warehouse(warehouse, read_only=True, wait=0.5)
    finally:
        holder.kill()
        holder.wait()
    message = str(refused.value)
    assert f"a Warehouse opened for writing, process {holder.pid}" in message, message
    assert "a sync" not in message, message


@pytest.mark.kill
def test_sigkill_of_verify_takes_its_workers_with_it(warehouse) -> None:
    """verify as a process, stopped inside its first commit with its pool of two workers started (three processes:
    it verifies a share itself), is killed with SIGKILL: its workers end too. Before: they lived on for good,
    reparented to init."""
    script = textwrap.dedent(
        f"""
        import time
        import toolkit.verify.run as verify_run
        from toolkit.verify import resolve_policy

        def stuck(*args):
            print("storing", flush=True)
            time.sleep(3600)

        verify_run._store = stuck
        verify_run.verify_warehouse({str(warehouse)!r}, resolve_policy(org_id="x", env={{}}), workers=3)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    workers: list[psutil.Process] = []
    try:
        assert proc.stdout.readline().strip() == "storing"
        workers = psutil.Process(proc.pid).children(recursive=True)
        assert len(workers) >= 2, workers
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        _, alive = psutil.wait_procs(workers, timeout=PATIENCE)
        assert not alive, f"verify's workers outlived it: {[p.pid for p in alive]}"
    finally:
        for p in workers:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
