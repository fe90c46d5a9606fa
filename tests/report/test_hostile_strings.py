"""Names from the service as an attacker would pick them: ANSI escape sequences never reach the terminal, formulas
never run in a spreadsheet, and a megabyte-long name is shortened for display (the data outputs keep it whole)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import TEST_KEY
from tests.support.service import InProcess
from toolkit import cli
from toolkit.presentation.safe import csv_safe
from toolkit.presentation.values import clean_for_terminal, shorten
from toolkit.sandbox import Sandbox
from toolkit.warehouse import Warehouse

ANSI = "\x1b[31mred alert\x1b[0m\x1b]0;pwned\x07"
FORMULA = '=HYPERLINK("http://x.example/","click")'
HUGE = "A" * 1_000_000


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synced warehouse whose channels were renamed through the API to an ANSI and a formula name, and whose
    networks then got an ANSI, a formula and a 1 MB name (the API refuses names over 255 characters, a warehouse
    or another service need not)."""
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=11, days=2, operations_per_day=300)
    path = tmp_path_factory.mktemp("hostile") / "w.duckdb"
    # answered in process (tests/support/service.py): the names are the subject, not how they cross a network
    service = InProcess(sandbox)
    with service.client() as client:
        channels = [c["channel_id"] for c in client.iter_channels(status=["active"])]
        client.rename_channel(channels[0], ANSI)
        client.rename_channel(channels[1], FORMULA)
    assert service.sync(path).outcome == "ok"
    with Warehouse(path) as wh:
        by_use = [
            r[0]
            for r in wh.con.execute(
                "SELECT chain_selector FROM operations GROUP BY ALL ORDER BY count(*) DESC, chain_selector"
            ).fetchall()
        ]
        # the megabyte name goes to the network of fewest operations: every row that carries it copies a megabyte
        # through each metric (the claims are about the name's length, not how many rows repeat it)
        for selector, name in zip((by_use[0], by_use[1], by_use[-1]), (ANSI, FORMULA, HUGE), strict=True):
            wh.con.execute("UPDATE networks SET name = ? WHERE chain_selector = ?", [name, selector])
        wh.con.execute("UPDATE channels SET name = ? WHERE channel_id = ?", [HUGE, channels[2]])
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_the_helpers() -> None:
    assert clean_for_terminal("a\x1bb\x9bc\u202ed\ne") == "a\\x1bb\\x9bc\\u202ed\\x0ae"
    assert clean_for_terminal("line\nnext", keep_newlines=True) == "line\nnext"
    assert shorten("abcdef", 4) == "abc…" and shorten("abc", 4) == "abc"
    assert [csv_safe(v) for v in ("=1+1", "+1", "-x", "@SUM(A1)", "\tx", "\rx", "-0.05", "ok", -3)] == [
        "'=1+1",
        "+1",
        "'-x",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "-0.05",
        "ok",
        -3,
    ]


def test_terminal_tables_show_no_escape_sequences_and_no_megabyte(hostile, capsys) -> None:
    wh = str(hostile)
    for argv in (
        ["metrics", "status-latency"],
        ["sql", "select name, chain_selector from networks"],
        ["sql", "select name from channels"],
    ):
        out = run(capsys, *argv, "--warehouse", wh)
        assert "\x1b" not in out and "\x07" not in out, argv
        assert "\\x1b[31mred alert" in out, argv
        assert max(len(line) for line in out.splitlines()) < 2000, argv
        assert "A" * 200 not in out, argv


@pytest.mark.slow
def test_csv_outputs_neutralise_formulas(hostile, capsys, tmp_path) -> None:
    wh = str(hostile)
    metrics_csv = run(capsys, "metrics", "status-latency", "--warehouse", wh, "--format", "csv")
    sql_csv = run(capsys, "sql", "select name from channels", "--warehouse", wh, "--format", "csv")
    run(capsys, "report", "--warehouse", wh, "--since", "30d", "--format", "csv", "--out", str(tmp_path / "csv"))
    by_channel = (tmp_path / "csv" / "failure_by_channel.csv").read_text()
    for text in (metrics_csv, sql_csv, by_channel):
        assert "'=HYPERLINK(" in text
        assert "\n=HYPERLINK(" not in text and ",=HYPERLINK(" not in text and '"=HYPERLINK(' not in text
    assert HUGE in by_channel  # CSV is data: the whole value, only formulas neutralised
    # CSV printed on the terminal shows control characters visibly; written to a file it keeps them
    for text in (metrics_csv, sql_csv):
        assert "\x1b" not in text and "\\x1b[31mred alert" in text
    run(
        capsys,
        "sql",
        "select name from channels",
        "--warehouse",
        wh,
        "--format",
        "csv",
        "--out",
        str(tmp_path / "names.csv"),
    )
    assert ANSI in (tmp_path / "names.csv").read_text()


def test_json_keeps_values_as_they_are(hostile, capsys) -> None:
    rows = json.loads(run(capsys, "sql", "select name from networks", "--warehouse", str(hostile), "--format", "json"))
    assert {ANSI, FORMULA, HUGE} <= {r["name"] for r in rows}


@pytest.mark.slow
def test_the_report_shortens_a_megabyte_name_and_escapes_the_rest(hostile, capsys, tmp_path) -> None:
    out = run(capsys, "report", "--warehouse", str(hostile), "--since", "30d", "--out", str(tmp_path / "r.html"))
    assert "\x1b" not in out and "A" * 100 not in out  # the findings printed on the terminal
    page = (tmp_path / "r.html").read_text()
    assert HUGE not in page
    assert "A" * 150 in page and "A" * 199 + "…" in page  # the shortened form, in the tables
    assert len(page) < 3_000_000  # figures and tables, not a megabyte per mention of the name
    assert "=HYPERLINK(" in page  # HTML shows it as text (escaped), it runs nowhere
    # shown as the terminal shows it (one presentation model): the escape visible as text, never the raw byte
    assert "\\x1b[31mred alert" in page and "\x1b" not in page
