"""Incremental syncs on other shapes and at other times of day, with work started through the API between syncs.

Each case seeds a sandbox (frozen clock), syncs, starts queries and operations through the API, then moves the
clock in uneven steps with a sync after each. The statuses and workflow ids of the warehouse must then equal the
sandbox's own records (its ``Truth``), and every table must equal a fresh full sync of the same state. The cases
differ by shape, seed and the start's time of day: which work is in flight at a sync depends on all three, and the
case that once slipped through (a query answered between two syncs) appeared only at some starts. Windowed cases
(``--since``, ``--event-type``) compare with a fresh sync of the same window: a window without the status events
of operations or queries leaves their moves to the lists alone.

The syncs and the API calls go through the sandbox's in-process transport (``tests/support/service.py``): the subject
is what an incremental sync stores, not how it crosses a network (the same answers, byte for byte, as over HTTP).
"""

from __future__ import annotations

import pytest

from benchmarks.support.bodies import query_body
from tests.conftest import TEST_KEY
from tests.support.service import InProcess
from tests.support.snapshot import TABLES, snapshot
from toolkit.api import Client, Page
from toolkit.sandbox import Sandbox
from toolkit.warehouse import Warehouse

pytestmark = pytest.mark.slow

# shape, seed, start (seconds; the times of day differ), clock steps between syncs
CASES = [
    ("default", 540, 1_790_929_820, [600, 3600]),
    ("messy", 217, 1_792_545_080, [3600]),
    ("many-channels", 855, 1_790_709_140, [21600, 120, 120]),
    ("long-lived", 162, 1_791_806_300, [600, 21600, 3600]),
    ("query-heavy", 815, 1_791_739_220, [30, 3600, 120]),
]


def run_sync(service: InProcess, path, **window) -> None:
    service.sync(path, **window)


def start_work(client: Client, tag: str) -> tuple[list[str], list[str]]:
    """Six queries and up to three signed operations on the first channel; their ids."""
    channel = next(iter(client.iter_channels()))["channel_id"]
    wallets = [w for w in client.iter_wallets() if w["status"] == "deployed"][:3]
    assert wallets, "the scenario deploys wallets"
    chain = wallets[0]["chain_selector"]
    queries = [client.create_query(channel, query_body(f"{tag}-query-{i}", chain, i + 9))["query_id"] for i in range(6)]
    operations = [
        client.create_operation(
            channel,
            {
                "chain_selector": w["chain_selector"],
                "address": w["address"],
                "wallet_operation_id": str(9000 + i),
                "deadline": 0,
                "transactions": [{"to": "0x" + "12" * 20, "value": "1", "data": "0x"}],
                "signature": "0x" + "ab" * 65,
            },
        )
        for i, w in enumerate(wallets)
    ]
    return queries, operations


def held(path, sql: str) -> dict[str, tuple]:
    with Warehouse(path, read_only=True) as wh:
        return {row[0]: tuple(row[1:]) for row in wh.con.execute(sql).fetchall()}


@pytest.mark.parametrize(("shape", "seed", "start", "steps"), CASES, ids=[c[0] for c in CASES])
def test_incremental_syncs_equal_the_service_and_a_fresh_sync(shape, seed, start, steps, tmp_path) -> None:
    check_incremental(shape, seed, start, steps, tmp_path, {})


# event windows: a window shorter than the continuation's overlap, windows without the status events of operations
# (then nothing but the lists can move them), and a window of all types
WINDOWED = [
    ("default", 922, 1_790_657_840, [30, 600], 600, ["operation.status", "query.status"]),
    ("long-lived", 640, 1_790_858_900, [120, 5], 600, ["operation.status"]),
    ("default", 317, 1_791_490_400, [120, 30, 600], 3 * 3600, ["query.status", "watcher.status"]),
    ("many-channels", 865, 1_791_695_720, [600, 3600], 10 * 3600, ["query.status", "watcher.status"]),
    # a test-network operation in flight at the first sync reaches confirmed_latest, its last stage, by events alone
    ("many-channels", 16, 1_791_581_240, [600, 3600], 3 * 3600, None),
]


@pytest.mark.parametrize(
    ("shape", "seed", "start", "steps", "age", "types"), WINDOWED, ids=[f"{c[0]}-{c[1]}" for c in WINDOWED]
)
def test_windowed_incremental_syncs_equal_the_service_and_a_fresh_windowed_sync(
    shape, seed, start, steps, age, types, tmp_path
) -> None:
    check_incremental(shape, seed, start, steps, tmp_path, {"since": start - age, "event_types": types})


def check_incremental(shape: str, seed: int, start: int, steps: list[int], tmp_path, window: dict) -> None:
    """Sync, start work, step the clock with a sync after each; compare with the sandbox and a fresh sync."""
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=seed, days=0.5, operations_per_day=200, start=start, shape=shape)
    path = tmp_path / "incremental.duckdb"
    service = InProcess(sandbox)
    run_sync(service, path, **window)
    with service.client() as client:
        started_queries, started_operations = start_work(client, shape)
    run_sync(service, path)  # the clock is frozen: all of it is in flight here
    for step in steps:
        sandbox.advance(step)
        run_sync(service, path)
    fresh = tmp_path / "fresh.duckdb"
    run_sync(service, fresh, **window)

    truth = sandbox.truth(TEST_KEY)
    want_queries = {
        q["query_id"]: (q["status"], q.get("workflow_id"), q.get("workflow_execution_id")) for q in truth.queries
    }
    got_queries = held(path, "SELECT query_id, status, workflow_id, workflow_execution_id FROM queries")
    assert got_queries == want_queries
    moved = [q for q in started_queries if want_queries[q][0] != "accepted"]
    assert moved, "the steps moved the queries started between syncs"

    fields = ("operation_writer_workflow_id", "operation_status_workflow_id")
    want_operations = {o["operation_id"]: (o["status"], *(o.get(f) for f in fields)) for o in truth.operations}
    got_operations = held(path, f"SELECT operation_id, status, {', '.join(fields)} FROM operations")
    assert got_operations == want_operations
    assert all(op in got_operations for op in started_operations)

    got, want = snapshot(path), snapshot(fresh)
    for table in TABLES:
        assert got[table] == want[table], table


def test_a_relist_that_stops_early_fetches_nothing_by_id_and_the_next_run_catches_up(tmp_path, monkeypatch) -> None:
    """A re-list page that cannot be read says nothing of which rows moved: that run fetches none by id (it would
    ask for every in-flight row) and reports the page; the next run, with a readable re-list, fetches what moved."""
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=5, days=0.2, operations_per_day=200, start=1_791_000_000)
    path = tmp_path / "relist.duckdb"
    window = {"event_types": ["watcher.status"]}  # no operation.status: only the lists can move operations
    real_pages, real_get = Client.operation_pages, Client.get_operation
    fetched: list[str] = []

    def unreadable_relist(self, channel_id, *, start=0, pool=None, **filters):
        if "status" not in filters:
            return real_pages(self, channel_id, start=start, pool=pool, **filters)
        page = Page([], False, f"channels/{channel_id}/operations", {"status": filters["status"]}, problem="cut short")
        return iter([page])

    def counting_get(self, channel_id, operation_id):
        fetched.append(operation_id)
        return real_get(self, channel_id, operation_id)

    monkeypatch.setattr(Client, "get_operation", counting_get)
    service = InProcess(sandbox)
    run_sync(service, path, **window)
    with service.client() as client:
        _, started = start_work(client, "relist")
    run_sync(service, path)
    sandbox.advance(3600)
    with monkeypatch.context() as broken:
        broken.setattr(Client, "operation_pages", unreadable_relist)
        result = service.sync(path)
    assert result.outcome == "partial" and any("cut short" in p for p in result.problems), result.summary()
    assert not set(fetched) & set(started)
    stale = held(path, "SELECT operation_id, status FROM operations")
    assert {stale[op][0] for op in started} == {"accepted"}
    run_sync(service, path)
    truth = {o["operation_id"]: o["status"] for o in sandbox.truth(TEST_KEY).operations}
    moved = {op for op in started if truth[op] != "accepted"}
    assert moved and set(fetched) >= moved
    assert held(path, "SELECT operation_id, status FROM operations") == {k: (v,) for k, v in truth.items()}
