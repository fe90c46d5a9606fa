"""The 0.8 details the schemathesis run found the sandbox getting wrong, each checked over real HTTP."""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import make_client

ETH = "5009297550715157269"


def _wallet(**over) -> dict:
    body = {"name": "w-types", "wallet_owner_address": "0x" + "1" * 40, "chain_selector": ETH, "wallet_type": "ecdsa"}
    return body | over


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/wallets", _wallet(wallet_type={}), "wallet_type"),
        ("/wallets", _wallet(wallet_type=[]), "wallet_type"),
        ("/wallets", _wallet(name=7), "name"),
        ("/wallets", _wallet(configuration=[1]), "configuration"),
        ("/channels", {"name": ["x"]}, "name"),
    ],
)
def test_a_body_field_of_the_wrong_json_type_is_a_400_naming_it(mine, path, body, field) -> None:
    r = mine.post(path, json=body)
    assert r.status_code == 400 and r.json()["type"] == "VALIDATION_ERROR"
    assert r.json()["message"].startswith(field)


def test_a_query_body_of_the_wrong_json_type_is_a_400_naming_it(mine) -> None:
    channel = mine.post("/channels", json={"name": "types-channel"}).json()["channel_id"]
    params = {"contract_address": "0x" + "2" * 40, "call_data": "0x", "block_selection": {"type": "latest"}}
    body = {"idempotency_key": "k", "query_kind": {}, "chain_selector": ETH, "params": params}
    r = mine.post(f"/channels/{channel}/queries", json=body)
    assert r.status_code == 400 and "query_kind" in r.json()["message"]
    body = {**body, "query_kind": "evm_call", "params": {**params, "block_selection": {"type": "latest", "x": 1}}}
    r = mine.post(f"/channels/{channel}/queries", json=body)
    assert r.status_code == 400 and "params.block_selection" in r.json()["message"]


def test_operation_subject_filters_apply_and_check_their_type(api, sb) -> None:
    channel = api.get("/channels").json()["data"][0]["channel_id"]
    everything = api.get(f"/channels/{channel}/operations", params={"limit": 100}).json()["data"]
    signed = [o for o in everything if o["signer"] is not None]
    assert signed and len(signed) < len(everything)  # drafts have no signer
    subject = signed[0]["signer"]
    r = api.get(f"/channels/{channel}/operations", params={"limit": 100, "signer_subject_id": subject["subject_id"]})
    assert [o["operation_id"] for o in r.json()["data"]] == [o["operation_id"] for o in signed]
    r = api.get(f"/channels/{channel}/operations", params={"limit": 100, "initiator_subject_type": "user"})
    assert r.status_code == 200 and r.json()["data"] == []
    r = api.get(f"/channels/{channel}/operations", params={"limit": 100, "canceller_subject_type": "api_key"})
    assert all(o["canceller"] is not None for o in r.json()["data"])
    assert len(r.json()["data"]) == sum(o["canceller"] is not None for o in everything)
    r = api.get(f"/channels/{channel}/operations", params={"signer_subject_type": "robot"})
    assert r.status_code == 400 and "signer_subject_type" in r.json()["message"]


@pytest.mark.parametrize("name", ["watcher_id", "wallet_id"])
def test_event_search_ids_must_be_uuids(api, name) -> None:
    channel = api.get("/channels").json()["data"][0]["channel_id"]
    r = api.get(f"/channels/{channel}/events/search", params={name: "abc"})
    assert r.status_code == 400 and name in r.json()["message"]


def test_405_names_the_allowed_methods(api, srv) -> None:
    r = api.delete("/wallets")
    assert r.status_code == 405 and r.headers["allow"] == "GET, POST"
    r = api.put("/channels/x/queries/y")
    assert r.status_code == 405 and r.headers["allow"] == "GET"
    with make_client(srv, None) as anonymous:
        r = anonymous.post("/health-check")
        assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"


def test_the_description_is_served_without_a_key(srv) -> None:
    with make_client(srv, None) as anonymous:
        r = anonymous.get("/openapi.json")
    assert r.status_code == 200 and r.json()["openapi"].startswith("3.1")
    assert "ApiKeyAuth" in r.json()["components"]["securitySchemes"]


# ECMA-262's white space (what JSON Schema's \s means), written out here rather than taken from the sandbox
ECMA_SPACE = "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
ECMA_SPACE += "\u2028\u2029\u202f\u205f\u3000\ufeff"


@pytest.mark.parametrize("name", ["\x1d", "\x1c\x1f", "\x85", " \x1e "])
def test_a_name_of_characters_only_python_counts_as_space_is_accepted(mine, name) -> None:
    # the published pattern is \S, an ECMA-262 regex: U+001C-U+001F and U+0085 are not white space there
    assert not any(c in ECMA_SPACE for c in name.strip(" "))
    r = mine.post("/channels", json={"name": name})
    assert r.status_code in (200, 201), r.text
    assert r.json()["name"] == name


@pytest.mark.parametrize("name", [" ", "\t\n", "\u3000", "\u2028 \ufeff", ECMA_SPACE])
def test_a_name_of_white_space_only_is_refused(mine, name) -> None:
    r = mine.post("/channels", json={"name": name})
    assert r.status_code == 400 and r.json()["message"].startswith("name")
