"""The sandbox accepts and refuses as the service's 0.8 description does, or says where it does not.

The 0.8 facts are copied here from WIRE.md sections 1-3 (not read from the code that builds the sandbox's
description). Each place where the sandbox was found to differ from them is either aligned (its served schema now
says what 0.8 says, and a request shows the behaviour over real HTTP) or a deliberate deviation: the schema
concerned says "Sandbox: ..." and ``info.description`` lists it.
"""

from __future__ import annotations

import httpx
import pytest

from tests.sandbox.conftest import SEEDED

#: 0.8: filters that take one value (not arrays), by list path.
SINGLE_VALUED = [
    ("/wallets", "type"),
    ("/wallets", "chain_environment"),
    ("/channels/{channel_id}/watchers", "chain_environment"),
    ("/channels/{channel_id}/operations", "chain_environment"),
    ("/channels/{channel_id}/queries", "chain_environment"),
    ("/channels/{channel_id}/events/search", "chain_environment"),
]
#: 0.8: ``address`` filters that are plain strings (the wallets' and the search's are addresses).
TEXT_ADDRESS = ["/channels/{channel_id}/watchers", "/channels/{channel_id}/operations"]
#: 0.8: the error statuses POST /wallets declares (429 is the sandbox's rate limit, described as such everywhere).
CREATE_WALLET_ERRORS = {400, 401, 409, 500}
#: 0.8: the list endpoints that declare no 400.
LISTS_WITHOUT_400 = [
    "/wallets",
    "/channels",
    "/channels/{channel_id}/watchers",
    "/channels/{channel_id}/operations",
    "/channels/{channel_id}/queries",
]
#: Where the sandbox is stricter or looser than 0.8 on purpose: (schema path in the document, word the info lists).
DEVIATIONS = [
    (("CreateChannel", "properties", "name"), "CreateChannel"),
    (("CreateWallet", "properties", "name"), "CreateWallet"),
    (("CreateWatcher", "oneOf", 0, "properties", "address"), "CreateWatcher address"),
    (("CreateWatcher", "oneOf", 1, "properties", "address"), "CreateWatcher address"),
    (("CreateWatcher", "oneOf", 0, "properties", "events"), "events"),
    (("CreateWatcher", "oneOf", 1, "properties", "events"), "events"),
    (("UpdateWallet", "properties", "status"), "UpdateWallet"),
    (("UpdateWatcher", "properties", "status"), "UpdateWatcher"),
]
SEPOLIA = "16015286601757825753"


@pytest.fixture(scope="module")
def doc(srv) -> dict:
    """The description the sandbox serves."""
    return httpx.get(f"{srv.base_url}/openapi.json").json()


@pytest.fixture(scope="module")
def cid(srv) -> str:
    """A channel of the seeded organisation."""
    r = httpx.get(f"{srv.base_url}/channels", headers={"Authorization": f"Apikey {SEEDED}"})
    return r.json()["data"][0]["channel_id"]


def _param(doc: dict, path: str, name: str) -> dict:
    return next(p for p in doc["paths"][path]["get"]["parameters"] if p["name"] == name)


def _at(doc: dict, where: tuple) -> dict:
    node = doc["components"]["schemas"]
    for step in where:
        node = node[step]
    return node


@pytest.mark.parametrize(("path", "name"), SINGLE_VALUED)
def test_single_valued_filters_are_one_value(doc, api, cid, path, name) -> None:
    schema = _param(doc, path, name)["schema"]
    assert schema["type"] == "string" and "items" not in schema
    url = path.replace("{channel_id}", cid)
    value, other = ("ecdsa", "rsa") if name == "type" else ("mainnet", "testnet")
    assert api.get(url, params={name: value}).status_code == 200
    for query in ({name: [value, other]}, {name: f"{value},{other}"}):
        r = api.get(url, params=query)
        assert r.status_code == 400 and r.json()["type"] == "VALIDATION_ERROR" and name in r.json()["message"]


@pytest.mark.parametrize("path", TEXT_ADDRESS)
def test_text_address_filters_take_any_string(doc, api, cid, path) -> None:
    assert "pattern" not in _param(doc, path, "address")["schema"]
    r = api.get(path.replace("{channel_id}", cid), params={"address": "not-an-address"})
    assert r.status_code == 200 and r.json()["data"] == []


def test_address_filters_match_ignoring_case(api, cid) -> None:
    ops = api.get(f"/channels/{cid}/operations", params={"limit": 5}).json()["data"]
    address = ops[0]["address"]
    for spelling in (address.lower(), "0x" + address[2:].upper()):
        got = api.get(f"/channels/{cid}/operations", params={"address": spelling, "limit": 100}).json()["data"]
        assert ops[0]["operation_id"] in {o["operation_id"] for o in got}


def test_preview_metadata_is_an_object(doc, mine, advance) -> None:
    preview = _at(doc, ("CreateOperation", "properties", "transactions", "items", "properties", "preview"))
    assert preview["properties"]["metadata"]["type"] == "object"
    channel = mine.post("/channels", json={"name": "preview-metadata"}).json()["channel_id"]
    wallet = mine.post(
        "/wallets",
        json={
            "name": "pm-wallet",
            "wallet_owner_address": "0x" + "1" * 40,
            "chain_selector": SEPOLIA,
            "wallet_type": "ecdsa",
        },
    ).json()
    advance(300)
    wallet = mine.get(f"/wallets/{wallet['wallet_id']}").json()

    def create(metadata: object, n: int) -> httpx.Response:
        tx = {
            "to": "0x" + "2" * 40,
            "value": "0",
            "data": "0x",
            "preview": {"function_signature": "f()", "metadata": metadata},
        }
        body = {"chain_selector": SEPOLIA, "address": wallet["address"], "wallet_operation_id": str(n), "deadline": 0}
        return mine.post(f"/channels/{channel}/operations", json={**body, "transactions": [tx]})

    for bad in ("text", 5, ["a"], None):
        r = create(bad, 1)
        assert r.status_code == 400 and "metadata" in r.json()["message"], (bad, r.text)
    assert create({"note": "ok"}, 2).status_code == 201


def test_create_wallet_answers_only_what_0_8_declares(doc, mine) -> None:
    declared = {int(s) for s in doc["paths"]["/wallets"]["post"]["responses"] if int(s) >= 400}
    assert declared - {429} == CREATE_WALLET_ERRORS
    body = {"name": "w-unknown-channel", "wallet_owner_address": "0x" + "1" * 40, "wallet_type": "ecdsa"}
    r = mine.post(
        "/wallets",
        json={**body, "chain_selector": SEPOLIA, "status_channel_id": "0" * 8 + "-0000-4000-8000-" + "0" * 12},
    )
    assert (
        r.status_code == 400 and r.json()["type"] == "VALIDATION_ERROR" and "status_channel_id" in r.json()["message"]
    )
    r = mine.post("/wallets", json={**body, "chain_selector": "not-decimal"})
    assert r.status_code == 409 and r.json()["code"] == "CHAIN_UNAVAILABLE"
    assert "pattern" not in _at(doc, ("CreateWallet", "properties", "chain_selector"))


@pytest.mark.parametrize("path", LISTS_WITHOUT_400)
def test_a_400_0_8_does_not_declare_is_said(doc, path) -> None:
    assert "Sandbox:" in doc["paths"][path]["get"]["responses"]["400"]["description"]
    assert "400 on GET /wallets" in doc["info"]["description"]


@pytest.mark.parametrize(("where", "word"), DEVIATIONS, ids=[".".join(map(str, w)) for w, _ in DEVIATIONS])
def test_each_deliberate_deviation_is_said_where_it_applies(doc, where, word) -> None:
    assert _at(doc, where)["description"].startswith("Sandbox:")
    listed = [line for line in doc["info"]["description"].splitlines() if line.startswith("- ")]
    assert any(word in line for line in listed), word


def test_the_health_check_says_it_needs_no_key_and_takes_one(doc, srv) -> None:
    assert doc["paths"]["/health-check"]["get"]["description"].startswith("Sandbox:")
    assert httpx.get(f"{srv.base_url}/health-check").status_code == 200
    assert httpx.get(f"{srv.base_url}/health-check", headers={"Authorization": f"Apikey {SEEDED}"}).status_code == 200
