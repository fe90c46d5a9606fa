"""How long building a sandbox takes: the default one (three days of seeded history, what ``chainops sandbox`` and
the notebooks start) and the sizes the tests use. Prints seconds for each (the best of ``--repeat`` builds) and exits
1 when the default one takes more than its budget (5 s, which tests/sandbox/test_scenario.py used to assert).

Usage: python -m benchmarks.sandbox_bench [--repeat 3] [--budget 5]
"""

from __future__ import annotations

import argparse
import sys
import time

from toolkit.sandbox import Sandbox

#: (label, Sandbox arguments): the default one first, then the sizes of tests/conftest.py and the kill tests.
SIZES: list[tuple[str, dict[str, object]]] = [
    ("default (3 days x 400)", {}),
    (
        "tests/conftest.py (2 days x 300)",
        {"orgs": ("a", "b"), "not_onboarded": ("c",), "days": 2, "operations_per_day": 300},
    ),
    ("kill tests (2 days x 800)", {"days": 2, "operations_per_day": 800}),
]


def build_seconds(kwargs: dict[str, object], repeat: int) -> float:
    """The best wall time of ``repeat`` builds of ``Sandbox(**kwargs)``."""
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        Sandbox(**kwargs)  # type: ignore[arg-type]
        best = min(best, time.perf_counter() - began)
    return best


def main(argv: list[str] | None = None) -> int:
    """Print the build time of each size; 1 when the default one exceeds ``--budget`` seconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="builds per size; the best one counts")
    parser.add_argument("--budget", type=float, default=5.0, help="seconds the default sandbox may take")
    args = parser.parse_args(argv)
    default = None
    for label, kwargs in SIZES:
        seconds = build_seconds(kwargs, args.repeat)
        default = seconds if default is None else default
        print(f"{seconds:7.2f} s  {label}")
    if default is not None and default > args.budget:
        print(f"the default sandbox took {default:.2f} s, over its budget of {args.budget:g} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
