"""The read side over real HTTP: envelopes, paging, auth, event poll and search, proofs."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from tests.sandbox.conftest import EMPTY, NOT_ONBOARDED, SEEDED, make_client
from toolkit import spec


def channel_by_name(api: httpx.Client, name: str) -> dict:
    data = api.get("/channels", params={"status": ["active", "archived"], "limit": 50}).json()["data"]
    return next(c for c in data if c["name"] == name)


def test_health_check_is_open(srv) -> None:
    with make_client(srv, None) as anon:
        r = anon.get("/health-check")
    assert r.status_code == 200
    assert r.json() == {"status": "ok"}


@pytest.mark.parametrize("header", [None, "Bearer x", "Apikey", "Apikey a b", "Apikey unknown-key"])
def test_missing_malformed_or_unknown_key_is_401(srv, header) -> None:
    headers = {"Authorization": header} if header is not None else {}
    r = httpx.get(f"{srv.base_url}/channels", headers=headers)
    assert r.status_code == 401
    body = r.json()
    assert set(body) >= {"type", "message"} and body["type"] in {t.value for t in spec.ErrorType}
    assert body["type"] != "ORGANIZATION_NOT_FOUND"


def test_not_onboarded_key_is_organization_not_found(srv) -> None:
    with make_client(srv, NOT_ONBOARDED) as c:
        r = c.get("/networks")
    assert r.status_code == 401
    assert r.json()["type"] == "ORGANIZATION_NOT_FOUND"
    assert NOT_ONBOARDED not in r.text


def test_other_organisations_resources_are_not_found(api, mine, sb) -> None:
    truth = sb.truth(SEEDED)
    channel = truth.channels[0]["channel_id"]
    for path, code in [
        (f"/channels/{channel}", "CHANNEL_NOT_FOUND"),
        (f"/channels/{channel}/events", "CHANNEL_NOT_FOUND"),
        (f"/wallets/{truth.wallets[0]['wallet_id']}", "WALLET_NOT_FOUND"),
    ]:
        assert api.get(path).status_code == 200
        r = mine.get(path)
        assert (r.status_code, r.json()["type"], r.json()["code"]) == (404, "NOT_FOUND", code), path


def test_resources_under_the_wrong_channel_are_not_found(api) -> None:
    first, second = (channel_by_name(api, n)["channel_id"] for n in ("treasury-ops", "market-data"))
    op = api.get(f"/channels/{first}/operations").json()["data"][0]["operation_id"]
    watcher = api.get(f"/channels/{first}/watchers").json()["data"][0]["watcher_id"]
    query = api.get(f"/channels/{second}/queries").json()["data"][0]["query_id"]
    for path, code in [
        (f"/channels/{second}/operations/{op}", "OPERATION_NOT_FOUND"),
        (f"/channels/{second}/watchers/{watcher}", "WATCHER_NOT_FOUND"),
        (f"/channels/{first}/queries/{query}", "QUERY_NOT_FOUND"),
        (f"/channels/{first}/queries/not-a-uuid", "QUERY_NOT_FOUND"),
    ]:
        r = api.get(path)
        assert (r.status_code, r.json()["code"]) == (404, code), path


def test_networks_envelope(api) -> None:
    body = api.get("/networks").json()
    assert body["has_more"] is False
    assert len(body["data"]) == len(spec.KNOWN_NETWORKS)
    net = body["data"][0]
    assert set(net) == {"id", "name", "chain_selector", "chain_id", "chain_family", "created_at", "updated_at", "type"}
    assert net["chain_family"] == "evm" and isinstance(net["created_at"], int)
    assert {n["type"] for n in body["data"]} == {"mainnet", "testnet"}


def test_archived_channels_hidden_unless_asked(api) -> None:
    default = api.get("/channels").json()
    assert set(default) == {"data", "has_more"}
    assert all(c["status"] == "active" for c in default["data"])
    everything = api.get("/channels", params={"status": ["active", "archived"]}).json()["data"]
    assert len(everything) >= 5 and sum(c["status"] == "archived" for c in everything) == 1
    archived = api.get("/channels", params={"status": "archived"}).json()["data"]
    assert [c["status"] for c in archived] == ["archived"]


def test_wallets_hide_archived_by_default(api, sb) -> None:
    truth = sb.truth(SEEDED).wallets
    listed = api.get("/wallets").json()["data"]
    assert {w["wallet_id"] for w in listed} == {w["wallet_id"] for w in truth if w["status"] != "archived"}
    with_archived = api.get("/wallets", params={"status": list(spec.WALLET_STATUSES)}).json()["data"]
    assert len(with_archived) == len(truth)
    assert any(w["status"] == "archived" for w in truth)


def test_row_skip_paging_walks_every_operation(api, sb) -> None:
    channel = channel_by_name(api, "payments-settlement")["channel_id"]
    seen, offset = [], 0
    while True:
        page = api.get(f"/channels/{channel}/operations", params={"limit": 37, "offset": offset}).json()
        seen += [o["operation_id"] for o in page["data"]]
        offset += 37
        if not page["has_more"]:
            break
    assert len(seen) == len(set(seen)) > 37
    default = api.get(f"/channels/{channel}/operations").json()
    assert len(default["data"]) == spec.PAGE_LIMITS["operations"].default and default["has_more"]


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/channels", {"limit": 0}),
        ("/channels", {"limit": 51}),
        ("/wallets", {"limit": 101}),
        ("/channels", {"offset": -1}),
        ("/channels", {"limit": "x"}),
        ("/channels", {"status": "bogus"}),
    ],
)
def test_paging_out_of_range_is_400(api, path, params) -> None:
    r = api.get(path, params=params)
    assert r.status_code == 400 and r.json()["type"] == "VALIDATION_ERROR"


def test_watcher_lists_carry_summaries_and_get_the_full_record(api) -> None:
    channel = channel_by_name(api, "treasury-ops")["channel_id"]
    items = api.get(f"/channels/{channel}/watchers").json()["data"]
    assert items and all("events" not in w and "abi" not in w for w in items)
    full = api.get(f"/channels/{channel}/watchers/{items[0]['watcher_id']}").json()
    assert full["events"] and full["don_family"] == "zone-a"


def test_operation_filters(api, sb) -> None:
    channel = channel_by_name(api, "treasury-ops")["channel_id"]
    confirmed = api.get(f"/channels/{channel}/operations", params={"status": "confirmed", "limit": 100}).json()["data"]
    assert confirmed and all(o["status"] == "confirmed" for o in confirmed)
    wallet = next(w for w in sb.truth(SEEDED).wallets if w["name"] == "treasury-eth")
    by_wallet = api.get(f"/channels/{channel}/operations", params={"wallet_id": wallet["wallet_id"], "limit": 100})
    assert by_wallet.json()["data"] and all(o["address"] == wallet["address"] for o in by_wallet.json()["data"])


# -- events ------------------------------------------------------------------------------------------------------------


def test_poll_without_offset_is_newest_first(api, sb) -> None:
    channel = channel_by_name(api, "treasury-ops")["channel_id"]
    n = len(sb.truth(SEEDED).events(channel))
    body = api.get(f"/channels/{channel}/events", params={"limit": 10}).json()
    assert set(body) == {"events", "has_more"} and body["has_more"] is True
    assert [e["headers"]["offset"] for e in body["events"]] == list(range(n - 1, n - 11, -1))
    assert len(api.get(f"/channels/{channel}/events").json()["events"]) == min(n, 200)


def test_poll_from_offset_moves_forward(api, sb) -> None:
    channel = channel_by_name(api, "treasury-ops")["channel_id"]
    events = sb.truth(SEEDED).events(channel)
    body = api.get(f"/channels/{channel}/events", params={"offset": 5, "limit": 7}).json()
    assert body["events"] == events[5:12] and body["has_more"] is True
    tail = api.get(f"/channels/{channel}/events", params={"offset": len(events) - 3}).json()
    assert [e["headers"]["offset"] for e in tail["events"]] == [len(events) - 3, len(events) - 2, len(events) - 1]
    assert tail["has_more"] is False
    assert api.get(f"/channels/{channel}/events", params={"offset": len(events)}).json() == {
        "events": [],
        "has_more": False,
    }
    typed = api.get(f"/channels/{channel}/events", params={"offset": 0, "type": "wallet.status"}).json()["events"]
    assert typed and {e["headers"]["type"] for e in typed} == {"wallet.status"}
    assert api.get(f"/channels/{channel}/events", params={"limit": 201}).status_code == 400


def test_offsets_are_contiguous_per_channel(sb) -> None:
    truth = sb.truth(SEEDED)
    for channel in truth.channels:
        offsets = [e["headers"]["offset"] for e in truth.events(channel["channel_id"])]
        assert offsets == list(range(len(offsets)))


def test_search_pages_ascending_from_offset(api, sb) -> None:
    channel = channel_by_name(api, "payments-settlement")["channel_id"]
    events = sb.truth(SEEDED).events(channel)
    first = api.get(f"/channels/{channel}/events/search").json()
    assert first["events"] == events[:50] and first["has_more"]
    page = api.get(f"/channels/{channel}/events/search", params={"offset": 100, "limit": 200}).json()
    assert page["events"] == events[100:300]
    assert api.get(f"/channels/{channel}/events/search", params={"limit": 0}).status_code == 400


def test_search_filters(api, sb) -> None:
    channel = channel_by_name(api, "treasury-ops")["channel_id"]
    events = sb.truth(SEEDED).events(channel)
    url = f"/channels/{channel}/events/search"

    def search(**params) -> list[dict]:
        out, offset = [], 0
        while True:
            r = api.get(url, params={**params, "limit": 200, "offset": offset})
            assert r.status_code == 200, r.text
            page = r.json()
            out += page["events"]
            if not page["has_more"]:
                return out
            offset = page["events"][-1]["headers"]["offset"] + 1

    ops = search(type="operation.status", status=["confirmed", "failed"])
    assert ops == [
        e
        for e in events
        if e["headers"]["type"] == "operation.status" and e["payload"]["status"] in ("confirmed", "failed")
    ]
    ts = sorted({e["payload"]["timestamp"] for e in events})
    lo, hi = ts[len(ts) // 3], ts[2 * len(ts) // 3]
    window = search(**{"created.gte": lo, "created.lt": hi})
    assert window == [e for e in events if lo <= e["payload"]["timestamp"] < hi]
    one_op = ops[0]["payload"]["operation_id"]
    assert search(type="operation.status", operation_id=one_op) == [
        e for e in events if e["payload"].get("operation_id") == one_op
    ]
    watcher_event = next(e for e in events if e["headers"]["type"] == "watcher.event")
    wid = watcher_event["payload"]["watcher_id"]
    assert search(type="watcher.event", watcher_id=wid, event_name="Transfer") == [
        e for e in events if e["headers"]["type"] == "watcher.event" and e["payload"]["watcher_id"] == wid
    ]
    both = search(type=["watcher.status", "wallet.status"])
    assert both == [e for e in events if e["headers"]["type"] in ("watcher.status", "wallet.status")]


@pytest.mark.parametrize(
    "params",
    [
        {"type": "watcher.event", "status": "active"},
        {"type": "query.status", "address": "0x" + "1" * 40},
        {"type": ["operation.status", "watcher.event"], "status": "confirmed"},
        {"status": "confirmed", "event_name": "Transfer"},
        {"type": "nonsense.type"},
    ],
)
def test_search_filter_that_does_not_apply_is_400(api, params) -> None:
    channel = channel_by_name(api, "treasury-ops")["channel_id"]
    r = api.get(f"/channels/{channel}/events/search", params=params)
    assert r.status_code == 400 and r.json()["type"] == "VALIDATION_ERROR"


def test_fetch_one_event(api, sb) -> None:
    channel = channel_by_name(api, "market-data")["channel_id"]
    event = sb.truth(SEEDED).events(channel)[3]
    assert api.get(f"/channels/{channel}/events/search/{event['event_id']}").json() == event
    missing = api.get(f"/channels/{channel}/events/search/00000000-0000-4000-8000-000000000000")
    assert missing.status_code == 404 and missing.json()["type"] == "NOT_FOUND"


REQUIRED_PAYLOAD = {
    "operation.status": {
        "status",
        "status_reason",
        "operation_id",
        "wallet_operation_id",
        "address",
        "chain_selector",
        "timestamp",
    },
    "query.status": {"query_id", "status", "target", "chain_selector", "timestamp"},
    "watcher.status": {"status", "status_reason", "watcher_id", "chain_selector", "timestamp"},
    "watcher.event": {"watcher_id", "event_hash", "verifiable_event", "chain_selector", "timestamp"},
    "wallet.status": {"status", "status_reason", "wallet_id", "address", "chain_selector", "timestamp"},
}


def test_every_event_has_its_fields_and_proofs_exactly_where_required(sb) -> None:
    truth = sb.truth(SEEDED)
    seen_types = set()
    for channel in truth.channels:
        events = truth.events(channel["channel_id"])
        queries = [e["payload"] for e in events if e["headers"]["type"] == "query.status"]
        sent = {p["query_id"] for p in queries if p["status"] in ("sent", "completed")}
        for event in events:
            etype, payload, proofs = event["headers"]["type"], event["payload"], event["headers"]["proofs"]
            seen_types.add(etype)
            assert REQUIRED_PAYLOAD[etype] <= set(payload), etype
            assert isinstance(payload["timestamp"], int)
            # a query that never reached sent failed in dispatch: the DON never answered it, so it owes no proof
            in_dispatch = etype == "query.status" and payload["query_id"] not in sent
            if not spec.event_requires_proof(etype, payload.get("status"), failed_in_dispatch=in_dispatch):
                assert proofs == [], (etype, payload.get("status"))
                continue
            assert len(proofs) == 1
            proof = proofs[0]
            assert proof["alg"] == "ecdsa-secp256k1"
            report = bytes.fromhex(proof["ocr_report"][2:])
            assert len(report) >= 141 and report[-32:].hex() == payload["event_hash"][2:]
            assert proof["ocr_context"].startswith("0x")
            assert len(proof["signatures"]) >= spec.PROOF_MIN_SIGNATURES
            assert all(len(s) == 132 and s.startswith("0x") for s in proof["signatures"])
            blob = payload.get("verifiable_event") or payload.get("verifiable_result")
            assert isinstance(json.loads(base64.b64decode(blob)), dict)
    assert seen_types == set(spec.EVENT_TYPES)


def test_event_sizes_are_realistic(sb) -> None:
    truth = sb.truth(SEEDED)
    events = truth.events(truth.channels[0]["channel_id"])
    with_proof = [len(json.dumps(e, separators=(",", ":"))) for e in events if e["headers"]["proofs"]]
    assert 1000 < sum(with_proof) / len(with_proof) < 3000


def test_empty_org_sees_nothing_but_networks(mine) -> None:
    assert mine.get("/channels").json() == {"data": [], "has_more": False}
    assert mine.get("/wallets").json() == {"data": [], "has_more": False}
    assert len(mine.get("/networks").json()["data"]) == len(spec.KNOWN_NETWORKS)


def test_keys_never_leak(sb, srv) -> None:
    for text in (repr(sb), repr(srv), repr(sb.app), repr(sb.truth(SEEDED))):
        for key in (SEEDED, EMPTY, NOT_ONBOARDED):
            assert key not in text
    assert EMPTY not in json.dumps(sb.truth(EMPTY).operations)
