"""The edges of the file system: files that are not warehouses are refused untouched, unwritable places and a full
disk give a clear message (never a traceback), and a failed report or export leaves nothing half-written."""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.conftest import TEST_KEY
from tests.support.snapshot import TABLES, settings_for, snapshot
from toolkit import cli
from toolkit.errors import WarehouseError
from toolkit.export import export_parquet
from toolkit.loader import sync
from toolkit.presentation import report
from toolkit.warehouse import Warehouse
from toolkit.warehouse.identity import FORMAT, MARKER_TABLE

pytestmark = pytest.mark.slow

UNREACHABLE = "http://127.0.0.1:9/v1"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def synced(server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("edges") / "w.duckdb"
    sync(settings_for(server, path), quiet=True)
    return path


def refused_everywhere(capsys, path: Path, monkeypatch, tmp_path: Path) -> list[str]:
    """sync, metrics, report and sql on ``path``: each exits 1 with one message and no traceback; returns them."""
    monkeypatch.setenv("CREC_API_KEY", TEST_KEY)
    monkeypatch.setenv("CREC_BASE_URL", UNREACHABLE)
    messages = []
    for argv in (
        ["sync", "--quiet"],
        ["metrics", "status-latency"],
        ["report", "--out", str(tmp_path / "r.html")],
        ["sql", "select 1"],
    ):
        code, _, err = run_cli(capsys, *argv, "--warehouse", str(path))
        assert code == 1, (argv, err)
        assert "not a chainops warehouse" in err and "Nothing was written" in err, (argv, err)
        assert "Traceback" not in err
        messages.append(err)
    assert not (tmp_path / "r.html").exists()
    return messages


def test_a_sqlite_file_is_refused_untouched_without_a_download(tmp_path) -> None:
    """DuckDB with extension auto-install on would try to download its SQLite extension into ~/.duckdb: with a
    fresh HOME, that directory stays absent, and the file keeps its bytes."""
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE events (id INTEGER, what TEXT)")
        con.execute("INSERT INTO events VALUES (1, 'x')")
    before = digest(path)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    env |= {"HOME": str(home), "CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": UNREACHABLE}
    for args in (["sync", "--quiet"], ["metrics", "status-latency"]):
        out = subprocess.run(
            [sys.executable, "-m", "toolkit", *args, "--warehouse", str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 1, out.stderr
        assert "not a chainops warehouse" in out.stderr and "Traceback" not in out.stderr
        assert "download" not in out.stderr.lower()
    assert digest(path) == before
    assert not (home / ".duckdb").exists(), "DuckDB tried to install an extension"


def test_a_text_file_is_refused_untouched(capsys, monkeypatch, tmp_path) -> None:
    path = tmp_path / "README.md"
    path.write_text("# not a warehouse\n")
    refused_everywhere(capsys, path, monkeypatch, tmp_path)
    assert path.read_text() == "# not a warehouse\n"


@pytest.mark.parametrize("keep", [0.15, 0.6])
def test_a_truncated_warehouse_is_refused_untouched(synced, capsys, monkeypatch, tmp_path, keep) -> None:
    """A copy cut short: DuckDB opens some of these and fails only on a query (or writes into them when opened
    for writing); the toolkit checks the size against the header before anything else."""
    data = synced.read_bytes()
    path = tmp_path / "cut.duckdb"
    path.write_bytes(data[: int(len(data) * keep)])
    before = digest(path)
    messages = refused_everywhere(capsys, path, monkeypatch, tmp_path)
    assert all("damaged" in m for m in messages), messages
    assert digest(path) == before


def test_a_duckdb_file_of_another_program_is_refused_untouched(capsys, monkeypatch, tmp_path) -> None:
    path = tmp_path / "other.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE events (id INTEGER, what VARCHAR)")
        con.execute("INSERT INTO events VALUES (1, 'theirs')")
    before = digest(path)
    messages = refused_everywhere(capsys, path, monkeypatch, tmp_path)
    assert all("another program" in m and "events" in m for m in messages)
    assert digest(path) == before
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT table_name FROM information_schema.tables").fetchall() == [("events",)]
    with pytest.raises(WarehouseError, match="another program"):
        Warehouse(path)


def test_an_empty_duckdb_file_becomes_a_warehouse_with_the_marker(tmp_path) -> None:
    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    with Warehouse(path) as wh:
        assert "events" in wh.tables()
        assert dict(wh.con.execute(f"SELECT key, value FROM {MARKER_TABLE}").fetchall())["format"] == FORMAT


def test_a_warehouse_from_before_the_marker_is_recognised_and_marked(synced, tmp_path) -> None:
    path = tmp_path / "old.duckdb"
    shutil.copy(synced, path)
    with duckdb.connect(str(path)) as con:
        con.execute(f"DROP TABLE {MARKER_TABLE}")  # as an earlier version left it
    with Warehouse(path, read_only=True) as wh:
        assert wh.count("events") > 0 and MARKER_TABLE not in wh.tables()
    with Warehouse(path) as wh:
        assert MARKER_TABLE in wh.tables()
        assert wh.count("events") > 0


def test_every_connection_has_extension_auto_install_and_auto_load_off(synced) -> None:
    query = "SELECT current_setting('autoinstall_known_extensions'), current_setting('autoload_known_extensions')"
    for read_only in (True, False):
        with Warehouse(synced, read_only=read_only) as wh:
            assert wh.con.execute(query).fetchall() == [(False, False)], read_only


def unwritable_dirs(tmp_path: Path) -> list[Path]:
    """Directories no warehouse or output can be written in. As root, permissions do not stop a write, so a path
    under a regular file (not a directory) and /proc stand in; otherwise a read-only directory too."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    places = [blocker / "sub", Path("/proc/self")]
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        places.append(locked)
    return places


def test_unwritable_places_give_a_clear_message(synced, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CREC_API_KEY", TEST_KEY)
    monkeypatch.setenv("CREC_BASE_URL", UNREACHABLE)

    def never_built(*args, **kwargs):
        raise AssertionError("the report was built for a place it cannot be written to")

    # the place is checked before the report is built, whatever the format (a failure after building is
    # test_a_report_that_fails_midway_leaves_nothing_behind's subject)
    monkeypatch.setattr(report, "build_report", never_built)
    wh = str(synced)
    for place in unwritable_dirs(tmp_path):
        runs = {
            "sync": ["sync", "--quiet", "--warehouse", str(place / "w.duckdb")],
            "metrics": [
                "metrics",
                "status-latency",
                "--warehouse",
                wh,
                "--format",
                "csv",
                "--out",
                str(place / "m.csv"),
            ],
            "sql": ["sql", "select 1", "--warehouse", wh, "--out", str(place / "q.json"), "--format", "json"],
            "report": ["report", "--warehouse", wh, "--out", str(place / "r.html")],
            "report-csv": ["report", "--warehouse", wh, "--format", "csv", "--out", str(place / "tables")],
            "export": ["export", "--warehouse", wh, "--out", str(place / "export")],
        }
        for name, argv in runs.items():
            code, _, err = run_cli(capsys, *argv)
            assert code == 1, (place, name, err)
            assert "Cannot write" in err and str(place) in err, (place, name, err)
            assert "Traceback" not in err


def test_the_place_of_an_output_is_checked_without_leaving_anything(tmp_path) -> None:
    from toolkit.atomic import check_output_place

    check_output_place(tmp_path / "new" / "deeper" / "r.html")  # parents still to make: their nearest ancestor
    check_output_place(tmp_path / "tables", directory=True)
    check_output_place("/dev/null")  # written in place, never beside
    assert list(tmp_path.iterdir()) == []  # no directory made, no probe file left
    (tmp_path / "a-file").write_text("x")
    for place in unwritable_dirs(tmp_path):
        for directory in (False, True):
            with pytest.raises(OSError):
                check_output_place(place / "out", directory=directory)
    with pytest.raises(OSError, match="directory of files"):
        check_output_place(tmp_path / "a-file", directory=True)
    with pytest.raises(IsADirectoryError):
        check_output_place(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("locked")) == ["a-file"]


def test_a_full_disk_during_a_sync_says_so_and_the_next_run_completes(server, synced, tmp_path) -> None:
    """A real write failure from the operating system: the sync runs with a file size limit (RLIMIT_FSIZE, with
    SIGXFSZ ignored, so a write past it fails with EFBIG as a full disk fails with ENOSPC). It proves the mapping
    of DuckDB's write errors and that what was committed is kept; it does not fill a real disk."""
    path = tmp_path / "full.duckdb"
    limit = 1_500_000

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    env |= {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": server.base_url, "CHAINOPS_WAREHOUSE": str(path)}
    out = subprocess.run(
        [sys.executable, "-m", "toolkit", "sync", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=small_disk,
    )
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert "disk is full" in out.stderr and "run the sync again" in out.stderr, out.stderr
    assert path.exists() and path.stat().st_size <= limit
    # the next run, with room again: in this process (the process, its limit and its exit are the first run's subject)
    assert sync(settings_for(server, path), quiet=True).outcome == "ok"
    got, want = snapshot(path), snapshot(synced)
    for table in TABLES:
        assert got[table] == want[table], table


def test_a_report_that_fails_midway_leaves_nothing_behind(synced, monkeypatch, tmp_path) -> None:
    # a day before the history: every table and section, drawn at about half the cost (what is tested is how the
    # write fails, not what the tables hold)
    built = report.build_report(str(synced), since="2026-01-01", until="2026-01-02")
    assert len(built.tables) >= 3
    calls = {"n": 0}
    real_to_csv = type(built.tables["status_latency"]).to_csv

    def failing_to_csv(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        return real_to_csv(self, *args, **kwargs)

    monkeypatch.setattr(type(built.tables["status_latency"]), "to_csv", failing_to_csv)
    fresh = tmp_path / "fresh"
    with pytest.raises(OSError, match="No space"):
        built.write(fresh, "csv")
    assert not fresh.exists()
    assert list(tmp_path.iterdir()) == []
    # into an existing directory: the files there stay as they were, and no staging directory is left
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "status_latency.csv").write_text("old\n")
    calls["n"] = 0
    with pytest.raises(OSError):
        built.write(existing, "csv")
    assert [p.name for p in existing.iterdir()] == ["status_latency.csv"]
    assert (existing / "status_latency.csv").read_text() == "old\n"
    # the HTML file: a write that fails half-way leaves no temporary file beside the target
    real_write = Path.write_bytes

    def half_then_full_disk(self: Path, data: bytes) -> int:
        real_write(self, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", half_then_full_disk)
    with pytest.raises(OSError):
        built.write(tmp_path / "r.html", "html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing"]


def test_an_export_that_fails_midway_leaves_the_previous_one(synced, monkeypatch, tmp_path) -> None:
    import toolkit.export as export

    out = tmp_path / "export"
    export_parquet(str(synced), out)
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    real = export._export_one

    def fail_on_events(wh, spec, staging, batch_rows):
        if spec.name == "events":
            raise OSError(28, "No space left on device")
        return real(wh, spec, staging, batch_rows)

    monkeypatch.setattr(export, "_export_one", fail_on_events)
    with pytest.raises(OSError):
        export_parquet(str(synced), out)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    with pytest.raises(OSError):
        export_parquet(str(synced), tmp_path / "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


def test_metrics_out_that_fails_leaves_no_temporary_file(synced, capsys, monkeypatch, tmp_path) -> None:
    import pandas as pd

    def broken(self, path, *args, **kwargs):
        Path(path).write_bytes(b"PAR1 half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    target = tmp_path / "m.parquet"
    code, _, err = run_cli(
        capsys, "metrics", "status-latency", "--warehouse", str(synced), "--format", "parquet", "--out", str(target)
    )
    assert code == 1 and "No space left" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
