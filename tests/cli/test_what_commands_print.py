"""What the commands print, on a terminal of 80 columns, from the demo's own warehouse: every line fits (demo, sync,
verify, report, not only tables), long tables stop at the row limit `sql` keeps, what a footer suggests is accepted,
`--quiet` is accepted wherever something is printed on success, typos get a "did you mean", and `verify` works on
the demo's warehouse with no flag the demo never mentioned."""

from __future__ import annotations

import argparse
import os
import pty
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from tests.conftest import TEST_KEY, small_sandbox
from tests.support.cli import Ran, run_in_process
from toolkit.cli import build_parser

WIDTH = 80


@pytest.fixture(autouse=True)
def eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Ran]]:
    """The demo (one day of history, proofs forged as by default) run at 80 columns, and its warehouse."""
    home = tmp_path_factory.mktemp("demo80")
    warehouse = home / "demo.duckdb"
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        ran = run_in_process("demo", "--days", "1", "--warehouse", str(warehouse), "--out", str(home / "reports"))
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    assert ran.returncode == 0, ran.stderr
    yield warehouse, ran


@pytest.fixture
def copy(demo, tmp_path: Path) -> Path:
    """A copy of the demo's warehouse this test may write (verify records its verdicts)."""
    path = tmp_path / "copy.duckdb"
    shutil.copyfile(demo[0], path)
    return path


#: What may stand beside a word longer than a line: its indentation and an option's name (``    --warehouse``).
BESIDE_A_LONG_WORD = 20


def too_wide(text: str) -> list[str]:
    """The lines wider than the terminal, but for one made so by a single word (a path longer than a line, such as a
    test's temporary folder, is never split, so that it can be copied whole: it stands alone, or after its option)."""
    return [
        line
        for line in text.splitlines()
        if len(line) > WIDTH and len(line) - max(map(len, line.split())) > BESIDE_A_LONG_WORD
    ]


def test_the_demo_fits_80_columns(demo) -> None:
    _, ran = demo
    assert "invalid  " in ran.stdout and "rows new/updated" in ran.stdout  # the parts that were too wide are there
    assert too_wide(ran.stdout + ran.stderr) == []


def test_verify_on_the_demo_warehouse_needs_no_flag_and_fits(copy) -> None:
    ran = run_in_process("verify", "--warehouse", str(copy), "--all")
    assert ran.returncode == 3, ran.stderr  # the demo forges 1% of its proofs: found, the rest verified
    assert "recorded by chainops demo" in ran.stdout
    con = duckdb.connect(str(copy), read_only=True)
    try:
        counts = dict(con.execute("select verdict, count(*) from event_verifications group by 1").fetchall())
    finally:
        con.close()
    assert counts["verified"] > 20 * counts.get("invalid", 0) > 0, counts
    assert too_wide(ran.stdout + ran.stderr) == []


def test_verify_flags_and_the_environment_still_win_over_what_the_demo_recorded(copy) -> None:
    owner = "0x" + "11" * 20  # no proof carries this owner
    ran = run_in_process("verify", "--warehouse", str(copy), "--workflow-owner", owner)
    assert ran.returncode == 3 and "recorded by chainops demo" not in ran.stdout
    con = duckdb.connect(str(copy), read_only=True)
    try:  # checked against the owner given: no proof carries it, so none verified under it
        judged = dict(
            con.execute(
                "select verdict, count(*) from event_verifications where workflow_owner = ? group by 1", [owner]
            ).fetchall()
        )
    finally:
        con.close()
    assert judged.get("invalid", 0) > 0 and judged.get("verified", 0) == 0, judged
    ran = run_in_process("verify", "--warehouse", str(copy), "--all", env={"CREC_WORKFLOW_OWNER": owner})
    assert ran.returncode == 3 and "recorded by chainops demo" not in ran.stdout


def test_signers_recorded_in_a_warehouse_that_is_not_the_demos_are_not_trusted(copy) -> None:
    """The recorded signers are the file's own word: a warehouse that carries them but is no demo's (here, its mark
    gone) is checked against what the user or the SDK says, so it needs an organisation as any warehouse does."""
    con = duckdb.connect(str(copy))
    try:
        con.execute("DELETE FROM chainops_meta WHERE key = 'made_by'")
        assert con.execute("SELECT count(*) FROM chainops_meta WHERE key = 'demo_signers'").fetchall()[0][0] == 1
    finally:
        con.close()
    ran = run_in_process("verify", "--warehouse", str(copy), "--all")
    assert ran.returncode == 2 and "recorded by chainops demo" not in ran.stdout + ran.stderr, ran.stderr
    assert "--org-id" in ran.stderr


def test_quiet_verify_still_says_whose_signers_it_used(copy) -> None:
    ran = run_in_process("verify", "--warehouse", str(copy), "--all", "--quiet")
    assert "recorded by chainops demo" in ran.stderr and "recorded by chainops demo" not in ran.stdout


def test_report_and_sync_summaries_fit_80_columns(demo, tmp_path: Path) -> None:
    report = run_in_process("report", "--warehouse", str(demo[0]), "--out", str(tmp_path / "r.html"))
    assert report.returncode == 0, report.stderr
    assert len(report.stdout.splitlines()) > 2 and too_wide(report.stdout + report.stderr) == []
    with small_sandbox().serve(host="127.0.0.1", port=0) as running:
        env = {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": running.base_url}
        sync = run_in_process("sync", "--warehouse", str(tmp_path / "s.duckdb"), env=env)
    assert sync.returncode == 0, sync.stderr
    assert "rows new/updated" in sync.stdout and too_wide(sync.stdout + sync.stderr) == []


def test_the_demo_suggests_commands_that_fit_and_join_as_a_shell_joins_them(demo) -> None:
    _, ran = demo
    tail = ran.stdout.split("Next, on the demo's warehouse:\n")[1]
    commands = tail.replace("\\\n", " ").splitlines()
    assert len(commands) == 3 and all(" metrics " in c or " sql " in c or " report " in c for c in commands)
    assert any(line.endswith(" \\") for line in tail.splitlines())  # at 80 columns one of them needed two lines


def run_on_a_terminal(
    *argv: str, lines: int = 30, cwd: Path | None = None, stderr_too: bool = False, code: int = 0
) -> list[str]:
    """``chainops ARGV`` with its standard output (and error, ``stderr_too``) on a pseudo-terminal of ``lines``
    lines and 80 columns; it must exit with ``code``."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkit", *argv],
        stdout=follower,
        stderr=follower if stderr_too else subprocess.PIPE,
        env={**env, "LINES": str(lines), "COLUMNS": str(WIDTH)},
        cwd=cwd,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=120) == code
    os.close(leader)
    return b"".join(chunks).decode().splitlines()


def test_a_long_metric_table_stops_where_sql_does_with_the_total(demo) -> None:
    warehouse = str(demo[0])
    con = duckdb.connect(warehouse, read_only=True)
    try:
        total = con.execute("select count(*) from events").fetchall()[0][0]
    finally:
        con.close()
    sql = run_on_a_terminal("sql", "select event_id from events", "--warehouse", warehouse)
    metric = run_on_a_terminal("metrics", "watcher-activity", "--warehouse", warehouse)
    sql_note = next(line for line in sql if line.startswith(f"{total:,} rows ("))
    shown = int(sql_note.split("(")[1].split()[0])
    metric_note = next(line for line in metric if re.match(r"[\d,]+ rows \(\d+ shown\)", line))
    assert int(metric_note.split("(")[1].split()[0]) == shown < int(metric_note.split()[0].replace(",", ""))
    assert len(metric) <= 30 and max(len(line) for line in metric) <= WIDTH  # a screenful, not 393 rows
    # --max-rows sets the limit for a metric as for sql, a pipe gets every row
    ran = run_in_process("metrics", "watcher-activity", "--warehouse", warehouse, "--max-rows", "3")
    assert ran.returncode == 0 and re.search(r"^[\d,]+ rows \(3 shown\)", ran.stdout, re.MULTILINE), ran.stdout


def test_sql_accepts_what_its_footer_suggests_and_shows_ids_whole_when_they_fit(demo) -> None:
    warehouse = str(demo[0])
    con = duckdb.connect(warehouse, read_only=True)
    try:
        op_id = str(con.execute("select operation_id from operations order by 1 limit 1").fetchall()[0][0])
    finally:
        con.close()
    everything = run_in_process(
        "sql", "select * from operations order by operation_id limit 3", "--warehouse", warehouse
    )
    assert everything.returncode == 0
    assert "--wide" in everything.stdout and "--columns" in everything.stdout  # the footer names them
    assert op_id not in everything.stdout and "--format csv show them whole" in everything.stdout
    picked = run_in_process(
        "sql", "select * from operations order by operation_id limit 3", "--warehouse", warehouse,
        "--columns", "operation_id,status", "--max-rows", "2",
    )  # fmt: skip
    assert picked.returncode == 0, picked.stderr
    assert picked.stdout.splitlines()[0].split() == ["operation_id", "status"]
    assert picked.stdout.splitlines()[2].startswith(op_id)  # whole, so `sql ... where operation_id = '...'` takes it
    assert "3 rows (2 shown)" in picked.stdout and too_wide(picked.stdout) == []
    wide = run_in_process("sql", "select * from operations limit 1", "--warehouse", warehouse, "--wide")
    assert wide.returncode == 0 and "not shown" not in wide.stdout
    back = run_in_process(
        "sql", f"select status from operations where operation_id = '{op_id}'", "--warehouse", warehouse
    )
    assert back.returncode == 0 and len(back.stdout.splitlines()) == 3


def test_quiet_is_accepted_by_every_command_that_prints_on_success(demo, copy, tmp_path: Path) -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    without = [name for name, p in commands.items() if not any("--quiet" in a.option_strings for a in p._actions)]
    assert without == ["sandbox"]  # a server: its one line says where it listens
    warehouse = str(demo[0])
    metric = run_in_process("metrics", "failure-rates", "--warehouse", warehouse, "--quiet")
    assert metric.returncode == 0 and not metric.stdout.startswith("failure-rates:")  # no period line
    assert "network" in metric.stdout.splitlines()[0].split() + metric.stdout.splitlines()[1].split()  # the header
    sql = run_in_process("sql", "select * from range(5)", "--warehouse", warehouse, "--quiet", "--max-rows", "2")
    assert sql.returncode == 0 and "rows (2 shown)" not in sql.stdout
    export = run_in_process("export", "--warehouse", warehouse, "--out", str(tmp_path / "x"), "--quiet")
    assert export.returncode == 0 and export.stdout == "" and (tmp_path / "x").is_dir()
    verify = run_in_process("verify", "--warehouse", str(copy), "--quiet", "--all")
    assert verify.returncode == 3 and verify.stdout == "" and "invalid" in verify.stderr


def test_did_you_mean_on_fail_on_names_and_status_values(demo) -> None:
    warehouse = str(demo[0])
    typo = run_in_process("report", "--warehouse", warehouse, "--out", "r.html", "--fail-on", "stuk>0")
    assert typo.returncode == 2 and "did you mean 'stuck'?" in typo.stderr
    status = run_in_process("metrics", "status-latency", "--warehouse", warehouse, "--status", "pendng")
    assert status.returncode == 2 and "did you mean 'pending_signature'?" in status.stderr
    network = run_in_process("metrics", "status-latency", "--warehouse", warehouse, "--network", "Etherum")
    assert network.returncode == 2 and "did you mean 'Ethereum Mainnet'?" in network.stderr
    metric = run_in_process("metrics", "failure-rat", "--warehouse", warehouse)
    assert metric.returncode == 2 and "did you mean 'failure-rates'?" in metric.stderr
    # on a terminal the messages fit it too (to a pipe or a log each stays one line, for grep)
    for argv in (["metrics", "failure-rat"], ["metrics", "status-latency", "--network", "Etherum"]):
        said = run_on_a_terminal(*argv, "--warehouse", warehouse, stderr_too=True, code=2)
        assert "did you mean" in " ".join(said) and too_wide("\n".join(said)) == [], said


def test_the_dashboard_page_suggests_the_nearest_status(demo) -> None:
    from toolkit.presentation.dashboard_page import Options, render_page

    warehouse = str(demo[0])
    page = render_page(warehouse, Options(warehouse), {"status": ["pendng"]})
    assert 'class="error"' in page and "did you mean &#x27;pending_signature&#x27;" in page


def test_the_demo_on_a_terminal_stops_its_table_and_its_footers_name_commands_that_work(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # paths short enough for a line: a path longer than a line is never split
    lines = run_on_a_terminal("demo", "--days", "1", "--warehouse", "demo.duckdb", "--out", "r", cwd=tmp_path)
    assert too_wide("\n".join(lines)) == []
    said = " ".join(" ".join(lines).split())
    cut = re.search(r"\d+ rows \(22 shown\); (chainops metrics status-latency .*?) --max-rows N shows more", said)
    hidden = re.search(r"not shown \((chainops metrics status-latency .*?) --wide shows them\)", said)
    assert cut and hidden, said
    for command in (f"{cut[1]} --max-rows 100", f"{hidden[1]} --wide"):
        ran = run_in_process(*shlex.split(command)[1:])
        assert ran.returncode == 0 and "pending_signature" in ran.stdout, (command, ran.stderr)
