"""Are the waiting drafts' projected chances calibrated? (issue 39, item 5.)

A live sandbox (:mod:`benchmarks.support.inflight`'s clock, held nearly still) is synced and every draft still
waiting for its signature at the reading gets its probabilities of being cancelled and of expiring, as
``draft_cancel_rate`` and ``draft_expiry_rate`` project it (:func:`toolkit.metrics.drafts.projected_units`, the
cohort of every operation); the clock then advances and each draft's fate is read from the raw HTTP answers. Prints,
per shape and seed and per age at the reading: waiting drafts, those without a deadline, the sum of their projected
chances, of the chances the sandbox's own plan gives them (:func:`planned`) and the outcomes that happened, for both
rates, and those still waiting at the end. ``--readings`` reads each sandbox several times, ``--every`` hours apart,
before the clock moves on: more waiting drafts for one sandbox.

Usage, from the repository root::

    .venv/bin/python -m benchmarks.draft_calibration --readings 8
    .venv/bin/python -m benchmarks.draft_calibration --shape messy --seeds 5151,1,2,3
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.support import inflight
from benchmarks.support import rawhistory as raw
from toolkit.metrics.common import Sql
from toolkit.metrics.drafts import projected_units
from toolkit.metrics.outcomes import operation_cohort
from toolkit.sandbox import Sandbox
from toolkit.sandbox.inprocess import BASE_URL
from toolkit.sandbox.scenarios import SHAPES
from toolkit.warehouse import Warehouse

#: Each shape's sandbox: seeds, days of history, operations a day, days the clock advances (thin_data_check's).
PRESETS = {
    "default": ((1, 2, 3), 3, 1200, 3),
    "long-lived": ((1, 2, 3), 5, 600, 6),
    "messy": ((5151, 1, 2), 3, 1200, 3),
    "query-heavy": ((2323, 1, 2), 3, 800, 3),
}
#: Age bins at the reading (hours), upper bounds.
AGES = (0.5, 1, 3, 12, 48, float("inf"))


def projected(
    seed: int, shape: str, days: float, per_day: float, advance: int, workdir: Path, readings: int, every: int
) -> pd.DataFrame:
    """Every draft waiting at each of ``readings`` readings ``every`` seconds apart (the first at the sandbox's
    start): ``reading``, ``age`` (s), ``timed`` (has a deadline), ``p_cancel``, ``p_expire``, and its fate once the
    clock has advanced ``advance`` seconds past the last reading (``outcome``, None while still in flight)."""
    sandbox = Sandbox(
        orgs=(inflight.KEY,),
        seed=seed,
        days=days,
        operations_per_day=per_day,
        start=inflight.START,
        shape=shape,
        speed=inflight.LIVE_SPEED,
    )
    path = workdir / f"calibration-{shape}-{seed}.duckdb"
    cohort = operation_cohort(Sql(), [], {}, {})
    parts = []
    for k in range(readings):
        if k:
            sandbox.advance(every)
        inflight._sync(sandbox, path)
        with Warehouse(str(path), read_only=True) as wh:
            _, units = projected_units(wh, cohort.ctes, cohort.units, [], cohort.params)
        parts.append(units[units["waiting"].fillna(False).astype(bool)].assign(reading=k))
    units = pd.concat(parts, ignore_index=True)
    sandbox.advance(advance)
    late_ops, _ = raw.read_history(BASE_URL, inflight.KEY, sandbox.transport())
    late_lo = raw.latest_only_networks(late_ops)
    fate = {o.operation_id: raw.outcome(o, late_lo) for o in late_ops}
    return pd.DataFrame(
        {
            "reading": units["reading"].to_numpy(),
            "age": units["age"].to_numpy(dtype=float),
            "timed": (units["d"].to_numpy(dtype=float, na_value=np.nan) > units["c"].to_numpy(dtype=float)),
            "window": units["d"].to_numpy(dtype=float, na_value=np.nan) - units["c"].to_numpy(dtype=float),
            "p_cancel": units["p_draft_cancelled"].to_numpy(dtype=float),
            "p_expire": units["p_draft_expired"].to_numpy(dtype=float),
            "outcome": [fate.get(u) for u in units["unit_id"]],
        }
    )


def _later(t: np.ndarray, lo: float, hi: np.ndarray | float) -> np.ndarray:
    """P(U > t) for U uniform on [lo, hi]."""
    return np.clip((hi - t) / (hi - lo), 0.0, 1.0)


def planned(df: pd.DataFrame, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """The chances of being cancelled and of expiring that the sandbox's plan gives each waiting draft (``age``,
    ``timed``, ``window`` as :func:`projected` gives them), by Bayes from that plan
    (``toolkit/sandbox/scenarios.py``, ``Scenario._plan_draft``, written out here): with ``h`` the deadline less
    120 s (4 h without one), 55% are signed at ``min(U(lo, hi), h)`` (``lo, hi`` the shape's ``finalize_after``,
    else 30 s and ``h``) when ``h > 60``, 20% cancelled at ``U(60, 3600)`` unless the deadline comes first, the
    rest left to expire (or, without a deadline, to stay drafts)."""
    finalize_after = SHAPES[shape].finalize_after
    a = df["age"].to_numpy(dtype=float)
    timed = df["timed"].to_numpy(dtype=bool)
    deadline = np.where(timed, df["window"].to_numpy(dtype=float), np.inf)
    h = np.where(timed, deadline - 120, 4 * 3600.0)
    signed, cancelled = np.where(h > 60, 0.55, 0.0), np.where(h > 60, 0.20, 0.75)
    lo, hi = finalize_after or (30.0, None)
    unsigned = np.where(timed & (a >= h), 0.0, _later(a, lo, h if hi is None else hi))
    uncancelled = _later(a, 60.0, 3600.0)
    waiting = signed * unsigned + cancelled * uncancelled + (1 - signed - cancelled)
    cancel = cancelled * np.clip(uncancelled - _later(np.minimum(deadline, 3600.0), 60.0, 3600.0), 0.0, 1.0)
    expire = np.where(timed, cancelled * np.minimum(uncancelled, _later(deadline, 60.0, 3600.0)), 0.0)
    expire = expire + np.where(timed, 1 - signed - cancelled, 0.0)
    return cancel / waiting, expire / waiting


def table(df: pd.DataFrame) -> list[str]:
    """The calibration lines of one reading: per age bin and in all, drafts, Σp against the outcomes."""
    lines = [
        f"  {'age at reading':<16} {'drafts':>6} {'no dl':>6} {'Σp cancel':>10} {'plan':>7} {'cancelled':>9} "
        f"{'Σp expire':>10} {'plan':>8} {'expired':>8} {'waiting':>8}"
    ]
    bins = []
    lower = 0.0
    for h in AGES:
        bins.append((f"[{lower:g}, {h:g}) h", lower, h))
        lower = h
    bins.append(("all", 0.0, float("inf")))
    for label, lo, hi in bins:
        part = df[(df["age"] >= lo * 3600) & (df["age"] < hi * 3600)]
        if part.empty:
            continue
        lines.append(
            f"  {label:<16} {len(part):>6} {int((~part['timed']).sum()):>6} {part['p_cancel'].sum():>10.2f} "
            f"{part['plan_cancel'].sum():>7.2f} {int((part['outcome'] == 'draft_cancelled').sum()):>9} "
            f"{part['p_expire'].sum():>10.2f} {part['plan_expire'].sum():>8.2f} "
            f"{int((part['outcome'] == 'draft_expired').sum()):>8} {int(part['outcome'].isna().sum()):>8}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print the calibration of every shape and seed asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default=",".join(PRESETS), help="shapes, comma-separated (default: every preset)")
    parser.add_argument("--seeds", help="seeds, comma-separated (default: the shape's preset)")
    parser.add_argument("--readings", type=int, default=1, help="readings per seed (default 1)")
    parser.add_argument("--save", help="write every draft's row to this CSV file")
    parser.add_argument("--every", type=float, default=3, help="hours between readings (default 3)")
    args = parser.parse_args(argv)
    totals: dict[str, list[pd.DataFrame]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shape.split(","):
            seeds, days, per_day, advance = PRESETS.get(shape, PRESETS["default"])
            if args.seeds:
                seeds = tuple(int(s) for s in args.seeds.split(","))
            for seed in seeds:
                df = projected(
                    seed, shape, days, per_day, int(advance * 86400), Path(tmp), args.readings, int(args.every * 3600)
                )
                df["plan_cancel"], df["plan_expire"] = planned(df, shape)
                totals.setdefault(shape, []).append(df.assign(seed=seed))
                print(
                    f"shape {shape}, seed {seed}: drafts waiting at {args.readings} reading(s) {args.every:g} h apart "
                    f"and their fate {advance:g} days on"
                )
                print("\n".join(table(df)))
            print(f"shape {shape}, seeds {','.join(str(s) for s in seeds)} together")
            print("\n".join(table(pd.concat(totals[shape], ignore_index=True))))
            print()
    if args.save:
        pd.concat([pd.concat(dfs).assign(shape=s) for s, dfs in totals.items()]).to_csv(args.save, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
