"""A new user's first hour, as they would live it: real `chainops` processes in a fresh folder, the sandbox over real
HTTP on 127.0.0.1, real DuckDB files. The demo, the commands it prints, and quiet runs are real processes; the checks
of messages and exit codes (did-you-mean, refused --out names, hints) run `chainops` through `main(argv)` in the
test's own process, in the same folder.

The demo runs twice with the same seed (once printing, once `--quiet`); the two warehouses must be equal, the quiet
run must print nothing, and the commands the first run suggests must work exactly as printed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.conftest import TEST_KEY
from tests.support.cli import run_in_process  # main(argv) here: messages and exit codes, no process needed
from toolkit.cli import DEMO_START, METRIC_NAMES
from toolkit.warehouse import Warehouse

#: Real sockets or processes (hostile servers, the sandbox over HTTP, `chainops` as a process): the fast tier
#: skips them (docs/testing.md); `make test` runs them.
pytestmark = pytest.mark.slow

HEAVY = ("pandas", "duckdb", "pyarrow", "matplotlib", "numpy")

#: What a table holds, as one text per table: every row's key and state, in key order.
FINGERPRINTS = {
    "operations": "SELECT count(*), md5(string_agg(operation_id || status || created_at, ',' ORDER BY operation_id))"
    " FROM operations",
    "events": "SELECT count(*), md5(string_agg(event_id || type || ts, ',' ORDER BY event_id)) FROM events",
    "queries": "SELECT count(*), md5(string_agg(query_id || status, ',' ORDER BY query_id)) FROM queries",
}


def chainops(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    return subprocess.run(
        [sys.executable, "-m", "toolkit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**base, **(env or {})},
        timeout=600,
    )


def as_printed(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a printed command line exactly as a shell would (split by shlex, the program as printed, found on the
    PATH or by its path from ``cwd``), in the environment the demo ran in."""
    words = shlex.split(line)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    return subprocess.run(words, capture_output=True, text=True, cwd=cwd, env=base, timeout=600)


def fingerprint(path: Path) -> dict[str, tuple[object, ...]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {table: con.execute(sql).fetchone() for table, sql in FINGERPRINTS.items()}
    finally:
        con.close()


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The demo as a new user runs it in an empty folder: defaults, one day of history to keep the test short."""
    home = tmp_path_factory.mktemp("newuser")
    return home, chainops("demo", "--days", "1", cwd=home)


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The same demo again, elsewhere, with --quiet."""
    home = tmp_path_factory.mktemp("again")
    return home, chainops("demo", "--days", "1", "--quiet", cwd=home)


def next_commands(out: str) -> list[str]:
    """The commands the demo printed last, each joined from its lines as a shell joins a trailing backslash."""
    lines = out.splitlines()
    start = lines.index("Next, on the demo's warehouse:")
    joined = "\n".join(lines[start + 1 :]).replace("\\\n", " ")
    return [" ".join(line.split()) for line in joined.splitlines() if line.strip()]


def test_the_demo_ends_with_next_commands_that_work_as_printed(first) -> None:
    home, out = first
    assert out.returncode == 0, out.stderr
    commands = next_commands(out.stdout)
    assert 2 <= len(commands) <= 3
    program = shlex.split(commands[0])[0]  # `chainops` only when this one is on the PATH, else its path
    assert program == "chainops" or Path(program).name == "chainops", program
    for line in commands:
        run = as_printed(line, home)
        assert run.returncode == 0, (line, run.stderr)
        assert run.stdout.strip(), line
    # the report command wrote its file where it said
    report_line = next(c for c in commands if shlex.split(c)[1] == "report")
    out_file = home / shlex.split(report_line)[-1]
    assert out_file.is_file() and "<html" in out_file.read_text()[:500].lower()


def test_the_same_seed_makes_the_same_warehouse_and_quiet_prints_nothing(first, quiet) -> None:
    (home_a, _), (home_b, out_b) = first, quiet
    assert out_b.returncode == 0, out_b.stderr
    assert out_b.stdout == "" and out_b.stderr == ""
    a, b = fingerprint(home_a / "data" / "demo.duckdb"), fingerprint(home_b / "data" / "demo.duckdb")
    assert a["events"][0] > 1000 and a["operations"][0] > 100
    assert a == b
    # the history ends at the fixed default start: the same whatever the wall clock says
    con = duckdb.connect(str(home_a / "data" / "demo.duckdb"), read_only=True)
    newest = con.execute("SELECT epoch(max(ts)) FROM events").fetchone()[0]
    con.close()
    assert DEMO_START - 86400 < newest <= DEMO_START


def test_a_command_without_a_warehouse_points_at_the_demos(first, monkeypatch) -> None:
    home, _ = first
    monkeypatch.chdir(home)  # the folder the demo ran in, as the user's shell is
    out = run_in_process("metrics", "status-latency")
    assert out.returncode == 1
    assert "--warehouse data/demo.duckdb" in out.stderr, out.stderr
    hint = run_in_process("metrics", "status-latency", "--warehouse", "data/demo.duckdb")
    assert hint.returncode == 0 and "confirmed" in hint.stdout


def test_an_empty_exception_metric_says_none_is_found_not_that_nothing_is_held(first, tmp_path) -> None:
    home, _ = first
    warehouse = home / "data" / "demo.duckdb"
    con = duckdb.connect(str(warehouse), read_only=True)
    overdue = con.execute(
        "SELECT count(*) FROM queries WHERE status NOT IN ('completed', 'failed', 'expired') AND expires_at < "
        "(SELECT max(ts) FROM events)"
    ).fetchone()[0]
    held = con.execute("SELECT count(*) FROM queries").fetchone()[0]
    con.close()
    assert held > 0 and overdue == 0  # the case of the issue: queries held, none overdue
    out = run_in_process("metrics", "overdue-queries", "--warehouse", str(warehouse))
    assert out.returncode == 0
    assert "none is overdue" in out.stderr and "chainops sync" not in out.stderr

    empty = tmp_path / "empty.duckdb"
    Warehouse(empty).close()
    out = run_in_process("metrics", "status-latency", "--warehouse", str(empty))
    assert out.returncode == 0 and "holds no operations" in out.stderr and "chainops sync" in out.stderr


def test_help_version_and_usage_errors_import_no_heavy_library() -> None:
    probe = (
        "import sys\n"
        "from toolkit.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print('LOADED', [m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)\n"
    )
    for argv in (["--help"], ["--version"], ["metrics", "--help"], ["syn"], ["metrics", "failure-rate"]):
        out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=60)
        assert "LOADED []" in out.stderr, (argv, out.stderr)


def test_version_and_did_you_mean(tmp_path, monkeypatch) -> None:
    from toolkit import __version__

    monkeypatch.chdir(tmp_path)
    version = run_in_process("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"chainops {__version__}"
    metric = run_in_process("metrics", "failure-rate")
    assert metric.returncode == 2 and "did you mean 'failure-rates'?" in metric.stderr
    command = run_in_process("syn")
    assert command.returncode == 2 and "did you mean 'sync'?" in command.stderr
    nothing_close = run_in_process("metrics", "zzzz")
    assert nothing_close.returncode == 2 and "did you mean" not in nothing_close.stderr


def test_metric_names_are_the_metrics() -> None:
    from toolkit.metrics import METRICS

    assert sorted(METRIC_NAMES) == sorted(METRICS)


def test_an_out_extension_the_command_cannot_write_is_refused(first, tmp_path, monkeypatch) -> None:
    home, _ = first
    warehouse = str(home / "data" / "demo.duckdb")
    monkeypatch.chdir(tmp_path)
    pdf = tmp_path / "weekly.pdf"
    out = run_in_process("report", "--warehouse", warehouse, "--out", str(pdf))
    assert out.returncode == 2 and ".html" in out.stderr and not pdf.exists()
    tables = tmp_path / "tables.html"
    out = run_in_process("report", "--warehouse", warehouse, "--format", "csv", "--out", str(tables))
    assert out.returncode == 2 and "directory" in out.stderr and not tables.exists()
    unknown = tmp_path / "x.xlsx"
    out = run_in_process("metrics", "revisits", "--warehouse", warehouse, "--out", str(unknown))
    assert out.returncode == 2 and ".xlsx" in out.stderr and not unknown.exists()


def test_sync_and_report_quiet_print_nothing_on_success(server, tmp_path, monkeypatch) -> None:
    # the quiet runs are the processes (nothing on either stream, whoever writes it); the messages of the others are
    # checked in this process. The quiet sync is the first, so it is the one that does the work.
    env = {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": server.base_url}
    warehouse = str(tmp_path / "w.duckdb")
    out = chainops("sync", "--quiet", "--warehouse", warehouse, cwd=tmp_path, env=env)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    with Warehouse(warehouse, read_only=True) as wh:
        assert wh.con.execute("SELECT count(*) FROM operations").fetchone()[0] > 0  # it did sync, silently
    monkeypatch.chdir(tmp_path)
    loud = run_in_process("sync", "--warehouse", warehouse, env=env)
    assert loud.returncode == 0 and "sync ok" in loud.stdout, loud.stderr
    # a short period: what the report holds is not the subject here (tests/report/ checks it), its silence is
    report = tmp_path / "weekly.html"
    out = chainops("report", "--quiet", "--since", "1h", "--warehouse", warehouse, "--out", str(report), cwd=tmp_path)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    assert report.is_file()
    # a breached threshold is still told (as tables: the thresholds are the same, the figures are not drawn)
    tables = tmp_path / "tables"
    breach = ("--fail-on", "operations>=0", "--format", "csv")
    out = run_in_process("report", "--quiet", "--since", "1h", "--warehouse", warehouse, "--out", str(tables), *breach)
    assert out.returncode == 3 and "threshold breached" in out.stderr and out.stdout == ""


def test_a_base_url_that_is_not_the_services_says_so(server, tmp_path) -> None:
    wrong = server.base_url.removesuffix("/v1") + "/api/v1"
    env = {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": wrong}
    out = chainops("sync", "--quiet", "--warehouse", str(tmp_path / "w.duckdb"), cwd=tmp_path, env=env)
    assert out.returncode == 1
    assert "CREC_BASE_URL" in out.stderr and "Check the id" not in out.stderr, out.stderr
    assert TEST_KEY not in out.stderr + out.stdout


def test_the_empty_note_says_what_is_true() -> None:
    from toolkit.known_values import describe_empty

    # the case: 189 queries held, none overdue, was told to run a sync
    overdue = describe_empty({}, metric="overdue-queries", held=189)
    assert "none is overdue" in overdue and "sync" not in overdue
    held = describe_empty({}, metric="status-latency", held=189)
    assert "189" in held and "sync" not in held
    assert "run `chainops sync`" in describe_empty({}, metric="status-latency", held=0)
    assert "--network Base" in describe_empty({"network": ["Base"]}, metric="overdue-queries", held=189)


def test_the_suggested_program_is_named_as_the_shell_finds_it(monkeypatch) -> None:
    from toolkit.cli import _program

    venv_bin = Path(sys.executable).parent
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert _program(str) == "chainops"
    monkeypatch.setenv("PATH", str(venv_bin.parent / "no-such-dir"))  # after `make demo`: .venv/bin not on the PATH
    assert _program(str) == str(venv_bin / "chainops")
