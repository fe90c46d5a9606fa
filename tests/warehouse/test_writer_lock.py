"""One writer at a time, whoever writes: a Warehouse opened for writing holds the sync lock while open (a sync's own
connection shares the lock its sync holds), `chainops demo` replaces its warehouse under the lock, and a refusal
names the holder. The holder in another process is a real process holding the real lock file."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.cli import run_in_process
from toolkit.errors import SyncLockedError
from toolkit.warehouse import Warehouse, sync_lock
from toolkit.warehouse.identity import is_demo_warehouse

HOLD = """
import sys
from toolkit.warehouse import sync_lock
with sync_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


@contextmanager
def held_by_another_process(path: Path) -> Iterator[int]:
    """A process holding the warehouse's writer lock as a sync does (until the block ends); yields its pid."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc.pid
    finally:
        proc.communicate(input="", timeout=60)


def test_a_writable_warehouse_holds_the_lock_while_open(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with Warehouse(path), pytest.raises(SyncLockedError) as info, sync_lock(path):
        pass
    assert "a Warehouse opened for writing" in str(info.value) and f"process {os.getpid()}" in str(info.value)
    with sync_lock(path):  # closed: free again
        pass
    assert Path(f"{path}.lock").read_text(encoding="utf-8") == ""  # the holder is named only while it holds


def test_a_writable_open_is_refused_while_another_process_syncs_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    with held_by_another_process(path) as pid:
        with pytest.raises(SyncLockedError) as info:
            Warehouse(path)
        assert f"held by a sync, process {pid} on " in str(info.value)
        with Warehouse(path, read_only=True) as wh:  # readers need no lock
            assert "events" in wh.tables()
    Warehouse(path).close()  # the holder gone, a writer gets in


def test_a_sync_opens_its_own_connection_inside_its_lock(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with sync_lock(path):
        with Warehouse(path) as wh:  # as the sync does: the lock it holds covers its connection
            wh.con.execute("SELECT 1")
        with pytest.raises(SyncLockedError), sync_lock(path):  # closing the connection kept the sync's lock
            pass


def test_the_demo_replaces_its_warehouse_only_under_the_lock(tmp_path: Path) -> None:
    from toolkit.cli import _mark_demo, _replace_demo_warehouse

    path = tmp_path / "demo.duckdb"
    _mark_demo(path)
    with Warehouse(path) as wh:
        wh.con.execute("INSERT INTO sync_state VALUES ('old', '1', now())")
    with held_by_another_process(path) as pid:
        out = run_in_process("demo", "--warehouse", str(path), "--quiet")  # the lock's holder is the other process
        assert out.returncode != 0 and f"held by a sync, process {pid}" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
        with Warehouse(path, read_only=True) as wh:  # untouched
            assert wh.count("sync_state") == 1
    _replace_demo_warehouse(path)  # free: replaced by a new demo warehouse, marked from the start
    assert is_demo_warehouse(path)
    with Warehouse(path, read_only=True) as wh:
        assert wh.count("sync_state") == 0


def test_the_demo_leaves_no_lock_file_beside_a_file_it_refuses(tmp_path: Path) -> None:
    from toolkit.cli import _replace_demo_warehouse
    from toolkit.errors import UsageError

    path = tmp_path / "notes.txt"
    path.write_text("not a warehouse", encoding="utf-8")
    with pytest.raises(UsageError, match="not a warehouse made by `chainops demo`"):
        _replace_demo_warehouse(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
