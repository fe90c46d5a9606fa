"""Sync throughput, memory and incremental cost against the sandbox over loopback.

Prints, for one scenario served by `chainops sandbox` in its own process (pinned to core 1):

- the hand-written lower bound: every event page fetched with one keep-alive httpx client and parsed with
  ``json.loads``, nothing else (and, for scale, the same with orjson, the bytes alone, and the issue's simple loader:
  every page saved to a file, then one DuckDB ``read_json``);
- a full `chainops sync` into a new warehouse: events/s, its ratio to the lower bound, peak RSS; the bound is
  measured again right after the sync, and the ratios use the mean of the two (this machine's speed drifts by tens
  of percent within minutes, so a bound measured once can flatter or wrong the sync);
- an incremental sync after 1% of the operations changed: its requests against the full sync's;
- where the CPU went: seconds used by the bound's client, the sync's process and the sandbox, against the 2 x wall
  seconds two cores offer. The sandbox shares the machine, so this shows how far any loader could go here.

Usage: python -m benchmarks.sync_bench [--events 1000000] [--days 10] [--shape one-channel]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson

from benchmarks._server import KEY, PEAK_RSS_MB, cpu_seconds, sandbox_server

EVENTS_PER_OPERATION = 8.6  # what the default scenario produces (operations, queries, watchers, wallets)


SYNC_AND_REPORT = (
    PEAK_RSS_MB
    + """
import json, sys
from toolkit.config import Settings
from toolkit.loader import sync
r = sync(Settings.load(base_url=sys.argv[1], api_key=sys.argv[2], warehouse=sys.argv[3], environ={}), quiet=True)
print(json.dumps({"seconds": r.seconds, "requests": r.requests, "rows": dict(r.rows), "phases": r.phases,
                  "peak_mb": peak_rss_mb()}))
"""
)

READ_JSON_AND_REPORT = (
    PEAK_RSS_MB
    + """
import json, sys
from pathlib import Path
from benchmarks.sync_bench import read_json_loader
n, seconds = read_json_loader(sys.argv[1], Path(sys.argv[2]))
print(json.dumps({"events": n, "seconds": seconds, "peak_mb": peak_rss_mb()}))
"""
)


@contextmanager
def bare_client(base_url: str) -> Iterator[tuple[httpx.Client, list[dict]]]:
    """One keep-alive httpx client and every channel: what the hand-written lower bounds read with."""
    headers = {"Authorization": f"Apikey {KEY}"}
    with httpx.Client(base_url=base_url + "/", headers=headers, timeout=60) as client:
        channels: list[dict] = []
        while True:  # every page: a shape may have hundreds of channels
            page = client.get(
                "channels", params={"status": ["active", "archived"], "limit": 50, "offset": len(channels)}
            ).json()
            channels += page["data"]
            if not page["has_more"] or not page["data"]:
                break
        yield client, channels


def event_pages(client: httpx.Client, channels: list[dict], parse) -> Iterator[tuple[bytes, int]]:
    """Every event page of every channel, in offset order: ``(body, events on it)``. ``parse`` reads the count and
    ``has_more``; ``None`` finds them in the bytes (offsets are contiguous from 0 in the sandbox)."""
    for channel in channels:
        offset = 0
        while True:
            body = client.get(
                f"channels/{channel['channel_id']}/events", params={"limit": 200, "offset": offset}
            ).content
            if parse is None:
                n = body.count(b'"event_id"')
                more = b'"has_more":true' in body[-40:].replace(b" ", b"")
            else:
                page = parse(body)
                n = len(page["events"])
                more = page["has_more"]
            yield body, n
            offset += n
            if not more or n == 0:
                break


def fetch_all_events(base_url: str, parse) -> tuple[int, float]:
    """Every event page of every channel, one keep-alive client, optional parse; returns (events, seconds)."""
    with bare_client(base_url) as (client, channels):
        t0 = time.perf_counter()
        total = sum(n for _, n in event_pages(client, channels, parse))
        return total, time.perf_counter() - t0


def read_json_loader(base_url: str, workdir: Path) -> tuple[int, float]:
    """The issue's "simple fetch-then-DuckDB-read_json loader", for scale: every event page saved to a file, then one
    ``read_json`` over them into a DuckDB table of one JSON value per event; returns (events, seconds)."""
    import duckdb

    pages = workdir / "pages"
    pages.mkdir()
    with bare_client(base_url) as (client, channels):
        t0 = time.perf_counter()
        for i, (body, _) in enumerate(event_pages(client, channels, None)):
            (pages / f"{i:06d}.json").write_bytes(body)
        con = duckdb.connect(str(workdir / "read_json.duckdb"))
        con.execute("SET enable_progress_bar = false")
        con.execute(f"""
            CREATE TABLE events AS SELECT unnest(events) AS event
            FROM read_json('{pages}/*.json', columns = {{events: 'JSON[]', has_more: 'BOOLEAN'}},
                           maximum_object_size = 1000000000)
        """)
        total = con.execute("SELECT count(*) FROM events").fetchone()[0]
        con.close()
        return total, time.perf_counter() - t0


def fetch_all_lists(base_url: str) -> tuple[int, float]:
    """Every page of operations and queries of every channel (the rest of what a full sync reads), one keep-alive
    client, parsed with ``json.loads``; returns (records, seconds)."""
    with bare_client(base_url) as (client, channels):
        t0 = time.perf_counter()
        total = 0
        for channel in channels:
            for resource in ("operations", "queries"):
                offset = 0
                while True:
                    page = json.loads(
                        client.get(
                            f"channels/{channel['channel_id']}/{resource}", params={"limit": 100, "offset": offset}
                        ).content
                    )
                    total += len(page["data"])
                    offset += len(page["data"])
                    if not page["has_more"] or not page["data"]:
                        break
        return total, time.perf_counter() - t0


def run_sync(base_url: str, warehouse: Path) -> dict:
    """Sync in a fresh process; its report, plus ``cpu``: the CPU seconds that process used."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-c", SYNC_AND_REPORT, base_url, KEY, str(warehouse)], env=env, capture_output=True, text=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise SystemExit(f"the sync failed:\n{out.stderr[-3000:]}")
    report = json.loads(out.stdout.strip().splitlines()[-1])
    report["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return report


@contextmanager
def cpu_of(server_pid: int) -> Iterator[dict[str, float]]:
    """CPU seconds this process and the server use while the block runs (filled in at its end)."""
    spent: dict[str, float] = {}
    own, server = time.process_time(), cpu_seconds(server_pid)
    yield spent
    spent["client"] = time.process_time() - own
    spent["server"] = cpu_seconds(server_pid) - server


def change_operations(base_url: str, share: float) -> int:
    """Create ``share`` of the existing operations anew through the API and let them run to the end."""
    from toolkit.api import Client

    with Client(base_url, KEY) as client:
        channels = [c for c in client.iter_channels() if c["status"] == "active"]
        wallets = [w for w in client.iter_wallets() if w["status"] == "deployed"]
        total = sum(1 for c in channels for _ in client.operation_pages(c["channel_id"]))  # pages
        existing = total * 100
        n = max(1, int(existing * share))
        for i in range(n):
            wallet = wallets[i % len(wallets)]
            client.create_operation(
                channels[i % len(channels)]["channel_id"],
                {
                    "chain_selector": wallet["chain_selector"],
                    "address": wallet["address"],
                    "wallet_operation_id": str(10**12 + i),
                    "deadline": 0,
                    "transactions": [{"to": "0x" + "12" * 20, "value": "1", "data": "0x"}],
                    "signature": "0x" + "ab" * 65,
                },
            )
        client._http.post(base_url.rsplit("/v1", 1)[0] + "/sandbox/clock/advance", json={"seconds": 3600})
        return n


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="approximate events in the scenario")
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument(
        "--shape",
        default="default",
        help="the sandbox's scenario shape (one-channel, many-channels, many-transactions, long-lived, "
        "query-heavy); --events is then approximate",
    )
    args = parser.parse_args(argv)
    per_day = max(10, int(args.events / EVENTS_PER_OPERATION / args.days))
    print(
        f"scenario: {args.shape}, {args.days} days x {per_day} operations/day (about {args.events:,} events)",
        flush=True,
    )
    t0 = time.perf_counter()
    with sandbox_server(
        "--days", str(args.days), "--operations-per-day", str(per_day), "--seed", "3", "--shape", args.shape
    ) as (url, pid):
        print(f"sandbox ready in {time.perf_counter() - t0:.1f}s at {url}", flush=True)
        with cpu_of(pid) as bound_cpu:
            n, secs = fetch_all_events(url, json.loads)
        bound = n / secs
        print(f"lower bound (httpx keep-alive + json.loads): {n:,} events in {secs:.2f}s = {bound:,.0f} events/s")
        n2, secs2 = fetch_all_events(url, orjson.loads)
        print(f"  same with orjson.loads:                    {n2 / secs2:,.0f} events/s")
        n3, secs3 = fetch_all_events(url, None)
        print(f"  bytes only:                                {n3 / secs3:,.0f} events/s")
        with cpu_of(pid) as lists_cpu:
            n4, secs4 = fetch_all_lists(url)
        every_page = secs + secs4
        print(f"every page a full sync reads (events, then {n4:,} operations and queries), same way: {every_page:.2f}s")
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run(
                [sys.executable, "-c", READ_JSON_AND_REPORT, url, tmp],
                capture_output=True,
                text=True,
                check=True,
                cwd=Path(__file__).resolve().parent.parent,
            )
            simple = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"  for scale, fetch every event page to a file, then DuckDB read_json: "
            f"{simple['events'] / simple['seconds']:,.0f} events/s, peak RSS {simple['peak_mb']:,.0f} MB"
        )
        with tempfile.TemporaryDirectory() as tmp:
            wh = Path(tmp) / "bench.duckdb"
            with cpu_of(pid) as sync_cpu:
                full = run_sync(url, wh)
            n_after, secs_after = fetch_all_events(url, json.loads)
            bound_after = n_after / secs_after
            print(
                f"lower bound again, right after the sync: {bound_after:,.0f} events/s; "
                f"the ratios below use the mean, {(bound + bound_after) / 2:,.0f} events/s"
            )
            bound = (bound + bound_after) / 2
            events = full["rows"].get("events", 0)
            rate = events / full["seconds"]
            print(
                f"full sync: {events:,} events ({sum(full['rows'].values()):,} rows) in {full['seconds']:.2f}s "
                f"= {rate:,.0f} events/s = {rate / bound:.0%} of the lower bound; "
                f"{full['requests']:,} requests; peak RSS {full['peak_mb']:.0f} MB"
            )
            print(f"  phases (s): {full['phases']}")
            print(
                f"  events phase alone: {events / full['phases']['events']:,.0f} events/s = "
                f"{events / full['phases']['events'] / bound:.0%} of the lower bound"
            )
            print(
                f"  the whole sync against fetching and parsing every page it reads: {every_page:.2f}s / "
                f"{full['seconds']:.2f}s = {every_page / full['seconds']:.0%}"
            )
            cores = os.cpu_count() or 1
            print(f"CPU seconds (this machine has {cores} cores):")
            print(
                f"  lower bound, events: client {bound_cpu['client']:.1f} + sandbox {bound_cpu['server']:.1f} "
                f"in {secs:.1f}s of wall; operations and queries: client {lists_cpu['client']:.1f} + sandbox "
                f"{lists_cpu['server']:.1f} in {secs4:.1f}s"
            )
            used = full["cpu"] + sync_cpu["server"]
            print(
                f"  full sync: its process {full['cpu']:.1f} + sandbox {sync_cpu['server']:.1f} = {used:.1f} in "
                f"{full['seconds']:.1f}s of wall = {used / full['seconds']:.2f} of {cores} cores busy; at "
                f"{cores} cores fully busy that much work would take {used / cores:.1f}s"
            )
            changed = change_operations(url, 0.01)
            inc = run_sync(url, wh)
            print(
                f"incremental after {changed:,} new operations (1%) ran to completion: {inc['requests']:,} requests "
                f"= {inc['requests'] / full['requests']:.1%} of the full sync's; {inc['seconds']:.2f}s; "
                f"rows {inc['rows']}"
            )


if __name__ == "__main__":
    main()
