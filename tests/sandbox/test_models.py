"""The typed results of :mod:`toolkit.api.resources` against what the sandbox serves through the client.

Every record of a seeded history has each required key of its TypedDict and no key the TypedDict does not name
(so the models cover WIRE.md section 2 as the sandbox serves it); and the client hands back the service's dicts
untouched, unknown fields included.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.sandbox.conftest import SEEDED
from toolkit import spec
from toolkit.api import Client
from toolkit.api import resources as models
from toolkit.api.retry import RetryPolicy

PAYLOADS: dict[str, Any] = {
    "operation.status": models.OperationStatusPayload,
    "query.status": models.QueryStatusPayload,
    "watcher.status": models.WatcherStatusPayload,
    "watcher.event": models.WatcherEventPayload,
    "wallet.status": models.WalletStatusPayload,
}


def conforms(record: dict, model: Any, what: str) -> None:
    """Required keys present; every key named by the model."""
    keys = set(record)
    assert model.__required_keys__ <= keys, f"{what}: missing {sorted(model.__required_keys__ - keys)}"
    named = model.__required_keys__ | model.__optional_keys__
    assert keys <= named, f"{what}: unmodelled {sorted(keys - named)}"


@pytest.fixture(scope="module")
def client(srv) -> Iterator[Client]:
    """The toolkit's client of the seeded organisation."""
    with Client(srv.base_url, SEEDED, retry=RetryPolicy(attempts=1)) as c:
        yield c


def test_served_records_match_their_models(client) -> None:
    conforms(client.health_check(), models.HealthCheck, "health check")
    for network in client.list_networks():
        conforms(network, models.Network, "network")
    for wallet in client.iter_wallets():
        conforms(wallet, models.Wallet, "wallet")
        conforms(client.get_wallet(wallet["wallet_id"]), models.Wallet, "wallet")
    channels = list(client.iter_channels())
    assert channels
    kinds: set[str] = set()
    for channel in channels:
        cid = channel["channel_id"]
        conforms(channel, models.Channel, "channel")
        for summary in client.iter_watchers(cid):
            conforms(summary, models.WatcherSummary, "watcher summary")
            conforms(client.get_watcher(cid, summary["watcher_id"]), models.Watcher, "watcher")
        for op in client.iter_operations(cid):
            conforms(op, models.Operation, "operation")
            for tx in op["transactions"]:
                conforms(tx, models.Transaction, "transaction")
            for who in ("initiator", "signer", "canceller"):
                if op.get(who) is not None:
                    conforms(op[who], models.Subject, who)
        for query in client.iter_queries(cid):
            conforms(query, models.Query, "query")
            assert isinstance(query["target"], str), "0.8: a query's target is the contract address"
            if "verifiable_result" in query:
                call = json.loads(base64.b64decode(query["verifiable_result"]))["data"]["target"]
                conforms(call, models.QueryTarget, "decoded query target")
                assert call["contract_address"] == query["target"]
            if "proof" in query:
                conforms(query["proof"], models.OCRProof, "query proof")
        for page in client.event_pages(cid):
            for event in page.records:
                conforms(event, models.Event, "event")
                conforms(event["headers"], models.EventHeaders, "event headers")
                kind = event["headers"]["type"]
                kinds.add(kind)
                conforms(event["payload"], PAYLOADS[kind], kind)
                for proof in event["headers"]["proofs"]:
                    conforms(proof, models.OCRProof, "proof")
    assert kinds == set(spec.EVENT_TYPES)


def test_results_are_the_dicts_the_service_sent_unknown_fields_included() -> None:
    channel = {"channel_id": "c1", "name": "n", "status": "active", "created_at": 1, "added_in_0_9": {"x": [1]}}
    accepted = {"query_id": "q1", "status": "accepted", "priority": "high"}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/queries"):
            return httpx.Response(202, json=accepted)
        if request.url.path.endswith("/channels"):
            return httpx.Response(200, json={"data": [channel], "has_more": False, "total": 1})
        return httpx.Response(200, json=channel)

    with Client("http://127.0.0.1:9/v1", "k", transport=httpx.MockTransport(handler)) as c:
        assert c.get_channel("c1") == channel
        assert list(c.iter_channels()) == [channel]
        assert c.create_query("c1", {}) == accepted
        assert type(c.get_channel("c1")) is dict
