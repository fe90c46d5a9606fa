"""One metric on DuckDB and on Spark (local mode) over the same data: the cost of moving the metrics to Spark.

Run ``.venv/bin/python -m benchmarks.spark_bench`` (``--events N`` for the size, default 12,000,000 operation
events, which give over 10 million transitions; ``--path DIR --reuse`` keeps and reuses the generated warehouse
and export; ``--metric`` picks the metric; ``--master`` another Spark master). It generates a synthetic warehouse
(:func:`benchmarks.metrics_bench.generate`: ten networks, drafts, failures, duplicates, late events), refreshes its
models as a sync does, writes the Parquet export, then prints:

- the warehouse's size (events, transitions, operations) and the export's;
- DuckDB: the metric over the warehouse (models materialised at sync time), first and best of three calls;
- Spark: the session start, the first call (reading the export and rebuilding the transitions and lifecycles from
  the raw tables, which the export does not hold as models), and the best of two more (the rebuilt views cached);
- the ratios Spark / DuckDB, and whether the two tables are equal (row for row, 1e-9 relative).

Not a timed test: it reports, it does not assert.
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
import time
from pathlib import Path

import pandas as pd

from benchmarks.metrics_bench import generate
from toolkit import metrics
from toolkit.export import export_parquet
from toolkit.warehouse import Warehouse
from toolkit.warehouse.model_tables import refresh_models


def _timed(call) -> tuple[float, pd.DataFrame]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def _equal(a: pd.DataFrame, b: pd.DataFrame) -> str:
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return f"no: {a.shape} vs {b.shape}"
    for col in a.columns:
        for x, y in zip(a[col].tolist(), b[col].tolist(), strict=True):
            if isinstance(x, float) and isinstance(y, float):
                if not ((math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9)):
                    return f"no: {col} {x} vs {y}"
            elif not (x == y or (pd.isna(x) and pd.isna(y))):
                return f"no: {col} {x!r} vs {y!r}"
    return "yes"


def main(argv: list[str] | None = None) -> int:
    """Generate (or reuse), export, time the metric on both engines and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=12_000_000, help="operation events to generate")
    parser.add_argument("--path", help="directory for the warehouse and export (default: a temporary one)")
    parser.add_argument("--reuse", action="store_true", help="reuse the warehouse and export under --path")
    parser.add_argument("--metric", default="status-latency", choices=sorted(metrics.METRICS))
    parser.add_argument("--by", default="network,status", help="grouping (default network,status)")
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument("--driver-memory", default="4g", help="Spark driver memory (default 4g)")
    args = parser.parse_args(argv)

    root = Path(args.path or tempfile.mkdtemp(prefix="spark_bench_"))
    root.mkdir(parents=True, exist_ok=True)
    warehouse, export = root / "bench.duckdb", root / "export"
    if not (args.reuse and warehouse.exists() and export.exists()):
        warehouse.unlink(missing_ok=True)
        shutil.rmtree(export, ignore_errors=True)
        t, _ = _timed(lambda: generate(warehouse, n_events=args.events))
        print(f"generated {args.events:,} operation events in {t:.1f}s")
        with Warehouse(warehouse) as wh:
            t, _ = _timed(lambda: refresh_models(wh))
        print(f"models refreshed (as a sync does) in {t:.1f}s")
        t, files = _timed(lambda: export_parquet(warehouse, export))
        print(f"exported in {t:.1f}s ({sum(files.values())} files)")
    with Warehouse(warehouse, read_only=True) as wh:
        sizes = {t: wh.count(t) for t in ("events", "operation_transitions", "operations")}
    size_mb = sum(f.stat().st_size for f in export.rglob("*.parquet")) / 1e6
    print("rows: " + ", ".join(f"{k} {v:,}" for k, v in sizes.items()) + f"; export {size_mb:,.0f} MB")

    func = metrics.METRICS[args.metric]
    kwargs = {"by": [c for c in args.by.split(",") if c]} if args.by else {}
    duck_times = []
    for _ in range(3):
        t, duck = _timed(lambda: func(str(warehouse), **kwargs))
        duck_times.append(t)
    print(f"DuckDB {args.metric}: first {duck_times[0]:.2f}s, best {min(duck_times):.2f}s ({len(duck)} rows)")

    from toolkit.spark import spark_session, spark_warehouse

    t_session, session = _timed(lambda: spark_session(args.master, config={"spark.driver.memory": args.driver_memory}))
    spark_times = []
    for _ in range(3):
        t, on_spark = _timed(lambda: func(spark_warehouse(export, session), **kwargs))
        spark_times.append(t)
    first, best = spark_times[0], min(spark_times[1:])
    print(f"Spark {args.master}: session start {t_session:.1f}s; first call {first:.2f}s, best cached {best:.2f}s")
    print(
        f"ratio Spark/DuckDB: first {first / duck_times[0]:.1f}x, cached {best / min(duck_times):.1f}x; "
        f"tables equal: {_equal(duck, on_spark)}"
    )
    session.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
