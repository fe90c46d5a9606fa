"""In-flight estimates against final values over more seeds (issue 13, section 1): prints the closing-note figures.

Usage: ``.venv/bin/python -m benchmarks.inflight_check [--seeds 8] [--days 1] [--per-day 3600]`` from the
repository root. The comparison itself is :mod:`benchmarks.support.inflight` (the same one the test runs over three
seeds).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.support import inflight


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print coverage, MAE of estimate vs finished-only, and the median-within-20% share."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8, help="how many seeds (1..N)")
    parser.add_argument("--days", type=float, default=1, help="days of seeded history")
    parser.add_argument("--per-day", type=float, default=3600, help="operations per day")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        figures = inflight.run(list(range(1, args.seeds + 1)), Path(tmp), args.days, args.per_day)
    print(f"seeds 1..{args.seeds}, {args.days} day(s) at {args.per_day:g} operations/day, periods 1 h and 3 h")
    print(figures.summary())
    for miss in figures.misses():
        print("  miss:", miss)
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
