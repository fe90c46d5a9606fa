"""A sync killed with SIGKILL cannot record its end: its ``sync_runs`` row says ``running``. The next run, holding
the sync lock (so no other sync runs), marks such rows ``killed`` with a message, and records itself as usual."""

from __future__ import annotations

import duckdb
import pytest

from benchmarks.support.latency_proxy import LatencyProxy
from tests.conftest import TEST_KEY
from tests.support.kill import signal_at_request, start_sync
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.loader.audit import KILLED_MESSAGE


@pytest.fixture(scope="module")
def server():
    from toolkit.sandbox import Sandbox

    sandbox = Sandbox(orgs=(TEST_KEY,), seed=11, days=1, operations_per_day=300)
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


def runs(path) -> list[tuple[str, str, str | None]]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("SELECT run_id, outcome, message FROM sync_runs ORDER BY started_at").fetchall()


def kill_mid_run(base_url: str, path) -> str:
    """SIGKILL a ``chainops sync`` subprocess once it has recorded its start (it waits for the answer to its third
    request); returns its run id."""
    with LatencyProxy(base_url, 0.0) as proxy:
        killed, _ = signal_at_request(proxy, lambda: start_sync(proxy.base_url, path), 2)
    assert killed, "the sync ended within two requests"
    running = [run_id for run_id, outcome, _ in runs(path) if outcome == "running"]
    assert len(running) == 1, runs(path)
    return running[0]


@pytest.mark.kill
def test_a_killed_run_is_marked_killed_by_the_next_run(server, tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    killed = kill_mid_run(server.base_url, path)
    assert [o for r, o, _ in runs(path) if r == killed] == ["running"]  # the killed run could not say otherwise

    result = sync(Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={}), quiet=True)
    assert result.outcome == "ok", result.summary()
    rows = {run_id: (outcome, message) for run_id, outcome, message in runs(path)}
    assert rows[killed] == ("killed", KILLED_MESSAGE)
    assert rows[result.run_id] == ("ok", None)
    assert [o for o, _ in rows.values()].count("running") == 0


def test_finished_runs_keep_their_outcome(server, tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={})
    first = sync(settings, quiet=True)
    second = sync(settings, quiet=True)
    outcomes = {run_id: outcome for run_id, outcome, _ in runs(path)}
    assert outcomes == {first.run_id: "ok", second.run_id: "ok"}
