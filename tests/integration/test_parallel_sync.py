"""A sync with several workers, through the latency proxy (real HTTP, a delay on every request, requests in flight
counted): the warehouse it builds equals a sync one request at a time, table for table and cursor for cursor, on
the sandbox's default, one-channel and messy shapes; never more than ``workers`` requests are in flight; a run killed
mid-way resumes to the same result; a storm of 429s still ends exact."""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from benchmarks.support.latency_proxy import LatencyProxy
from tests.conftest import TEST_KEY
from tests.support import kill
from tests.support.service import InProcess
from tests.support.snapshot import TABLES, snapshot
from toolkit.api import Client
from toolkit.api import client as client_module
from toolkit.api.concurrency import RequestPool
from toolkit.api.retry import RetryPolicy
from toolkit.errors import RateLimitError
from toolkit.loader import SyncResult, sync
from toolkit.sandbox.faults import FaultInjector
from toolkit.warehouse import Warehouse

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("CHAINOPS_TEST_SEED", "20261122"))
START = 1_795_000_000  # the same simulated "now" for every sandbox, so their histories are identical
PATIENT = RetryPolicy(attempts=30, initial=0.01, maximum=0.2, floor=0.01, deadline=120)
WORKERS = 4
#: Scenario sizes: one-channel makes several event pages per channel (what the walks read ahead over).
SHAPES = {"default": 300, "one-channel": 600, "messy": 300}


def sandbox(shape: str = "default", per_day: float = 300, **faults):
    from toolkit.sandbox import Sandbox

    return Sandbox(
        orgs=(TEST_KEY,), seed=SEED % 1000, days=1, operations_per_day=per_day, start=START, shape=shape, **faults
    )


def bookkeeping(path) -> dict[str, list[tuple]]:
    """The streams' cursors, the refetch queue and the gaps: what the next run starts from must be the same too (the
    models' watermark and the safety nets' times, wall-clock times, are left out; which channels were netted is
    kept)."""
    with Warehouse(path, read_only=True) as wh:
        netted = "CASE WHEN stream LIKE 'safety_net:%' THEN 'netted' ELSE cursor::VARCHAR END"
        return {
            "sync_state": sorted(
                wh.con.execute(f"SELECT stream, {netted} FROM sync_state WHERE stream LIKE '%:%'").fetchall()
            ),
            "sync_refetch": sorted(wh.con.execute("SELECT * FROM sync_refetch").fetchall(), key=repr),
            "gaps": wh.con.execute("SELECT gaps::VARCHAR FROM sync_runs").fetchall(),
        }


def assert_same(got_path, want_path, what: str) -> None:
    got, want = snapshot(got_path), snapshot(want_path)
    for table in TABLES:
        assert got[table] == want[table], f"seed {SEED}: {table} differs ({what})"
    assert bookkeeping(got_path) == bookkeeping(want_path), f"seed {SEED}: cursors or queue differ ({what})"


@dataclass(frozen=True)
class Serial:
    """A shape's sandbox and its sync one request at a time: the reference the parallel runs are compared with."""

    sandbox: object
    path: Path
    result: SyncResult
    requests: int  # what the client sent


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Serial]:
    """The serial reference of a shape, built once per module: it is read, never written, by the tests that compare
    with it. It is answered in process (no socket, no faults): the network is the parallel run's subject, not its."""
    done: dict[str, Serial] = {}

    def of(shape: str) -> Serial:
        if shape not in done:
            box = sandbox(shape, SHAPES[shape])
            path = tmp_path_factory.mktemp(f"serial-{shape}") / "serial.duckdb"
            with InProcess(box).client() as client:
                result = sync(client=client, warehouse=str(path), quiet=True, workers=1)
                done[shape] = Serial(box, path, result, client.requests)
        return done[shape]

    return of


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_parallel_sync_equals_a_serial_one_and_keeps_within_workers(shape, serial, tmp_path) -> None:
    ref = serial(shape)
    one = ref.result
    with (
        ref.sandbox.serve(host="127.0.0.1", port=0) as server,
        LatencyProxy(server.base_url, 0.01) as proxy,
        Client(proxy.base_url, TEST_KEY) as client,
    ):
        parallel = tmp_path / "parallel.duckdb"
        four = sync(client=client, warehouse=str(parallel), quiet=True, workers=WORKERS)
        assert proxy.max_in_flight <= WORKERS, f"{proxy.max_in_flight} requests in flight"
        assert proxy.max_in_flight > 1, "the requests never overlapped"
        assert proxy.requests == four.requests
    assert four.outcome == one.outcome, four.summary()
    assert four.rejected == one.rejected
    assert four.gaps == one.gaps
    assert_same(parallel, ref.path, f"{shape}: parallel against serial")


def test_one_channel_log_is_read_ahead_up_to_its_head(serial, tmp_path) -> None:
    """The event walk of a channel sends the pages after the one it waits for (the offsets are contiguous), up to
    the head: it never asks past it, so it costs no request a serial walk does not make (but the head's poll)."""
    ref = serial("one-channel")
    events_serial = ref.requests
    with (
        ref.sandbox.serve(host="127.0.0.1", port=0) as server,
        LatencyProxy(server.base_url, 0.01) as proxy,
        Client(proxy.base_url, TEST_KEY) as client,
    ):
        four = sync(client=client, warehouse=str(tmp_path / "parallel.duckdb"), quiet=True, workers=WORKERS)
        assert proxy.max_in_flight == WORKERS  # one channel alone keeps every worker busy
    # the parallel run adds one newest-first poll per channel and at most WORKERS list pages past each list's end
    assert events_serial <= four.requests <= events_serial + 1 + 2 * WORKERS, (ref.result.requests, four.requests)


def test_a_429_storm_slows_every_worker_and_still_ends_exact(serial, tmp_path) -> None:
    reference = serial("default").path  # the same history: sandbox() is the default shape at its default size
    with (
        sandbox(rate_limit=15.0).serve(host="127.0.0.1", port=0) as server,
        LatencyProxy(server.base_url, 0.005) as proxy,
        Client(proxy.base_url, TEST_KEY, retry=PATIENT) as client,
    ):
        result = sync(client=client, warehouse=str(tmp_path / "storm.duckdb"), quiet=True, workers=WORKERS)
        assert proxy.max_in_flight <= WORKERS
    assert result.outcome == "ok", f"seed {SEED}: {result.summary()}"
    assert result.retries > 0, f"seed {SEED}: no 429 was ever answered"
    assert_same(tmp_path / "storm.duckdb", reference, "under 429s")


class Clock:
    """The client's and the rate limiter's clock in one: it stands still and moves only when a thread of the client
    waits (to the end of that wait), so what is sent when is decided by the requests and the pauses asked for, never
    by how fast the machine runs them. It starts at the real monotonic time, so that a request's deadline (the
    client's clock plus its budget, checked against the real clock while the answer comes) is as far ahead as ever."""

    def __init__(self) -> None:
        self.now = time.monotonic()
        self.waits: list[tuple[str, float, float]] = []  # (thread, at, seconds) for every wait of the client
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        with self._lock:
            self.waits.append((threading.current_thread().name, self.now, seconds))
            self.now = max(self.now, self.now + seconds)


class Sent(httpx.HTTPTransport):
    """Real HTTP that notes the clock's time at which each request leaves, and each answer's status."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock
        self.log: list[tuple[str, float, int | None]] = []  # (event, time, status)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.log.append(("sent", self.clock.now, None))
        response = super().handle_request(request)
        self.log.append(("answered", self.clock.now, response.status_code))
        return response


def test_a_429_pauses_every_worker_together(monkeypatch) -> None:
    """Once a 429 is answered, no worker sends a request before the pause it asks for is over: after a 429 on one
    thread, requests of four other workers all leave at or after its end (nothing is in flight when it comes)."""
    pause = 1.0  # the 429's Retry-After (whole seconds)
    clock = Clock()
    monkeypatch.setattr(client_module, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(client_module, "pause", clock.pause)
    limited = sandbox(rate_limit=2.0, rate_limit_retry_after=pause)  # a bucket of 2, refilled by each pause
    limited.app.faults = FaultInjector(limited.app.faults.config, limited.seed, wall=clock.monotonic)
    transport = Sent(clock)
    with (
        limited.serve(host="127.0.0.1", port=0) as server,
        Client(server.base_url, TEST_KEY, transport=transport, retry=RetryPolicy(attempts=30, deadline=60)) as client,
    ):
        patient, client.retry = client.retry, RetryPolicy(attempts=1)  # this thread takes the 429 and stops
        client.list_networks(), client.list_networks()  # the bucket of 2 is empty now
        with pytest.raises(RateLimitError):
            client.list_networks()
        client.retry = patient
        answered = clock.now
        assert transport.log[-1] == ("answered", answered, 429) and not clock.waits
        pool = RequestPool(WORKERS)
        try:
            pool.map(lambda _: client.list_networks(), range(WORKERS))
        finally:
            pool.close()
    after = transport.log[transport.log.index(("answered", answered, 429)) + 1 :]
    sent = [at for event, at, _ in after if event == "sent"]
    assert len(sent) >= WORKERS
    assert min(sent) >= answered + pause - 1e-9, f"requests sent during the pause: {sent} ({answered} to +{pause})"
    assert clock.waits[0][1:] == (answered, pytest.approx(pause))  # the first worker to send waited the whole pause
    assert all(thread != threading.main_thread().name for thread, _, _ in clock.waits)


def start_sync(base_url: str, path) -> subprocess.Popen:
    return kill.start_sync(base_url, path, ["--workers", str(WORKERS)])


@pytest.mark.kill
def test_sigkill_mid_parallel_sync_then_resume_equals_an_uninterrupted_sync(tmp_path) -> None:
    rng = random.Random(SEED)
    server_sandbox = sandbox("one-channel", 1500)
    with server_sandbox.serve(host="127.0.0.1", port=0) as server:
        reference = tmp_path / "reference.duckdb"  # no socket: the kills are the runs' subject, not this one's
        InProcess(server_sandbox).sync(reference, workers=1)
        with LatencyProxy(server.base_url, 0.02) as proxy:
            path = tmp_path / "killed.duckdb"
            with Client(proxy.base_url, TEST_KEY) as client:  # in this process: only its count of requests is used
                sync(client=client, warehouse=str(tmp_path / "counted.duckdb"), quiet=True, workers=WORKERS)
            requests = proxy.requests  # of an uninterrupted parallel sync
            kills = runs = 0
            while kills < 4 and runs < 12:
                runs += 1
                # at most a quarter of a whole run's requests: a resumed run has about the rest to do
                after = rng.randint(1, requests // 4)
                killed, _ = kill.signal_at_request(proxy, lambda: start_sync(proxy.base_url, path), after)
                kills += killed
            final = start_sync(proxy.base_url, path)
            _, err = final.communicate(timeout=300)
            assert proxy.max_in_flight <= WORKERS
    assert final.returncode == 0, f"seed {SEED}: {err}"
    assert kills >= 2, f"seed {SEED}: only {kills} of {runs} runs were killed mid-way; the scenario is too small"
    got, want = snapshot(path), snapshot(reference)
    for table in TABLES:
        assert got[table] == want[table], f"seed {SEED}: {table} differs after {kills} kills"
