"""The report: HTML parsed back (figures, sections, escaped values, findings), CSV/Parquet tables, thresholds and
the exit codes a scheduler sees."""

from __future__ import annotations

import html
import html.parser
from pathlib import Path

import pandas as pd
import pytest

from tests.support.cli import Ran, run_in_process
from tests.support.report_warehouse import SCRIPT_CHANNEL, SCRIPT_NETWORK, SCRIPT_REASON, SINCE, UNTIL
from toolkit.presentation import report
from toolkit.warehouse import Warehouse


class Page(html.parser.HTMLParser):
    """What a browser would see: images, section ids, list items, table cells, all text, and any script tag."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str]] = []
        self.ids: list[str] = []
        self.items: list[str] = []
        self.cells: list[str] = []
        self.text: list[str] = []
        self.tags: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = {k: v or "" for k, v in attrs}
        if tag == "img":
            self.images.append(values)
        if "id" in values:
            self.ids.append(values["id"])
        if tag in ("li", "td"):
            self._in.append(tag)
            (self.items if tag == "li" else self.cells).append("")

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in:
            target = self.items if self._in[-1] == "li" else self.cells
            target[-1] += data


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    return page


#: The arguments of the module's report (the ``page`` fixture).
PAGE_ARGS = {
    "since": SINCE,
    "until": UNTIL,
    "title": "Weekly <ops>",
    "thresholds": ["failure_rate>0.05", "stuck>0", "worst_failure_rate<0.5"],
}


@pytest.fixture(scope="module")
def written(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, report.Report]:
    """The module's report, built and written once (a report costs seconds): the file and the Report."""
    out = tmp_path_factory.mktemp("out") / "weekly.html"
    return out, report.write_report(str(warehouse), out, **PAGE_ARGS)


@pytest.fixture(scope="module")
def page(written: tuple[Path, report.Report]) -> tuple[str, Page, report.Report]:
    out, rep = written
    text = out.read_text(encoding="utf-8")
    return text, parse(text), rep


def test_html_has_every_section_with_figures_embedded(page) -> None:
    text, parsed, _ = page
    for section in (
        "freshness",
        "findings",
        "thresholds",
        "summary",
        "status_latency",
        "failure_rates",
        "failure_by_channel",
        "failure_reasons",
        "finality",
        "query_latency",
        "stuck_operations",
        "proof_coverage",
        "watcher_activity",
    ):
        assert section in parsed.ids, section
    assert len(parsed.images) == 8
    assert all(img["src"].startswith("data:image/png;base64,") and len(img["src"]) > 2000 for img in parsed.images)
    assert all(img["alt"] for img in parsed.images)
    assert "http://" not in text and "https://" not in text  # self-contained: nothing fetched
    assert "<title>Weekly &lt;ops&gt;</title>" in text


def test_every_value_from_the_service_is_escaped(page) -> None:
    text, parsed, _ = page
    assert parsed.tags.count("script") == 0 and "<b>" not in text
    assert "onerror=" not in "".join(t for t in parsed.tags)
    assert "<script" not in text and "<img src=x" not in text
    assert "&lt;script&gt;alert(&#x27;reason&#x27;)&lt;/script&gt;" in text
    assert "&lt;script&gt;alert(&#x27;channel&#x27;)&lt;/script&gt; &amp; &lt;b&gt;ops&lt;/b&gt;" in text
    # a browser shows the raw text, exactly
    assert SCRIPT_REASON in parsed.cells
    assert SCRIPT_CHANNEL in parsed.cells
    assert SCRIPT_NETWORK in parsed.cells
    assert len([i for i in parsed.images if "onerror" in i]) == 0


def test_period_freshness_and_findings(page) -> None:
    _, parsed, rep = page
    shown = " ".join(parsed.text)
    assert (
        "Period: 2023-11-14 22:13 UTC to 2023-11-15 22:13 UTC; compared with the previous period of the same " in shown
    )
    assert "2023-11-13 22:13 UTC to 2023-11-14 22:13 UTC." in shown and " days" not in shown
    assert "Warehouse last synced 2023-11-15 22:12 UTC" in shown and "last sync run: ok" in shown
    findings = parsed.items[:4]
    assert findings[0].startswith("Slowest status: ")
    # the evil network's 1 of 1 failed is no headline: no network has 20 operations
    assert findings[1] == (
        "Worst network by failure rate: no network has 20 or more operations with a failure rate in the period."
    )
    # this period: 4 failed of 22 finished (the stuck one is in flight); the day before: 0 of 10
    # the stuck one counts as projected: 21 finished Ethereum operations went through sending (none for as long, so
    # any age: 20 + late-1), 2 of them failed
    assert rep.summary["terminal"] == 22 and rep.summary["failure_rate"] == pytest.approx((4 + 2 / 21) / (22 + 1))
    assert rep.summary["previous_failure_rate"] == 0.0
    assert findings[2].startswith(
        "Failure rate 17.8%, up 17.8 percentage points from 0% in the previous period (2023-11-13 22:13 to "
        "2023-11-14 22:13 UTC)"
    )
    assert "(95% interval " in findings[2] and "p=" in findings[2]
    assert findings[3].startswith("1 operation stuck as of") and "stuck-1 on Ethereum Mainnet" in findings[3]
    assert rep.summary["stuck"] == 1
    # the stuck operation's age and threshold in seconds, as the tables' (s) columns read, with the unit that reads
    # best beside (the largest in which the value is at least 2), three significant figures, trailing zeros kept;
    # the table (one row) shows the same numbers
    stuck = rep.tables["stuck_operations"].iloc[0]

    def readable(seconds: float) -> tuple[str, str]:
        unit, size = next((u, s) for u, s in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)) if seconds >= 2 * s)
        value = seconds / size
        return (f"{value:,.0f}" if value >= 100 else f"{value:#.3g}"), unit

    def prose(seconds: float) -> str:
        value, unit = readable(seconds)
        whole = f"{seconds:,.0f} s" if seconds >= 100 else f"{seconds:#.3g} s"
        return whole if unit == "s" else f"{whole} = {value} {unit}"

    (age, _), (threshold, _) = readable(stuck["age_s"]), readable(stuck["threshold_s"])
    assert f"for {prose(stuck['age_s'])}; its threshold is {prose(stuck['threshold_s'])}." in findings[3]
    assert age in parsed.cells and threshold in parsed.cells and f"{stuck['age_s']:,.1f}" not in parsed.cells


def test_failure_rates_draw_one_panel_per_network_and_mark_the_partial_bucket(page) -> None:
    from matplotlib.text import Text

    _, _, rep = page
    over_time = rep.rates_over_time
    assert set(over_time["network"]) == {"Ethereum Mainnet", "Ethereum Sepolia", SCRIPT_NETWORK}
    # the newest event ends the data before the period does: the bucket holding it is partial, drawn hollow
    # (without the period, nothing is marked)
    end = rep.data_until
    assert end < rep.until
    from toolkit.presentation import figures as plots

    fig = plots.failure_rate_over_time(
        report.interval_safe(over_time, "failure_rate"), bucket=rep.bucket, period=(rep.since, end)
    )
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    titles = sorted(ax.get_title() for ax in panels)
    assert len(panels) == 3 and [t.split(" (n=")[0] for t in titles] == sorted(set(over_time["network"].astype(str)))
    hollow = [line for ax in panels for line in ax.get_lines() if line.get_markerfacecolor() in ("white", (1, 1, 1, 1))]
    width = pd.Timedelta(rep.bucket)
    # the period starts at 22:13, inside a 6-hour bucket, so the first bucket is partial too
    cut = (over_time["bucket"] < rep.since) | (over_time["bucket"] + width > end)
    partial = over_time[cut & over_time["failure_rate"].notna()]
    assert len(hollow) == partial["network"].nunique() > 0
    assert "hollow: partial bucket" in "\n".join(t.get_text() for t in fig.findobj(Text))
    plain = plots.failure_rate_over_time(report.interval_safe(over_time, "failure_rate"))
    assert not any(line.get_markerfacecolor() == "white" for ax in plain.axes for line in ax.get_lines())


def test_no_row_is_left_out_of_a_long_table() -> None:
    df = pd.DataFrame({"network": [f"net-{i:03d}" for i in range(71)], "failure_rate": [i / 100 for i in range(71)]})
    shown = parse(report.html_table(df, max_rows=50))
    assert [c for c in shown.cells if c.startswith("net-")] == list(df["network"])  # all 71, in order
    assert "70.0%" in shown.cells
    text = report.html_table(df, max_rows=50)
    assert "<details><summary>Show the other 21 of 71 rows</summary>" in text
    assert report.html_table(df.head(3), max_rows=50).count("<table") == 1


def test_thresholds_are_judged(page) -> None:
    _, parsed, rep = page
    assert [str(t) for t in rep.breaches] == ["failure_rate>0.05", "stuck>0"]  # worst is 100%: not < 0.5
    thresholds = [i for i in parsed.items if "BREACHED" in i or i.endswith("ok")]
    assert any(i.startswith("failure_rate>0.05") and "BREACHED" in i for i in thresholds)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("failure_rate>0.05", report.Threshold("failure_rate", ">", 0.05)),
        (" stuck >= 1 ", report.Threshold("stuck", ">=", 1.0)),
        ("failure_rate>5%", report.Threshold("failure_rate", ">", 0.05)),
        ("proof_coverage<0.999", report.Threshold("proof_coverage", "<", 0.999)),
        ("sync_age_h>=1e1", report.Threshold("sync_age_h", ">=", 10.0)),
    ],
)
def test_thresholds_parse(text: str, expected: report.Threshold) -> None:
    assert report.parse_threshold(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "failure_rate",
        "failure_rate>",
        "__import__('os')>1",
        "stuck>0 or 1",
        "nope>1",
        "stuck=>1",
        "stuck>0;rm -rf /",
        "1>stuck",
    ],
)
def test_bad_thresholds_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        report.parse_threshold(text)


def test_nan_never_breaches() -> None:
    assert not report.Threshold("failure_rate", ">", 0).breached({"failure_rate": float("nan")})
    assert not report.Threshold("failure_rate", "<", 1).breached({})


def test_csv_and_parquet_tables(page, tmp_path: Path) -> None:
    _, _, rep = page  # thresholds judge the tables, they do not change them
    csv_files = rep.write(tmp_path / "csv", "csv")
    pq_files = rep.write(tmp_path / "pq", "parquet")
    names = {p.stem for p in csv_files}
    assert names == {p.stem for p in pq_files} == {*rep.tables, "summary"}
    rates = pd.read_parquet(tmp_path / "pq" / "failure_rates.parquet")
    pd.testing.assert_frame_equal(rates, rep.tables["failure_rates"], check_dtype=False)
    channels = pd.read_csv(tmp_path / "csv" / "failure_by_channel.csv")
    assert SCRIPT_CHANNEL in set(channels["channel"])
    summary = pd.read_csv(tmp_path / "csv" / "summary.csv")
    assert dict(zip(summary["name"], summary["value"], strict=True))["stuck"] == "1.0"


def test_writing_twice_gives_the_same_bytes(warehouse: Path, written, tmp_path: Path) -> None:
    first_out, first = written  # the first writing: the module's report
    again = report.write_report(str(warehouse), tmp_path / "b.html", **PAGE_ARGS)
    assert first_out.read_bytes() == (tmp_path / "b.html").read_bytes()
    assert first.findings and again.findings == first.findings
    assert not list(tmp_path.glob(".*.tmp")) and not list(first_out.parent.glob(".*.tmp"))


def test_an_empty_warehouse_still_reports(tmp_path: Path) -> None:
    Warehouse(tmp_path / "empty.duckdb").close()
    rep = report.write_report(
        str(tmp_path / "empty.duckdb"), tmp_path / "r.html", since="7d", thresholds=["stuck>0", "failure_rate>0"]
    )
    assert rep.breaches == []
    parsed = parse((tmp_path / "r.html").read_text())
    assert len(parsed.images) == 8
    assert "Warehouse last synced never" in " ".join(parsed.text)


def test_repr_html_renders_without_figures(page) -> None:
    _, _, rep = page
    shown = rep._repr_html_()
    assert "<img" not in shown and "Findings" in shown and "&lt;script&gt;" in shown


# ---- the command line: what a cron job sees -----------------------------------------------------------------------


def chainops(*args: str) -> Ran:
    return run_in_process(*args)  # main(argv) in this process: tests/cli/test_cli.py runs the real command


def test_cli_exit_codes(warehouse: Path, tmp_path: Path) -> None:
    base = ["report", "--warehouse", str(warehouse), "--since", SINCE, "--until", UNTIL]
    ok = chainops(*base, "--out", str(tmp_path / "ok.html"), "--fail-on", "failure_rate>0.5", "--fail-on", "stuck>5")
    assert ok.returncode == 0, ok.stderr
    said = " ".join(ok.stdout.split())  # lines wrap to the terminal's width
    assert f"Report: {tmp_path / 'ok.html'}" in said and "Slowest status" in said

    # a breach's exit code and messages are the same in every format: CSV here, which draws no figures
    # (tests/cli/test_cli.py breaches with an HTML report)
    breached = chainops(
        *base,
        "--format",
        "csv",
        "--out",
        str(tmp_path / "bad"),
        "--fail-on",
        "failure_rate>0.05",
        "--fail-on",
        "stuck>0",
    )
    assert breached.returncode == 3, breached.stderr
    assert "threshold breached: failure_rate>0.05" in breached.stderr
    assert "threshold breached: stuck>0" in breached.stderr
    assert any((tmp_path / "bad").glob("*.csv"))  # written anyway, for the alert to link to

    usage = chainops(*base, "--out", str(tmp_path / "x.html"), "--fail-on", "failure_rate>>1")
    assert usage.returncode == 2 and "not a threshold" in usage.stderr

    missing = chainops("report", "--warehouse", str(tmp_path / "none.duckdb"), "--out", str(tmp_path / "m.html"))
    assert missing.returncode == 1 and "chainops sync" in missing.stderr

    empty = chainops(*base[:3], "--since", UNTIL, "--until", SINCE, "--out", str(tmp_path / "e.html"))
    assert empty.returncode == 1 and "period is empty" in empty.stderr

    (tmp_path / "a-dir.html").mkdir()
    unwritable = chainops(*base, "--out", str(tmp_path / "a-dir.html"))
    assert unwritable.returncode == 1 and "Cannot write the report" in unwritable.stderr
    assert "it is a directory" in unwritable.stderr and "Traceback" not in unwritable.stderr


def test_a_directory_as_the_html_file_is_refused_before_the_report_is_built(
    warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-dir.html").mkdir()
    built: list[object] = []
    original = report.build_report
    monkeypatch.setattr(report, "build_report", lambda *a, **k: built.append(a) or original(*a, **k))
    with pytest.raises(IsADirectoryError, match="it is a directory"):
        report.write_report(str(warehouse), tmp_path / "a-dir.html", since=SINCE, until=UNTIL)
    assert built == [] and list(tmp_path.iterdir()) == [tmp_path / "a-dir.html"]


def test_cli_csv_directory(warehouse: Path, tmp_path: Path) -> None:
    out = chainops(
        "report",
        "--warehouse",
        str(warehouse),
        "--since",
        SINCE,
        "--until",
        UNTIL,
        "--format",
        "csv",
        "--out",
        str(tmp_path / "tables"),
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "tables" / "status_latency.csv").exists()
    assert (tmp_path / "tables" / "summary.csv").exists()


def test_the_summary_shows_every_meaning_whole(page) -> None:
    """The meanings are the toolkit's own text: none is cut short with an ellipsis in the report's summary."""
    text, _, _ = page
    summary = text[text.index('<h2 id="summary">') : text.index('<h2 id="status_latency">')]
    for name, meaning in report.SUMMARY_VALUES.items():
        assert html.escape(meaning) in summary, name
