"""Every metric computed by Spark over the Parquet export equals DuckDB's over the warehouse, row for row: on the
demo warehouse and on a messy sandbox, with filters, groupings and time buckets. The Spark session runs in a
non-UTC time zone (Asia/Kolkata): times must still come back as the same UTC instants."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.spark.compare import assert_same_table
from toolkit import metrics, spec
from toolkit.spark import spark_warehouse
from toolkit.warehouse import Warehouse

pytestmark = pytest.mark.spark

#: (metric, arguments): every metric as `chainops metrics` runs it, then the main ones with groupings, buckets and
#: filters.
DEMO_CASES = [
    *((name, {}) for name in sorted(metrics.METRICS)),
    ("status-latency", {"by": ["network", "status"], "bucket": "6h"}),
    ("status-latency", {"status": ["sent", "broadcasting"], "since": "@end-48h", "until": "1d"}),
    ("failure-rates", {"by": ["network"], "bucket": "1d"}),
    ("failure-rates", {"network": ["Polygon", "Ethereum Mainnet"], "since": "36h"}),
    ("finality-breakdown", {"by": ["network"]}),
    ("query-latency", {"by": ["network"], "since": "2d"}),
    ("stuck-operations", {"network": ["Polygon", "Base"], "now": "@end-1h", "multiple": 1.5}),
    ("failure-reasons", {"top": 3}),
]
MESSY_CASES = [
    ("status-latency", {"by": ["network", "status"]}),
    ("status-latency", {"bucket": "12h"}),
    ("failure-rates", {"by": ["network"], "bucket": "1d"}),
    ("finality-breakdown", {"by": ["network"]}),
    ("query-latency", {"by": ["network"]}),
    ("revisits", {}),
]


def _case_id(case: tuple[str, dict]) -> str:
    name, kwargs = case
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


def _at_data_end(warehouse: str, kwargs: dict) -> dict:
    """``kwargs`` with each ``"@end-AGE"`` replaced by the time AGE before the data's last event: the demo's data
    ends when it was generated, so a fixed date would hold no data on another day."""
    end = metrics.latest_event_time(warehouse)
    return {
        k: (end - pd.Timedelta(v.removeprefix("@end-")) if isinstance(v, str) and v.startswith("@end-") else v)
        for k, v in kwargs.items()
    }


def _a_now_with_stuck_operations(warehouse: str, kwargs: dict) -> dict:
    """``kwargs`` with a ``now`` at which DuckDB finds stuck operations: the one given (or the data's end) when it
    does, else the last second of one of the longest stays in a non-terminal status on the filtered networks: an
    operation is most overdue just before it moves on. Whether any operation is stuck at a whole hour depends on
    when the demo was generated, and a comparison of two empty tables proves nothing."""
    if len(metrics.stuck_operations(warehouse, **kwargs)):
        return kwargs
    networks = kwargs.get("network") or []
    with Warehouse(warehouse, read_only=True) as wh:
        candidates = wh.query(
            """
            SELECT coalesce(exited_at - INTERVAL 1 SECOND, (SELECT max(entered_at) FROM operation_transitions))
                AS at
            FROM operation_transitions
            WHERE NOT list_contains(?, status) AND (len(?) = 0 OR list_contains(?, network))
            ORDER BY coalesce(seconds_in_status, 0) DESC, operation_id
            LIMIT 200
            """,
            [sorted(spec.OPERATION_TERMINAL), networks, networks],
        )["at"]
    for at in candidates:
        moved = {**kwargs, "now": pd.Timestamp(at)}
        if len(metrics.stuck_operations(warehouse, **moved)):
            return moved
    return kwargs


def _both(warehouse: str, export: str, spark, name: str, kwargs: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    func = metrics.METRICS[name]
    kwargs = _at_data_end(warehouse, kwargs)
    if name == "stuck-operations":
        kwargs = _a_now_with_stuck_operations(warehouse, kwargs)
    if "since" in kwargs and "until" not in kwargs and "now" not in kwargs:
        # an age counts back from now on both engines; pin it to the data's own end so the two see one period
        kwargs = {**kwargs, "until": metrics.latest_event_time(warehouse) + pd.Timedelta(seconds=1)}
    return func(warehouse, **kwargs), func(engine="spark", parquet=export, spark=spark, **kwargs)


@pytest.mark.parametrize("case", DEMO_CASES, ids=_case_id)
def test_the_demo_metrics_are_the_same_on_spark(spark, demo_export, case) -> None:
    warehouse, export = demo_export
    duck, on_spark = _both(warehouse, export, spark, *case)
    assert len(duck) > 0 or case[0] in {"overdue-queries"}, "a case that compares nothing proves nothing"
    assert_same_table(duck, on_spark, _case_id(case))


@pytest.mark.parametrize("case", MESSY_CASES, ids=_case_id)
def test_the_messy_metrics_are_the_same_on_spark(spark, messy_export, case) -> None:
    warehouse, export = messy_export
    duck, on_spark = _both(warehouse, export, spark, *case)
    assert len(duck) > 0
    assert_same_table(duck, on_spark, _case_id(case))


def test_the_rebuilt_views_hold_the_warehouse_rows(spark, messy_export) -> None:
    """The transitions, lifecycles and query lifecycles Spark rebuilds from the raw tables are the warehouse's."""
    warehouse, export = messy_export
    from toolkit.warehouse import Warehouse

    source = spark_warehouse(export, spark)
    keys = {
        "operation_transitions": "operation_id, entered_at, stage_rank, status",
        "operation_lifecycle": "operation_id",
        "query_lifecycle": "query_id",
    }
    with Warehouse(warehouse, read_only=True) as wh:
        for view, order in keys.items():
            sql = f"SELECT * FROM {view} ORDER BY {order}"
            assert_same_table(wh.query(sql), source.query(sql), view)


def test_chain_selectors_stay_text(spark, demo_export) -> None:
    """Partition folders are named by network, but selectors are never read back as numbers."""
    warehouse, export = demo_export
    source = spark_warehouse(export, spark)
    got = source.query("SELECT DISTINCT chain_selector FROM operations ORDER BY chain_selector")
    assert got["chain_selector"].map(type).eq(str).all()
    from toolkit.warehouse import Warehouse

    with Warehouse(warehouse, read_only=True) as wh:
        want = wh.query("SELECT DISTINCT chain_selector FROM operations ORDER BY chain_selector")
    assert got["chain_selector"].tolist() == want["chain_selector"].tolist()


def test_the_command_line_runs_a_metric_on_spark(spark, demo_export, capsys) -> None:
    """`chainops metrics NAME --engine spark --parquet DIR` writes what the DuckDB run writes."""
    import json

    from toolkit.cli import main

    warehouse, export = demo_export
    common = ["metrics", "failure-reasons", "--warehouse", warehouse, "--network", "Polygon", "--format", "json"]
    assert main(common) == 0
    on_duckdb = json.loads(capsys.readouterr().out)
    assert main([*common, "--engine", "spark", "--parquet", export]) == 0
    on_spark = json.loads(capsys.readouterr().out)
    assert on_spark == on_duckdb and len(on_duckdb) > 0


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--engine", "spark"], 2, "--parquet DIR"),
        (["--parquet", "somewhere"], 2, "--engine spark"),
        (["--engine", "spark", "--parquet", "/nonexistent/export"], 1, "no Parquet export"),
        (["--engine", "spark", "--parquet", "/nonexistent/export", "--network", "Nowhere"], 1, "no Parquet export"),
    ],
)
def test_spark_mistakes_get_a_clear_answer(spark, args, code, says, capsys) -> None:
    from toolkit.cli import main

    assert main(["metrics", "failure-rates", *args]) == code
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_an_unknown_network_on_spark_is_a_usage_error(spark, demo_export, capsys) -> None:
    """The filter check reads the export's own networks on Spark."""
    from toolkit.cli import main

    _, export = demo_export
    assert main(["metrics", "failure-rates", "--engine", "spark", "--parquet", export, "--network", "Polygn"]) == 2
    assert "Polygon" in capsys.readouterr().err


def test_a_statement_reads_the_kept_views_inside_a_with_clause(spark, messy_export) -> None:
    """Every metric reads the rebuilt views inside WITH clauses: there the kept rows are read, not the Parquet
    files again (Spark 4 ignores a persisted view inside a WITH clause; a local checkpoint is a leaf)."""
    warehouse, export = messy_export
    source = spark_warehouse(export, spark)
    for view in ("operation_transitions", "operation_lifecycle", "query_lifecycle"):
        sql = f"WITH v AS (SELECT * FROM {view}), w AS (SELECT * FROM v) SELECT count(*) AS n FROM w"
        frame = source.frame(sql)
        plan = frame._jdf.queryExecution().executedPlan().toString()
        assert "FileScan" not in plan, f"{view} is read from the Parquet files again:\n{plan}"
        with Warehouse(warehouse, read_only=True) as wh:
            assert frame.collect()[0]["n"] == wh.query(f"SELECT count(*) AS n FROM {view}")["n"][0] > 0


def test_the_session_keeps_the_logging_option_beside_the_tests_java_options(spark) -> None:
    """`spark_session(config=...)` appends ``spark.driver.extraJavaOptions`` to the toolkit's logging option: the
    JVM started with both."""
    from toolkit.spark.session import _LOG4J

    arguments = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-Dlog4j2.configurationFile={_LOG4J.as_uri()}" in arguments
    assert "-XX:TieredStopAtLevel=1" in arguments and "-XX:+UseSerialGC" in arguments


def test_functions_are_checked_against_the_sessions_own(spark, messy_export) -> None:
    """A function SQLGlot does not know is carried when the session has it (here a temporary one) and refused, before
    Spark runs anything, when it does not."""
    from pyspark.sql.types import LongType

    from toolkit.spark import SparkSqlError, SparkWarehouse

    _, export = messy_export
    spark.udf.register("chainops_test_only_fn", lambda x: x, LongType())
    source = SparkWarehouse(export, spark, cache=False)
    try:
        assert source.frame("SELECT chainops_test_only_fn(1) AS x").columns == ["x"]
        with pytest.raises(SparkSqlError, match=r"chainops_test_other_fn.*has no such function"):
            source.frame("SELECT chainops_test_other_fn(1) AS x")
    finally:
        source.close()
        spark.sql("DROP TEMPORARY FUNCTION IF EXISTS chainops_test_only_fn")
