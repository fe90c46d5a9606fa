"""Kill `chainops sync` with SIGKILL at random points; every restart resumes, and the end equals an uninterrupted
sync row for row."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import TEST_KEY
from tests.integration.test_incremental import TABLES, snapshot
from toolkit.config import Settings
from toolkit.loader import sync

pytestmark = pytest.mark.kill

SEED = int(os.environ.get("CHAINOPS_TEST_SEED", "20261122"))


@pytest.fixture(scope="module")
def big_server():
    from toolkit.sandbox import Sandbox

    sandbox = Sandbox(orgs=(TEST_KEY,), seed=5, days=3, operations_per_day=2500)
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


def start_sync(base_url: str, path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    env |= {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": base_url, "CHAINOPS_WAREHOUSE": str(path)}
    return subprocess.Popen(
        [sys.executable, "-m", "toolkit", "sync", "--quiet"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_sync(big_server, tmp_path) -> None:
    rng = random.Random(SEED)
    reference = tmp_path / "reference.duckdb"
    t0 = time.monotonic()
    sync(Settings.load(base_url=big_server.base_url, api_key=TEST_KEY, warehouse=reference, environ={}), quiet=True)
    uninterrupted = time.monotonic() - t0

    path = tmp_path / "killed.duckdb"
    kills = runs = 0
    while kills < 5 and runs < 15:
        runs += 1
        proc = start_sync(big_server.base_url, path)
        # ~0.9 s go to starting Python; then each run gets a random slice of the work before it dies
        time.sleep(0.9 + rng.uniform(0.0, uninterrupted / 3))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
    final = start_sync(big_server.base_url, path)
    _, err = final.communicate(timeout=300)
    assert final.returncode == 0, f"seed {SEED}: {err}"
    assert kills >= 3, f"seed {SEED}: only {kills} of {runs} runs were killed mid-way; the scenario is too small"
    got, want = snapshot(path), snapshot(reference)
    for table in TABLES:
        assert got[table] == want[table], f"seed {SEED}: {table} differs after {kills} kills"
