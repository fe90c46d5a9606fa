"""The write side over real HTTP: each create/patch path, its status codes and conflicts, the state machines."""

from __future__ import annotations

import base64
import itertools
import json

import pytest

from tests.sandbox.conftest import EMPTY
from toolkit import spec

ETH = "5009297550715157269"
SEPOLIA = "16015286601757825753"
_names = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


def addr(n: int) -> str:
    return "0x" + f"{n:040x}"


@pytest.fixture
def channel(mine) -> str:
    r = mine.post("/channels", json={"name": unique("chan"), "description": "tests"})
    assert r.status_code == 201
    return r.json()["channel_id"]


@pytest.fixture
def wallet(mine, channel, advance) -> dict:
    r = mine.post(
        "/wallets",
        json={
            "name": unique("wallet"),
            "wallet_owner_address": addr(1),
            "chain_selector": ETH,
            "wallet_type": "ecdsa",
            "status_channel_id": channel,
        },
    )
    assert r.status_code == 201
    advance(120)
    return mine.get(f"/wallets/{r.json()['wallet_id']}").json()


def op_body(wallet: dict, **over) -> dict:
    body = {
        "chain_selector": wallet["chain_selector"],
        "address": wallet["address"],
        "wallet_operation_id": str(next(_names) + 1000),
        "deadline": 0,
        "transactions": [{"to": addr(7), "value": "0", "data": "0xa9059cbb"}],
        "signature": "0x" + "ab" * 65,
    }
    body.update(over)
    return {k: v for k, v in body.items() if v is not None}


def events(mine, channel: str, **params) -> list[dict]:
    return mine.get(f"/channels/{channel}/events/search", params={"limit": 200, **params}).json()["events"]


# -- channels ----------------------------------------------------------------------------------------------------------


def test_channel_create_rename_archive(mine) -> None:
    name = unique("chan")
    r = mine.post("/channels", json={"name": name})
    assert r.status_code == 201
    channel = r.json()
    assert set(channel) >= {"channel_id", "name", "status", "created_at"} and channel["status"] == "active"
    dup = mine.post("/channels", json={"name": name})
    assert (dup.status_code, dup.json()["code"]) == (409, "CHANNEL_ALREADY_EXISTS")
    cid = channel["channel_id"]
    renamed = mine.patch(f"/channels/{cid}", json={"name": name + "-x", "description": "d"})
    assert renamed.status_code == 200 and renamed.json()["name"] == name + "-x"
    assert mine.get(f"/channels/{cid}").json()["description"] == "d"
    assert mine.patch(f"/channels/{cid}", json={"status": "archived"}).json()["status"] == "archived"
    assert cid not in {c["channel_id"] for c in mine.get("/channels").json()["data"]}
    assert mine.post("/channels", json={"name": ""}).status_code == 400
    assert mine.post("/channels", json=[1]).status_code == 400
    assert mine.post("/channels", content=b"{not json").status_code == 400


def test_channel_archive_refused_while_watchers_are_active(mine, channel, advance) -> None:
    w = mine.post(
        f"/channels/{channel}/watchers",
        json={"name": "blocker", "chain_selector": ETH, "address": addr(3), "service": "dta", "events": ["X"]},
    )
    assert w.status_code == 201
    r = mine.patch(f"/channels/{channel}", json={"status": "archived"})
    assert (r.status_code, r.json()["type"]) == (409, "CONFLICT")
    assert (
        mine.patch(f"/channels/{channel}/watchers/{w.json()['watcher_id']}", json={"status": "archived"}).status_code
        == 202
    )
    advance(60)
    assert mine.patch(f"/channels/{channel}", json={"status": "archived"}).status_code == 200


# -- wallets -----------------------------------------------------------------------------------------------------------


def test_wallet_lifecycle_and_events(mine, channel, advance) -> None:
    name = unique("wallet")
    body = {
        "name": name,
        "wallet_owner_address": addr(1),
        "chain_selector": ETH,
        "wallet_type": "ecdsa",
        "status_channel_id": channel,
    }
    r = mine.post("/wallets", json=body)
    assert r.status_code == 201 and r.json()["status"] == "pending"
    wallet = r.json()
    assert set(wallet) >= {
        "wallet_id",
        "name",
        "address",
        "wallet_owner_address",
        "chain_selector",
        "wallet_type",
        "status",
        "configuration",
        "allowed_rsa_signers",
        "allowed_ecdsa_signers",
    }
    assert (mine.post("/wallets", json=body).json()["code"]) == "WALLET_ALREADY_EXISTS"
    advance(200)
    got = mine.get(f"/wallets/{wallet['wallet_id']}").json()
    assert got["status"] in ("deployed", "failed") and got["address"] == wallet["address"]
    statuses = [e["payload"]["status"] for e in events(mine, channel, type="wallet.status")]
    assert statuses == ["pending", "deploying", got["status"]]
    archived = mine.patch(f"/wallets/{wallet['wallet_id']}", json={"status": "archived", "description": "old"})
    assert archived.status_code == 200 and archived.json()["status"] == "archived"
    assert wallet["wallet_id"] not in {w["wallet_id"] for w in mine.get("/wallets").json()["data"]}
    again = mine.patch(f"/wallets/{wallet['wallet_id']}", json={"status": "archived"})
    assert (again.status_code, again.json()["code"]) == (409, "WALLET_ALREADY_ARCHIVED")
    refused = mine.post(f"/channels/{channel}/operations", json=op_body(got))
    assert (refused.status_code, refused.json()["code"]) == (409, "WALLET_ALREADY_ARCHIVED")


@pytest.mark.parametrize(
    "change",
    [
        {"wallet_owner_address": "0x12"},
        {"wallet_type": "nope"},
        {"name": None},
        {"description": "x" * 256},
        {"allowed_ecdsa_signers": ["bad"]},
    ],
)
def test_wallet_create_validation(mine, change) -> None:
    body = {"name": unique("w"), "wallet_owner_address": addr(1), "chain_selector": ETH, "wallet_type": "ecdsa"}
    body.update(change)
    r = mine.post("/wallets", json={k: v for k, v in body.items() if v is not None})
    assert (r.status_code, r.json()["type"]) == (400, "VALIDATION_ERROR")


def test_wallet_on_an_unlisted_chain_is_chain_unavailable(mine) -> None:
    r = mine.post(
        "/wallets",
        json={"name": unique("w"), "wallet_owner_address": addr(1), "chain_selector": "42", "wallet_type": "ecdsa"},
    )
    assert (r.status_code, r.json()["code"]) == (409, "CHAIN_UNAVAILABLE")


# -- watchers ----------------------------------------------------------------------------------------------------------


def test_watcher_lifecycle(mine, channel, advance) -> None:
    abi = [
        {
            "anonymous": False,
            "name": "Transfer",
            "type": "event",
            "inputs": [{"indexed": True, "internalType": "address", "name": "from", "type": "address"}],
        }
    ]
    r = mine.post(
        f"/channels/{channel}/watchers",
        json={"name": "erc20-watch", "chain_selector": ETH, "address": addr(5), "events": ["Transfer"], "abi": abi},
    )
    assert r.status_code == 201 and r.json()["status"] == "pending"
    wid = r.json()["watcher_id"]
    dup = mine.post(
        f"/channels/{channel}/watchers",
        json={"name": "erc20-watch", "chain_selector": ETH, "address": addr(5), "events": ["T"], "service": "dta"},
    )
    assert (dup.status_code, dup.json()["code"]) == (409, "WATCHER_ALREADY_EXISTS")
    advance(3 * 3600)
    watcher = mine.get(f"/channels/{channel}/watchers/{wid}").json()
    assert watcher["status"] in ("active", "failed")
    if watcher["status"] == "active":
        observed = events(mine, channel, type="watcher.event", watcher_id=wid)
        assert len(observed) >= 3 and all(len(e["headers"]["proofs"]) == 1 for e in observed)
    renamed = mine.patch(f"/channels/{channel}/watchers/{wid}", json={"name": "erc20-renamed"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "erc20-renamed"
    archiving = mine.patch(f"/channels/{channel}/watchers/{wid}", json={"status": "archived"})
    assert archiving.status_code == 202 and archiving.json()["status"] == "archiving"
    advance(60)
    assert mine.get(f"/channels/{channel}/watchers/{wid}").json()["status"] == "archived"
    assert wid not in {w["watcher_id"] for w in mine.get(f"/channels/{channel}/watchers").json()["data"]}
    statuses = [e["payload"]["status"] for e in events(mine, channel, type="watcher.status", watcher_id=wid)]
    assert statuses == ["pending", watcher["status"], "archiving", "archived"]


@pytest.mark.parametrize(
    "body",
    [
        {"name": "abc", "chain_selector": ETH, "address": addr(1), "events": ["X"], "service": "dta"},
        {"name": "abcd", "chain_selector": ETH, "address": addr(1), "events": [], "service": "dta"},
        {"name": "abcd", "chain_selector": ETH, "address": addr(1), "events": ["X"]},
        {
            "name": "abcd",
            "chain_selector": ETH,
            "address": addr(1),
            "events": ["X"],
            "service": "dta",
            "abi": [{"anonymous": False, "name": "X", "type": "event", "inputs": []}],
        },
        {"name": "abcd", "chain_selector": ETH, "address": "0x1", "events": ["X"], "service": "dta"},
    ],
)
def test_watcher_create_validation(mine, channel, body) -> None:
    r = mine.post(f"/channels/{channel}/watchers", json=body)
    assert (r.status_code, r.json()["type"]) == (400, "VALIDATION_ERROR")


# -- operations --------------------------------------------------------------------------------------------------------


def test_signed_operation_runs_the_ladder(mine, channel, wallet, advance, sb) -> None:
    r = mine.post(f"/channels/{channel}/operations", json=op_body(wallet))
    assert r.status_code == 201 and set(r.json()) == {"operation_id"}
    oid = r.json()["operation_id"]
    assert mine.get(f"/channels/{channel}/operations/{oid}").json()["status"] == "accepted"
    advance(3600)
    op = mine.get(f"/channels/{channel}/operations/{oid}").json()
    assert op["status"] in ("confirmed", "failed")
    statuses = [e["payload"]["status"] for e in events(mine, channel, type="operation.status", operation_id=oid)]
    moves = [s for o, s, _ in sb.truth(EMPTY).transitions if o == oid]
    assert statuses == moves  # every move emits exactly one event
    if op["status"] == "confirmed":
        assert statuses == [
            "accepted",
            "sending",
            "sent",
            "broadcasting",
            "confirmed_latest",
            "confirmed_safe",
            "confirmed",
        ]


def test_testnet_operations_stop_at_confirmed_latest(mine, channel, advance) -> None:
    w = mine.post(
        "/wallets",
        json={"name": unique("tw"), "wallet_owner_address": addr(1), "chain_selector": SEPOLIA, "wallet_type": "ecdsa"},
    ).json()
    advance(300)
    ids = [mine.post(f"/channels/{channel}/operations", json=op_body(w)).json()["operation_id"] for _ in range(8)]
    advance(3600)
    final = {mine.get(f"/channels/{channel}/operations/{i}").json()["status"] for i in ids}
    assert final <= {"confirmed_latest", "failed"} and "confirmed_latest" in final


@pytest.mark.parametrize(
    "change",
    [
        {"transactions": []},
        {"deadline": -1},
        {"deadline": True},
        {"deadline": 2**63},
        {"signature": "0x12"},
        {"address": "0xZZ"},
        {"wallet_operation_id": "abc"},
        {"extra": 1},
        {"chain_selector": "1"},
        {"transactions": [{"to": addr(1), "value": "0", "data": "0x"}] * 17},
        {"transactions": [{"to": addr(1), "value": "-1", "data": "0x"}]},
        {"transactions": [{"to": addr(1), "value": "0", "data": "0x", "gas": 1}]},
    ],
)
def test_operation_create_validation(mine, channel, wallet, change) -> None:
    r = mine.post(f"/channels/{channel}/operations", json=op_body(wallet, **change))
    assert (r.status_code, r.json()["type"]) == (400, "VALIDATION_ERROR"), change


def test_operation_create_not_found(mine, channel, wallet) -> None:
    r = mine.post(f"/channels/{channel}/operations", json=op_body(wallet, address=addr(999)))
    assert (r.status_code, r.json()["code"]) == (404, "WALLET_NOT_FOUND")
    r = mine.post("/channels/00000000-0000-4000-8000-000000000000/operations", json=op_body(wallet))
    assert (r.status_code, r.json()["code"]) == (404, "CHANNEL_NOT_FOUND")


def test_draft_finalize_and_cancel(mine, channel, wallet, advance, sb) -> None:
    draft = mine.post(f"/channels/{channel}/operations", json=op_body(wallet, signature=None, deadline=sb.now + 7200))
    oid = draft.json()["operation_id"]
    assert mine.get(f"/channels/{channel}/operations/{oid}").json()["status"] == "pending_signature"
    final = mine.patch(
        f"/channels/{channel}/operations/{oid}",
        json={"status": "accepted", "signature": "0x" + "cd" * 65, "digest": "0x" + "ee" * 32},
    )
    assert final.status_code == 200 and final.json()["status"] == "accepted"
    assert final.json()["digest"] == "0x" + "ee" * 32
    again = mine.patch(f"/channels/{channel}/operations/{oid}", json={"status": "cancelled"})
    assert (again.status_code, again.json()["code"]) == (409, "OPERATION_NOT_CANCELLABLE")

    other = mine.post(f"/channels/{channel}/operations", json=op_body(wallet, signature=None)).json()["operation_id"]
    cancelled = mine.patch(f"/channels/{channel}/operations/{other}", json={"status": "cancelled"})
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["canceller"]["subject_type"] == "api_key"
    late = mine.patch(
        f"/channels/{channel}/operations/{other}", json={"status": "accepted", "signature": "0x", "digest": "0x"}
    )
    assert (late.status_code, late.json()["code"]) == (409, "OPERATION_NOT_FINALIZABLE")
    bad = mine.patch(f"/channels/{channel}/operations/{other}", json={"status": "cancelled", "reason": "x"})
    assert bad.status_code == 400
    assert mine.patch(f"/channels/{channel}/operations/{other}", json={"status": "sent"}).status_code == 400
    statuses = [e["payload"]["status"] for e in events(mine, channel, type="operation.status", operation_id=other)]
    assert statuses == ["pending_signature", "cancelled"]


def test_draft_within_the_deadline_buffer_expires_on_finalize(mine, channel, wallet, sb) -> None:
    deadline = sb.now + spec.FINALIZE_DEADLINE_BUFFER_SECONDS - 1
    oid = mine.post(f"/channels/{channel}/operations", json=op_body(wallet, signature=None, deadline=deadline)).json()[
        "operation_id"
    ]
    r = mine.patch(
        f"/channels/{channel}/operations/{oid}", json={"status": "accepted", "signature": "0x", "digest": "0x"}
    )
    assert (r.status_code, r.json()["code"]) == (409, "OPERATION_DEADLINE_ELAPSED")
    assert mine.get(f"/channels/{channel}/operations/{oid}").json()["status"] == "expired"


def test_draft_expires_at_its_deadline_when_the_clock_passes(mine, channel, wallet, advance, sb) -> None:
    deadline = sb.now + 600
    oid = mine.post(f"/channels/{channel}/operations", json=op_body(wallet, signature=None, deadline=deadline)).json()[
        "operation_id"
    ]
    forever = mine.post(f"/channels/{channel}/operations", json=op_body(wallet, signature=None, deadline=0)).json()[
        "operation_id"
    ]
    advance(599)
    assert mine.get(f"/channels/{channel}/operations/{oid}").json()["status"] == "pending_signature"
    advance(2)
    assert mine.get(f"/channels/{channel}/operations/{oid}").json()["status"] == "expired"
    expired = events(mine, channel, type="operation.status", operation_id=oid)[-1]
    assert expired["payload"]["status"] == "expired" and expired["payload"]["timestamp"] == deadline
    assert expired["headers"]["proofs"] == []
    advance(86400)
    assert mine.get(f"/channels/{channel}/operations/{forever}").json()["status"] == "pending_signature"


def test_operation_list_filters(mine, channel, wallet) -> None:
    oid = mine.post(f"/channels/{channel}/operations", json=op_body(wallet, signature=None)).json()["operation_id"]
    drafts = mine.get(f"/channels/{channel}/operations", params={"status": "pending_signature"}).json()["data"]
    assert oid in {o["operation_id"] for o in drafts}
    assert mine.get(f"/channels/{channel}/operations", params={"wallet_id": wallet["wallet_id"]}).json()["data"]
    assert not mine.get(f"/channels/{channel}/operations", params={"chain_selector": SEPOLIA}).json()["data"]


# -- queries -----------------------------------------------------------------------------------------------------------


def query_body(key: str, **over) -> dict:
    body = {
        "idempotency_key": key,
        "query_kind": "evm_call",
        "chain_selector": ETH,
        "params": {"contract_address": addr(9), "call_data": "0x70a08231", "block_selection": {"type": "latest"}},
    }
    body.update(over)
    return body


def test_query_idempotency(mine, channel) -> None:
    first = mine.post(f"/channels/{channel}/queries", json=query_body("k1"))
    assert first.status_code == 202 and first.json() == {"query_id": first.json()["query_id"], "status": "accepted"}
    same = mine.post(f"/channels/{channel}/queries", json=query_body("k1"))
    assert same.status_code == 202 and same.json()["query_id"] == first.json()["query_id"]
    other = mine.post(f"/channels/{channel}/queries", json=query_body("k1", chain_selector=SEPOLIA))
    assert (other.status_code, other.json()["code"]) == (409, "IDEMPOTENCY_KEY_MISMATCH")
    assert (
        mine.post(f"/channels/{channel}/queries", json=query_body("k2")).json()["query_id"] != first.json()["query_id"]
    )


@pytest.mark.parametrize(
    "change",
    [
        {"extra": 1},
        {"query_kind": "sql"},
        {"idempotency_key": ""},
        {"params": {"contract_address": addr(9), "call_data": "70a0", "block_selection": {"type": "latest"}}},
        {"params": {"contract_address": addr(9), "call_data": "0x", "block_selection": {"type": "safe"}}},
        {"params": {"contract_address": addr(9), "call_data": "0x", "block_selection": {"type": "latest"}, "x": 1}},
    ],
)
def test_query_create_validation(mine, channel, change) -> None:
    r = mine.post(f"/channels/{channel}/queries", json=query_body(unique("q"), **change))
    assert (r.status_code, r.json()["type"]) == (400, "VALIDATION_ERROR"), change


def test_queries_complete_fail_or_expire(mine, channel, advance, sb) -> None:
    ids = [
        mine.post(f"/channels/{channel}/queries", json=query_body(unique("q"))).json()["query_id"] for _ in range(120)
    ]
    advance(spec.QUERY_TTL_SECONDS + 1)
    queries = [mine.get(f"/channels/{channel}/queries/{q}").json() for q in ids]
    by_status = {s: [q for q in queries if q["status"] == s] for s in spec.QUERY_TERMINAL}
    assert all(q["status"] in spec.QUERY_TERMINAL for q in queries)
    assert by_status["completed"] and by_status["failed"] and by_status["expired"]
    for q in by_status["completed"] + by_status["failed"]:
        assert q["proof"]["alg"] == "ecdsa-secp256k1" and q[f"{q['status']}_at"] >= q["sent_at"] >= q["accepted_at"]
        decoded = json.loads(base64.b64decode(q["verifiable_result"]))
        assert decoded["name"] == "ChainQuery" and decoded["data"]["query_id"] == q["query_id"]
        assert ("result" in decoded["data"]) == (q["status"] == "completed")
    for q in by_status["expired"]:
        assert q["expired_at"] == q["expires_at"] == q["created_at"] + spec.QUERY_TTL_SECONDS
        assert "proof" not in q
    q = by_status["failed"][0]
    trail = events(mine, channel, type="query.status", query_id=q["query_id"])
    assert [e["payload"]["status"] for e in trail] == ["accepted", "sending", "sent", "failed"]
    assert [len(e["headers"]["proofs"]) for e in trail] == [0, 0, 0, 1]
