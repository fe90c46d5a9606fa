"""Every metric, cell for cell, between two versions of the toolkit: snapshot the answers, then compare snapshots.

``python -m benchmarks.metrics_compare snapshot WAREHOUSE DIR`` computes every metric of ``toolkit.metrics.METRICS``
in several variants (defaults, each grouping it accepts, time buckets, a network, status and channel filter, a
period) on ``WAREHOUSE`` and writes each answer to ``DIR/<case>.pkl`` (with its wall seconds in ``DIR/times.json``).
Run it from a checkout of one version (``cwd`` decides which ``toolkit`` is imported), then from another into a
second directory, and ``python -m benchmarks.metrics_compare compare DIR_A DIR_B`` prints, per case, whether the two
frames are equal: same columns in the same order, same dtypes, same rows in the same order, every float equal to
within 1e-9 relative (NaN equal to NaN), every other value exactly equal. It exits 1 when any case differs.

Not a test: the reference is whatever the other checkout computes, so it is independent of the code under test only
in the sense that it is the code before the change.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def _cases(wh: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """(case name, metric name, keyword arguments) of every variant, with filter values read from the warehouse."""
    con = wh.con
    net = con.execute(
        "SELECT n.name FROM operations o JOIN networks n USING (chain_selector) GROUP BY 1 ORDER BY count(*) DESC, 1"
    ).fetchall()
    channel = con.execute("SELECT channel_id FROM operations GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1").fetchall()
    lo, hi = con.execute("SELECT min(ts), max(ts) FROM events").fetchall()[0]
    cases: list[tuple[str, str, dict[str, Any]]] = []
    from toolkit import metrics

    for name, func in metrics.METRICS.items():
        sig = inspect.signature(func).parameters
        cases.append((f"{name}", name, {}))
        groups = _groups_of(name)
        for g in groups:
            cases.append((f"{name}--by-{g}", name, {"by": [g]}))
        if "bucket" in sig:
            cases.append((f"{name}--bucket-1d", name, {"bucket": "1d"}))
        if "network" in sig and net:
            cases.append((f"{name}--network", name, {"network": [net[0][0], net[-1][0]]}))
        if "channel" in sig and channel:
            cases.append((f"{name}--channel", name, {"channel": channel[0][0]}))
        if "status" in sig and name in ("status-latency", "stuck-operations"):
            cases.append((f"{name}--status", name, {"status": ["broadcasting", "confirmed_latest"]}))
        if "since" in sig and lo is not None:
            span = (hi - lo) / 3
            cases.append((f"{name}--period", name, {"since": lo + span, "until": hi - span}))
    return cases


def _groups_of(name: str) -> tuple[str, ...]:
    from toolkit import metrics

    groups = {
        "status-latency": metrics.STATUS_LATENCY_GROUPS,
        "failure-rates": metrics.OPERATION_GROUPS,
        "failure-reasons": metrics.OPERATION_GROUPS,
        "finality-breakdown": metrics.FINALITY_GROUPS,
        "query-latency": metrics.QUERY_GROUPS,
        "stuck-operations": metrics.STUCK_GROUPS,
        "revisits": metrics.REVISIT_GROUPS,
        "overdue-queries": metrics.OVERDUE_QUERY_GROUPS,
        "proof-coverage": metrics.PROOF_GROUPS,
        "watcher-activity": metrics.WATCHER_GROUPS,
        "watcher-status-history": (),
    }
    # address groups a busy warehouse into hundreds of thousands of rows: kept to the metrics where it is cheap
    return tuple(g for g in groups.get(name, ()) if g != "address" or name == "failure-reasons")


def snapshot(warehouse: str, out: str, only: str | None = None) -> None:
    """Compute every case on ``warehouse`` and write each frame to ``out``."""
    from toolkit import metrics
    from toolkit.warehouse import Warehouse

    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    with Warehouse(warehouse, read_only=True) as wh:
        for case, name, kwargs in _cases(wh):
            if only and only not in case:
                continue
            started = time.perf_counter()
            df = metrics.METRICS[name](wh, **kwargs)
            times[case] = time.perf_counter() - started
            df.attrs = {}
            df.to_pickle(target / f"{case}.pkl")
            print(f"{case:48} {times[case]:7.2f} s {len(df):8,} rows", flush=True)
    (target / "times.json").write_text(json.dumps(times, indent=1))


def _equal_values(a: pd.Series, b: pd.Series) -> str | None:
    """None when the two columns hold the same values, else a short description of the first difference."""
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        x = pd.to_numeric(a, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        y = pd.to_numeric(b, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        same = (np.isnan(x) & np.isnan(y)) | np.isclose(x, y, rtol=1e-9, atol=0.0)
        if not same.all():
            i = int(np.flatnonzero(~same)[0])
            return f"row {i}: {x[i]!r} != {y[i]!r} ({int((~same).sum())} cells)"
        return None
    xa, xb = a.astype(object).tolist(), b.astype(object).tolist()
    for i, (u, v) in enumerate(zip(xa, xb, strict=True)):
        missing_u = u is None or (isinstance(u, float) and math.isnan(u)) or u is pd.NaT or u is pd.NA
        missing_v = v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NaT or v is pd.NA
        if missing_u and missing_v:
            continue
        if missing_u != missing_v or u != v:
            return f"row {i}: {u!r} != {v!r}"
    return None


def compare(a_dir: str, b_dir: str) -> int:
    """Compare two snapshots case by case; print a line per case. Returns the number of cases that differ."""
    a, b = Path(a_dir), Path(b_dir)
    ta = json.loads((a / "times.json").read_text()) if (a / "times.json").exists() else {}
    tb = json.loads((b / "times.json").read_text()) if (b / "times.json").exists() else {}
    bad = 0
    cells = 0
    for path in sorted(a.glob("*.pkl")):
        other = b / path.name
        case = path.stem
        if not other.exists():
            print(f"{case:48} MISSING in {b_dir}")
            bad += 1
            continue
        x, y = pd.read_pickle(path), pd.read_pickle(other)
        problem = None
        if list(x.columns) != list(y.columns):
            problem = f"columns differ: {list(x.columns)} vs {list(y.columns)}"
        elif len(x) != len(y):
            problem = f"rows differ: {len(x)} vs {len(y)}"
        else:
            for col in x.columns:
                if str(x[col].dtype) != str(y[col].dtype):
                    problem = f"{col}: dtype {x[col].dtype} vs {y[col].dtype}"
                    break
                diff = _equal_values(x[col], y[col])
                if diff:
                    problem = f"{col}: {diff}"
                    break
        cells += x.size
        timing = f"{ta.get(case, math.nan):7.2f} s -> {tb.get(case, math.nan):7.2f} s"
        print(f"{case:48} {timing}  {'equal' if problem is None else 'DIFFERS: ' + problem}")
        bad += problem is not None
    print(f"\n{bad} of {len(list(a.glob('*.pkl')))} cases differ; {cells:,} cells compared")
    return bad


def main(argv: list[str] | None = None) -> int:
    """Command line: ``snapshot WAREHOUSE DIR [--only TEXT]`` or ``compare DIR_A DIR_B``. Returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot")
    snap.add_argument("warehouse")
    snap.add_argument("out")
    snap.add_argument("--only", help="only the cases whose name contains this text")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    args = parser.parse_args(argv)
    if args.command == "snapshot":
        snapshot(args.warehouse, args.out, args.only)
        return 0
    return 1 if compare(args.a, args.b) else 0


if __name__ == "__main__":
    sys.exit(main())
