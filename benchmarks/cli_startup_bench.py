"""How fast the `chainops` command line answers when it has nothing to compute, and what its imports cost.

For each command (``--help``, ``--version``, ``metrics --help``, a mistyped command) it runs a fresh
``python -m toolkit ...`` ``--runs`` times and prints the median and best wall seconds and the CPU seconds of the
child (user + system; on a loaded, shared machine the wall time includes waiting for a core, the CPU time does not).
Then ``python -X importtime`` of ``import toolkit.cli`` (what every command pays) beside ``import toolkit.metrics``
(what a metric command adds: pandas, DuckDB, Arrow), in milliseconds, with the heavy libraries loaded by each.

Usage: python -m benchmarks.cli_startup_bench [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

COMMANDS = ([], ["--help"], ["--version"], ["metrics", "--help"], ["syn"])
HEAVY = ("pandas", "duckdb", "pyarrow", "matplotlib", "numpy")


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall and child CPU seconds of one ``python -m toolkit ARGV`` (``python -c pass`` for an empty ``argv``: the
    interpreter's own start, the floor)."""
    command = [sys.executable, "-m", "toolkit", *argv] if argv else [sys.executable, "-c", "pass"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_cost(statement: str) -> tuple[float, list[str]]:
    """Cumulative import milliseconds of ``statement`` (``-X importtime``) and the heavy libraries it loaded."""
    probe = f"import json, sys; {statement}; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", probe], capture_output=True, text=True, check=True)
    total_us = 0
    for line in out.stderr.splitlines():
        parts = line.split("|")
        # top-level imports only (one space before the name): their cumulative time includes their children's
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
            total_us += int(parts[1])
    return total_us / 1000, json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(f"{'command':<28} {'median wall s':>13} {'best wall s':>11} {'median cpu s':>12}")
    for argv in COMMANDS:
        runs = [run_once(argv) for _ in range(args.runs)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        name = "chainops " + " ".join(argv) if argv else "python -c pass (the floor)"
        print(f"{name:<28} {statistics.median(walls):>13.3f} {min(walls):>11.3f} {statistics.median(cpus):>12.3f}")
    for statement in ("import toolkit.cli", "import toolkit", "import toolkit.metrics"):
        ms, loaded = import_cost(statement)
        print(f"{statement:<28} imports {ms:>7.1f} ms   heavy libraries loaded: {', '.join(loaded) or 'none'}")


if __name__ == "__main__":
    main()
