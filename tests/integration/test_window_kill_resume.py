"""Kill `chainops sync --since ... [--event-type ...]` with SIGKILL at random points while it reads an event window;
every restart resumes, and the end equals an uninterrupted windowed sync row for row. A point is a request drawn at
random, every other one among the window's search requests (``tests/support/kill.py``): the same kills on any
machine."""

from __future__ import annotations

import json
import os
import random

import pandas as pd
import pytest

from benchmarks.support.latency_proxy import LatencyProxy
from tests.conftest import TEST_KEY
from tests.support.kill import signal_at_request, start_sync
from tests.support.snapshot import TABLES, snapshot
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.warehouse import Warehouse

pytestmark = pytest.mark.kill

SEED = int(os.environ.get("CHAINOPS_TEST_SEED", "20261123"))
#: What the request line of an event search holds.
SEARCH = "/events/search"


@pytest.fixture(scope="module")
def big():
    from toolkit.sandbox import Sandbox

    # many search pages per channel; the kill points no longer need a long run
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=6, days=2, operations_per_day=800)
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        truth = sandbox.truth(TEST_KEY)
        times = sorted(t for c in truth.channels for *_, t in truth.event_index(c["channel_id"]))
        yield running, times[len(times) // 3]


def windows(path) -> dict[str, dict]:
    """Each channel's held window and how far it has read (the plan's bookkeeping aside)."""
    with Warehouse(path, read_only=True) as wh:
        rows = wh.con.execute("SELECT stream, cursor FROM sync_state WHERE stream LIKE 'events_window%'").fetchall()
    out = {}
    for stream, cursor in rows:
        value = json.loads(cursor)
        out[stream] = {k: value.get(k) for k in ("held", "read_to", "poll_from", "walks", "since", "types")}
    return out


@pytest.mark.parametrize("types", [[], ["operation.status", "query.status"]], ids=["all-types", "two-types"])
def test_sigkill_mid_window_then_resume_equals_an_uninterrupted_sync(big, tmp_path, types) -> None:
    server, since = big
    iso = pd.Timestamp(since, unit="s", tz="UTC").isoformat()
    flags = ["--since", iso, *(f for t in types for f in ("--event-type", t))]
    rng = random.Random(SEED + len(types))
    reference = tmp_path / "reference.duckdb"
    path = tmp_path / "killed.duckdb"
    with LatencyProxy(server.base_url, 0.0) as proxy:
        settings = Settings.load(base_url=proxy.base_url, api_key=TEST_KEY, warehouse=reference, environ={})
        proxy.reset(matching=SEARCH)
        sync(settings, quiet=True, since=since, event_types=types or None)
        requests, searches = proxy.requests, proxy.matched  # of an uninterrupted windowed sync
        assert searches >= 8, f"seed {SEED}: {searches} search pages are too few to kill a walk mid-way"
        kills = runs = mid_window = 0
        while kills < 4 and runs < 12:
            runs += 1
            # at most a quarter of a whole run's requests (a resumed run has at least the rest to do), every other
            # run at one of the window's search requests
            after, matching = (
                (rng.randint(1, requests // 4), "") if runs % 2 else (rng.randint(1, searches // 4), SEARCH)
            )
            killed, _ = signal_at_request(
                proxy, lambda: start_sync(proxy.base_url, path, flags), after, matching=matching
            )
            kills += killed
            if path.exists() and any(w["walks"] for w in windows(path).values() if w["walks"] is not None):
                mid_window += 1  # killed while walking the window (not before it, nor after)
        final = start_sync(proxy.base_url, path, [])  # resumed without flags: the saved window says what to finish
        _, err = final.communicate(timeout=300)
    assert final.returncode == 0, f"seed {SEED}: {err}"
    assert kills >= 2, f"seed {SEED}: only {kills} of {runs} runs were killed mid-way; the scenario is too small"
    assert mid_window >= 1, f"seed {SEED}: no kill fell inside the window's walks"
    got, want = snapshot(path), snapshot(reference)
    for table in TABLES:
        assert got[table] == want[table], f"seed {SEED}: {table} differs after {kills} kills"
    assert windows(path) == windows(reference)
