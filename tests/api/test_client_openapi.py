"""Every request the client sends matches an operation of the sandbox's OpenAPI description.

Each public method of :class:`toolkit.api.Client` that talks to the service is called against a live sandbox on
127.0.0.1 through a transport that records the requests. Every recorded request must then match one operation of
``/v1/openapi.json``: its method and path template, each query parameter declared by that operation with a value its
schema accepts, and a JSON body valid against its request schema. The check uses the description (parsed with
``jsonschema_rs``, not the sandbox's own validator), so a client that sends an undocumented parameter or a body of
the wrong shape fails here even if the sandbox lets it through.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import httpx
import jsonschema_rs
import pytest

from toolkit.api import Client
from toolkit.api.retry import RetryPolicy
from toolkit.sandbox import Sandbox

KEY = "sbx_client_spec_SECRET-6c1d"
START = 1_765_000_000 // 60 * 60
#: Client methods that send no request of their own (paginate and offset_pages are reached through the *_pages methods).
NOT_ENDPOINTS = {
    "from_settings",
    "redact",
    "close",
    "request",
    "offset_pages",
    "paginate",
    "channel_refusals_as_bad_pages",
}


class Recorder(httpx.HTTPTransport):
    """A real HTTP transport that keeps every request it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Record, then send."""
        self.sent.append(request)
        return super().handle_request(request)


@pytest.fixture(scope="module")
def recorded() -> Iterator[tuple[list[tuple[str, httpx.Request]], dict]]:
    """Call every endpoint method of the client; yield (method name, request) pairs and the served description."""
    sb = Sandbox(orgs=(KEY,), seed=4, days=0.1, operations_per_day=200, start=START)
    with sb.serve() as server:
        doc = httpx.get(f"{server.base_url}/openapi.json").json()
        recorder = Recorder()
        calls: list[tuple[str, httpx.Request]] = []
        with Client(server.base_url, KEY, transport=recorder, retry=RetryPolicy(attempts=1)) as client:

            def call(method: str, /, *args: Any, **kwargs: Any) -> Any:
                before = len(recorder.sent)
                result = getattr(client, method)(*args, **kwargs)
                if inspect.isgenerator(result):
                    result = list(result)
                calls.extend((method, r) for r in recorder.sent[before:])
                return result

            _exercise(call, sb)
        yield calls, doc


def _exercise(call, sb: Sandbox) -> None:
    """One call of each endpoint method, with the arguments and filters a user would pass."""
    call("health_check")
    networks = call("list_networks")
    call("network_pages")
    selector = networks[0]["chain_selector"]
    call("iter_wallets", chain_selector=selector, type=["ecdsa"])
    call("wallet_pages", status=["deployed"], name="w", owner="0x" + "1" * 40)
    channels = call("iter_channels", name="")
    call("channel_pages", status=["active"])
    cid = channels[0]["channel_id"]
    call("get_channel", cid)
    new_wallet = {
        "name": "spec-wallet",
        "wallet_owner_address": "0x" + "2" * 40,
        "chain_selector": selector,
        "wallet_type": "ecdsa",
    }
    wallet = call("create_wallet", new_wallet)
    call("get_wallet", wallet["wallet_id"])
    call("update_wallet", wallet["wallet_id"], {"description": "d"})
    call("rename_wallet", wallet["wallet_id"], "spec-wallet-2")
    call("archive_wallet", wallet["wallet_id"])
    channel = call("create_channel", "spec-channel", description="for the spec")
    call("update_channel", channel["channel_id"], {"description": "x"})
    call("rename_channel", channel["channel_id"], "spec-channel-2")
    new_watcher = {
        "name": "spec-watcher",
        "chain_selector": selector,
        "address": "0x" + "3" * 40,
        "service": "dta",
        "events": ["Transfer"],
    }
    watcher = call("create_watcher", channel["channel_id"], new_watcher)
    call("get_watcher", channel["channel_id"], watcher["watcher_id"])
    call("iter_watchers", channel["channel_id"], chain_selector=selector, service=["dta"])
    call("watcher_pages", channel["channel_id"], status=["pending", "active"], event_name="Transfer")
    call("update_watcher", channel["channel_id"], watcher["watcher_id"], {"name": "spec-watcher-2"})
    call("rename_watcher", channel["channel_id"], watcher["watcher_id"], "spec-watcher-3")
    call("archive_watcher", channel["channel_id"], watcher["watcher_id"])
    sb.advance(120)
    call("archive_channel", channel["channel_id"])
    deployed = call("iter_wallets", status=["deployed"])
    payer = next(w for w in deployed if w["chain_selector"] in {n["chain_selector"] for n in networks})
    body = {
        "chain_selector": payer["chain_selector"],
        "address": payer["address"],
        "wallet_operation_id": "77",
        "deadline": 0,
        "transactions": [{"to": "0x" + "4" * 40, "value": "0", "data": "0xa9059cbb"}],
    }
    draft = call("create_operation", cid, body)
    call("get_operation", cid, draft)
    call("finalize_operation", cid, draft, signature="0x" + "ab" * 65, digest="0x" + "cd" * 32)
    other = call("create_operation", cid, {**body, "wallet_operation_id": "78"})
    call("cancel_operation", cid, other)
    call("iter_operations", cid, status=["accepted", "confirmed"], wallet_id=payer["wallet_id"])
    call(
        "operation_pages",
        cid,
        initiator_subject_type="api_key",
        signer_subject_id="x",
        canceller_subject_type="user",
        chain_environment=["testnet"],
    )
    call_params = {"contract_address": "0x" + "5" * 40, "call_data": "0x", "block_selection": {"type": "latest"}}
    new_query = {"idempotency_key": "k1", "query_kind": "evm_call", "chain_selector": selector, "params": call_params}
    accepted = call("create_query", cid, new_query)
    call("get_query", cid, accepted["query_id"])
    call("iter_queries", cid, status=["accepted"], query_kind=["evm_call"])
    call("query_pages", cid, chain_selector=selector)
    page = call("poll_events", cid)
    call("poll_events", cid, offset=0, limit=5)
    call("search_events", cid, type=["operation.status"], status=["accepted"], limit=10)
    call("search_events", cid, **{"type": ["watcher.status"], "created.gte": 0, "watcher_id": watcher["watcher_id"]})
    call("get_event", cid, page.records[0]["event_id"])
    # the pagers sync reads the event log with, from an offset forward (poll) and through search with filters
    call("event_wire_pages", cid, start=0, limit=200)
    call("event_pages", cid, start=5, limit=100)
    call("event_pages", cid, search=True, type=["wallet.status"], wallet_id=payer["wallet_id"], limit=50)


def _operations(doc: dict) -> list[tuple[str, re.Pattern, dict]]:
    out = []
    for template, methods in doc["paths"].items():
        regex = re.compile("^/v1" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$")
        for method, op in methods.items():
            out.append((method.upper(), regex, op))
    return out


def _resolve(doc: dict, schema: dict) -> dict:
    return {**schema, "components": doc["components"]}


def _matches(doc: dict, request: httpx.Request) -> list[str]:
    """What is wrong with ``request`` against the description (empty when it matches an operation)."""
    path = request.url.path
    ops = [op for method, regex, op in _operations(doc) if method == request.method and regex.match(path)]
    if not ops:
        return [f"no operation {request.method} {path}"]
    op = ops[0]
    problems = []
    declared = {p["name"]: p for p in op.get("parameters", []) if p["in"] == "query"}
    for name, values in parse_qs(request.url.query.decode(), keep_blank_values=True).items():
        param = declared.get(name)
        if param is None:
            problems.append(f"{op['operationId']}: undeclared query parameter {name!r}")
            continue
        schema = param["schema"]
        if schema.get("type") != "array" and len(values) > 1:
            problems.append(f"{op['operationId']}: {name} repeated but not an array")
        item = schema.get("items", schema) if schema.get("type") == "array" else schema
        for value in values:
            typed: Any = value
            if item.get("type") == "integer":
                if not re.fullmatch(r"-?[0-9]+", value):
                    problems.append(f"{op['operationId']}: {name}={value!r} is not an integer")
                    continue
                typed = int(value)
            errors = [e.message for e in jsonschema_rs.validator_for(_resolve(doc, item)).iter_errors(typed)]
            problems.extend(f"{op['operationId']}: {name}={value!r}: {e}" for e in errors)
    body = op.get("requestBody")
    if body is not None:
        schema = body["content"]["application/json"]["schema"]
        instance = json.loads(request.content)
        validator = jsonschema_rs.validator_for(_resolve(doc, schema))
        problems.extend(f"{op['operationId']} body: {e.message}" for e in validator.iter_errors(instance))
    elif request.content:
        problems.append(f"{op['operationId']}: a body where none is described")
    return problems


def test_every_client_request_matches_an_operation_of_the_description(recorded) -> None:
    calls, doc = recorded
    problems = [f"{name}: {p}" for name, request in calls for p in _matches(doc, request)]
    assert problems == []


def test_every_endpoint_method_of_the_client_was_checked(recorded) -> None:
    calls, doc = recorded
    methods = {
        name
        for name, member in inspect.getmembers(Client, inspect.isfunction)
        if not name.startswith("_") and name not in NOT_ENDPOINTS
    }
    assert methods - {name for name, _ in calls} == set()
    reached = {
        op["operationId"]
        for _, request in calls
        for method, regex, op in _operations(doc)
        if method == request.method and regex.match(request.url.path)
    }
    described = {op["operationId"] for _, _, op in _operations(doc)}
    assert described - reached == set(), "every operation of the description is used by some client method"


def test_the_check_refuses_what_the_description_does_not_allow(recorded) -> None:
    """The matcher itself: an undeclared parameter, a bad value, a bad body and an unknown path are all caught."""
    _, doc = recorded
    base = "http://127.0.0.1/v1"
    bad = [
        httpx.Request("GET", f"{base}/wallets?colour=red"),
        httpx.Request("GET", f"{base}/wallets?limit=1000"),
        httpx.Request("GET", f"{base}/channels/c/operations?initiator_subject_type=robot"),
        httpx.Request("POST", f"{base}/channels", json={"name": 5}),
        httpx.Request("GET", f"{base}/nothing"),
    ]
    assert all(_matches(doc, r) for r in bad)
    assert _matches(doc, httpx.Request("GET", f"{base}/wallets?limit=100&status=archived")) == []
