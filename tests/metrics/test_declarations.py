"""Each metric is declared once (toolkit/metrics/declarations.py): the Python functions' signatures and docstrings,
the command line's arguments and the checks both make follow from it, with the same words in Python and on the
command line; the period is parsed once and travels back with the result."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from tests.support.cli import run_in_process
from tests.support.filters_warehouse import filters_warehouse
from toolkit import metrics
from toolkit.errors import UsageError
from toolkit.metrics.declarations import BY_NAME, METRICS
from toolkit.times import Period
from toolkit.warehouse.identity import missing_warehouse_message

PACKAGE = Path(metrics.__file__).parent
FILTERS = {"channel", "network", "status", "since", "until"}


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The filters warehouse (events of 2023), closed: Python and the command line open it each time."""
    target = tmp_path_factory.mktemp("declared") / "w.duckdb"
    filters_warehouse(target).close()
    return str(target)


def _cli_error(*args: str) -> str:
    ran = run_in_process("metrics", *args, "--format", "csv")
    assert ran.returncode == 2, ran
    return " ".join(ran.stderr.split())


# ---- one declaration ------------------------------------------------------------------------------------------------


def test_every_column_is_declared_with_a_header_a_description_and_whether_it_is_a_value() -> None:
    for m in METRICS:
        headers = [c.label() for c in m.columns]
        assert len(set(headers)) == len(headers), m.name  # no two headers of one metric alike
        assert all(c.header and c.description for c in m.columns), m.name
        assert all(len(h) <= 24 for h in headers), [h for h in headers if len(h) > 24]
        assert m.value_columns and set(m.value_columns) <= set(m.column_names), m.name
    query = BY_NAME["query-latency"]
    assert query.column("accepted_to_terminal_p50_s").header == "accepted→terminal p50"
    assert query.column("accepted_to_terminal_p90_s").header == "accepted→terminal p90"
    assert BY_NAME["failure-rates"].column("failure_rate").value
    assert not BY_NAME["failure-rates"].column("channel_id").value


def test_no_block_of_filter_keywords_is_written_in_a_metric_function() -> None:
    """The filter keywords are declared once: no metric function's ``def`` (one made public by ``takes_filters``)
    lists any of them; each metric's signature is built from its declaration."""
    repeated = []
    for file in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            decorators = [ast.unparse(d) for d in getattr(node, "decorator_list", ())]
            if isinstance(node, ast.FunctionDef) and any(d.startswith("takes_filters") for d in decorators):
                args = node.args
                names = {a.arg for a in (*args.args, *args.kwonlyargs, *args.posonlyargs)}
                if names & FILTERS:
                    repeated.append(f"{file.name}:{node.lineno} {node.name}")
    assert repeated == []
    assert len(list(_decorated())) >= len(METRICS)  # the check above saw every metric


def _decorated():
    for file in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                ast.unparse(d).startswith("takes_filters") for d in node.decorator_list
            ):
                yield node.name


@pytest.mark.parametrize("m", METRICS, ids=lambda m: m.name)
def test_the_signature_and_docstring_list_the_declared_filters(m) -> None:
    func = getattr(metrics, m.function)
    params = inspect.signature(func).parameters
    assert [p for p in params if p in FILTERS] == list(m.filters)
    assert all(params[f].kind is inspect.Parameter.KEYWORD_ONLY and params[f].default is None for f in m.filters)
    assert "Filters (keywords" in func.__doc__ and all(f"- ``{f}``" in func.__doc__ for f in m.filters)
    if m.by:
        assert "``by``" in func.__doc__ and all(f"``{c}``" in func.__doc__ for c in m.by)


@pytest.mark.parametrize("m", METRICS, ids=lambda m: m.name)
def test_each_declared_by_column_is_one_the_function_groups_by(path: str, m) -> None:
    func = getattr(metrics, m.function)
    for col in m.by:
        assert col in func(path, by=[col]).columns or col == "address", (m.name, col)


def test_the_command_line_arguments_follow_from_the_declaration() -> None:
    given = {"warehouse": "w.duckdb", "format": "csv", "by": "network, channel_id", "top": 3, "since": "7d"}
    assert BY_NAME["failure-reasons"].arguments(given) == {"since": "7d", "top": 3, "by": ["network", "channel_id"]}
    assert BY_NAME["status-latency"].arguments({"bucket": "1d", "status": ["sent"]}) == {
        "bucket": "1d",
        "status": ["sent"],
    }
    with pytest.raises(UsageError, match=r"revisits does not take --status, --bucket"):
        BY_NAME["revisits"].arguments({"status": ["sent"], "bucket": "1d", "now": None})


def test_the_declarations_load_no_pandas_or_duckdb() -> None:
    code = (
        "import sys, toolkit.metrics, toolkit.metrics.declarations, toolkit.registry\n"
        "print(','.join(m for m in ('pandas', 'duckdb', 'numpy', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_old_names_are_the_new_modules() -> None:
    import toolkit.known_values
    import toolkit.registry
    from toolkit.metrics import declarations, known_values

    assert toolkit.registry is declarations and toolkit.known_values is known_values
    assert toolkit.registry.Column is declarations.Column and toolkit.registry.metric("query_latency").name


# ---- Python checks as the command line does, in the same words ------------------------------------------------------


def test_an_unknown_filter_value_is_the_same_error_in_python_and_on_the_command_line(path: str) -> None:
    with pytest.raises(metrics.UnknownValueError) as python:
        metrics.status_latency(path, network="Etherum Sepolia")
    said = str(python.value)
    assert "did you mean 'Ethereum Sepolia'?" in said
    assert said in _cli_error("status-latency", "--network", "Etherum Sepolia", "--warehouse", path)


def test_an_unknown_by_column_is_the_same_error_in_python_and_on_the_command_line(path: str) -> None:
    with pytest.raises(
        ValueError, match=r"cannot group status-latency by 'netwrk'; did you mean 'network'\?"
    ) as python:
        metrics.status_latency(path, by=["netwrk"])
    assert isinstance(python.value, UsageError)
    assert str(python.value) in _cli_error("status-latency", "--by", "netwrk", "--warehouse", path)


def test_an_empty_period_before_the_data_warns_in_python_as_the_command_line_says(path: str) -> None:
    with pytest.warns(metrics.EmptyPeriodWarning) as caught:
        df = metrics.failure_rates(path, since="7d")
    assert df.empty
    said = str(caught[0].message)
    newest = df.attrs["period"].as_of
    until = (newest.floor("s") + pd.Timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert f"older ({newest.strftime('%Y-%m-%dT%H:%M:%SZ')})" in said
    assert f"until={until!r}" in said and f"--until {until}" in said
    ran = run_in_process("metrics", "failure-rates", "--since", "7d", "--warehouse", path, "--format", "csv")
    assert ran.returncode == 0 and said in " ".join(ran.stderr.split())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an absolute period, or one that reaches the data: no warning
        metrics.failure_rates(path, since="7d", until=until)


def test_a_warehouse_error_tells_python_and_the_command_line_what_to_pass(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    said = missing_warehouse_message(tmp_path / "nothing.duckdb")
    assert "warehouse=" in said and "--warehouse" in said


# ---- the period, parsed once ----------------------------------------------------------------------------------------


def test_the_period_travels_back_with_the_result_as_an_object(path: str, tmp_path) -> None:
    df = metrics.status_latency(path, since="2d", until="2023-11-16")
    period = df.attrs["period"]
    assert isinstance(period, Period)
    assert period.end == pd.Timestamp("2023-11-16", tz="UTC") and period.start == pd.Timestamp("2023-11-14", tz="UTC")
    assert (period.since, period.until) == ("2d", "2023-11-16")  # as given
    assert period.as_of is not None and period.as_of == metrics.latest_event_time(path)
    assert df.attrs["since"] == "2023-11-14T00:00:00+00:00" and df.attrs["as_of"] == period.as_of.isoformat()
    # the attrs still go into Parquet (pandas writes them as JSON), and read back as the same period
    df.to_parquet(tmp_path / "l.parquet")
    back = Period.of(pd.read_parquet(tmp_path / "l.parquet").attrs)
    assert (back.start, back.end, back.as_of) == (period.start, period.end, period.as_of)


def test_a_where_keeps_its_parsed_period() -> None:
    where = metrics.Filters.of(since="1d", until="2026-01-02")
    assert where.period is not None and where.period.since == "1d"
    again = metrics.Filters.of(where, network="x")
    assert again.period is where.period and (again.since, again.until) == (where.since, where.until)


def test_a_declared_report_table_no_code_computes_is_the_metrics_result(path: str, monkeypatch) -> None:
    """A metric added by its declaration alone appears in the report: its table over the report's period."""
    from toolkit.metrics.declare import ReportTable
    from toolkit.presentation import report

    declared = report.report_tables()
    extra = (BY_NAME["revisits"], ReportTable("revisits_again", "Revisits again", ("network", "reorgs")))
    monkeypatch.setattr(report, "report_tables", lambda: (*declared, extra))
    built = report.build_report(path, since="2023-11-01", until="2023-12-01")
    expected = metrics.revisits(path, since="2023-11-01", until="2023-12-01")
    pd.testing.assert_frame_equal(built.tables["revisits_again"], expected)
    assert '<h2 id="revisits_again">Revisits again</h2>' in built.to_html(figures=False)
