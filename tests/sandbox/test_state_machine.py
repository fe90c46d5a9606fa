"""A property-based state-machine test of the sandbox, driven through the toolkit's own client.

Hypothesis runs random sequences of API calls (create channel, wallet, watcher, signed and draft operation, query;
finalize, cancel, archive, rename) and clock advances (``POST /sandbox/clock/advance``) against a fresh, empty
sandbox per example, reached only through :class:`toolkit.api.Client`. The client's requests are answered in this
process by the sandbox's app (:mod:`toolkit.sandbox.inprocess`): the invariants are about the service's state
machines, which a socket adds nothing to (the same app served over HTTP is tested in ``test_client_contract.py``
and the integration tests), and some 10,000 requests no longer each cross one. A model predicts
every call's answer (the created status, or the typed error and its code), and after each step the invariants are
checked against what the API serves:

- every resource's status history, read from its events, follows the state machines of API.md: the first status
  is the initial one, each move is a legal forward move, nothing follows a terminal status;
- exactly one event per move: a call moves exactly the resources it names, by exactly the statuses it should, and
  without a clock advance nothing else moves (no duplicate, no missing event); the status GET and the lists serve is
  the last status of the history;
- per channel, event offsets are unique, contiguous from 0 and increasing, event ids unique, timestamps never step
  back nor pass the clock; what was read once is never rewritten (a full re-read by search equals it);
- wallet events appear only in the wallet's ``status_channel_id`` channel; ``watcher.event`` only from active
  watchers; proofs exactly where :func:`toolkit.spec.event_requires_proof` says, OCR-shaped, bound to the event hash.

The sandbox's seed is drawn by Hypothesis, so a failure replays exactly; Hypothesis prints the steps and the
``@reproduce_failure`` blob.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from toolkit import spec
from toolkit.api import Client
from toolkit.api.retry import RetryPolicy
from toolkit.errors import ConflictError, ValidationError
from toolkit.sandbox import Sandbox
from toolkit.sandbox.inprocess import BASE_URL, InProcessTransport

KEY = "sbx_machine_SECRET-3e71"
START = 1_760_000_000 // 60 * 60
ETH, AVALANCHE, SEPOLIA = "5009297550715157269", "6433500567565415381", "16015286601757825753"
CHAINS = (ETH, AVALANCHE, SEPOLIA)
CHANNEL_NAMES = ("alpha", "beta", "gamma", "delta")
WALLET_NAMES = ("wallet-a", "wallet-b", "wallet-c", "wallet-d", "wallet-e")
WATCHER_NAMES = ("watch-a", "watch-b", "watch-c")
QUERY_KEYS = ("key-1", "key-2", "key-3")
#: seconds between now and a new operation's deadline (None = 0, never expires; negative = already elapsed)
DEADLINES = (None, -100, 30, 90, 600, 3600)
ADVANCES = (1, 2, 5, 15, 60, 300, 900, 3600)
#: which existing resource a rule acts on (modulo the number there are)
PICK = st.integers(0, 15)

#: Legal moves of each state machine of API.md, read forward-only (a status never moves back); the initial statuses.
#: Operations may also expire before confirmation (API.md, Limits 3) and fail from any non-terminal status.
OPERATION_MOVES: dict[str, frozenset[str]] = {
    "pending_signature": frozenset({"accepted", "cancelled", "expired", "failed"}),
    "accepted": frozenset({"sending", "failed", "expired"}),
    "sending": frozenset({"sent", "failed", "expired"}),
    "sent": frozenset({"broadcasting", "failed", "expired"}),
    "broadcasting": frozenset({"confirmed_latest", "failed", "expired"}),
    "confirmed_latest": frozenset({"confirmed_safe", "failed"}),
    "confirmed_safe": frozenset({"confirmed", "failed"}),
    **{s: frozenset() for s in spec.OPERATION_TERMINAL},
}
QUERY_MOVES: dict[str, frozenset[str]] = {
    "accepted": frozenset({"sending", "failed", "expired"}),
    "sending": frozenset({"sent", "failed", "expired"}),
    "sent": frozenset({"completed", "failed", "expired"}),
    **{s: frozenset() for s in spec.QUERY_TERMINAL},
}
WATCHER_MOVES: dict[str, frozenset[str]] = {
    "pending": frozenset({"active", "failed", "archiving"}),
    "active": frozenset({"failed", "archiving"}),
    "failed": frozenset({"archiving"}),
    "archiving": frozenset({"archived", "archive_failed"}),
    "archive_failed": frozenset({"archiving", "failed"}),
    "archived": frozenset(),
}
WALLET_MOVES: dict[str, frozenset[str]] = {
    "pending": frozenset({"deploying", "failed", "archived"}),
    "deploying": frozenset({"deployed", "failed", "archived"}),
    "deployed": frozenset({"archived"}),
    "failed": frozenset({"archived"}),
    "archived": frozenset(),
}
MOVES = {
    "operation.status": OPERATION_MOVES,
    "query.status": QUERY_MOVES,
    "watcher.status": WATCHER_MOVES,
    "wallet.status": WALLET_MOVES,
}
TERMINAL = {
    "operation.status": spec.OPERATION_TERMINAL,
    "query.status": spec.QUERY_TERMINAL,
    "watcher.status": spec.WATCHER_TERMINAL,
    "wallet.status": frozenset({"archived"}),
}
#: watcher statuses that keep a channel from being archived
BLOCKING_WATCHER = frozenset({"pending", "active", "archiving", "archive_failed"})
SUMMARY_DROPS = ("events", "abi", "service_config")


def reachable(moves: dict[str, frozenset[str]], start: str) -> set[str]:
    """Every status reachable from ``start`` in zero or more legal moves."""
    seen, todo = {start}, [start]
    while todo:
        for nxt in moves[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def pick(records: dict[str, dict], index: int) -> str:
    """The id of the ``index``-th record (modulo), in creation order."""
    return list(records)[index % len(records)]


def addr(n: int) -> str:
    """A deterministic address."""
    return "0x" + f"{n:040x}"


class Env:
    """What the machine talks to: one in-process transport whose app each example swaps for a fresh sandbox's, the
    toolkit's client and the control API over it."""

    def __init__(self, transport: InProcessTransport) -> None:
        self.transport = transport
        self.client = Client(BASE_URL, KEY, retry=RetryPolicy(attempts=1), timeout=30, transport=transport)
        self.control = httpx.Client(
            base_url=BASE_URL.removesuffix("/v1"),
            headers={"Authorization": f"Apikey {KEY}"},
            timeout=30,
            transport=transport,
        )

    def use(self, sandbox: Sandbox) -> None:
        """Answer from now on with ``sandbox``."""
        self.transport.app = sandbox.app

    def close(self) -> None:
        """Close both clients."""
        self.client.close()
        self.control.close()


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    """One transport for the module; each example swaps in a fresh sandbox."""
    environment = Env(Sandbox(orgs=(KEY,), empty=True, start=START).transport())
    try:
        yield environment
    finally:
        environment.close()


def expect_error(cls: type[Exception], code: str | None, call: Any, *args: Any) -> None:
    """Assert that ``call(*args)`` raises exactly ``cls`` carrying ``code``."""
    with pytest.raises(cls) as info:
        call(*args)
    assert type(info.value) is cls, info.value
    assert info.value.code == code, info.value  # type: ignore[attr-defined]


class SandboxMachine(RuleBasedStateMachine):
    """Random API calls and clock advances against a model of the service."""

    env: Env

    def __init__(self) -> None:
        super().__init__()
        self.client = self.env.client
        self.now = START
        self.channel: dict[str, dict] = {}
        self.wallet: dict[str, dict] = {}
        self.watcher: dict[str, dict] = {}
        self.op: dict[str, dict] = {}
        self.query: dict[str, dict] = {}
        self.idempotency: dict[tuple[str, str], tuple[int, str]] = {}
        self.events: dict[str, list[dict]] = {}
        self.history: dict[str, list[str]] = {}
        self.event_ids: set[str] = set()
        #: subject -> statuses the last call must add; None after a clock advance (any legal moves)
        self.expected: dict[str, list[str]] | None = {}
        self.touched: list[tuple[str, str]] = []
        self.woid = itertools.count(1)
        self.healthy = False

    # -- helpers ---------------------------------------------------------------------------------------------------

    def _begin(self) -> None:
        """Start a call: by default it moves nothing and touches nothing."""
        self.healthy = False
        self.expected = {}
        self.touched = []

    def _open(self, cid: str) -> bool:
        return self.channel[cid]["status"] != "archived"

    # -- setup -----------------------------------------------------------------------------------------------------

    @initialize(seed=st.integers(0, 2**16), chain=st.sampled_from(CHAINS))
    def start(self, seed: int, chain: str) -> None:
        """A fresh, empty sandbox on a frozen clock, served by the module's server; then a first channel and a
        wallet reporting to it (so every rule has something to act on)."""
        self.env.use(Sandbox(orgs=(KEY,), empty=True, seed=seed, start=START))
        self._begin()
        r = self.env.control.get("/sandbox/clock")
        assert r.status_code == 200 and r.json() == {"now": START}
        assert list(self.client.iter_channels()) == [] and list(self.client.iter_wallets()) == []
        self.create_channel(CHANNEL_NAMES[0])
        self.create_wallet(WALLET_NAMES[0], chain, 0)

    # -- channels --------------------------------------------------------------------------------------------------

    @precondition(lambda self: len(self.channel) < 3)
    @rule(name=st.sampled_from(CHANNEL_NAMES))
    def create_channel(self, name: str) -> None:
        """POST /channels (a taken name is CHANNEL_ALREADY_EXISTS)."""
        self._begin()
        if any(c["name"] == name for c in self.channel.values()):
            expect_error(ConflictError, "CHANNEL_ALREADY_EXISTS", self.client.create_channel, name)
            return
        record = self.client.create_channel(name, description="machine")
        assert record["name"] == name and record["status"] == "active" and record["created_at"] == self.now
        cid = record["channel_id"]
        self.channel[cid] = {"name": name, "status": "active"}
        self.events[cid] = []
        self.touched.append(("channel", cid))

    @rule(c=PICK, name=st.sampled_from(CHANNEL_NAMES))
    def rename_channel(self, c: int, name: str) -> None:
        """PATCH /channels/{id} with a new name."""
        cid = pick(self.channel, c)
        self._begin()
        if any(c["name"] == name for other, c in self.channel.items() if other != cid):
            expect_error(ConflictError, "CHANNEL_ALREADY_EXISTS", self.client.rename_channel, cid, name)
            return
        assert self.client.rename_channel(cid, name)["name"] == name
        self.channel[cid]["name"] = name
        self.touched.append(("channel", cid))

    @precondition(lambda self: sum(c["status"] == "active" for c in self.channel.values()) > 1)
    @rule(c=PICK)
    def archive_channel(self, c: int) -> None:
        """PATCH /channels/{id} status=archived (a conflict while watchers are active)."""
        cid = pick(self.channel, c)
        self._begin()
        blocked = any(w["channel"] == cid and w["status"] in BLOCKING_WATCHER for w in self.watcher.values())
        if self._open(cid) and blocked:
            expect_error(ConflictError, None, self.client.archive_channel, cid)
            return
        assert self.client.archive_channel(cid)["status"] == "archived"
        self.channel[cid]["status"] = "archived"
        self.touched.append(("channel", cid))

    # -- wallets ---------------------------------------------------------------------------------------------------

    @precondition(lambda self: len(self.wallet) < 4)
    @rule(name=st.sampled_from(WALLET_NAMES), chain=st.sampled_from(CHAINS), c=st.none() | PICK)
    def create_wallet(self, name: str, chain: str, c: int | None) -> None:
        """POST /wallets: ``pending``, its event in the status channel (a taken name is WALLET_ALREADY_EXISTS)."""
        status_channel = None if c is None else pick(self.channel, c)
        self._begin()
        body = {"name": name, "wallet_owner_address": addr(1), "chain_selector": chain, "wallet_type": "ecdsa"}
        if status_channel is not None:
            body["status_channel_id"] = status_channel
        if any(w["name"] == name for w in self.wallet.values()):
            expect_error(ConflictError, "WALLET_ALREADY_EXISTS", self.client.create_wallet, body)
            return
        record = self.client.create_wallet(body)
        assert record["status"] == "pending" and record["name"] == name and record["chain_selector"] == chain
        assert record.get("status_channel_id") == status_channel
        wid = record["wallet_id"]
        self.wallet[wid] = {
            "name": name,
            "status": "pending",
            "address": record["address"],
            "chain": chain,
            "channel": status_channel,
        }
        if status_channel is not None:
            self.expected = {wid: ["pending"]}
        self.touched.append(("wallet", wid))

    @rule(w=PICK, name=st.sampled_from(WALLET_NAMES))
    def rename_wallet(self, w: int, name: str) -> None:
        """PATCH /wallets/{id} with a new name."""
        wid = pick(self.wallet, w)
        self._begin()
        if any(w["name"] == name for other, w in self.wallet.items() if other != wid):
            expect_error(ConflictError, "WALLET_ALREADY_EXISTS", self.client.rename_wallet, wid, name)
            return
        assert self.client.rename_wallet(wid, name)["name"] == name
        self.wallet[wid]["name"] = name
        self.touched.append(("wallet", wid))

    @rule(w=PICK)
    def archive_wallet(self, w: int) -> None:
        """PATCH /wallets/{id} status=archived (twice is WALLET_ALREADY_ARCHIVED)."""
        wid = pick(self.wallet, w)
        self._begin()
        wallet = self.wallet[wid]
        if wallet["status"] == "archived":
            expect_error(ConflictError, "WALLET_ALREADY_ARCHIVED", self.client.archive_wallet, wid)
            return
        assert self.client.archive_wallet(wid)["status"] == "archived"
        wallet["status"] = "archived"
        if wallet["channel"] is not None:
            self.expected = {wid: ["archived"]}
        self.touched.append(("wallet", wid))

    # -- watchers --------------------------------------------------------------------------------------------------

    @precondition(lambda self: len(self.watcher) < 4)
    @rule(c=PICK, name=st.sampled_from(WATCHER_NAMES), chain=st.sampled_from(CHAINS), from_abi=st.booleans())
    def create_watcher(self, c: int, name: str, chain: str, from_abi: bool) -> None:
        """POST /channels/{id}/watchers from a service or an ABI: ``pending``."""
        cid = pick(self.channel, c)
        self._begin()
        body: dict[str, Any] = {"name": name, "chain_selector": chain, "address": addr(2), "events": ["Transfer"]}
        if from_abi:
            body["abi"] = [
                {
                    "anonymous": False,
                    "name": "Transfer",
                    "type": "event",
                    "inputs": [{"indexed": True, "internalType": "address", "name": "from", "type": "address"}],
                }
            ]
        else:
            body["service"] = "dta"
        if not self._open(cid):
            expect_error(ValidationError, None, self.client.create_watcher, cid, body)
            return
        if any(w["channel"] == cid and w["name"] == name for w in self.watcher.values()):
            expect_error(ConflictError, "WATCHER_ALREADY_EXISTS", self.client.create_watcher, cid, body)
            return
        record = self.client.create_watcher(cid, body)
        assert record["status"] == "pending" and record["channel_id"] == cid and record["events"] == ["Transfer"]
        wid = record["watcher_id"]
        self.watcher[wid] = {"name": name, "status": "pending", "channel": cid}
        self.expected = {wid: ["pending"]}
        self.touched.append(("watcher", wid))

    @precondition(lambda self: self.watcher)
    @rule(w=PICK, name=st.sampled_from(WATCHER_NAMES))
    def rename_watcher(self, w: int, name: str) -> None:
        """PATCH a watcher with a new name (200)."""
        wid = pick(self.watcher, w)
        self._begin()
        watcher = self.watcher[wid]
        taken = any(
            w["channel"] == watcher["channel"] and w["name"] == name
            for other, w in self.watcher.items()
            if other != wid
        )
        if taken:
            expect_error(
                ConflictError, "WATCHER_ALREADY_EXISTS", self.client.rename_watcher, watcher["channel"], wid, name
            )
            return
        assert self.client.rename_watcher(watcher["channel"], wid, name)["name"] == name
        watcher["name"] = name
        self.touched.append(("watcher", wid))

    @precondition(lambda self: self.watcher)
    @rule(w=PICK)
    def archive_watcher(self, w: int) -> None:
        """PATCH a watcher status=archived: 202 in ``archiving`` (a conflict when already archiving/archived)."""
        wid = pick(self.watcher, w)
        self._begin()
        watcher = self.watcher[wid]
        if watcher["status"] in ("archiving", "archived"):
            expect_error(ConflictError, None, self.client.archive_watcher, watcher["channel"], wid)
            return
        assert self.client.archive_watcher(watcher["channel"], wid)["status"] == "archiving"
        watcher["status"] = "archiving"
        self.expected = {wid: ["archiving"]}
        self.touched.append(("watcher", wid))

    # -- operations ------------------------------------------------------------------------------------------------

    @precondition(lambda self: len(self.op) < 14)
    @rule(c=PICK, w=PICK, signed=st.booleans(), deadline=st.sampled_from(DEADLINES))
    def create_operation(self, c: int, w: int, signed: bool, deadline: int | None) -> None:
        """POST /channels/{id}/operations: ``accepted`` when signed, a ``pending_signature`` draft otherwise."""
        cid, wid = pick(self.channel, c), pick(self.wallet, w)
        self._begin()
        wallet = self.wallet[wid]
        due = 0 if deadline is None else self.now + deadline
        body: dict[str, Any] = {
            "chain_selector": wallet["chain"],
            "address": wallet["address"],
            "wallet_operation_id": str(next(self.woid)),
            "deadline": due,
            "transactions": [{"to": addr(3), "value": "1000", "data": "0xa9059cbb"}],
        }
        if signed:
            body["signature"] = "0x" + "ab" * 65
        if not self._open(cid):
            expect_error(ValidationError, None, self.client.create_operation, cid, body)
            return
        if wallet["status"] == "archived":
            expect_error(ConflictError, "WALLET_ALREADY_ARCHIVED", self.client.create_operation, cid, body)
            return
        oid = self.client.create_operation(cid, body)
        initial = "accepted" if signed else "pending_signature"
        # a draft whose deadline already passed is expired by the background scanner on the next request
        moves = [initial, "expired"] if not signed and due and due <= self.now else [initial]
        self.op[oid] = {"status": moves[-1], "channel": cid, "wallet": wid, "deadline": due, "initial": initial}
        self.expected = {oid: moves}
        self.touched.append(("operation", oid))

    @precondition(lambda self: self.op)
    @rule(o=PICK)
    def finalize(self, o: int) -> None:
        """PATCH status=accepted with signature and digest: only a live draft; an elapsed deadline expires it."""
        oid = pick(self.op, o)
        self._begin()
        op = self.op[oid]
        args = (op["channel"], oid)
        sign = {"signature": "0x" + "cd" * 65, "digest": "0x" + "ee" * 32}
        if op["status"] == "expired":
            expect_error(
                ConflictError, "OPERATION_DEADLINE_ELAPSED", lambda: self.client.finalize_operation(*args, **sign)
            )
        elif op["status"] != "pending_signature":
            expect_error(
                ConflictError, "OPERATION_NOT_FINALIZABLE", lambda: self.client.finalize_operation(*args, **sign)
            )
        elif op["deadline"] and self.now >= op["deadline"] - spec.FINALIZE_DEADLINE_BUFFER_SECONDS:
            expect_error(
                ConflictError, "OPERATION_DEADLINE_ELAPSED", lambda: self.client.finalize_operation(*args, **sign)
            )
            op["status"] = "expired"
            self.expected = {oid: ["expired"]}
        else:
            record = self.client.finalize_operation(*args, **sign)
            assert record["status"] == "accepted" and record["digest"] == sign["digest"]
            assert record["signature"] == sign["signature"] and record["signed_at"] == self.now
            op["status"] = "accepted"
            self.expected = {oid: ["accepted"]}
        self.touched.append(("operation", oid))

    @precondition(lambda self: self.op)
    @rule(o=PICK)
    def cancel(self, o: int) -> None:
        """PATCH status=cancelled: only a draft."""
        oid = pick(self.op, o)
        self._begin()
        op = self.op[oid]
        if op["status"] != "pending_signature":
            expect_error(ConflictError, "OPERATION_NOT_CANCELLABLE", self.client.cancel_operation, op["channel"], oid)
        else:
            record = self.client.cancel_operation(op["channel"], oid)
            assert record["status"] == "cancelled" and record["cancelled_at"] == self.now
            assert record["canceller"]["subject_type"] == "api_key"
            op["status"] = "cancelled"
            self.expected = {oid: ["cancelled"]}
        self.touched.append(("operation", oid))

    # -- queries ---------------------------------------------------------------------------------------------------

    @precondition(lambda self: len(self.query) < 10)
    @rule(c=PICK, key=st.sampled_from(QUERY_KEYS), variant=st.integers(0, 1))
    def create_query(self, c: int, key: str, variant: int) -> None:
        """POST /channels/{id}/queries (202): the same key and body give the same query, another body a conflict."""
        cid = pick(self.channel, c)
        self._begin()
        block = {"type": "latest"} if variant == 0 else {"type": "block_number", "block_number": "123"}
        body = {
            "idempotency_key": key,
            "query_kind": "evm_call",
            "chain_selector": ETH,
            "params": {"contract_address": addr(4), "call_data": "0x70a08231", "block_selection": block},
        }
        if not self._open(cid):
            expect_error(ValidationError, None, self.client.create_query, cid, body)
            return
        seen = self.idempotency.get((cid, key))
        if seen is not None and seen[0] != variant:
            expect_error(ConflictError, "IDEMPOTENCY_KEY_MISMATCH", self.client.create_query, cid, body)
            return
        answer = self.client.create_query(cid, body)
        if seen is not None:
            assert answer == {"query_id": seen[1], "status": self.query[seen[1]]["status"]}
            return
        assert answer["status"] == "accepted" and set(answer) == {"query_id", "status"}
        qid = answer["query_id"]
        self.idempotency[(cid, key)] = (variant, qid)
        self.query[qid] = {"status": "accepted", "channel": cid}
        self.expected = {qid: ["accepted"]}
        self.touched.append(("query", qid))

    # -- time ------------------------------------------------------------------------------------------------------

    @rule(seconds=st.sampled_from(ADVANCES))
    def advance(self, seconds: int) -> None:
        """POST /sandbox/clock/advance: the backend runs every move that falls due."""
        self._begin()
        r = self.env.control.post("/sandbox/clock/advance", json={"seconds": seconds})
        assert r.status_code == 200, r.text
        assert r.json()["now"] == self.now + seconds
        self.now += seconds
        self.expected = None

    # -- invariants ------------------------------------------------------------------------------------------------

    @invariant()
    def served_state_follows_the_state_machines(self) -> None:
        """Read the new events of every channel and the lists; check every invariant of the module docstring."""
        r = self.env.control.get("/sandbox/clock")
        assert r.json() == {"now": self.now}, "the frozen clock moved without an advance"
        added: dict[str, list[str]] = {}
        watcher_events = 0
        for cid, log in self.events.items():
            fresh = [e for page in self.client.event_pages(cid, start=len(log)) for e in page.records]
            for event in fresh:
                watcher_events += self._check_event(cid, log, event, added)
                log.append(event)
            newest = self.client.poll_events(cid, limit=5).records
            assert newest == log[::-1][:5], "poll without offset is the newest events, newest first"
        if self.expected is not None:
            subjects = set(added) | set(self.expected)
            assert {s: added.get(s, []) for s in subjects} == {s: self.expected.get(s, []) for s in subjects}, (
                "a call must move exactly what it names, once per move"
            )
            assert watcher_events == 0, "watchers observed events while the clock stood still"
        self._check_lists()
        self.healthy = True

    def _check_event(self, cid: str, log: list[dict], event: dict, added: dict[str, list[str]]) -> int:
        headers, payload = event["headers"], event["payload"]
        kind = headers["type"]
        assert headers["offset"] == len(log), "offsets are contiguous and increasing per channel"
        assert event["event_id"] not in self.event_ids, "event ids are unique"
        self.event_ids.add(event["event_id"])
        assert kind in spec.EVENT_TYPES
        ts = payload["timestamp"]
        assert ts <= self.now and (not log or ts >= log[-1]["payload"]["timestamp"])
        subject = payload[spec.EVENT_SUBJECT_FIELD[kind]]
        # a query that failed before reaching sent failed in dispatch: the DON never answered, no proof is owed
        in_dispatch = kind == "query.status" and "sent" not in self.history.get(subject, [])
        self._check_proofs(kind, payload, headers["proofs"], in_dispatch)
        if kind == "watcher.event":
            assert self.watcher[subject]["channel"] == cid
            assert self.history[subject][-1] == "active", "only an active watcher observes events"
            return 1
        owner = {
            "operation.status": self.op,
            "query.status": self.query,
            "watcher.status": self.watcher,
            "wallet.status": self.wallet,
        }[kind]
        assert subject in owner, f"{kind} event for a resource of no call: {subject}"
        assert owner[subject]["channel"] == cid, f"{kind} event outside its channel"
        status, trail = payload["status"], self.history.setdefault(subject, [])
        if trail:
            assert trail[-1] not in TERMINAL[kind], f"{kind}: {status} after terminal {trail[-1]}"
            assert status in MOVES[kind][trail[-1]], f"{kind}: illegal move {trail[-1]} -> {status}"
        else:
            initial = (
                self.op[subject]["initial"]
                if kind == "operation.status"
                else {"query.status": "accepted", "watcher.status": "pending", "wallet.status": "pending"}[kind]
            )
            assert status == initial, f"{kind}: first status {status}, expected {initial}"
        trail.append(status)
        added.setdefault(subject, []).append(status)
        return 0

    @staticmethod
    def _check_proofs(kind: str, payload: dict, proofs: list, failed_in_dispatch: bool) -> None:
        if not spec.event_requires_proof(kind, payload.get("status"), failed_in_dispatch=failed_in_dispatch):
            assert proofs == [], f"{kind} {payload.get('status')} must carry no proof"
            return
        assert len(proofs) == 1, f"{kind} {payload.get('status')} must carry one proof"
        proof = proofs[0]
        assert set(proof) >= {"alg", "ocr_report", "ocr_context", "signatures"}
        assert len(proof["signatures"]) >= spec.PROOF_MIN_SIGNATURES
        report = bytes.fromhex(proof["ocr_report"].removeprefix("0x"))
        assert len(report) >= 141 and "0x" + report[-32:].hex() == payload["event_hash"]

    def _check_lists(self) -> None:
        channels = {c["channel_id"]: c for c in self.client.iter_channels()}
        assert {cid: (c["name"], c["status"]) for cid, c in channels.items()} == {
            cid: (m["name"], m["status"]) for cid, m in self.channel.items()
        }
        shown = {c["channel_id"] for page in self.client.channel_pages(status=None) for c in page.records}
        assert shown == {cid for cid, m in self.channel.items() if m["status"] != "archived"}

        wallets = {w["wallet_id"]: w for w in self.client.iter_wallets()}
        assert set(wallets) == set(self.wallet)
        for wid, w in wallets.items():
            model = self.wallet[wid]
            assert w["name"] == model["name"] and w["address"] == model["address"]
            self._follow(wid, w["status"], model, WALLET_MOVES, has_events=model["channel"] is not None)
        shown = {w["wallet_id"] for page in self.client.wallet_pages(status=None) for w in page.records}
        assert shown == {wid for wid, m in self.wallet.items() if m["status"] != "archived"}

        served: dict[str, dict] = {"channel": channels, "wallet": wallets}
        for kind, models, lister in (
            ("watcher", self.watcher, self.client.iter_watchers),
            ("operation", self.op, self.client.iter_operations),
            ("query", self.query, self.client.iter_queries),
        ):
            listed = {r[f"{kind}_id"]: r for cid in self.channel for r in lister(cid)}
            assert set(listed) == set(models), f"every {kind} listed once in its channel"
            for rid, record in listed.items():
                self._follow(rid, record["status"], models[rid], None, has_events=True)
            served[kind] = listed
        for record in served["watcher"].values():
            assert not set(SUMMARY_DROPS) & set(record), "watcher lists carry summaries"
        for kind, rid in self.touched:
            self._check_get(kind, rid, served[kind][rid])

    def _follow(
        self, rid: str, status: str, model: dict, moves: dict[str, frozenset[str]] | None, has_events: bool
    ) -> None:
        """The served status is the last of the event history; without events it only moves forward."""
        if has_events:
            assert status == self.history[rid][-1], f"{rid}: served {status}, events say {self.history[rid]}"
        else:
            assert moves is not None and status in reachable(moves, model["status"]), (
                f"{rid}: {model['status']} -> {status}"
            )
            if self.expected is not None:
                assert status == model["status"], "nothing moves while the clock stands still"
        model["status"] = status

    def _check_get(self, kind: str, rid: str, listed: dict) -> None:
        if kind == "channel":
            got = self.client.get_channel(rid)
        elif kind == "wallet":
            got = self.client.get_wallet(rid)
        elif kind == "watcher":
            got = self.client.get_watcher(self.watcher[rid]["channel"], rid)
            got = {k: v for k, v in got.items() if k not in SUMMARY_DROPS}
        elif kind == "operation":
            got = self.client.get_operation(self.op[rid]["channel"], rid)
        else:
            got = self.client.get_query(self.query[rid]["channel"], rid)
        assert got == listed, f"GET and the list serve the same {kind}"

    def teardown(self) -> None:
        """After a clean run: a full re-read of every channel by search equals what was read step by step."""
        if not self.healthy:
            return
        for cid, log in self.events.items():
            everything = [e for page in self.client.event_pages(cid, search=True) for e in page.records]
            assert everything == log, "events read once are never rewritten"


@pytest.mark.slow
def test_random_calls_and_clock_advances_keep_every_invariant(env: Env) -> None:
    """Bounded: about 20-40 s of random sequences; Hypothesis prints the failing steps and a reproduce blob."""
    SandboxMachine.env = env
    run_state_machine_as_test(
        SandboxMachine,
        settings=settings(
            max_examples=75,
            stateful_step_count=40,
            deadline=None,
            print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )
