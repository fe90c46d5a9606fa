"""Honesty where the data is thin (issue 29, item 8; issue 39, item 5): estimates read while the workload still
moves, per shape and column.

A *live* sandbox (its clock held nearly still, the workload live) is synced and read at its clock for each window;
the clock then advances (drafts in flight are signed, cancelled or left to expire, new work arrives), a second sync
follows and the cohorts' final values come from the raw HTTP answers. Prints, per shape and rate column: rows,
containment of the final value in the 95% interval, mean absolute error of the estimate and of the finished-only
reading; per median time to a finality stage or in a status: rows, shown, NULL, share of the shown within 20% of
the final median, shown ones outside [half, twice].

Usage, from the repository root (every shape with its preset, or some of them; the options override the presets)::

    .venv/bin/python -m benchmarks.thin_data_check
    .venv/bin/python -m benchmarks.thin_data_check --shape messy,query-heavy
    .venv/bin/python -m benchmarks.thin_data_check --shape long-lived --seeds 1,2,3 --days 5 --per-day 600 \\
        --periods 0.5,1,3,12,48 --advance-days 6

The comparison itself is :mod:`benchmarks.support.inflight` (``tests/integration/test_inflight_estimates.py`` runs a
lighter one).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.support import inflight

#: Each shape's reading: seeds, days of history, operations a day, windows (hours), days the clock advances. The
#: messy and query-heavy seeds lead with those of issue 39 (their drafts are live at the reading); three seeds a shape,
#: so that no figure rests on one sandbox.
PRESETS: dict[str, dict[str, Any]] = {
    "default": {"seeds": (1, 2, 3), "days": 3, "per_day": 1200, "periods": (0.5, 1, 3, 12, 48), "advance": 3},
    "long-lived": {"seeds": (1, 2, 3), "days": 5, "per_day": 600, "periods": (0.5, 1, 3, 12, 48), "advance": 6},
    "messy": {"seeds": (5151, 1, 2), "days": 3, "per_day": 1200, "periods": (0.5, 1, 3, 6, 12, 48), "advance": 3},
    "query-heavy": {"seeds": (2323, 1, 2), "days": 3, "per_day": 800, "periods": (0.5, 1, 3, 6, 12, 48), "advance": 3},
}


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(p) for p in text.split(","))


def report(shape: str, settings: dict[str, Any], live: bool, workdir: Path) -> None:
    """Run the comparison of one shape and print its per-column figures."""
    started = time.perf_counter()
    figures = inflight.run(
        [int(s) for s in settings["seeds"]],
        workdir,
        settings["days"],
        settings["per_day"],
        shape=shape,
        live=live,
        periods=tuple(settings["periods"]),
        advance=int(settings["advance"] * 86400),
    )
    mode = "live" if live else "frozen"
    print(
        f"shape {shape} ({mode}), seeds {','.join(str(s) for s in settings['seeds'])}, {settings['days']:g} day(s) at "
        f"{settings['per_day']:g} operations/day, windows {', '.join(f'{p:g} h' for p in settings['periods'])}, "
        f"advanced {settings['advance']:g} days"
    )
    print(figures.summary())
    print(f"{'column':<20} {'rows':>5} {'contain':>8} {'MAE est':>9} {'MAE done':>9}")
    for name, c in figures.columns().items():
        print(f"{name:<20} {c['rows']:>5} {c['containment']:>8.1%} {c['mae']:>9.4f} {c['mae_finished_only']:>9.4f}")
    print(f"{'median':<20} {'rows':>5} {'shown':>6} {'NULL':>5} {'within20':>9} {'outside2x':>10}")
    for stage, m in figures.median_columns().items():
        print(
            f"{stage:<20} {m['rows']:>5} {m['shown']:>6} {m['rows'] - m['shown']:>5} {m['within_20']:>9.1%} "
            f"{m['outside_2x']:>10}"
        )
    for miss in figures.misses():
        print("  miss:", miss)
    print(f"({time.perf_counter() - started:.0f} s)")
    print()


def main(argv: list[str] | None = None) -> int:
    """Run the comparison over the shapes and print the per-column figures of each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default=",".join(PRESETS), help="shapes, comma-separated (default: every preset)")
    parser.add_argument("--seeds", help="seeds, comma-separated (default: the shape's preset)")
    parser.add_argument("--days", type=float, help="days of seeded history")
    parser.add_argument("--per-day", type=float, help="operations per day")
    parser.add_argument("--periods", help="window lengths in hours, comma-separated")
    parser.add_argument("--advance-days", type=float, help="how far the clock moves after the reading")
    parser.add_argument("--frozen", action="store_true", help="freeze the workload (the old, kinder check)")
    args = parser.parse_args(argv)
    overrides: dict[str, Any] = {
        "seeds": args.seeds and tuple(int(s) for s in args.seeds.split(",")),
        "days": args.days,
        "per_day": args.per_day,
        "periods": args.periods and _floats(args.periods),
        "advance": args.advance_days,
    }
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shape.split(","):
            settings = PRESETS.get(shape, PRESETS["default"]) | {k: v for k, v in overrides.items() if v is not None}
            report(shape, settings, not args.frozen, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
