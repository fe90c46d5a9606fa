"""Kill `chainops sync` with SIGKILL at random points; every restart resumes, and the end equals an uninterrupted
sync row for row. A point is a request, drawn at random (``tests/support/kill.py``): the same kills on any machine."""

from __future__ import annotations

import os
import random

import pytest

from benchmarks.support.latency_proxy import LatencyProxy
from tests.conftest import TEST_KEY
from tests.support.kill import signal_at_request, start_sync
from tests.support.snapshot import TABLES, snapshot
from toolkit.config import Settings
from toolkit.loader import sync

pytestmark = pytest.mark.kill

SEED = int(os.environ.get("CHAINOPS_TEST_SEED", "20261122"))
__all__ = ["start_sync"]  # other modules import it from here


@pytest.fixture(scope="module")
def big_server():
    from toolkit.sandbox import Sandbox

    # large enough for many pages per stream and many commits; the kill points no longer need a long run
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=5, days=2, operations_per_day=800)
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_sync(big_server, tmp_path) -> None:
    rng = random.Random(SEED)
    reference = tmp_path / "reference.duckdb"
    with LatencyProxy(big_server.base_url, 0.0) as proxy:
        settings = Settings.load(base_url=proxy.base_url, api_key=TEST_KEY, warehouse=reference, environ={})
        sync(settings, quiet=True)
        requests = proxy.requests  # of an uninterrupted sync
        path = tmp_path / "killed.duckdb"
        kills = runs = 0
        while kills < 5 and runs < 15:
            runs += 1
            # at most a quarter of a whole run's requests: a resumed run has at least the rest to do, so the first
            # three runs are always killed mid-way
            killed, _ = signal_at_request(
                proxy, lambda: start_sync(proxy.base_url, path), rng.randint(1, requests // 4)
            )
            kills += killed
        final = start_sync(proxy.base_url, path)
        _, err = final.communicate(timeout=300)
    assert final.returncode == 0, f"seed {SEED}: {err}"
    assert kills >= 3, f"seed {SEED}: only {kills} of {runs} runs were killed mid-way ({requests} requests in a run)"
    got, want = snapshot(path), snapshot(reference)
    for table in TABLES:
        assert got[table] == want[table], f"seed {SEED}: {table} differs after {kills} kills"
