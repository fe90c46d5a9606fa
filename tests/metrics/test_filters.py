"""Filters, groupings, bucket widths, categorical order, UTC times, and values that are bound, never pasted."""

from __future__ import annotations

import inspect
from datetime import timedelta

import pandas as pd
import pytest

from tests.support.builders import SEPOLIA, T0, build, ladder
from toolkit import metrics, spec
from toolkit.known_values import UnknownValueError
from toolkit.warehouse import Warehouse

HOSTILE = ["x' OR '1'='1", "'; DROP TABLE events; --", 'a"b', "%", "_", "\\", "ch-1' --"]


def test_channel_network_status_and_period_filters(warehouse) -> None:
    def entered(**kw):
        return int(metrics.status_latency(warehouse, by=[], **kw)["entered"].sum())

    assert entered() == 7 + 7 + 5 + 3
    assert entered(channel="ch-1") == 12 and entered(channel=["ch-1", "ch-2"]) == 22
    assert entered(network="Ethereum Sepolia") == 5 and entered(network=SEPOLIA) == 5
    assert entered(status=["accepted", "failed"]) == 5
    since = pd.Timestamp(T0 + 86_400, unit="s", tz="UTC")
    assert entered(since=since) == 7 and entered(until=since) == 15
    assert entered(since=since.tz_convert(None).isoformat()) == 7  # a naive ISO string is read as UTC
    assert metrics.failure_rates(warehouse, by=["channel_id"], channel="ch-2")["failed"].tolist() == [1]


def _hostile_kwargs(func, value: object) -> dict[str, object]:
    params = {*inspect.signature(func).parameters, *func.filter_names}
    return {k: value for k in ("channel", "network", "status") if k in params}


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_filter_values_are_bound_not_pasted(warehouse, value) -> None:
    for func in metrics.METRICS.values():
        with pytest.raises(UnknownValueError):  # the Python API refuses a value the warehouse does not know
            func(warehouse, **_hostile_kwargs(func, value))
    assert warehouse.count("events") > 0 and warehouse.count("operation_transitions") > 0


def test_hostile_filter_values_past_the_check_match_nothing(warehouse) -> None:
    """The SQL binds each value, never pastes it: the metric's own query, past the check, matches nothing (a metric
    built on another metric meets the check again there). A filter's values are bound as one list whether one is
    given or several (:meth:`~toolkit.metrics.Filters.of`), so every hostile value goes into each query at once: a
    value that widened the match (a quote ending the string, ``%``/``_`` as patterns) would bring rows, one that
    broke the SQL an error."""
    for name, func in metrics.METRICS.items():
        kwargs = _hostile_kwargs(func, list(HOSTILE))
        assert metrics.Filters.of(**kwargs) == metrics.Filters.of(**{k: tuple(HOSTILE) for k in kwargs})
        try:
            df = func.__wrapped__(warehouse, where=metrics.Filters.of(**kwargs))
        except UnknownValueError:
            continue
        assert df.empty, name
    assert warehouse.count("events") > 0 and warehouse.count("operation_transitions") > 0


def test_the_sql_text_never_contains_the_filter_value(warehouse, monkeypatch) -> None:
    seen: list[tuple[str, object]] = []
    original = Warehouse.query

    def spy(self, sql, params=None):
        seen.append((sql, params))
        return original(self, sql, params)

    monkeypatch.setattr(Warehouse, "query", spy)
    with pytest.raises(UnknownValueError):  # values the warehouse does not know are refused before any query
        metrics.status_latency(warehouse, channel="ch-1' --", network="Zeta", since="2020-01-01")
    metrics.status_latency.__wrapped__(
        warehouse, where=metrics.Filters.of(channel="ch-1' --", network="Zeta", since="2020-01-01")
    )
    assert seen and all("ch-1' --" not in sql and "Zeta" not in sql and "2020" not in sql for sql, _ in seen)
    assert any(["ch-1' --"] in dict(p or {}).values() for _, p in seen)


@pytest.mark.parametrize(
    ("name", "by"),
    [
        ("status-latency", ["network; DROP TABLE events"]),
        ("failure-rates", ["status"]),
        ("finality-breakdown", ["address"]),
        ("query-latency", ["status"]),
        ("proof-coverage", ["operation_id"]),
        ("watcher-activity", ["status"]),
        ("stuck-operations", ["1"]),
        ("failure-reasons", ["outcome"]),
    ],
)
def test_grouping_columns_come_from_an_allow_list(warehouse, name, by) -> None:
    with pytest.raises(ValueError, match="cannot group"):
        metrics.METRICS[name](warehouse, by=by)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1d", 86_400),
        ("15m", 900),
        ("15min", 900),
        ("6h", 21_600),
        ("2w", 1_209_600),
        ("30s", 30),
        (" 1 D ", 86_400),
        (3600, 3600),
        (timedelta(hours=2), 7200),
        (pd.Timedelta("1h"), 3600),
    ],
)
def test_bucket_widths(text, seconds) -> None:
    assert metrics.bucket_seconds(text) == seconds


@pytest.mark.parametrize("bad", ["1y", "day", "", "0d", 0, -5, "1d; DROP TABLE events", True, 1.5])
def test_bad_bucket_widths_are_refused(bad) -> None:
    with pytest.raises(ValueError):
        metrics.bucket_seconds(bad)


def test_every_metric_accepts_the_command_line_options(warehouse) -> None:
    """`chainops metrics NAME` passes since, until and channel (a list), and `by` when given."""
    for name, func in metrics.METRICS.items():
        df = func(warehouse, since="2000-01-01T00:00:00Z", until=None, channel=["ch-1", "ch-2"])
        assert isinstance(df, pd.DataFrame) and (not df.empty or name in ("stuck-operations", "overdue-queries")), name
        assert "by" in inspect.signature(func).parameters, name
        assert func.__doc__ and "Returns" in func.__doc__, name


def test_statuses_are_ordered_categoricals_in_lifecycle_order(warehouse) -> None:
    df = metrics.status_latency(warehouse, by=["status"])
    assert df["status"].cat.ordered
    assert list(df["status"].cat.categories) == list(spec.OPERATION_STATUSES)
    assert list(df["status"]) == sorted(df["status"], key=spec.OPERATION_STAGE_ORDER.__getitem__)
    outcome = metrics.query_latency(warehouse)["outcome"]
    assert outcome.cat.ordered and list(outcome.cat.categories) == list(metrics.QUERY_OUTCOMES)
    reasons = metrics.failure_reasons(warehouse)
    assert reasons["status"].cat.ordered and reasons["category"].cat.ordered


def test_unknown_statuses_sort_after_known_ones() -> None:
    cat = metrics.status_categorical(pd.Series(["zzz", "sent", "accepted", "aaa", None]))
    assert list(cat.categories) == [*spec.OPERATION_STATUSES, "aaa", "zzz"]


def test_times_are_tz_aware_utc(warehouse) -> None:
    frames = [
        metrics.status_latency(warehouse, bucket="1h")["bucket"],
        metrics.failure_rates(warehouse, bucket="1d")["bucket"],
        metrics.watcher_activity(warehouse)["bucket"],
        metrics.watcher_status_history(warehouse)["entered_at"],
        metrics.stuck_operations(warehouse, thresholds={"confirmed_latest": 1})["entered_at"],
    ]
    for series in frames:
        assert str(series.dt.tz) == "UTC", series.name
    assert metrics.to_utc("2024-01-01T02:00:00+02:00") == pd.Timestamp("2024-01-01T00:00:00Z")
    assert metrics.to_utc("7d") < pd.Timestamp.now(tz="UTC") - pd.Timedelta(days=6)


def test_chain_selectors_stay_exact_text(warehouse) -> None:
    df = metrics.failure_rates(warehouse, by=["chain_selector"])
    assert SEPOLIA in set(df["chain_selector"])  # above 2**63: a float or signed integer would mangle it


def test_metrics_take_a_path_and_open_it_read_only(tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    events = ladder("a", ("accepted", "sending"), (0, 3)) + ladder("b", ("accepted", "sending"), (0, 5))
    build(path, events=events).close()
    for name, func in metrics.METRICS.items():
        assert isinstance(func(str(path)), pd.DataFrame), name
    assert metrics.status_latency(path).loc[0, "p50_s"] == 4.0  # 3 and 5: a p50 needs two, their midpoint


def test_an_empty_warehouse_gives_empty_frames(tmp_path) -> None:
    wh = build(tmp_path / "w.duckdb", networks=[])
    for name, func in metrics.METRICS.items():
        df = func(wh)
        assert isinstance(df, pd.DataFrame) and df.empty, name
    assert metrics.latest_event_time(wh) is None


def test_a_statement_gets_only_the_parameters_it_binds() -> None:
    """``$p1`` is not ``$p10``: a statement made of part of a metric's clauses is run with its own values only."""
    from toolkit.metrics.common import params_in

    params = {f"p{i}": i for i in range(12)}
    assert params_in("SELECT $p10 WHERE x = $p3", params) == {"p10": 10, "p3": 3}
    assert params_in("SELECT 1", params) == {}
