"""An analyst's day at the command line: readable numbers in tables, exact numbers in files, the format from the
file's extension, and a clear answer (exit 2, the known values, the nearest one) for every common mistake."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import TEST_KEY
from tests.support.cli import run_in_process as chainops  # main(argv) in this process
from toolkit.cli import EXIT_BROKEN_PIPE, main, output_format
from toolkit.config import Settings
from toolkit.errors import UsageError, WarehouseError
from toolkit.loader import sync
from toolkit.presentation.safe import duration_unit, frame_for_display
from toolkit.presentation.values import format_number, format_percent
from toolkit.warehouse import Warehouse


@pytest.fixture(scope="module")
def synced(server, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("day") / "w.duckdb"
    sync(Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={}), quiet=True)
    return str(path)


# ---- numbers for people -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (2 / 129, "0.0155"),
        (1e-9, "1e-9"),
        (0.0, "0"),
        (1 / 3, "0.3333"),
        (12345.678, "12,346"),
        (-0.5, "-0.5"),
        (7, "7"),
        (float("nan"), "-"),
    ],
)
def test_numbers_keep_significant_digits(value, shown) -> None:
    assert format_number(value) == shown


def test_proportions_read_as_percentages() -> None:
    assert format_percent(0.0219) == "2.19%"
    assert format_percent(0.000312) == "0.0312%"
    assert format_percent(1.0) == "100%"


def test_a_duration_column_takes_one_unit_by_its_median() -> None:
    assert duration_unit(pd.Series([30.0, 45.0, 80.0])) == ("s", 1.0)
    assert duration_unit(pd.Series([200.0, 600.0, 9000.0])) == ("min", 60.0)
    assert duration_unit(pd.Series([7200.0, 36000.0, None])) == ("h", 3600.0)
    assert duration_unit(pd.Series([3 * 86400.0])) == ("d", 86400.0)


def test_metric_columns_are_shown_by_their_names() -> None:
    df = pd.DataFrame(
        {
            "network": ["Base"],
            "operations": [129],
            "failure_rate": [2 / 129],
            "failure_rate_low": [0.004],
            "failure_rate_high": [0.055],
            "share": [0.5],
            "p90_s": [5400.0],
            "seconds_in_status": [30.0],
            "signatures_min": [4.0],
        }
    )
    shown = frame_for_display(df)
    assert list(shown.columns) == [
        "network",
        "operations",
        "failure rate %",
        "share %",
        "p90 (min)",
        "in status (s)",
        "signatures min",
    ]
    row = shown.iloc[0].to_dict()
    assert row["failure rate %"] == "1.55% (0.400–5.50%)"  # three significant figures, trailing zeros kept
    assert row["share %"] == "50.0%"
    assert row["p90 (min)"] == "90.0"
    assert row["in status (s)"] == "30.0"
    assert row["signatures min"] == "4"  # not a duration: its name does not end in _s
    # a SQL result is not a metric: significant digits only, names unchanged
    assert list(frame_for_display(df, metric=False).columns) == list(df.columns)


@pytest.mark.parametrize(
    ("fmt", "out", "expected"),
    [
        (None, None, "table"),
        (None, "x.csv", "csv"),
        (None, "x.JSON", "json"),
        (None, "x.parquet", "parquet"),
        (None, "x.html", "html"),
        (None, "x.txt", "table"),
        (None, "x", "table"),
        ("csv", "x.json", "csv"),
    ],
)
def test_the_extension_picks_the_format_unless_format_says(fmt, out, expected) -> None:
    assert output_format(fmt, out) == expected


def test_formats_that_cannot_be_told_are_usage_errors() -> None:
    with pytest.raises(UsageError, match=r"\.xlsx"):
        output_format(None, "x.xlsx")
    with pytest.raises(UsageError, match="needs --out"):
        output_format("parquet", None)


def test_tables_show_percentages_and_files_keep_full_precision(synced, tmp_path) -> None:
    table = chainops("metrics", "failure-rates", "--warehouse", synced)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("network"))
    assert "failure rate %" in lines[header] and "failure_rate_low" not in table.stdout
    assert set(lines[header + 1]) == {"─"}  # the rule under the header
    assert "%" in lines[header + 2]
    with Warehouse(synced, read_only=True) as wh:
        from toolkit.metrics import failure_rates

        expected = failure_rates(wh)
    out = tmp_path / "rates.csv"
    written = chainops("metrics", "failure-rates", "--warehouse", synced, "--out", str(out))
    assert written.returncode == 0, written.stderr
    back = pd.read_csv(out)
    assert list(back.columns) == list(expected.columns)
    assert back["failure_rate_high"].tolist() == pytest.approx(expected["failure_rate_high"].tolist(), rel=1e-15)
    as_json = tmp_path / "rates.json"
    assert chainops("metrics", "failure-rates", "--warehouse", synced, "--out", str(as_json)).returncode == 0
    rows = json.loads(as_json.read_text())
    assert [r["failure_rate_high"] for r in rows] == expected["failure_rate_high"].tolist()  # exact
    as_parquet = tmp_path / "rates.parquet"
    assert chainops("metrics", "failure-rates", "--warehouse", synced, "--out", str(as_parquet)).returncode == 0
    assert pd.read_parquet(as_parquet)["failure_rate"].tolist() == expected["failure_rate"].tolist()
    as_html = tmp_path / "rates.html"
    assert chainops("metrics", "failure-rates", "--warehouse", synced, "--out", str(as_html)).returncode == 0
    page = as_html.read_text().replace("<wbr>", "")  # a long header may break after an underscore on a narrow page
    assert "<table" in page and "<th>failure rate %</th>" in page


def test_sql_prints_small_numbers_with_significant_digits(synced) -> None:
    out = chainops("sql", "select 2/129 as ratio, 1e-9 as tiny", "--warehouse", synced)
    assert out.returncode == 0, out.stderr
    assert [w for w in out.stdout.split() if set(w) != {"─"}] == ["ratio", "tiny", "0.0155", "1e-9"]


# ---- mistakes ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "nearest", "listed"),
    [
        (("failure-rates", "--network", "Ethereum"), "'Ethereum Mainnet'", "Ethereum Sepolia"),
        (("status-latency", "--status", "confirmd"), "'confirmed'", "confirmed_safe"),
        (("query-latency", "--status", "complete"), "'completed'", "expired"),
    ],
)
def test_unknown_filter_values_name_the_nearest(synced, args, nearest, listed) -> None:
    out = chainops("metrics", *args, "--warehouse", synced)
    assert out.returncode == 2, out.stdout
    assert f"did you mean {nearest}" in out.stderr and listed in out.stderr
    assert out.stdout == "" and "Traceback" not in out.stderr


def test_an_unknown_channel_lists_the_channels_by_id_and_name(synced) -> None:
    with Warehouse(synced, read_only=True) as wh:
        channel_id, name = wh.con.execute("select channel_id, name from channels order by name limit 1").fetchall()[0]
    out = chainops("metrics", "failure-rates", "--channel", "nope", "--warehouse", synced)
    assert out.returncode == 2 and f"{channel_id} ({name})" in out.stderr
    # a channel's name, where it names one channel, is that channel
    by_name = chainops("metrics", "failure-rates", "--channel", name, "--warehouse", synced, "--format", "csv")
    by_id = chainops("metrics", "failure-rates", "--channel", channel_id, "--warehouse", synced, "--format", "csv")
    assert by_name.returncode == 0 and by_name.stdout == by_id.stdout


def test_a_known_filter_with_no_rows_says_so(synced) -> None:
    out = chainops(
        "metrics",
        "failure-rates",
        "--network",
        "Ethereum Mainnet",
        "--since",
        "2020-01-01",
        "--until",
        "2020-01-02",
        "--warehouse",
        synced,
    )
    assert out.returncode == 0, out.stderr
    assert "no rows match --network Ethereum Mainnet" in out.stderr
    lines = out.stdout.splitlines()
    end = lines.index("no rows")
    assert lines[end - 2].split()[0] == "network"  # the header, a rule, "no rows"; no "Empty DataFrame"
    assert "Empty DataFrame" not in out.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("failure-rates", "--by", "channel"),
        ("failure-rates", "--bucket", "2x"),
        ("failure-rates", "--format", "parquet"),
        ("failure-rates", "--out", "x.xlsx"),
        ("failure-rates", "--top", "0"),
        ("failure-rates", "--since", "7dayz"),
    ],
)
def test_usage_errors_exit_2(synced, args) -> None:
    out = chainops("metrics", *args, "--warehouse", synced)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr


def test_a_bad_time_lists_the_forms(synced) -> None:
    out = chainops("metrics", "failure-rates", "--since", "last tuesday", "--warehouse", synced)
    assert out.returncode == 2
    for form in ("7d", "7 days", "12h", "90min", "yesterday", "2026-01-01"):
        assert form in out.stderr


@pytest.mark.parametrize(
    "since", ["7d", "7days", "7 days", "12h", "90min", "yesterday", "2026-01-01", "2026-01-01T12:00Z"]
)
def test_the_usual_time_forms_are_accepted(synced, since) -> None:
    out = chainops("metrics", "failure-rates", "--since", since, "--warehouse", synced, "--format", "csv")
    assert out.returncode == 0, out.stderr


def test_no_traceback_for_files_that_are_not_warehouses(tmp_path) -> None:
    import duckdb

    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("create table x (a int)")
    con.close()
    for path, says in ((empty, "empty DuckDB file"), (other, "not a chainops warehouse")):
        for args in (("metrics", "failure-rates"), ("report", "--out", str(tmp_path / "r.html"))):
            out = chainops(*args, "--warehouse", str(path))
            assert out.returncode == 1 and says in out.stderr, (args, out.stderr)
            assert "Traceback" not in out.stderr and "Catalog" not in out.stderr


def test_an_empty_query_is_a_usage_error(synced) -> None:
    out = chainops("sql", "  ", "--warehouse", synced)
    assert out.returncode == 2 and "the query is empty" in out.stderr


def test_metrics_help_names_each_metric_once_outside_the_usage_line() -> None:
    """The usage line shows NAME, not the eleven metric names twice over in braces; the help lists them."""
    from toolkit.metrics import METRICS

    out = chainops("metrics", "--help")
    usage, _, rest = out.stdout.partition("positional arguments:")
    assert out.returncode == 0 and "NAME" in usage and "{failure-rates" not in out.stdout
    assert all(name in usage for name in ("--since", "--network", "--out"))
    assert not any(name in usage for name in METRICS)
    listed = re.sub(r"-\n\s+", "-", rest)  # argparse may wrap a name at its hyphen
    assert all(name in listed for name in METRICS)
    wrong = chainops("metrics", "failure-rate")
    assert wrong.returncode == 2 and "failure-rates" in wrong.stderr


def test_a_query_error_keeps_duckdbs_lines(synced) -> None:
    """DuckDB points at a syntax error with a caret on the line below the query: the lines stay lines."""
    out = chainops("sql", "selec 1", "--warehouse", synced)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "\\x0a" not in out.stderr
    lines = out.stderr.splitlines()
    query_line = next(i for i, line in enumerate(lines) if line.startswith("LINE 1: selec 1"))
    assert lines[query_line + 1].strip() == "^^^^^"
    assert lines[query_line + 1].index("^") == lines[query_line].index("selec")


def test_a_base_url_without_the_version_is_named(tmp_path) -> None:
    out = chainops(
        "sync",
        "--warehouse",
        str(tmp_path / "w.duckdb"),
        env={"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": "http://127.0.0.1:9"},
    )
    assert out.returncode == 1 and "/v1" in out.stderr and "http://127.0.0.1:9/v1" in out.stderr
    assert TEST_KEY not in out.stderr


def test_a_closed_standard_output_ends_quietly(synced, monkeypatch) -> None:
    read_end, write_end = os.pipe()

    class Closed(io.TextIOWrapper):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    closed = Closed(os.fdopen(write_end, "wb"))
    monkeypatch.setattr(sys, "stdout", closed)
    try:
        assert main(["sql", "select 1", "--warehouse", synced]) == EXIT_BROKEN_PIPE
    finally:
        monkeypatch.undo()
        os.close(read_end)


def test_the_demo_never_replaces_a_file_that_is_not_its_own(synced, tmp_path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# notes\n")
    out = chainops("demo", "--warehouse", str(readme), "--quiet")
    assert out.returncode == 2 and "not a warehouse made by `chainops demo`" in out.stderr
    assert readme.read_text() == "# notes\n"
    # a real warehouse (synced from a service on another host) keeps its sync history
    real = tmp_path / "real.duckdb"
    with Warehouse(real) as wh:
        wh.con.execute(
            "insert into sync_runs (run_id, started_at, outcome, base_url) values ('r1', now(), 'ok', ?)",
            ["https://api.example.com/v1"],
        )
    before = real.read_bytes()
    out = chainops("demo", "--warehouse", str(real), "--quiet")
    assert out.returncode == 2 and real.read_bytes() == before


def test_the_demo_keeps_a_warehouse_synced_on_this_machine(synced, server, tmp_path) -> None:
    """A warehouse synced from a service on loopback (a sandbox, an SSH tunnel to the service), once or more, is
    someone's history, not a demo: only a warehouse carrying the demo's own mark is taken for one."""
    import shutil

    from toolkit.warehouse.identity import is_demo_warehouse

    assert not is_demo_warehouse(synced)  # one sync from loopback, without the demo's mark: someone's history
    path = tmp_path / "tunnel.duckdb"
    shutil.copy(synced, path)
    sync(Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={}), quiet=True)
    assert not is_demo_warehouse(path)
    before = path.read_bytes()
    out = chainops("demo", "--warehouse", str(path), "--quiet")
    assert out.returncode == 2 and "not a warehouse made by `chainops demo`" in out.stderr
    assert path.read_bytes() == before


def test_the_demo_may_replace_its_own_warehouse(tmp_path) -> None:
    from toolkit.cli import _mark_demo, _replace_demo_warehouse
    from toolkit.warehouse.identity import is_demo_warehouse

    path = tmp_path / "demo.duckdb"
    Warehouse(path).close()
    assert not is_demo_warehouse(path)  # no sync from the sandbox, no mark
    _mark_demo(path)
    assert is_demo_warehouse(path)
    with Warehouse(path) as wh:
        wh.con.execute("INSERT INTO sync_state VALUES ('old', '1', now())")
    _replace_demo_warehouse(path)
    assert is_demo_warehouse(path)  # a new warehouse, marked as the demo's from the start
    with Warehouse(path, read_only=True) as wh:
        assert wh.count("sync_state") == 0


def test_sync_age_fires_when_no_sync_ever_succeeded(tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    out = chainops("report", "--warehouse", str(path), "--out", str(tmp_path / "r.html"), "--fail-on", "sync_age_h>24")
    assert out.returncode == 3, out.stderr
    assert "no sync has ever succeeded" in out.stderr


def test_a_writer_blocked_by_a_reader_says_a_reader_holds_the_file(synced, tmp_path) -> None:
    import shutil

    path = tmp_path / "held.duckdb"
    shutil.copy(synced, path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); print('open', flush=True); "
            "time.sleep(60)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(WarehouseError, match="a reader holds it open"):
            Warehouse(path, wait=0.5)
    finally:
        holder.kill()
        holder.wait()
