"""Requests per sync run: full against incremental, for 1, 30 and 300 channels.

The sandbox's ``many-channels`` shape (300 channels) on a frozen clock, served in-process on 127.0.0.1. For each
channel count (the first N channels of the organisation, ``--channel``; 300 = every channel) a new warehouse gets:

1. a full sync;
2. an incremental sync with nothing new;
3. an incremental sync after one new query (one ``query.status`` event) in the first channel;
4. an incremental sync after one new query in each of three channels and a clock step of ``--step`` seconds (work in
   flight moves on: what changed is then more than the new queries);
5. an incremental sync whose safety net is due (the channels' last one made ``SAFETY_NET_EVERY`` older in the
   warehouse file): the lists of every channel, as a run paid them on every run before.

Each line gives the requests of the run and what they were (by endpoint), so the cost per channel can be read off.
Requests are counted by a recording transport under the toolkit's own client; the clock never moves on its own.

Figures of 2026-11-27 before the incremental run used the event log (seed 11, 1.5 days x 400 operations/day; the
watcher list is two walks since the 0.8 fix, the listing and ``status=archived``):

    channels  full   nothing new   one new event   3 new queries, +600 s
           1    26        15            15               15
          30   187       218           218              218
         300 1,537     2,108         2,108            2,108     (7.0 requests per channel per incremental run)

After (the event log says what changed; the lists are the safety net, every 6 hours per channel):

    channels  full   nothing new   one new event   3 new queries, +600 s   safety net due
           1    26         9            10               10                    15
          30   187        38            39               41                   218
         300 1,537       308           309              311                 2,108

Usage: python -m benchmarks.sync_cost_bench [--channels 1,30,300] [--days 1.5] [--per-day 400] [--step 600]
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter
from datetime import datetime
from pathlib import Path

import httpx

from benchmarks.support.bodies import query_body
from toolkit.api import Client
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.loader.safety_net import SAFETY_NET_EVERY
from toolkit.sandbox import Sandbox
from toolkit.warehouse import Warehouse

KEY = "bench-cost-key"
START = 1_790_000_000 // 60 * 60
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Counting(httpx.HTTPTransport):
    """A real HTTP transport that counts requests by endpoint (ids replaced by ``{}``)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_endpoint: Counter[str] = Counter()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Count, then send."""
        path = _UUID.sub("{}", request.url.path.removeprefix("/v1"))
        self.by_endpoint[f"{request.method} {path}"] += 1
        return super().handle_request(request)


def run(base_url: str, path: Path, channels: list[str] | None) -> tuple[int, Counter[str], str]:
    """One sync; its requests (as the run counts them), by endpoint, and its outcome with its wall seconds (the
    sandbox serves from this process: seconds are indicative only)."""
    transport = Counting()
    with Client(base_url, KEY, transport=transport) as client:
        settings = Settings.load(base_url=base_url, api_key=KEY, warehouse=str(path), environ={})
        result = sync(settings, client=client, channels=channels, quiet=True, workers=1)
    return result.requests, transport.by_endpoint, f"{result.outcome} {result.seconds:.1f}s"


def _short(by_endpoint: Counter[str]) -> str:
    return ", ".join(f"{n} {e}" for e, n in by_endpoint.most_common())


def age_safety_net(path: Path) -> None:
    """Make every channel's last safety net ``SAFETY_NET_EVERY`` older (as if that much time had passed)."""
    with Warehouse(str(path)) as wh:
        sql = "SELECT stream, cursor->>'at' FROM sync_state WHERE stream LIKE 'safety_net:%'"
        rows = wh.con.execute(sql).fetchall()
        with wh.transaction():
            for stream, at in rows:
                wh.set_cursor(stream, {"at": (datetime.fromisoformat(at) - SAFETY_NET_EVERY).isoformat()})


Runs = list[tuple[str, int, Counter[str], str]]


def bench(n_channels: int, days: float, per_day: float, step: int, seed: int) -> Runs:
    """The four runs for the first ``n_channels`` channels of a new many-channels sandbox."""
    sb = Sandbox(orgs=(KEY,), seed=seed, days=days, operations_per_day=per_day, start=START, shape="many-channels")
    out: Runs = []
    with sb.serve() as server, tempfile.TemporaryDirectory() as tmp, Client(server.base_url, KEY) as api:
        every = [c["channel_id"] for c in api.iter_channels()]
        chosen = every[:n_channels]
        only = None if n_channels >= len(every) else chosen
        wh = Path(tmp) / "cost.duckdb"
        chain = next(w["chain_selector"] for w in api.iter_wallets() if w["status"] == "deployed")
        requests, by, outcome = run(server.base_url, wh, only)
        out.append(("full", requests, by, outcome))
        requests, by, outcome = run(server.base_url, wh, only)
        out.append(("nothing new", requests, by, outcome))
        api.create_query(chosen[0], query_body("cost-one", chain, 1))
        requests, by, outcome = run(server.base_url, wh, only)
        out.append(("one new event", requests, by, outcome))
        for i, cid in enumerate(chosen[:3]):
            api.create_query(cid, query_body(f"cost-few-{i}", chain, 2 + i))
        sb.advance(step)
        requests, by, outcome = run(server.base_url, wh, only)
        out.append((f"3 new queries, clock +{step}s", requests, by, outcome))
        age_safety_net(wh)
        requests, by, outcome = run(server.base_url, wh, only)
        out.append(("safety net due", requests, by, outcome))
    return out


def main() -> None:
    """Print requests per run for each channel count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", default="1,30,300", help="channel counts, comma-separated")
    parser.add_argument("--days", type=float, default=1.5, help="days of seeded history")
    parser.add_argument("--per-day", type=float, default=400, help="operations per day of the seeded history")
    parser.add_argument("--step", type=int, default=600, help="clock step before the last run, seconds")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--detail", action="store_true", help="also print the requests by endpoint")
    args = parser.parse_args()
    print(f"many-channels, {args.days} days x {args.per_day:g} operations/day, frozen clock, one worker")
    print(f"{'channels':>8}  {'run':<28} {'requests':>8} {'per channel':>11}  outcome, seconds")
    for n in (int(x) for x in args.channels.split(",")):
        for label, requests, by, outcome in bench(n, args.days, args.per_day, args.step, args.seed):
            print(f"{n:>8}  {label:<28} {requests:>8,} {requests / n:>11.1f}  {outcome}")
            if args.detail:
                print(f"{'':>10}{_short(by)}")


if __name__ == "__main__":
    main()
