"""One presentation (issue 37): a value reads the same everywhere (three significant figures, trailing zeros kept,
one unit per column), a column's kind is decided once, and one writer makes the data files of both ``chainops
metrics`` and the report (ISO 8601 UTC times ending in ``Z``, categoricals as text)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.support.cli import run_in_process
from tests.support.report_warehouse import SINCE, UNTIL
from toolkit import registry
from toolkit.presentation import report
from toolkit.presentation.tables import present, show, to_html, to_terminal

#: ISO 8601 in UTC with a Z, as docs/guides/export.md promises for every file.
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z$")


@pytest.mark.parametrize(
    ("share", "text"),
    [(0.002560, "0.256%"), (0.0776, "7.76%"), (0.014, "1.40%"), (0.1, "10.0%"), (1.0, "100%"), (0.0, "0%")],
)
def test_a_percentage_keeps_three_significant_figures_and_its_zeros(share: float, text: str) -> None:
    df = pd.DataFrame({"network": ["A"], "failure_rate": [share]})
    assert present(df).columns[1].cells == [text]


def test_an_interval_keeps_its_zeros_too() -> None:
    df = pd.DataFrame(
        {"network": ["A"], "failure_rate": [0.0145], "failure_rate_low": [0.00256], "failure_rate_high": [0.0776]}
    )
    assert present(df).columns[1].cells == ["1.45% (0.256–7.76%)"]


def test_durations_and_counts_read_alike_in_every_surface() -> None:
    df = pd.DataFrame({"status": ["a", "b", "c"], "n": [13237, 2, 3], "p50_s": [1.4, 3.0, 18288.0]})
    shown = present(df)
    assert [c.header for c in shown.columns] == ["status", "n", "p50 (s)"]
    assert shown.columns[1].cells == ["13,237", "2", "3"]
    assert shown.columns[2].cells == ["1.40", "3.00", "18,288"]
    text, page = to_terminal(shown, 80), to_html(shown)
    for cell in ("13,237", "1.40", "18,288", "p50 (s)"):
        assert cell in text and cell in page


def test_a_statistics_family_shares_its_unit() -> None:
    """p50 and p90 of one stage read in one unit (no ``(s)`` beside ``(min)`` for the same stage)."""
    df = pd.DataFrame({"network": ["A", "B"], "to_final_p50_s": [60.0, 90.0], "to_final_p90_s": [300.0, 600.0]})
    headers = [c.header for c in present(df).columns]
    assert headers == ["network", "to final p50 (min)", "to final p90 (min)"]


def test_registry_shorthand_and_presentation_take_one_naming_rule() -> None:
    """Every metric column declared by shorthand has the kind the presentation's naming rule gives its name."""
    from toolkit.column_kinds import kind_by_name

    for metric in registry.METRICS:
        for column in metric.columns:
            by_name = kind_by_name(column.name)
            if by_name in ("proportion", "duration"):
                assert column.kind == by_name, (metric.name, column.name)


def test_show_refuses_a_misspelt_column_with_a_suggestion() -> None:
    df = pd.DataFrame({"network": ["A"], "failure_rate": [0.1]})
    with pytest.raises(ValueError, match=r"failure_rat.*did you mean 'failure_rate'"):
        show(df, columns=["network", "failure_rat"])


def test_metrics_and_report_write_the_same_files(warehouse: Path, tmp_path: Path) -> None:
    ran = run_in_process(
        "metrics", "stuck-operations", "--warehouse", str(warehouse), "--now", UNTIL, "--format", "csv"
    )
    assert ran.returncode == 0, ran.stderr
    cli_times = pd.read_csv(pd.io.common.StringIO(ran.stdout), dtype=str)["entered_at"].dropna()
    assert len(cli_times) and all(ISO_Z.match(t) for t in cli_times), list(cli_times)
    ran = run_in_process(
        "metrics", "stuck-operations", "--warehouse", str(warehouse), "--now", UNTIL, "--format", "json"
    )
    times = [row["entered_at"] for row in json.loads(ran.stdout)]
    assert times == list(cli_times), (times, list(cli_times))  # JSON writes the times as CSV does
    rep = report.build_report(str(warehouse), since=SINCE, until=UNTIL)
    rep.write(tmp_path / "csv", "csv")
    rep.write(tmp_path / "pq", "parquet")
    stuck = pd.read_csv(tmp_path / "csv" / "stuck_operations.csv", dtype=str)["entered_at"].dropna()
    assert len(stuck) and all(ISO_Z.match(t) for t in stuck), list(stuck)
    # Parquet: categoricals as text from both writers
    out = tmp_path / "latency.parquet"
    ran = run_in_process(
        "metrics", "status-latency", "--warehouse", str(warehouse), "--since", SINCE, "--until", UNTIL, "--out",
        str(out),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    for path in (out, tmp_path / "pq" / "status_latency.parquet"):
        field = pq.read_schema(path).field("status")
        assert str(field.type) in ("string", "large_string"), (path, field.type)
