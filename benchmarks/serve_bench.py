"""Serving speed of the sandbox: event-search pages of 200 events per second from a history of ~1,000,000 events.

The server runs alone on core 1 (``python -m toolkit sandbox --port 0 --org K --speed 0 --days D
--operations-per-day N``, started by :func:`benchmarks._server.sandbox_process`). The load generator is another
process pinned to core 0: several threads, each with its own keep-alive ``http.client`` connection to 127.0.0.1,
fetch ``GET /channels/{id}/events/search?limit=200&offset=X`` for full pages at random message offsets spread
evenly over the whole history, for a fixed time after a warm-up. The bodies are read in full and not parsed (the
server is what is measured). Prints pages/s, events/s, MB/s and the average event size (all events, and those
carrying a DON proof, from a parsed sample of pages), and how busy each process was during the measured window
(CPU seconds from /proc: a server near 100% is the bottleneck; a load generator near 100% means the figure is a
lower bound of what the server can do).

Usage: python -m benchmarks.serve_bench [--events 1000000] [--days 10] [--connections 6] [--seconds 10]
                                       [--type operation.status]...   (also measure pages filtered by type)
"""

from __future__ import annotations

import argparse
import bisect
import http.client
import json
import multiprocessing
import os
import random
import threading
import time
from urllib.parse import urlsplit

from benchmarks._server import KEY, sandbox_process

#: events one operation brings into the default scenario (operations, queries, watchers and wallets together)
EVENTS_PER_OPERATION = 7.4
PAGE = 200
SERVER_CORE, LOAD_CORE = 1, 0


class Plan:
    """Where full pages start: channel ids and, for each, how many start offsets give a page of ``PAGE`` events."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self.channels = [cid for cid, n in sizes.items() if n >= PAGE]
        self.cumulative: list[int] = []
        total = 0
        for cid in self.channels:
            total += sizes[cid] - PAGE + 1
            self.cumulative.append(total)
        self.total = total

    def pick(self, rng: random.Random) -> tuple[str, int]:
        """A (channel, offset) whose search page is full, uniform over every event of the history."""
        x = rng.randrange(self.total)
        i = bisect.bisect_right(self.cumulative, x)
        return self.channels[i], x - (self.cumulative[i - 1] if i else 0)


def _connect(base_url: str) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(base_url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("the benchmark talks to a loopback address only")
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=60), parts.path.rstrip("/")


def _get(conn: http.client.HTTPConnection, path: str) -> bytes:
    conn.request("GET", path, headers={"Authorization": f"Apikey {KEY}"})
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"GET {path} answered {response.status}: {body[:200]!r}")
    return body


def channel_sizes(base_url: str) -> dict[str, int]:
    """Events per channel (newest ``headers.offset`` + 1), archived channels included."""
    conn, root = _connect(base_url)
    channels = json.loads(_get(conn, f"{root}/channels?status=active&status=archived&limit=50"))["data"]
    sizes = {}
    for channel in channels:
        newest = json.loads(_get(conn, f"{root}/channels/{channel['channel_id']}/events?limit=1"))["events"]
        sizes[channel["channel_id"]] = newest[0]["headers"]["offset"] + 1 if newest else 0
    conn.close()
    return sizes


def event_sizes(base_url: str, plan: Plan, pages: int = 60) -> tuple[float, float, float]:
    """Parse a random sample of pages: (average event bytes, average bytes of events with a proof, share with one)."""
    conn, root = _connect(base_url)
    rng = random.Random(1)
    sizes, proven = [], []
    for _ in range(pages):
        cid, offset = plan.pick(rng)
        events = json.loads(_get(conn, f"{root}/channels/{cid}/events/search?limit={PAGE}&offset={offset}"))["events"]
        if [e["headers"]["offset"] for e in events] != list(range(offset, offset + PAGE)):
            raise RuntimeError("a search page is not the 200 events from its offset")
        for event in events:
            size = len(json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode())
            sizes.append(size)
            if event["headers"]["proofs"]:
                proven.append(size)
    conn.close()
    return sum(sizes) / len(sizes), sum(proven) / max(len(proven), 1), len(proven) / len(sizes)


def _fetch_loop(base_url: str, plan: Plan, query: str, seed: int, start_at: float, stop_at: float, out: list) -> None:
    conn, root = _connect(base_url)
    rng = random.Random(seed)
    pages = events = received = 0
    while True:
        began = time.perf_counter()
        if began >= stop_at:
            break
        cid, offset = plan.pick(rng)
        body = _get(conn, f"{root}/channels/{cid}/events/search?limit={PAGE}&offset={offset}{query}")
        if began >= start_at:
            pages += 1
            events += body.count(b'"event_id"')  # one per event; counted in C, the body is not parsed
            received += len(body)
    conn.close()
    out.append((pages, events, received))


def _generate(
    base_url: str,
    plan: Plan,
    query: str,
    connections: int,
    start_at: float,
    stop_at: float,
    results: multiprocessing.Queue,
) -> None:
    """The load generator (its own process, pinned to ``LOAD_CORE``): ``connections`` threads, one connection each,
    counting what they fetch between ``start_at`` and ``stop_at`` (``time.perf_counter``, system-wide monotonic)."""
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > LOAD_CORE:
        os.sched_setaffinity(0, {LOAD_CORE})
    out: list[tuple[int, int, int]] = []
    threads = [
        threading.Thread(target=_fetch_loop, args=(base_url, plan, query, i, start_at, stop_at, out))
        for i in range(connections)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.put((*(sum(column) for column in zip(*out, strict=True)), len(out)))


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_pid() -> int | None:
    """The pid of the sandbox server this process started (a child running ``toolkit sandbox``), or None."""
    me = str(os.getpid())
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
        except OSError:
            continue
        if ppid == me and b"sandbox" in cmdline and b"toolkit" in cmdline:
            return int(entry)
    return None


def measure(
    base_url: str, plan: Plan, query: str, connections: int, warmup: float, seconds: float
) -> tuple[int, int, int, float | None, float | None]:
    """Run the load generator in another process. Answers (pages, events, bytes) fetched in the measured window,
    and the share of it the server and the load generator spent on a CPU (None where /proc is unavailable)."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    start_at = time.perf_counter() + warmup
    stop_at = start_at + seconds
    proc = ctx.Process(target=_generate, args=(base_url, plan, query, connections, start_at, stop_at, results))
    proc.start()
    server = _server_pid()
    time.sleep(max(0.0, start_at - time.perf_counter()))
    before = (_cpu_seconds(server) if server else None, _cpu_seconds(proc.pid or 0))
    time.sleep(max(0.0, stop_at - time.perf_counter()))
    after = (_cpu_seconds(server) if server else None, _cpu_seconds(proc.pid or 0))
    try:
        pages, events, received, finished = results.get(timeout=120)
    finally:
        proc.join(timeout=30)
    if finished != connections:
        raise RuntimeError(f"only {finished} of {connections} connections finished")
    busy = [None if a is None or b is None else (a - b) / seconds for a, b in zip(after, before, strict=True)]
    return pages, events, received, busy[0], busy[1]


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="approximate events in the history")
    parser.add_argument("--days", type=int, default=10, help="days of history")
    parser.add_argument("--connections", type=int, default=6, help="keep-alive connections of the load generator")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before measuring")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument(
        "--type",
        action="append",
        default=[],
        metavar="EVENT_TYPE",
        help="also measure search pages filtered by this event type (repeatable)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.connections <= 64 or not 0 < args.seconds <= 120:
        parser.error("connections must be 1-64 and seconds at most 120")
    per_day = max(10, round(args.events / EVENTS_PER_OPERATION / args.days))
    print(
        f"scenario: {args.days} days x {per_day} operations/day (about {args.events:,} events), seed {args.seed}",
        flush=True,
    )
    t0 = time.perf_counter()
    with sandbox_process(
        "--days", str(args.days), "--operations-per-day", str(per_day), "--seed", str(args.seed), core=SERVER_CORE
    ) as url:
        print(
            f"sandbox ready in {time.perf_counter() - t0:.1f}s at {url} (server pinned to core {SERVER_CORE}, "
            f"load generator to core {LOAD_CORE})",
            flush=True,
        )
        sizes = channel_sizes(url)
        plan = Plan(sizes)
        total = sum(sizes.values())
        print(f"history: {total:,} events in {len(sizes)} channels", flush=True)
        average, with_proof, share = event_sizes(url, plan)
        print(
            f"event size (parsed sample): {average:,.0f} B on average; {with_proof:,.0f} B with a proof "
            f"({share:.0%} of events carry one)",
            flush=True,
        )
        runs = [("", "unfiltered")] + [(f"&type={t}", f"type={t}") for t in args.type]
        for query, label in runs:
            pages, events, received, server_busy, load_busy = measure(
                url, plan, query, args.connections, args.warmup, args.seconds
            )
            rate = pages / args.seconds
            print(
                f"search pages of {PAGE} at random offsets ({label}), {args.connections} keep-alive connections, "
                f"{args.seconds:.0f}s: {pages:,} pages, {events:,} events"
            )
            print(
                f"  {rate:,.0f} pages/s = {events / args.seconds:,.0f} events/s = "
                f"{received / args.seconds / 1e6:,.1f} MB/s ({received / max(events, 1):,.0f} B per event on the "
                f"wire)",
                flush=True,
            )
            if server_busy is not None and load_busy is not None:
                print(
                    f"  CPU busy in the window: server {server_busy:.0%} of its core, load generator {load_busy:.0%}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
