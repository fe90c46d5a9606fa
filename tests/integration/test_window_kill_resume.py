"""Kill `chainops sync --since ... [--event-type ...]` with SIGKILL at random points while it reads an event window;
every restart resumes, and the end equals an uninterrupted windowed sync row for row."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from tests.conftest import TEST_KEY
from tests.integration.test_incremental import TABLES, snapshot
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.warehouse import Warehouse

pytestmark = pytest.mark.kill

SEED = int(os.environ.get("CHAINOPS_TEST_SEED", "20261123"))


@pytest.fixture(scope="module")
def big():
    from toolkit.sandbox import Sandbox

    sandbox = Sandbox(orgs=(TEST_KEY,), seed=6, days=3, operations_per_day=2000)
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        truth = sandbox.truth(TEST_KEY)
        times = sorted(t for c in truth.channels for *_, t in truth.event_index(c["channel_id"]))
        yield running, times[len(times) // 3]


def start_sync(base_url: str, path, flags: list[str]) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    env |= {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": base_url, "CHAINOPS_WAREHOUSE": str(path)}
    return subprocess.Popen(
        [sys.executable, "-m", "toolkit", "sync", "--quiet", *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


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
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=reference, environ={})
    t0 = time.monotonic()
    sync(settings, quiet=True, since=since, event_types=types or None)
    uninterrupted = time.monotonic() - t0

    path = tmp_path / "killed.duckdb"
    kills = runs = mid_window = 0
    while kills < 4 and runs < 12:
        runs += 1
        proc = start_sync(server.base_url, path, flags)
        time.sleep(0.9 + rng.uniform(0.0, uninterrupted / 2))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
        if path.exists() and any(w["walks"] for w in windows(path).values() if w["walks"] is not None):
            mid_window += 1  # killed while walking the window (not before it, nor after)
    final = start_sync(server.base_url, path, [])  # resumed without flags: the saved window says what to finish
    _, err = final.communicate(timeout=300)
    assert final.returncode == 0, f"seed {SEED}: {err}"
    assert kills >= 2, f"seed {SEED}: only {kills} of {runs} runs were killed mid-way; the scenario is too small"
    assert mid_window >= 1, f"seed {SEED}: no kill fell inside the window's walks"
    got, want = snapshot(path), snapshot(reference)
    for table in TABLES:
        assert got[table] == want[table], f"seed {SEED}: {table} differs after {kills} kills"
    assert windows(path) == windows(reference)
