"""`--since 1d --until <iso>` counts back from --until in every command: `metrics` and `report` select the same
operations of a hand-built warehouse."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from tests.support.builders import T0, build, ladder, op_record, refresh
from tests.support.cli import run_in_process as chainops  # main(argv) in this process

DAY = 86_400
#: Seconds from the builders' T0 to 2025-12-31 00:00 UTC, the start of the period under test.
START = int(pd.Timestamp("2025-12-31T00:00:00Z").timestamp()) - T0


def _warehouse(path: Path) -> Path:
    """Inside [2025-12-31, 2026-01-01): 3 confirmed and 1 failed; the day before: 2; from 2026-01-01 on: 5."""
    events, records = [], []
    plan = [("in", START + 3600 * k, k == 3) for k in range(4)]
    plan += [("before", START - 3600 * (k + 1), False) for k in range(2)]
    plan += [("after", START + DAY + 60 * k, False) for k in range(5)]
    for i, (name, t, fails) in enumerate(plan):
        op = f"{name}-{i}"
        statuses = ("accepted", "sending", "failed") if fails else ("accepted", "sending", "confirmed")
        events += ladder(op, statuses, (t, t + 5, t + 10), reason="execution reverted")
        records.append(op_record(op, statuses[-1], created=t, updated=t + 10))
    refresh(build(path, events=events, operations=records)).close()
    return path


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The module's warehouse (its tests only read it)."""
    return str(_warehouse(tmp_path_factory.mktemp("periods") / "w.duckdb"))


def test_metrics_and_report_select_the_same_period(warehouse: str, tmp_path: Path) -> None:
    wh = warehouse
    period = ("--since", "1d", "--until", "2026-01-01")
    got = chainops("metrics", "failure-rates", "--warehouse", wh, "--by", "network", "--format", "csv", *period)
    assert got.returncode == 0, got.stderr
    rates = pd.read_csv(io.StringIO(got.stdout))
    assert int(rates["operations"].sum()) == 4 and int(rates["failed"].sum()) == 1

    out = tmp_path / "rep"
    done = chainops("report", "--warehouse", wh, "--format", "csv", "--out", str(out), *period)
    assert done.returncode == 0, done.stderr
    summary = pd.read_csv(out / "summary.csv").set_index("name")["value"]
    assert summary["since"].startswith("2025-12-31T00:00:00") and summary["until"].startswith("2026-01-01T00:00:00")
    assert float(summary["operations"]) == 4.0
    # the previous period is the day before: its 2 operations, none failed
    assert float(summary["previous_failure_rate"]) == 0.0

    week = chainops(
        "metrics", "failure-rates", "--warehouse", wh, "--format", "csv", "--since", "7days", "--until", "2026-01-01"
    )
    assert week.returncode == 0, week.stderr
    assert int(pd.read_csv(io.StringIO(week.stdout))["operations"].sum()) == 6


def test_a_relative_period_older_than_the_data_says_why_it_is_empty(warehouse: str, monkeypatch) -> None:
    # `--since 7d` counts back from the wall clock; the hand-built warehouse ends on 2026-01-01, so nothing is in it
    wh = warehouse
    newest = pd.Timestamp(T0 + START + DAY + 60 * 4 + 10, unit="s", tz="UTC")  # the last "after" operation's end
    monkeypatch.setenv("COLUMNS", "60")
    got = chainops("metrics", "failure-rates", "--warehouse", wh, "--format", "csv", "--since", "7d")
    assert got.returncode == 0, got.stderr
    assert max(map(len, got.stderr.splitlines())) <= 60  # wrapped to the terminal, as the tables are
    said = " ".join(got.stderr.split())
    assert "no rows" in said
    until = (newest + pd.Timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert f"the newest event in the warehouse is older ({newest.strftime('%Y-%m-%dT%H:%M:%SZ')})" in said
    assert f"add --until {until}" in said
    # what the note suggests counts back from the data: the 11 operations of the last 7 days of it
    again = chainops(
        "metrics", "failure-rates", "--warehouse", wh, "--format", "csv", "--since", "7d", "--until", until
    )
    assert again.returncode == 0, again.stderr
    assert int(pd.read_csv(io.StringIO(again.stdout))["operations"].sum()) == 11
    assert "newest event" not in again.stderr
    # an absolute period that finds nothing is not explained by the data's age
    old = chainops(
        "metrics",
        "failure-rates",
        "--warehouse",
        wh,
        "--format",
        "csv",
        "--since",
        "2020-01-01",
        "--until",
        "2020-02-01",
    )
    assert old.returncode == 0 and "newest event" not in old.stderr
