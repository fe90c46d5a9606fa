"""Honesty where the data is thin (issue 29, item 8): estimates read while the workload still moves, per column.

A *live* sandbox (its clock held nearly still, the workload live) is synced and read at its clock for each window;
the clock then advances (drafts in flight are signed, cancelled or left to expire, new work arrives), a second sync
follows and the cohorts' final values come from the raw HTTP answers. Prints, per column: rows, containment of the
final value in the 95% interval, mean absolute error of the estimate and of the finished-only reading; per median
time to a finality stage: rows, shown, share within 20% of the final median, shown ones outside [half, twice].

Usage, from the repository root::

    .venv/bin/python -m benchmarks.thin_data_check --shape long-lived --seeds 3 --days 5 --per-day 600 \\
        --periods 0.5,1,3,12,48 --advance-days 6
    .venv/bin/python -m benchmarks.thin_data_check --shape default --seeds 3 --days 3 --per-day 1200 --advance-days 3

The comparison itself is :mod:`benchmarks.support.inflight` (``tests/integration/test_inflight_estimates.py`` runs a
lighter one).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.support import inflight


def main(argv: list[str] | None = None) -> int:
    """Run the comparison over the seeds and print the per-column figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="long-lived", help="the sandbox shape (default long-lived)")
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds (1..N)")
    parser.add_argument("--days", type=float, default=5, help="days of seeded history")
    parser.add_argument("--per-day", type=float, default=600, help="operations per day")
    parser.add_argument("--periods", default="0.5,1,3,12,48", help="window lengths in hours, comma-separated")
    parser.add_argument("--advance-days", type=float, default=6, help="how far the clock moves after the reading")
    parser.add_argument("--frozen", action="store_true", help="freeze the workload (the old, kinder check)")
    args = parser.parse_args(argv)
    periods = tuple(float(p) for p in args.periods.split(","))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        figures = inflight.run(
            list(range(1, args.seeds + 1)),
            Path(tmp),
            args.days,
            args.per_day,
            shape=args.shape,
            live=not args.frozen,
            periods=periods,
            advance=int(args.advance_days * 86400),
        )
    mode = "frozen" if args.frozen else "live"
    print(
        f"shape {args.shape} ({mode}), seeds 1..{args.seeds}, {args.days:g} day(s) at {args.per_day:g} operations/day, "
        f"windows {', '.join(f'{p:g} h' for p in periods)}, advanced {args.advance_days:g} days"
    )
    print(figures.summary())
    print(f"{'column':<20} {'rows':>5} {'contain':>8} {'MAE est':>9} {'MAE done':>9}")
    for name, c in figures.columns().items():
        print(f"{name:<20} {c['rows']:>5} {c['containment']:>8.1%} {c['mae']:>9.4f} {c['mae_finished_only']:>9.4f}")
    print(f"{'median to stage':<20} {'rows':>5} {'shown':>6} {'within20':>9} {'outside2x':>10}")
    for stage, m in figures.median_columns().items():
        print(f"{stage:<20} {m['rows']:>5} {m['shown']:>6} {m['within_20']:>9.1%} {m['outside_2x']:>10}")
    for miss in figures.misses():
        print("  miss:", miss)
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
