"""A first sync over a slow link: wall time against the serial floor, and the most requests ever in flight.

The sandbox runs in its own process (pinned to core 1), behind the project's latency proxy
(:mod:`benchmarks.support.latency_proxy`, its own process on the same core) that holds every request ``--delay-ms``
before passing it on, as a wide-area link would, and counts the requests in flight. For each shape (one channel, many
channels) of about ``--events`` events:

- ``pages``: the requests a sync makes one at a time (event pages, list pages, the few single records), counted by a
  serial sync straight against the sandbox;
- ``floor``: pages x delay, what a sync reading one page after another cannot beat;
- ``wall``: a first sync through the proxy with ``--workers``; its ratio to the floor, the requests it made and the
  most the proxy saw in flight (never more than ``--workers``);
- with ``--serial``, the same through the proxy one request at a time, for comparison.

Usage: python -m benchmarks.latency_bench [--events 60000] [--delay-ms 40] [--workers 4] [--serial]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks._server import KEY, cpu_seconds, line_command, line_server, sandbox_server
from toolkit.api import Client
from toolkit.loader import sync

START = "1795000000"
#: Events per operation per day of the sandbox's shapes (measured: 60,000 events at 8,000 operations a day).
EVENTS_PER_OPERATION = 7.5
SHAPES = ("one-channel", "many-channels")


@contextmanager
def latency_proxy(upstream: str, delay_ms: float, core: int | None = 1) -> Iterator[subprocess.Popen[str]]:
    """The latency proxy in its own process; yields it (``.base_url`` set) for :func:`line_command`."""
    with line_server(
        [sys.executable, "-m", "benchmarks.support.latency_proxy", upstream, str(delay_ms)], "latency proxy", core=core
    ) as proc:
        yield proc


def first_sync(base_url: str, path: Path, workers: int) -> tuple[float, int, dict[str, float]]:
    """A first sync into a new warehouse: (wall seconds, requests, phases)."""
    started, cpu = time.perf_counter(), time.process_time()
    with Client(base_url, KEY) as client:
        result = sync(client=client, warehouse=str(path), quiet=True, workers=workers)
    if result.outcome != "ok":
        raise RuntimeError(f"the sync ended {result.outcome}: {result.summary()}")
    result.phases["cpu"] = time.process_time() - cpu
    return time.perf_counter() - started, result.requests, result.phases


def bench_shape(shape: str, args: argparse.Namespace, tmp: Path) -> dict[str, object]:
    """One shape: pages, floor, wall, ratio and the most in flight (see the module docstring)."""
    per_day = max(1, round(args.events / EVENTS_PER_OPERATION))
    sandbox_args = ("--shape", shape, "--days", "1", "--operations-per-day", str(per_day), "--seed", "7")
    with sandbox_server(*sandbox_args, "--start", START) as (url, sandbox_pid):
        direct, pages, direct_phases = first_sync(url, tmp / f"{shape}-direct.duckdb", workers=1)
        with latency_proxy(url, args.delay_ms) as proxy:
            serial: float | None = None
            if args.serial:
                serial, _, _ = first_sync(proxy.base_url, tmp / f"{shape}-serial.duckdb", workers=1)  # type: ignore[attr-defined]
            line_command(proxy, "reset")
            cpu0, proxy_cpu0 = cpu_seconds(sandbox_pid), cpu_seconds(proxy.pid)
            wall, requests, phases = first_sync(proxy.base_url, tmp / f"{shape}.duckdb", workers=args.workers)  # type: ignore[attr-defined]
            stats = json.loads(line_command(proxy, "stats"))
            sandbox_cpu, proxy_cpu = cpu_seconds(sandbox_pid) - cpu0, cpu_seconds(proxy.pid) - proxy_cpu0
    floor = pages * args.delay_ms / 1000
    return {
        "shape": shape,
        "per_day": per_day,
        "pages": pages,
        "floor": floor,
        "wall": wall,
        "ratio": wall / floor,
        "requests": requests,
        "proxied": stats["requests"],
        "max_in_flight": stats["max_in_flight"],
        "serial": serial,
        "phases": phases,
        "cpu": (sandbox_cpu, proxy_cpu),
        "direct": (direct, direct_phases),
    }


def main(argv: list[str] | None = None) -> int:
    """Run every shape and print one block each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=60_000, help="about how many events each shape holds")
    parser.add_argument("--delay-ms", type=float, default=40.0, help="milliseconds the proxy adds to every request")
    parser.add_argument("--workers", type=int, default=4, help="the sync's --workers")
    parser.add_argument("--serial", action="store_true", help="also time a sync one request at a time")
    parser.add_argument("--shape", action="append", choices=SHAPES, help="only these shapes (repeatable)")
    args = parser.parse_args(argv)
    print(f"first sync through a proxy adding {args.delay_ms:g} ms per request, --workers {args.workers}")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shape or SHAPES:
            r = bench_shape(shape, args, Path(tmp))
            print(
                f"{shape} ({r['per_day']} operations/day): {r['pages']} pages, serial floor {r['floor']:.2f} s; "
                f"wall {r['wall']:.2f} s = {r['ratio']:.2f}x the floor; {r['requests']} requests "
                f"({r['proxied']} through the proxy), max {r['max_in_flight']} in flight"
            )
            if r["serial"] is not None:
                print(f"  one request at a time: {r['serial']:.2f} s = {r['serial'] / r['floor']:.2f}x the floor")
            sandbox_cpu, proxy_cpu = r["cpu"]  # type: ignore[misc]
            print(f"  CPU seconds during the sync: sandbox {sandbox_cpu:.2f}, proxy {proxy_cpu:.2f} (both on core 1)")
            phases = r["phases"]
            assert isinstance(phases, dict)
            print("  phases (cpu: the sync process's): " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()))
            direct, direct_phases = r["direct"]  # type: ignore[misc]
            print(
                f"  without the proxy, one request at a time: {direct:.2f} s; phases: "
                + ", ".join(f"{k} {v:.2f}" for k, v in direct_phases.items())
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
