"""Tables that fit the terminal, SQL results that stop at a screenful, and the Python API refusing what the command
line refuses: over a warehouse synced from the sandbox over real HTTP."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from datetime import UTC, datetime

import pandas as pd
import pytest

from tests.support.cli import run_in_process
from tests.support.cli import run_process as chainops
from toolkit import metrics
from toolkit.cli import main
from toolkit.known_values import UnknownValueError
from toolkit.presentation.tables import present, to_terminal
from toolkit.registry import BY_NAME, METRIC_NAMES
from toolkit.warehouse import Warehouse


@pytest.fixture(scope="module")
def synced(synced_copy) -> str:
    return str(synced_copy)


def run(capsys, monkeypatch, width: int | None, *argv: str) -> tuple[int, str, str]:
    if width is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(width))
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", METRIC_NAMES)
def test_every_metric_fits_the_terminal(synced, capsys, monkeypatch, name, width) -> None:
    code, out, err = run(capsys, monkeypatch, width, "metrics", name, "--warehouse", synced)
    assert code == 0, err
    lines = out.splitlines()
    assert lines and max(len(line) for line in lines) <= width, out
    assert lines[0].startswith(f"{name}: ")  # the period and as-of line comes first
    # the first column an analyst reads is there, unless the metric found nothing
    df = metrics.METRICS[name](synced)
    if len(df):
        first = next(c for c in BY_NAME[name].columns if c.name in df.columns and c.name in BY_NAME[name].default)
        assert any(line.startswith(first.label().split()[0]) for line in lines), out


def test_unknown_width_is_80(synced, capsys, monkeypatch) -> None:
    code, out, _ = run(capsys, monkeypatch, None, "sql", "select * from operations limit 5", "--warehouse", synced)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80


def test_sql_tables_fit_and_name_what_they_leave_out(synced, capsys, monkeypatch) -> None:
    code, out, _ = run(capsys, monkeypatch, 100, "sql", "select * from operations limit 3", "--warehouse", synced)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 100
    assert re.search(r"\b(1 more column|\d+ more columns) not shown", out) and "--wide" in out


def test_text_left_numbers_right_ids_whole_when_they_fit_times_in_utc(synced, capsys, monkeypatch) -> None:
    with Warehouse(synced, read_only=True) as wh:
        op_id = wh.con.execute("select operation_id from operations order by operation_id limit 1").fetchone()[0]
    unix = 1_795_561_055
    query = f"select '{op_id}' as operation_id, 'Base' as network, 7 as n, {unix} as created_at"
    code, out, _ = run(capsys, monkeypatch, 120, "sql", query, "--warehouse", synced)
    assert code == 0
    header, rule, row = out.splitlines()[:3]
    assert set(rule) <= {"─", " "}
    when = datetime.fromtimestamp(unix, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert when in row and "1,795,561,055" not in row
    assert row.startswith(str(op_id))  # whole: the table fits
    # text starts where its header starts; a number ends where its header ends
    assert row.index("Base") == header.index("network")
    n_end = re.search(r"\bn\b", header).end()
    assert row[n_end - 1] == "7" and row[n_end - 2] == " "
    # a file keeps the whole id and the number
    code, out, _ = run(capsys, monkeypatch, 120, "sql", query, "--warehouse", synced, "--format", "csv")
    assert str(op_id) in out and str(unix) in out


def test_columns_and_wide(synced, capsys, monkeypatch) -> None:
    code, out, _ = run(
        capsys, monkeypatch, 80, "metrics", "failure-rates", "--columns", "network,failed", "--warehouse", synced
    )
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("network"))
    assert header.split() == ["network", "failed"]
    code, out, err = run(
        capsys, monkeypatch, 80, "metrics", "failure-rates", "--columns", "network,nope", "--warehouse", synced
    )
    assert code == 2 and "nope" in err and "failure_rate_high" in err
    code, out, _ = run(capsys, monkeypatch, 80, "metrics", "finality-breakdown", "--wide", "--warehouse", synced)
    assert code == 0
    to_finalized = BY_NAME["finality-breakdown"].column("to_finalized_p90_s").label().rsplit(" ", 1)[0]
    assert to_finalized in out and "p90 (min)" in out and "not shown" not in out


def test_status_latency_hides_final_statuses_unless_wide(synced, capsys, monkeypatch) -> None:
    df = metrics.status_latency(synced)
    final = df[df["status"].astype(str).isin(["confirmed", "failed", "cancelled", "expired"])]
    assert len(final), "the sandbox's history has operations in final statuses"
    _, out, _ = run(capsys, monkeypatch, 120, "metrics", "status-latency", "--warehouse", synced)
    rows = [line.split() for line in out.splitlines()]
    statuses = {word for row in rows for word in row}
    assert not statuses & {"confirmed", "failed", "cancelled", "expired"}
    assert f"{len(final)} {'row' if len(final) == 1 else 'rows'} for final statuses" in out
    _code, out, _ = run(capsys, monkeypatch, 400, "metrics", "status-latency", "--wide", "--warehouse", synced)
    assert {"confirmed", "failed"} <= {word for line in out.splitlines() for word in line.split()}


def test_the_period_and_as_of_line(synced, capsys, monkeypatch) -> None:
    latest = metrics.latest_event_time(synced)
    code, out, _ = run(
        capsys,
        monkeypatch,
        200,
        "metrics",
        "failure-rates",
        "--since",
        "2026-01-01",
        "--until",
        "2099-01-01",
        "--warehouse",
        synced,
    )
    assert code == 0
    first = out.splitlines()[0]
    assert "2026-01-01 00:00 to 2099-01-01 00:00 UTC" in first
    assert f"as of {latest:%Y-%m-%d %H:%M} UTC" in first


def test_sql_to_a_pipe_or_a_file_gets_every_row_and_max_rows_limits_a_table(synced, tmp_path) -> None:
    with Warehouse(synced, read_only=True) as wh:
        total = wh.count("events")
    assert total > 100
    piped = chainops("sql", "select event_id from events", "--warehouse", synced)
    assert piped.returncode == 0
    assert len(piped.stdout.splitlines()) == total + 2  # header, rule, every row
    limited = chainops("sql", "select event_id from events", "--warehouse", synced, "--max-rows", "7")
    lines = limited.stdout.splitlines()
    assert lines[9].startswith(f"{total:,} rows (7 shown)")  # header, rule, 7 rows, then the note
    assert all(re.fullmatch(r"[0-9a-f-]{36}", line.strip()) for line in lines[2:9])  # ids whole: they fit
    out = tmp_path / "events.csv"
    written = run_in_process(  # a file is no stream of this process: main(argv) writes it as the command does
        "sql", "select event_id from events", "--warehouse", synced, "--max-rows", "7", "--out", str(out)
    )
    assert written.returncode == 0 and len(pd.read_csv(out)) == total


def test_sql_to_a_terminal_shows_a_screenful(synced) -> None:
    """On a terminal (a pseudo-terminal here) of 30 lines, a result of more rows stops short of a screen."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkit", "sql", "select * from range(500)", "--warehouse", synced],
        stdout=follower,
        stderr=subprocess.PIPE,
        env={**env, "LINES": "30", "COLUMNS": "80"},
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
    assert proc.wait(timeout=60) == 0
    os.close(leader)
    lines = b"".join(chunks).decode().splitlines()
    assert len(lines) < 30
    note = next(line for line in lines if line.startswith("500 rows ("))
    shown = int(note.split("(")[1].split()[0])
    assert 10 <= shown < 30 and lines[2 + shown - 1].split() == [str(shown - 1)]  # the rows before the note


# ---- the Python API validates like the command line ---------------------------------------------------------------


def test_unknown_values_raise_naming_the_nearest(synced) -> None:
    with pytest.raises(UnknownValueError, match=r"did you mean 'Ethereum Mainnet'.*Ethereum Sepolia"):
        metrics.failure_rates(synced, network="ethereum")
    with pytest.raises(ValueError, match=r"did you mean 'confirmed'"):
        metrics.status_latency(synced, status="confirmd")
    with pytest.raises(UnknownValueError, match=r"unknown channel 'nope'"):
        metrics.failure_rates(synced, channel="nope")


def test_network_names_in_any_case_and_channel_names(synced) -> None:
    exact = metrics.failure_rates(synced, network="Ethereum Mainnet")
    assert len(exact)
    pd.testing.assert_frame_equal(metrics.failure_rates(synced, network="ethereum MAINNET"), exact)
    with Warehouse(synced, read_only=True) as wh:
        rows = wh.con.execute("select channel_id, name from channels order by name").fetchall()
    names = [n for _, n in rows]
    channel_id, name = next((i, n) for i, n in rows if names.count(n) == 1)
    by_id = metrics.failure_rates(synced, channel=channel_id)
    pd.testing.assert_frame_equal(metrics.failure_rates(synced, channel=name), by_id)
    out = run_in_process("metrics", "failure-rates", "--network", "ethereum mainnet", "--warehouse", synced)
    assert out.returncode == 0, out.stderr


def test_results_by_channel_carry_its_name(synced) -> None:
    df = metrics.failure_rates(synced, by=["channel_id"])
    with Warehouse(synced, read_only=True) as wh:
        names = dict(wh.con.execute("select channel_id, name from channels").fetchall())
    assert list(df.columns[:2]) == ["channel_id", "channel"]
    assert df["channel"].tolist() == [names[i] for i in df["channel_id"]]


def test_present_is_one_rule_for_every_surface() -> None:
    """A value reads the same in the terminal table and the HTML table."""
    from toolkit.presentation.tables import to_html

    df = pd.DataFrame(
        {
            "network": ["Base"],
            "failure_rate": [2 / 129],
            "failure_rate_low": [0.004],
            "failure_rate_high": [0.055],
            "p90_s": [5400.0],
        }
    )
    shown = present(df, metric="failure-rates")
    text, page = to_terminal(shown, 80), to_html(shown)
    for cell in ("1.55% (0.400–5.50%)", "90.0"):
        assert cell in text and cell in page
    assert "p90 (min)" in text and "p90 (min)" in page


def _pct(share: float) -> str:
    """A share as a percentage of three significant figures, trailing zeros kept (Python's own ``#`` form)."""
    return "0" if share == 0 else f"{share * 100:#.3g}".rstrip(".")


def test_a_notebook_shows_a_metric_as_the_terminal_does(synced, capsys, monkeypatch) -> None:
    import toolkit as tk

    df = metrics.failure_rates(synced)
    row = df.dropna(subset=["failure_rate_low"]).iloc[0]
    expected = f"{_pct(row['failure_rate'])}% ({_pct(row['failure_rate_low'])}–{_pct(row['failure_rate_high'])}%)"
    page = tk.show(df)._repr_html_()
    assert f">{expected}</td>" in page and "failure_rate_low" not in page
    _, out, _ = run(capsys, monkeypatch, 200, "metrics", "failure-rates", "--warehouse", synced)
    assert expected in out


def test_a_column_without_values_gives_way_when_the_table_does_not_fit() -> None:
    """An all-missing column (a JSON column nobody filled) is left out before a column with values, and named."""
    df = pd.DataFrame(
        {
            "id": ["a" * 10, "b" * 10],
            "extra": [None, None],
            "status": ["confirmed", "failed"],
            "chain_selector": ["5009297550715157269", "4949039107694359620"],
        }
    )
    narrow = to_terminal(present(df, metric=False), 50)
    header = narrow.splitlines()[0].split()
    assert header == ["id", "status", "chain_selector"], narrow
    assert "not shown (the terminal is too narrow): extra" in " ".join(narrow.split())
    assert all(len(line) <= 50 for line in narrow.splitlines())
    wide = to_terminal(present(df, metric=False), 80)  # everything fits: the empty column is shown, as asked for
    assert wide.splitlines()[0].split() == ["id", "extra", "status", "chain_selector"]
    assert "not shown" not in wide


def _headers(out: str) -> list[str]:
    """Each column's whole header in a table printed by ``chainops``, its lines joined: the header lines are those
    above the rule that start with a space or hold a gap of three (prose never does); the columns are the runs
    of the header and rows between gaps of two or more spaces in every line."""
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if line and set(line) == {"─"})
    start = rule
    while start > 0 and (lines[start - 1].startswith(" ") or "   " in lines[start - 1]):
        start -= 1
    block = lines[start:rule]
    rows = []
    for line in lines[rule + 1 :]:
        if not line or ("   " not in line and not line.startswith(" ")):
            break
        rows.append(line)
    width = max(len(line) for line in [*block, *rows])
    used = [any(i < len(line) and line[i] != " " for line in [*block, *rows]) for i in range(width)] + [False] * 2
    spans, start_at, i = [], None, 0
    while i < width:
        if used[i] and start_at is None:
            start_at = i
        if start_at is not None and not used[i] and not used[i + 1]:
            spans.append((start_at, i))
            start_at = None
        i += 1
    if start_at is not None:
        spans.append((start_at, width))
    return [" ".join(line[a:b].strip() for line in block if line[a:b].strip()) for a, b in spans]


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", METRIC_NAMES)
def test_headers_are_distinct_whole_words_with_statistic_and_unit(synced, capsys, monkeypatch, name, width) -> None:
    """5a: no two headers alike, none cut inside a word, a duration's statistic and unit always in its header."""
    code, out, _ = run(capsys, monkeypatch, width, "metrics", name, "--warehouse", synced)
    assert code == 0
    if "no rows" in out.splitlines():
        return
    headers = _headers(out)
    assert len(headers) == len(set(headers)), headers
    df = metrics.METRICS[name](synced)
    declared = {w for c in BY_NAME[name].columns for w in c.label().split()}  # the declared short headers' words
    words = {w for c in df.columns for w in str(c).split("_")} | declared | {"%", "(s)", "(min)", "(h)", "(d)"}
    for header in headers:
        assert all(w in words for w in header.split()), (header, out)  # whole words of the names and labels only
    for column in BY_NAME[name].columns:
        if column.kind == "duration" and any(column.label() in h for h in headers):
            assert any(re.search(re.escape(column.label()) + r" \((s|min|h|d)\)", h) for h in headers), headers


def test_query_latency_tells_p50_from_p90_at_120(synced, capsys, monkeypatch) -> None:
    _, out, _ = run(capsys, monkeypatch, 120, "metrics", "query-latency", "--warehouse", synced)
    headers = _headers(out)
    declared = BY_NAME["query-latency"]
    p50, p90 = (declared.column(f"accepted_to_terminal_{p}_s").label() for p in ("p50", "p90"))
    assert p50 != p90 and f"{p50} (s)" in headers and f"{p90} (s)" in headers, out


def test_requested_columns_stay_whole(synced, capsys, monkeypatch) -> None:
    columns = "network,to_latest_p50_s,to_finalized_p50_s,to_finalized_p90_s"
    code, out, _ = run(
        capsys, monkeypatch, 80, "metrics", "finality-breakdown", "--columns", columns, "--warehouse", synced
    )
    assert code == 0 and "not shown" not in out, out
    headers = _headers(out)
    assert len(headers) == 4 and headers[0] == "network", headers
    label = BY_NAME["finality-breakdown"].column("to_finalized_p50_s").label()
    assert re.fullmatch(re.escape(label) + r" \((s|min|h)\)", headers[2]) and "p90" in headers[3], headers
    # p50 and p90 of one stage in one unit
    assert headers[2].rsplit(" ", 1)[1] == headers[3].rsplit(" ", 1)[1], headers


def test_a_narrow_terminal_keeps_the_metric_value(synced, capsys, monkeypatch) -> None:
    """5b: the value columns stay; descriptors go first, and the footer names them and how to see them."""
    code, out, _ = run(capsys, monkeypatch, 80, "metrics", "failure-rates", "--by", "channel_id", "--warehouse", synced)
    assert code == 0
    headers = _headers(out)
    assert "failure rate %" in headers, out
    flat = " ".join(out.split())
    assert "not shown (the terminal is too narrow)" in flat and "--wide shows all" in flat, out
    left_out = flat.split("too narrow): ", 1)[1].split(" (--wide")[0].split(", ")
    assert "failure_rate" not in left_out and all(c in metrics.failure_rates(synced).columns for c in left_out)


def test_every_dash_has_its_reason_on_screen(synced, capsys, monkeypatch) -> None:
    """5c: a p50 shown as ``-`` comes with the row's notes below the table when the notes column is not shown."""
    df = metrics.status_latency(synced)
    blank = df[df["p50_s"].isna() & ~df["status"].astype(str).isin(["confirmed", "failed", "cancelled", "expired"])]
    assert len(blank), "the sandbox's history has a status without a p50"
    _, out, _ = run(capsys, monkeypatch, 80, "metrics", "status-latency", "--warehouse", synced)
    flat = " ".join(out.split())
    assert "Why a value is -:" in flat, out
    for _, row in blank.head(3).iterrows():
        assert f"{row['network']} {row['status']}" in flat, out
        # the part of the notes about the blank p50 (and p90), as the notes word it: "p50: 9 at risk ..."
        # (the whole note when no part names one)
        about = [p for p in str(row["notes"]).split("; ") if p.startswith(("p50:", "p90:"))] or [str(row["notes"])]
        assert all(" ".join(p.split()) in flat for p in about), (row["notes"], out)
    # and the footer names the columns the default view leaves out
    assert "notes" in flat.split("Also in the result:", 1)[1], out
