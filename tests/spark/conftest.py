"""One Spark session (local mode) for every Spark test, and the two exports they read: the demo warehouse's and a
messy sandbox's, each synced over real HTTP into a DuckDB file and exported with ``chainops export``.

Without Java (or pyspark) the tests are skipped with a reason that says so in the summary; with
``CHAINOPS_REQUIRE_SPARK=1`` (set by ``.ci/run``) that is an error instead: CI always runs them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.conftest import TEST_KEY
from toolkit.spark import spark_unavailable_reason

#: The session runs in a zone with a half-hour offset: results must be UTC whatever the session's zone.
SESSION_TIME_ZONE = "Asia/Kolkata"
#: Settings for the tests' tiny exports, where Spark's costs are planning and code generation, not data: no
#: generated code (interpreted expressions), no adaptive re-planning, one shuffle partition, one default partition.
#: Measured on three of the heaviest cases (failure-rates, finality-breakdown by network, status-latency) on a
#: loaded machine, the JVM's CPU seconds went from 123.8 to 89.2 with all of them (111.5 with code generation off
#: alone, 135.8 with adaptive execution off alone). Not the toolkit's local defaults (toolkit/spark/session.py): on
#: a warehouse of real size generated code and more partitions pay for themselves. Results are the same either way:
#: every cell is compared with DuckDB's.
#: The JVM's own options for a session of a few minutes (session 15): the quick JIT compiler only (C1: the optimising
#: one compiles for minutes before it pays back) and the one-thread garbage collector. On the demo export, session
#: start, registration and two of the heaviest cases took 36.6 JVM CPU seconds against 65.8 without them. The JVM
#: computes the same either way.
TINY_DATA = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


@pytest.fixture(scope="session")
def spark():
    """The suite's Spark session (local mode, two cores, a non-UTC session time zone, :data:`TINY_DATA`)."""
    reason = spark_unavailable_reason()
    if reason is not None:
        if os.environ.get("CHAINOPS_REQUIRE_SPARK"):
            raise RuntimeError(f"CHAINOPS_REQUIRE_SPARK is set but Spark cannot run: {reason}")
        pytest.skip(f"NOT RUN: the Spark tests need pyspark and Java 17+ ({reason})")
    from toolkit.spark import spark_session

    session = spark_session("local[2]", config={"spark.sql.session.timeZone": SESSION_TIME_ZONE, **TINY_DATA})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def demo_export(tmp_path_factory) -> tuple[str, str]:
    """``chainops demo``'s warehouse and its Parquet export: (warehouse path, export directory). The demo's HTML
    report is not written: no test here reads it, it only reads the warehouse (tests/cli cover the report), and it
    was half of the fixture's CPU."""
    from toolkit.cli import main
    from toolkit.presentation import report

    root = tmp_path_factory.mktemp("demo")
    warehouse, export = root / "demo.duckdb", root / "export"
    # history up to now (the demo's default ends at a fixed past time): the cases' ages (36h, 2d) count from now
    start = str(int(time.time()) // 60 * 60)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report, "write_html_report", lambda _warehouse, out, **_kwargs: Path(out))
        argv = ["demo", "--warehouse", str(warehouse), "--out", str(root / "report"), "--quiet", "--start", start]
        assert main(argv) == 0
    assert main(["export", "--warehouse", str(warehouse), "--out", str(export)]) == 0
    return str(warehouse), str(export)


@pytest.fixture(scope="session")
def messy_export(tmp_path_factory) -> tuple[str, str]:
    """A messy sandbox (duplicated, re-emitted and out-of-order events, reorganisations, a skewed clock, an unknown
    status) synced over HTTP and exported: (warehouse path, export directory)."""
    from toolkit.config import Settings
    from toolkit.export import export_parquet
    from toolkit.loader import sync
    from toolkit.sandbox import Sandbox

    root = Path(tmp_path_factory.mktemp("messy"))
    warehouse = str(root / "messy.duckdb")
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=5, days=2, operations_per_day=250, shape="messy", start=1_795_000_000)
    with sandbox.serve(host="127.0.0.1", port=0) as server:
        settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=warehouse, environ={})
        sync(settings, quiet=True)
    export_parquet(warehouse, root / "export")
    return warehouse, str(root / "export")
