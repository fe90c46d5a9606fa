"""The contract suite: every endpoint of API.md, read and write, through the toolkit's own client over real HTTP.

Each call goes through :class:`toolkit.api.Client` (the client users have) and each refusal is checked as the typed
error the client raises: the exception class, the HTTP status, the ``ApplicationError`` type and code. Raw httpx is
used only for requests the client cannot send (no ``Authorization`` header, another scheme, a body that is not
JSON). ``RESOURCE_VERSION_CONFLICT`` is the one code of API.md the sandbox never produces: it serialises every
request, so no two requests modify a resource concurrently.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from tests.support.hostile import ScriptedServer
from toolkit import errors, spec
from toolkit.api import Client
from toolkit.api import client as client_module
from toolkit.api.retry import RetryPolicy
from toolkit.sandbox import Sandbox
from toolkit.sandbox.faults import FaultInjector
from toolkit.sandbox.serve import ServerHandle

MINE = "sbx_contract_SECRET-a1f0"
OTHER = "sbx_contract_other_SECRET-b2e1"
NOT_ONBOARDED = "sbx_contract_nope_SECRET-c3d2"
START = 1_755_000_000 // 60 * 60
ETH, SEPOLIA = "5009297550715157269", "16015286601757825753"
MISSING = "00000000-0000-4000-8000-000000000000"
NO_RETRY = RetryPolicy(attempts=1)
STATUS_OF = {
    errors.ValidationError: 400,
    errors.NotFoundError: 404,
    errors.ConflictError: 409,
    errors.AuthenticationError: 401,
    errors.OrganizationNotFoundError: 401,
    errors.RateLimitError: 429,
    errors.ServerError: 500,
}
TYPE_OF = {
    errors.ValidationError: "VALIDATION_ERROR",
    errors.NotFoundError: "NOT_FOUND",
    errors.ConflictError: "CONFLICT",
    errors.OrganizationNotFoundError: "ORGANIZATION_NOT_FOUND",
    errors.ServerError: "INTERNAL_ERROR",
}
_n = itertools.count()


def unique(prefix: str) -> str:
    """A name no other test uses."""
    return f"{prefix}-{next(_n)}"


def addr(n: int) -> str:
    """A deterministic address."""
    return "0x" + f"{n:040x}"


@contextmanager
def refused(cls: type[errors.ApiError], code: str | None = None) -> Iterator[None]:
    """Expect exactly ``cls`` with its HTTP status, ``ApplicationError`` type and ``code``; never the key."""
    with pytest.raises(cls) as info:
        yield
    err = info.value
    assert type(err) is cls, repr(err)
    assert err.status == STATUS_OF[cls], err
    if cls in TYPE_OF:
        assert err.type == TYPE_OF[cls], err
    assert err.code == code, err
    assert err.service_message, "every refusal carries a message"
    for key in (MINE, OTHER, NOT_ONBOARDED):
        assert key not in str(err) and key not in repr(err)


# -- fixtures ----------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    """Two empty onboarded organisations and a not-onboarded key, on a frozen clock."""
    return Sandbox(orgs=(MINE, OTHER), not_onboarded=(NOT_ONBOARDED,), seed=3, empty=True, start=START)


@pytest.fixture(scope="module")
def srv(sb: Sandbox) -> Iterator[ServerHandle]:
    """The sandbox served on 127.0.0.1."""
    with sb.serve() as running:
        yield running


@pytest.fixture(scope="module")
def client(srv: ServerHandle) -> Iterator[Client]:
    """The toolkit's client for ``MINE`` (no retries: every answer is seen as it is)."""
    with Client(srv.base_url, MINE, retry=NO_RETRY) as c:
        yield c


@pytest.fixture(scope="module")
def other(srv: ServerHandle) -> Iterator[Client]:
    """The toolkit's client for another organisation."""
    with Client(srv.base_url, OTHER, retry=NO_RETRY) as c:
        yield c


@pytest.fixture(scope="module")
def advance(srv: ServerHandle) -> Callable[[int], int]:
    """Move the simulated clock through the sandbox's control API; answers the new ``now``."""
    root = srv.base_url.removesuffix("/v1")

    def go(seconds: int) -> int:
        r = httpx.post(
            f"{root}/sandbox/clock/advance", json={"seconds": seconds}, headers={"Authorization": f"Apikey {MINE}"}
        )
        assert r.status_code == 200, r.text
        return r.json()["now"]

    return go


@pytest.fixture
def channel(client: Client) -> str:
    """A new active channel."""
    return client.create_channel(unique("chan"), description="contract")["channel_id"]


@pytest.fixture
def wallet(client: Client, channel: str, advance: Callable[[int], int]) -> dict:
    """A deployed-or-failed wallet reporting to ``channel``."""
    record = client.create_wallet(wallet_body(status_channel_id=channel))
    advance(120)
    return client.get_wallet(record["wallet_id"])


def wallet_body(**over: Any) -> dict:
    """A valid ``CreateWallet`` body."""
    body = {"name": unique("wallet"), "wallet_owner_address": addr(1), "chain_selector": ETH, "wallet_type": "ecdsa"}
    body.update(over)
    return {k: v for k, v in body.items() if v is not None}


def watcher_body(**over: Any) -> dict:
    """A valid ``CreateWatcherWithService`` body."""
    body = {
        "name": unique("watch"),
        "chain_selector": ETH,
        "address": addr(2),
        "service": "dta",
        "events": ["Transfer"],
    }
    body.update(over)
    return {k: v for k, v in body.items() if v is not None}


def op_body(wallet: dict, **over: Any) -> dict:
    """A valid signed ``CreateOperation`` body for ``wallet`` (``signature=None`` makes a draft)."""
    body = {
        "chain_selector": wallet["chain_selector"],
        "address": wallet["address"],
        "wallet_operation_id": str(next(_n) + 1),
        "deadline": 0,
        "transactions": [{"to": addr(3), "value": "0", "data": "0xa9059cbb"}],
        "signature": "0x" + "ab" * 65,
    }
    body.update(over)
    return {k: v for k, v in body.items() if v is not None}


def query_body(key: str | None = None, **over: Any) -> dict:
    """A valid ``CreateQuery`` body."""
    body = {
        "idempotency_key": key or unique("key"),
        "query_kind": "evm_call",
        "chain_selector": ETH,
        "params": {"contract_address": addr(4), "call_data": "0x70a08231", "block_selection": {"type": "latest"}},
    }
    body.update(over)
    return body


# -- authentication and transport --------------------------------------------------------------------------------------


def test_health_check_needs_no_valid_key(srv) -> None:
    with Client(srv.base_url, "not-a-key-at-all", retry=NO_RETRY) as anyone:
        assert anyone.health_check() == {"status": "ok"}


@pytest.mark.parametrize("key", ["unknown-key", "two words"])
def test_unknown_or_malformed_key_is_authentication_error(srv, key) -> None:
    with Client(srv.base_url, key, retry=NO_RETRY) as stranger:
        for call in (
            stranger.list_networks,
            lambda: list(stranger.iter_channels()),
            lambda: stranger.create_channel("x"),
        ):
            with pytest.raises(errors.AuthenticationError) as info:
                call()
            err = info.value
            assert type(err) is errors.AuthenticationError and err.status == 401
            assert err.type in {t.value for t in spec.ErrorType} and err.type != "ORGANIZATION_NOT_FOUND"
            assert key not in str(err)


def test_not_onboarded_key_is_organization_not_found(srv) -> None:
    with Client(srv.base_url, NOT_ONBOARDED, retry=NO_RETRY) as pending:
        for call in (
            pending.list_networks,
            lambda: pending.get_channel(MISSING),
            lambda: pending.create_wallet(wallet_body()),
        ):
            with refused(errors.OrganizationNotFoundError):
                call()


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer " + MINE}, {"Authorization": "Apikey"}, {"Authorization": MINE}]
)
def test_missing_or_malformed_authorization_header_is_401(srv, headers) -> None:
    """Raw httpx: the client always sends ``Apikey <key>``."""
    r = httpx.get(f"{srv.base_url}/networks", headers=headers)
    assert r.status_code == 401 and set(r.json()) >= {"type", "message"}
    assert r.json()["type"] != "ORGANIZATION_NOT_FOUND"


def test_other_organisations_resources_are_not_found(client, other, advance) -> None:
    cid = other.create_channel(unique("theirs"))["channel_id"]
    wid = other.create_wallet(wallet_body(status_channel_id=cid))["wallet_id"]
    watcher = other.create_watcher(cid, watcher_body())["watcher_id"]
    advance(120)
    wallet = other.get_wallet(wid)
    oid = other.create_operation(cid, op_body(wallet))
    qid = other.create_query(cid, query_body())["query_id"]
    event = other.poll_events(cid).records[0]["event_id"]
    for call, code in [
        (lambda: client.get_channel(cid), "CHANNEL_NOT_FOUND"),
        (lambda: client.rename_channel(cid, unique("mine-now")), "CHANNEL_NOT_FOUND"),
        (lambda: client.get_wallet(wid), "WALLET_NOT_FOUND"),
        (lambda: client.archive_wallet(wid), "WALLET_NOT_FOUND"),
        (lambda: client.get_watcher(cid, watcher), "CHANNEL_NOT_FOUND"),
        (lambda: client.get_operation(cid, oid), "CHANNEL_NOT_FOUND"),
        (lambda: client.get_query(cid, qid), "CHANNEL_NOT_FOUND"),
        (lambda: client.get_event(cid, event), "CHANNEL_NOT_FOUND"),
        (lambda: client.poll_events(cid), "CHANNEL_NOT_FOUND"),
    ]:
        with refused(errors.NotFoundError, code):
            call()
    assert wid not in {w["wallet_id"] for w in client.iter_wallets()}
    assert cid not in {c["channel_id"] for c in client.iter_channels()}


class Wall:
    """The rate limiter's clock, moved only by the client's waits (which then return at once): a 429 answered
    right after a request, and a retry that gets through after its backoff, whatever the machine's speed."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)


@pytest.fixture
def faulty(request, monkeypatch) -> Iterator[ServerHandle]:
    """A sandbox with the fault rates of the test's parameter; its rate limiter on a :class:`Wall` that the
    clients' backoff and Retry-After waits move."""
    wall = Wall()
    sb = Sandbox(orgs=(MINE,), seed=2, empty=True, start=START, **request.param)
    sb.app.faults = FaultInjector(sb.app.faults.config, sb.seed, wall=wall)
    monkeypatch.setattr(client_module, "pause", wall.sleep)
    with sb.serve() as server:
        yield server


@pytest.mark.parametrize("faulty", [{"rate_limit": 1}], indirect=True)
def test_rate_limit_is_rate_limit_error_then_retried(faulty) -> None:
    """As the service: a 429 without Retry-After, so the client takes its own backoff."""
    with Client(faulty.base_url, MINE, retry=NO_RETRY) as c:
        c.list_networks()
        with refused(errors.RateLimitError):
            c.list_networks()
    with pytest.raises(errors.RateLimitError) as info, Client(faulty.base_url, MINE, retry=NO_RETRY) as c:
        c.list_networks()
    assert info.value.retry_after is None and info.value.transient
    patient = RetryPolicy(attempts=8, initial=0.3, maximum=2.0)
    with Client(faulty.base_url, MINE, retry=patient) as c:
        assert len(c.list_networks()) == len(spec.KNOWN_NETWORKS)
        assert c.retries >= 1  # it backed off on its own schedule and succeeded


@pytest.mark.parametrize("faulty", [{"rate_limit": 1, "rate_limit_retry_after": 1}], indirect=True)
def test_rate_limit_retry_after_is_read_when_the_sandbox_sends_one(faulty) -> None:
    with Client(faulty.base_url, MINE, retry=NO_RETRY) as c:
        c.list_networks()
        with pytest.raises(errors.RateLimitError) as info:
            c.list_networks()
    assert info.value.retry_after == 1.0 and info.value.transient
    patient = RetryPolicy(attempts=4, initial=0.05, maximum=2.0)
    with Client(faulty.base_url, MINE, retry=patient) as c:
        assert len(c.list_networks()) == len(spec.KNOWN_NETWORKS)
        assert c.retries >= 1  # it waited out the 429 (Retry-After: 1) and succeeded


@pytest.mark.parametrize("faulty", [{"fail_rate": 1.0}], indirect=True)
def test_server_failure_is_server_error_after_the_retries(faulty) -> None:
    with Client(faulty.base_url, MINE, retry=RetryPolicy(attempts=3, initial=0.0, maximum=0.0, floor=0.0)) as c:
        with refused(errors.ServerError):
            c.list_networks()
        assert c.requests == 3 and c.retries == 2
        assert c.health_check() == {"status": "ok"}


@pytest.mark.parametrize(
    ("faulty", "cls"),
    [
        ({"drop_rate": 1.0}, errors.TransportError),
        ({"truncate_rate": 1.0}, errors.TransportError),
        ({"malformed_rate": 1.0}, errors.ResponseFormatError),
    ],
    indirect=["faulty"],
)
def test_broken_answers_are_transport_errors(faulty, cls) -> None:
    with Client(faulty.base_url, MINE, retry=NO_RETRY) as c, pytest.raises(cls) as info:
        c.list_networks()
    # a list page unreadable after the retries is a BadPageError, the ResponseFormatError that names its page
    assert isinstance(info.value, cls) and info.value.transient and MINE not in str(info.value)
    assert isinstance(info.value, errors.TransportError)


@pytest.mark.parametrize("faulty", [{"slow_rate": 1.0, "slow_seconds": 1.0}], indirect=True)
def test_slow_answer_past_the_timeout_is_transport_error(faulty) -> None:
    with Client(faulty.base_url, MINE, retry=NO_RETRY, timeout=0.2) as c, pytest.raises(errors.TransportError) as info:
        c.list_networks()
    assert "timed out" in str(info.value)


# -- networks ----------------------------------------------------------------------------------------------------------


def test_list_networks(client) -> None:
    networks = client.list_networks()
    assert [n["chain_selector"] for n in networks] == [n.chain_selector for n in spec.KNOWN_NETWORKS]
    assert all(
        set(n) >= {"id", "name", "chain_selector", "chain_id", "chain_family", "created_at", "updated_at"}
        and n["chain_family"] == "evm"
        for n in networks
    )


# -- channels ----------------------------------------------------------------------------------------------------------


def test_channel_create_get_list_rename_archive(client) -> None:
    name = unique("chan")
    created = client.create_channel(name, description="first")
    cid = created["channel_id"]
    assert created["status"] == "active" and created["description"] == "first"
    assert client.get_channel(cid) == created
    with refused(errors.ConflictError, "CHANNEL_ALREADY_EXISTS"):
        client.create_channel(name)
    other = client.create_channel(unique("chan"))["channel_id"]
    with refused(errors.ConflictError, "CHANNEL_ALREADY_EXISTS"):
        client.rename_channel(other, name)
    renamed = client.rename_channel(cid, name + "-renamed")
    assert renamed["name"] == name + "-renamed"
    assert client.update_channel(cid, {"description": ""}).get("description") is None
    assert client.archive_channel(cid)["status"] == "archived"
    assert cid in {c["channel_id"] for c in client.iter_channels()}  # the client names archived explicitly
    shown = {c["channel_id"] for page in client.channel_pages(status=None) for c in page.records}
    assert cid not in shown and other in shown
    assert [c["channel_id"] for c in client.iter_channels(name=name + "-ren")] == [cid]


@pytest.mark.parametrize(
    "body", [{"name": ""}, {"name": "   "}, {"name": "x" * 256}, {"name": "ok", "description": "d" * 256}]
)
def test_channel_create_validation(client, body) -> None:
    with refused(errors.ValidationError):
        client.create_channel(body["name"], description=body.get("description"))


def test_channel_update_errors(client, channel) -> None:
    with refused(errors.NotFoundError, "CHANNEL_NOT_FOUND"):
        client.get_channel(MISSING)
    with refused(errors.NotFoundError, "CHANNEL_NOT_FOUND"):
        client.archive_channel(MISSING)
    with refused(errors.ValidationError):
        client.update_channel(channel, {"status": "deleted"})
    with refused(errors.ValidationError):
        client.rename_channel(channel, " ")
    client.archive_channel(channel)
    # reactivating is a state conflict: 0.8 declares 409 for PATCH /channels/{id} (WIRE.md section 1)
    with refused(errors.ConflictError):
        client.update_channel(channel, {"status": "active"})
    assert client.get_channel(channel)["status"] == "archived"


def test_channel_archive_refused_while_watchers_are_active(client, channel, advance) -> None:
    wid = client.create_watcher(channel, watcher_body())["watcher_id"]
    with refused(errors.ConflictError):
        client.archive_channel(channel)
    client.archive_watcher(channel, wid)
    advance(60)
    assert client.archive_channel(channel)["status"] == "archived"


def test_archived_channel_takes_no_new_work(client, channel, wallet) -> None:
    client.archive_channel(channel)
    for call in (
        lambda: client.create_watcher(channel, watcher_body()),
        lambda: client.create_operation(channel, op_body(wallet)),
        lambda: client.create_query(channel, query_body()),
    ):
        with refused(errors.ValidationError):
            call()


NESTED: list[tuple[str, Callable[[Client, str], Any]]] = [
    ("list watchers", lambda c, cid: list(c.iter_watchers(cid))),
    ("get watcher", lambda c, cid: c.get_watcher(cid, MISSING)),
    ("create watcher", lambda c, cid: c.create_watcher(cid, watcher_body())),
    ("update watcher", lambda c, cid: c.archive_watcher(cid, MISSING)),
    ("list operations", lambda c, cid: list(c.iter_operations(cid))),
    ("get operation", lambda c, cid: c.get_operation(cid, MISSING)),
    ("create operation", lambda c, cid: c.create_operation(cid, op_body({"chain_selector": ETH, "address": addr(5)}))),
    ("finalize operation", lambda c, cid: c.finalize_operation(cid, MISSING, signature="0x", digest="0x")),
    ("cancel operation", lambda c, cid: c.cancel_operation(cid, MISSING)),
    ("list queries", lambda c, cid: list(c.iter_queries(cid))),
    ("get query", lambda c, cid: c.get_query(cid, MISSING)),
    ("create query", lambda c, cid: c.create_query(cid, query_body())),
    ("poll events", lambda c, cid: c.poll_events(cid)),
    ("search events", lambda c, cid: c.search_events(cid)),
    ("get event", lambda c, cid: c.get_event(cid, MISSING)),
]


@pytest.mark.parametrize(("what", "call"), NESTED, ids=[n for n, _ in NESTED])
def test_everything_under_an_unknown_channel_is_channel_not_found(client, what, call) -> None:
    with refused(errors.NotFoundError, "CHANNEL_NOT_FOUND"):
        call(client, MISSING)


# -- wallets -----------------------------------------------------------------------------------------------------------


def test_wallet_create_get_list_rename_archive(client, channel, advance) -> None:
    body = wallet_body(status_channel_id=channel, description="treasury", configuration={"threshold": 2})
    created = client.create_wallet(body)
    wid = created["wallet_id"]
    assert created["status"] == "pending" and created["status_channel_id"] == channel
    assert created["configuration"] == {"threshold": 2}
    with refused(errors.ConflictError, "WALLET_ALREADY_EXISTS"):
        client.create_wallet(wallet_body(name=body["name"]))
    advance(200)
    got = client.get_wallet(wid)
    assert got["status"] in ("deployed", "failed") and got["address"] == created["address"]
    assert [e["payload"]["status"] for e in client.search_events(channel, type="wallet.status").records] == [
        "pending",
        "deploying",
        got["status"],
    ]
    assert [w["wallet_id"] for w in client.iter_wallets(name=body["name"].upper())] == [wid]  # case-insensitive
    assert wid in {w["wallet_id"] for w in client.iter_wallets(chain_selector=ETH, type=["ecdsa"])}
    assert wid not in {w["wallet_id"] for w in client.iter_wallets(chain_selector=SEPOLIA)}
    taken = client.create_wallet(wallet_body())["name"]
    with refused(errors.ConflictError, "WALLET_ALREADY_EXISTS"):
        client.rename_wallet(wid, taken)
    assert client.rename_wallet(wid, body["name"] + "-2")["name"] == body["name"] + "-2"
    archived = client.archive_wallet(wid)
    assert archived["status"] == "archived"
    with refused(errors.ConflictError, "WALLET_ALREADY_ARCHIVED"):
        client.archive_wallet(wid)
    with refused(errors.ConflictError, "WALLET_ALREADY_ARCHIVED"):
        client.create_operation(channel, op_body(archived))
    assert wid in {w["wallet_id"] for w in client.iter_wallets()}  # the client names archived explicitly
    assert wid not in {w["wallet_id"] for page in client.wallet_pages(status=None) for w in page.records}


@pytest.mark.parametrize(
    "change",
    [
        {"wallet_owner_address": "0x12"},
        {"wallet_type": "multisig"},
        {"name": "  "},
        {"description": "x" * 256},
        {"allowed_ecdsa_signers": ["nope"]},
        {"allowed_ecdsa_signers": [addr(1), addr(1)]},
        {"configuration": [1]},
        {"status_channel_id": "not-a-uuid"},
        {"status_channel_id": MISSING},
        {"chain_selector": 42},
    ],
)
def test_wallet_create_validation(client, change) -> None:
    with refused(errors.ValidationError):
        client.create_wallet(wallet_body(**change))


def test_wallet_errors(client) -> None:
    with refused(errors.ConflictError, "CHAIN_UNAVAILABLE"):
        client.create_wallet(wallet_body(chain_selector="42"))
    # 0.8 gives CreateWallet.chain_selector no pattern: any string is a chain, here one that is not available
    with refused(errors.ConflictError, "CHAIN_UNAVAILABLE"):
        client.create_wallet(wallet_body(chain_selector="0xabc"))
    with refused(errors.NotFoundError, "WALLET_NOT_FOUND"):
        client.get_wallet(MISSING)
    with refused(errors.NotFoundError, "WALLET_NOT_FOUND"):
        client.rename_wallet(MISSING, "x")
    wid = client.create_wallet(wallet_body())["wallet_id"]
    with refused(errors.ValidationError):
        client.update_wallet(wid, {"status": "deployed"})
    with refused(errors.ValidationError):
        client.rename_wallet(wid, "")
    with refused(errors.ValidationError):
        list(client.iter_wallets(owner="0x12"))
    with refused(errors.ValidationError):
        list(client.iter_wallets(status=["lost"]))


# -- watchers ----------------------------------------------------------------------------------------------------------


def test_watcher_create_get_list_rename_archive(client, channel, advance) -> None:
    abi = [
        {
            "anonymous": False,
            "name": "Transfer",
            "type": "event",
            "inputs": [{"indexed": True, "internalType": "address", "name": "from", "type": "address"}],
        }
    ]
    from_abi = client.create_watcher(channel, watcher_body(service=None, abi=abi))
    from_service = client.create_watcher(channel, watcher_body(service_config={"asset": "USDC"}))
    assert from_abi["status"] == from_service["status"] == "pending"
    assert from_abi["abi"] == abi and from_service["service"] == "dta"
    wid = from_service["watcher_id"]
    with refused(errors.ConflictError, "WATCHER_ALREADY_EXISTS"):
        client.create_watcher(channel, watcher_body(name=from_service["name"]))
    with refused(errors.ConflictError, "WATCHER_ALREADY_EXISTS"):
        client.rename_watcher(channel, wid, from_abi["name"])
    assert client.rename_watcher(channel, wid, "renamed-watch")["name"] == "renamed-watch"
    advance(3600)
    full = client.get_watcher(channel, wid)
    assert full["status"] in ("active", "failed") and full["service_config"] == {"asset": "USDC"}
    summaries = {w["watcher_id"]: w for w in client.iter_watchers(channel)}
    assert set(summaries) == {wid, from_abi["watcher_id"]}
    assert summaries[wid] == {k: v for k, v in full.items() if k not in ("events", "abi", "service_config")}
    assert [w["watcher_id"] for w in client.iter_watchers(channel, service=["dta"])] == [wid]
    archiving = client.archive_watcher(channel, wid)
    assert archiving["status"] == "archiving"
    with refused(errors.ConflictError):
        client.archive_watcher(channel, wid)
    advance(60)
    assert client.get_watcher(channel, wid)["status"] == "archived"
    assert wid in {w["watcher_id"] for w in client.iter_watchers(channel)}
    assert wid not in {w["watcher_id"] for page in client.watcher_pages(channel, status=None) for w in page.records}
    statuses = [
        e["payload"]["status"] for e in client.search_events(channel, type="watcher.status", watcher_id=wid).records
    ]
    assert statuses == ["pending", full["status"], "archiving", "archived"]


@pytest.mark.parametrize(
    "change",
    [
        {"name": "abc"},
        {"events": []},
        {"service": None},
        {"abi": []},
        {"address": "0x1"},
        {"chain_selector": "1"},
        {"abi": [{"anonymous": False, "name": "X", "type": "event", "inputs": []}]},
    ],
)
def test_watcher_create_validation(client, channel, change) -> None:
    with refused(errors.ValidationError):
        client.create_watcher(channel, watcher_body(**change))


#: The values the 0.8 description allows in the watchers' ``status`` filter (WIRE.md section 3: no archive_failed).
WATCHER_FILTER_0_8 = {"pending", "active", "failed", "archiving", "archived"}


class Recorder(httpx.HTTPTransport):
    """A real HTTP transport that keeps the query of every request it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[dict[str, list[str]]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Record, then send."""
        self.queries.append(parse_qs(request.url.query.decode()))
        return super().handle_request(request)


def test_every_watcher_is_listed_with_filter_values_0_8_allows(sb, srv, client, channel, advance) -> None:
    """Archived and archive_failed watchers are listed by default, and no request names archive_failed."""
    ids = [client.create_watcher(channel, watcher_body())["watcher_id"] for _ in range(4)]
    advance(120)
    kept, archived, torn, failing = ids
    client.archive_watcher(channel, archived)
    client.archive_watcher(channel, failing)
    sb.backend_for(MINE).forced[failing] = True  # its tear-down fails
    advance(120)
    client.archive_watcher(channel, torn)
    statuses = {wid: client.get_watcher(channel, wid)["status"] for wid in ids}
    assert statuses[archived] == "archived" and statuses[failing] == "archive_failed"
    assert statuses[torn] == "archiving" and statuses[kept] in ("active", "failed")
    recorder = Recorder()
    with Client(srv.base_url, MINE, retry=NO_RETRY, transport=recorder) as c:
        listed = [w["watcher_id"] for w in c.iter_watchers(channel)]
    assert sorted(listed) == sorted(ids), "each watcher once, whatever its status"
    sent = [v for q in recorder.queries for v in q.get("status", [])]
    assert set(sent) <= WATCHER_FILTER_0_8 and sent, sent


def _strict_0_8_watchers(watchers: list[dict]) -> Callable[[str, dict], tuple[int, dict, bytes]]:
    """A watcher list answered as a service that validates its query enums against 0.8 would: an unknown status
    value is a 400; without a status filter every watcher but the archived ones; limit/offset as row skips."""

    def answer(path: str, query: dict[str, list[str]]) -> tuple[int, dict, bytes]:
        wanted = query.get("status")
        if wanted and not set(wanted) <= WATCHER_FILTER_0_8:
            body = {"type": "VALIDATION_ERROR", "message": f"status: unknown value {sorted(set(wanted))!r}"}
            return 400, {}, json.dumps(body).encode()
        rows = [w for w in watchers if (w["status"] in wanted if wanted else w["status"] != "archived")]
        limit, offset = int(query.get("limit", ["20"])[0]), int(query.get("offset", ["0"])[0])
        page = {"data": rows[offset : offset + limit], "has_more": offset + limit < len(rows)}
        return 200, {}, json.dumps(page).encode()

    return answer


def test_a_service_validating_its_enums_lists_every_watcher() -> None:
    """Against a 0.8 service that refuses undeclared enum values, the default listing is not refused and returns
    every watcher, on several pages (120 watchers, 20 of each status including archive_failed)."""
    statuses = ["pending", "active", "failed", "archiving", "archived", "archive_failed"]
    watchers = [
        {"watcher_id": f"{i:08x}-0000-4000-8000-000000000000", "channel_id": MISSING, "status": statuses[i % 6]}
        for i in range(120)
    ]
    server = ScriptedServer(_strict_0_8_watchers(watchers))
    with server, Client(server.base_url, MINE, retry=NO_RETRY) as c:
        listed = list(c.iter_watchers(MISSING))
    assert sorted(w["watcher_id"] for w in listed) == sorted(w["watcher_id"] for w in watchers)
    assert len(server.paths) == 3, "two pages of the default listing, one of the archived"


def test_watcher_errors(client, channel) -> None:
    with refused(errors.NotFoundError, "WATCHER_NOT_FOUND"):
        client.get_watcher(channel, MISSING)
    with refused(errors.NotFoundError, "WATCHER_NOT_FOUND"):
        client.rename_watcher(channel, MISSING, "abcd")
    wid = client.create_watcher(channel, watcher_body())["watcher_id"]
    elsewhere = client.create_channel(unique("chan"))["channel_id"]
    with refused(errors.NotFoundError, "WATCHER_NOT_FOUND"):
        client.get_watcher(elsewhere, wid)
    with refused(errors.ValidationError):
        client.update_watcher(channel, wid, {"status": "active"})
    with refused(errors.ValidationError):
        client.rename_watcher(channel, wid, "")


# -- operations --------------------------------------------------------------------------------------------------------


def test_signed_operation(client, channel, wallet, advance) -> None:
    oid = client.create_operation(channel, op_body(wallet))
    op = client.get_operation(channel, oid)
    assert op["status"] == "accepted" and op["signer"]["subject_type"] == "api_key"
    assert op["transactions"] == [{"to": addr(3), "value": "0", "data": "0xa9059cbb"}]
    with refused(errors.ConflictError, "OPERATION_NOT_FINALIZABLE"):
        client.finalize_operation(channel, oid, signature="0x", digest="0x")
    with refused(errors.ConflictError, "OPERATION_NOT_CANCELLABLE"):
        client.cancel_operation(channel, oid)
    advance(3600)
    op = client.get_operation(channel, oid)
    assert op["status"] in ("confirmed", "failed")
    assert oid in {o["operation_id"] for o in client.iter_operations(channel, status=[op["status"]])}
    assert oid in {o["operation_id"] for o in client.iter_operations(channel, wallet_id=wallet["wallet_id"])}
    assert oid not in {o["operation_id"] for o in client.iter_operations(channel, chain_selector=SEPOLIA)}
    trail = client.search_events(channel, type="operation.status", operation_id=oid).records
    assert trail[0]["payload"]["status"] == "accepted" and trail[-1]["payload"]["status"] == op["status"]
    for event in trail:
        needs = spec.event_requires_proof("operation.status", event["payload"]["status"])
        assert len(event["headers"]["proofs"]) == int(needs)


def test_draft_finalize_cancel_and_deadlines(client, channel, wallet, advance, sb) -> None:
    draft = client.create_operation(channel, op_body(wallet, signature=None, deadline=sb.now + 7200))
    assert client.get_operation(channel, draft)["status"] == "pending_signature"
    final = client.finalize_operation(channel, draft, signature="0x" + "cd" * 65, digest="0x" + "ee" * 32)
    assert final["status"] == "accepted" and final["digest"] == "0x" + "ee" * 32

    cancel = client.create_operation(channel, op_body(wallet, signature=None))
    assert client.cancel_operation(channel, cancel)["status"] == "cancelled"
    with refused(errors.ConflictError, "OPERATION_NOT_FINALIZABLE"):
        client.finalize_operation(channel, cancel, signature="0x", digest="0x")

    close = client.create_operation(channel, op_body(wallet, signature=None, deadline=sb.now + 30))
    with refused(errors.ConflictError, "OPERATION_DEADLINE_ELAPSED"):
        client.finalize_operation(channel, close, signature="0x", digest="0x")
    assert client.get_operation(channel, close)["status"] == "expired"

    later = client.create_operation(channel, op_body(wallet, signature=None, deadline=sb.now + 600))
    advance(601)
    assert client.get_operation(channel, later)["status"] == "expired"
    with refused(errors.ConflictError, "OPERATION_DEADLINE_ELAPSED"):
        client.finalize_operation(channel, later, signature="0x", digest="0x")
    with refused(errors.ConflictError, "OPERATION_NOT_CANCELLABLE"):
        client.cancel_operation(channel, later)


@pytest.mark.parametrize(
    "change",
    [
        {"transactions": []},
        {"deadline": -1},
        {"deadline": 2**63},
        {"deadline": "0"},
        {"signature": "0x12"},
        {"address": "0xZZ"},
        {"wallet_operation_id": "12a"},
        {"chain_selector": "1"},
        {"extra": True},
        {"transactions": [{"to": addr(1), "value": "0", "data": "0x"}] * (spec.MAX_TRANSACTIONS_PER_OPERATION + 1)},
        {"transactions": [{"to": addr(1), "value": "1.5", "data": "0x"}]},
        {"transactions": [{"to": addr(1), "value": "0", "data": "0xabc"}]},
        {"transactions": [{"to": addr(1), "value": "0", "data": "0x", "gas": "1"}]},
    ],
)
def test_operation_create_validation(client, channel, wallet, change) -> None:
    with refused(errors.ValidationError):
        client.create_operation(channel, op_body(wallet, **change))


def test_operation_errors(client, channel, wallet) -> None:
    with refused(errors.NotFoundError, "WALLET_NOT_FOUND"):
        client.create_operation(channel, op_body(wallet, address=addr(999)))
    with refused(errors.NotFoundError, "OPERATION_NOT_FOUND"):
        client.get_operation(channel, MISSING)
    with refused(errors.NotFoundError, "OPERATION_NOT_FOUND"):
        client.cancel_operation(channel, MISSING)
    draft = client.create_operation(channel, op_body(wallet, signature=None))
    path = f"channels/{channel}/operations/{draft}"
    for body in (
        {"status": "sent"},
        {"status": "cancelled", "reason": "x"},
        {"status": "accepted", "signature": "0x"},
        {"status": "accepted", "signature": 1, "digest": "0x"},
    ):
        with refused(errors.ValidationError):
            client.request("PATCH", path, json_body=body)  # bodies the typed methods cannot send
    with refused(errors.ValidationError):
        list(client.iter_operations(channel, status=["done"]))
    with refused(errors.ValidationError):
        list(client.iter_operations(channel, wallet_id="not-a-uuid"))


# -- queries -----------------------------------------------------------------------------------------------------------


def test_query_create_idempotency_and_lifecycle(client, channel, advance) -> None:
    key = unique("key")
    first = client.create_query(channel, query_body(key))
    assert first == {"query_id": first["query_id"], "status": "accepted"}
    assert client.create_query(channel, query_body(key)) == first
    with refused(errors.ConflictError, "IDEMPOTENCY_KEY_MISMATCH"):
        client.create_query(channel, query_body(key, chain_selector=SEPOLIA))
    qid = first["query_id"]
    query = client.get_query(channel, qid)
    assert query["status"] == "accepted" and query["expires_at"] == query["created_at"] + spec.QUERY_TTL_SECONDS
    advance(spec.QUERY_TTL_SECONDS + 1)
    query = client.get_query(channel, qid)
    assert query["status"] in spec.QUERY_TERMINAL
    if query["status"] in spec.QUERY_PROOF_STATUSES and "sent_at" in query:  # a DON answer (not a dispatch failure)
        assert query["proof"]["alg"] and json.loads(base64.b64decode(query["verifiable_result"]))["data"]
    assert [q["query_id"] for q in client.iter_queries(channel, status=[query["status"]])] == [qid]
    assert [q["query_id"] for q in client.iter_queries(channel, query_kind=["evm_call"])] == [qid]
    with refused(errors.NotFoundError, "QUERY_NOT_FOUND"):
        client.get_query(channel, MISSING)
    with refused(errors.ValidationError):
        list(client.iter_queries(channel, query_kind=["sql"]))


@pytest.mark.parametrize(
    "change",
    [
        {"idempotency_key": ""},
        {"idempotency_key": "k" * 256},
        {"query_kind": "sql"},
        {"chain_selector": "7"},
        {"metadata": "x"},
        {"extra": 1},
        {"params": {"contract_address": addr(4), "call_data": "70a0", "block_selection": {"type": "latest"}}},
        {"params": {"contract_address": addr(4), "call_data": "0x", "block_selection": {"type": "safe"}}},
        {
            "params": {
                "contract_address": addr(4),
                "call_data": "0x",
                "block_selection": {"type": "block_number", "block_number": "-1"},
            }
        },
    ],
)
def test_query_create_validation(client, channel, change) -> None:
    with refused(errors.ValidationError):
        client.create_query(channel, query_body(**change))


# -- events ------------------------------------------------------------------------------------------------------------


@pytest.fixture
def busy_channel(client, channel, wallet, advance) -> str:
    """A channel with wallet, watcher, operation and query events."""
    client.create_watcher(channel, watcher_body())
    for _ in range(3):
        client.create_operation(channel, op_body(wallet))
    client.create_query(channel, query_body())
    advance(3 * 3600)
    return channel


def test_poll_search_and_fetch_events(client, busy_channel) -> None:
    cid = busy_channel
    everything = [e for page in client.event_pages(cid) for e in page.records]
    assert [e["headers"]["offset"] for e in everything] == list(range(len(everything)))
    assert {e["headers"]["type"] for e in everything} == set(spec.EVENT_TYPES)
    assert client.poll_events(cid, limit=7).records == everything[::-1][:7]  # newest first without offset
    tail = client.poll_events(cid, offset=len(everything) - 2)
    assert tail.records == everything[-2:] and not tail.has_more
    searched = [e for page in client.event_pages(cid, search=True) for e in page.records]
    assert searched == everything
    assert client.get_event(cid, everything[3]["event_id"]) == everything[3]
    first = client.search_events(cid)
    assert first.records == everything[: spec.PAGE_LIMITS["events_search"].default]
    ts = everything[len(everything) // 2]["payload"]["timestamp"]
    window = client.search_events(cid, limit=200, **{"created.gte": ts, "type": ["operation.status"]}).records
    assert (
        window
        == [e for e in everything if e["payload"]["timestamp"] >= ts and e["headers"]["type"] == "operation.status"][
            :200
        ]
    )
    failed_or_confirmed = client.search_events(
        cid, limit=200, type="operation.status", status=["confirmed", "failed"]
    ).records
    assert all(e["payload"]["status"] in ("confirmed", "failed") for e in failed_or_confirmed)


@pytest.mark.parametrize(
    "params",
    [
        {"type": "watcher.event", "status": "active"},
        {"type": "query.status", "address": addr(1)},
        {"type": "unknown.type"},
        {"limit": 201},
        {"limit": 0},
        {"offset": -1},
        {"created.gte": "yesterday"},
        {"status": "confirmed", "event_name": "Transfer"},
    ],
)
def test_search_that_cannot_apply_is_validation_error(client, channel, params) -> None:
    with refused(errors.ValidationError):
        client.search_events(channel, **params)


def test_poll_and_fetch_errors(client, channel) -> None:
    with refused(errors.ValidationError):
        client.poll_events(channel, limit=201)
    with refused(errors.ValidationError):
        client.poll_events(channel, offset=-1)
    with refused(errors.NotFoundError):
        client.get_event(channel, MISSING)


# -- malformed requests the client cannot send (raw httpx) -------------------------------------------------------------


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"", b'"text"'])
def test_bodies_that_are_not_json_objects_are_400(srv, content) -> None:
    r = httpx.post(
        f"{srv.base_url}/channels",
        content=content,
        headers={"Authorization": f"Apikey {MINE}", "Content-Type": "application/json"},
    )
    assert r.status_code == 400 and r.json()["type"] == "VALIDATION_ERROR"


def test_paging_out_of_range_is_validation_error(client) -> None:
    for path, limit in (("wallets", 101), ("channels", 51), ("channels", 0)):
        with refused(errors.ValidationError):
            next(client.offset_pages(path, limit=limit))
