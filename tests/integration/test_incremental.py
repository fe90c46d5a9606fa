"""Incremental sync against a moving sandbox: clock advances and writes through the API, compared with a fresh
full sync of the same service state, table for table and row for row. The sandbox answers in process
(``tests/support/service.py``): what is compared is what the syncs store, not how the pages crossed a network."""

from __future__ import annotations

import pytest

from benchmarks.support.bodies import query_body
from tests.conftest import TEST_KEY
from tests.support.snapshot import TABLES, snapshot
from toolkit.warehouse import Warehouse


@pytest.fixture(scope="module")
def moving(sandbox, service, tmp_path_factory):
    """A warehouse synced once, then kept up to date by incremental syncs while the service moves."""
    path = tmp_path_factory.mktemp("inc") / "inc.duckdb"
    first = service.sync(path)
    return path, first


def assert_same_as_fresh_sync(service, path, tmp_path) -> None:
    fresh = tmp_path / "fresh.duckdb"
    service.sync(fresh)
    got, want = snapshot(path), snapshot(fresh)
    for table in TABLES:
        assert got[table] == want[table], table


def test_nothing_changed_costs_only_the_fixed_requests(moving, sandbox, service) -> None:
    path, first = moving
    again = service.sync(path)
    assert sum(again.rows.values()) == 0
    truth = sandbox.truth(TEST_KEY)
    channels = len(truth.channels)
    # networks, one page of channels, one of wallets; per channel one event poll (the lists are the safety net, not
    # due until toolkit.loader.safety_net.SAFETY_NET_EVERY has passed); nothing that grows with history
    assert again.requests == 3 + channels, again.summary()
    assert again.requests < first.requests


def test_clock_advance_is_caught_up_exactly(moving, sandbox, service, tmp_path) -> None:
    path, first = moving
    sandbox.advance(6 * 3600)
    later = service.sync(path)
    assert later.rows["events"] > 0
    assert later.requests < first.requests, (later.requests, first.requests)
    assert_same_as_fresh_sync(service, path, tmp_path)


def test_writes_through_the_api_are_caught_up_exactly(moving, sandbox, service, tmp_path) -> None:
    path, _ = moving
    with service.client() as client:
        channel = client.create_channel("incremental-test-channel")
        cid = channel["channel_id"]
        wallet = next(w for w in client.iter_wallets() if w["status"] == "deployed")
        body = {
            "chain_selector": wallet["chain_selector"],
            "address": wallet["address"],
            "wallet_operation_id": "4242",
            "deadline": 0,
            "transactions": [{"to": "0x" + "12" * 20, "value": "1", "data": "0x"}],
            "signature": "0x" + "ab" * 65,
        }
        signed = client.create_operation(cid, body)
        draft = client.create_operation(
            cid, {**{k: v for k, v in body.items() if k != "signature"}, "wallet_operation_id": "4243"}
        )
        service.sync(path)
        client.cancel_operation(cid, draft)
        sandbox.advance(3600)
    service.sync(path)
    with Warehouse(path, read_only=True) as wh:
        statuses = dict(
            wh.con.execute("SELECT operation_id, status FROM operations WHERE channel_id = ?", [cid]).fetchall()
        )
    assert statuses[draft] == "cancelled"
    assert statuses[signed] not in ("accepted", "pending_signature")
    assert_same_as_fresh_sync(service, path, tmp_path)


def test_queries_answered_between_syncs_keep_the_answers_workflow_ids(moving, sandbox, service, tmp_path) -> None:
    """Queries in flight at one sync and answered before the next move forward from their events alone (the
    in-flight re-list no longer returns them); the answer's workflow ids come from the event payload."""
    path, _ = moving
    with service.client() as client:
        cid = client.create_channel("incremental-query-channel")["channel_id"]
        chain = next(w for w in client.iter_wallets() if w["status"] == "deployed")["chain_selector"]
        ids = [client.create_query(cid, query_body(f"incremental-query-{i}", chain, i))["query_id"] for i in range(8)]
        service.sync(path)  # the clock is frozen: every query is still in flight
        sandbox.advance(3600)
    service.sync(path)
    with Warehouse(path, read_only=True) as wh:
        rows = wh.con.execute(
            "SELECT status, workflow_id, workflow_execution_id, has_proof, sent_at FROM queries WHERE channel_id = ?",
            [cid],
        ).fetchall()
    assert len(rows) == len(ids)
    # answered by the DON (a query failed in dispatch, never sent, has no answer: no workflow ids, no proof)
    answered = [r for r in rows if r[0] in ("completed", "failed") and r[4] is not None]
    assert answered, rows  # the scenario happened: some queries got their answer between the two syncs
    assert all(r[1] and r[2] and r[3] for r in answered), answered
    assert_same_as_fresh_sync(service, path, tmp_path)


def test_second_writer_is_refused_with_a_clear_message(moving, service) -> None:
    from toolkit.errors import SyncLockedError
    from toolkit.warehouse import sync_lock

    path, _ = moving
    with sync_lock(path), pytest.raises(SyncLockedError) as info:
        service.sync(path)
    assert "Another sync" in str(info.value)
