"""The seeded scenario, the clock, the control API and live mode."""

from __future__ import annotations

import functools
import itertools
import time
from collections import Counter

import httpx
import pytest

from tests.sandbox.conftest import NOT_ONBOARDED, SEEDED, START
from toolkit import spec
from toolkit.sandbox import Sandbox
from toolkit.sandbox import sandbox as sandbox_module
from toolkit.sandbox.clock import SimClock
from toolkit.sandbox.networks import MODELS


def _all_event_bytes(sb: Sandbox, key: str) -> list[bytes]:
    org = sb._backends[key].org
    return [log.event_bytes(i) for log in org.logs.values() for i in range(len(log))]


def test_same_seed_and_start_give_byte_identical_history() -> None:
    a = Sandbox(seed=9, days=0.5, operations_per_day=300, start=START)
    b = Sandbox(seed=9, days=0.5, operations_per_day=300, start=START)
    c = Sandbox(seed=10, days=0.5, operations_per_day=300, start=START)
    assert _all_event_bytes(a, "sandbox-key") == _all_event_bytes(b, "sandbox-key")
    assert a.truth("sandbox-key").operations == b.truth("sandbox-key").operations
    assert _all_event_bytes(a, "sandbox-key") != _all_event_bytes(c, "sandbox-key")
    a.advance(900)
    b.advance(900)
    assert _all_event_bytes(a, "sandbox-key") == _all_event_bytes(b, "sandbox-key")


def test_default_construction_starts_now_on_a_minute() -> None:
    """How fast the default sandbox is built is measured by ``python -m benchmarks.sandbox_bench`` (budget 5 s)."""
    sb = Sandbox()
    assert sb.now % 60 == 0 and abs(sb.now - time.time()) < 120


def test_scenario_shape(sb) -> None:
    truth = sb.truth(SEEDED)
    assert len(truth.channels) >= 4 and sum(c["status"] == "archived" for c in truth.channels) == 1
    assert any(w["status"] == "archived" for w in truth.wallets)
    assert all("status_channel_id" in w for w in truth.wallets if w["name"] != "qa-sepolia")
    chains = {o["chain_selector"] for o in truth.operations}
    assert len(chains) >= 5 and any(MODELS[c].is_testnet for c in chains)
    statuses = Counter(o["status"] for o in truth.operations)
    drafts = sum(1 for _, s, _ in truth.transitions if s == "pending_signature")
    assert 0.05 < drafts / len(truth.operations) < 0.16
    assert statuses["failed"] > 0 and statuses["confirmed"] > 0 and statuses["cancelled"] + statuses["expired"] > 0
    in_flight = [
        o
        for o in truth.operations
        if o["status"] not in spec.OPERATION_TERMINAL
        and not (o["status"] == "confirmed_latest" and MODELS[o["chain_selector"]].is_testnet)
    ]
    assert in_flight, "some work is still moving at start"
    assert all(o["created_at"] < START and o["created_at"] >= START - 86400 for o in truth.operations)
    assert {w["status"] for w in truth.watchers} >= {"active", "archived", "failed"}
    assert truth.queries and all(q["created_at"] < START for q in truth.queries)
    watcher_events = sum(
        e["headers"]["type"] == "watcher.event" for c in truth.channels for e in truth.events(c["channel_id"])
    )
    active = sum(w["status"] == "active" for w in truth.watchers)
    assert 10 * active * 24 * 0.5 < watcher_events < 60 * active * 24 * 1.5


def test_failure_reasons_are_realistic(sb) -> None:
    truth = sb.truth(SEEDED)
    reasons = [
        e["payload"]["status_reason"]
        for c in truth.channels
        for e in truth.events(c["channel_id"])
        if e["headers"]["type"] == "operation.status" and e["payload"]["status"] == "failed"
    ]
    assert reasons and all(r for r in reasons)
    assert any(r.startswith("execution reverted") or "gas" in r or "nonce" in r for r in reasons)


def test_clock_advance_moves_in_flight_work(sb, srv) -> None:
    root = srv.base_url.removesuffix("/v1")
    headers = {"Authorization": f"Apikey {SEEDED}"}
    assert httpx.get(f"{root}/sandbox/clock").status_code == 401
    assert (
        httpx.get(f"{root}/sandbox/clock", headers={"Authorization": f"Apikey {NOT_ONBOARDED}"}).json()["type"]
        == "ORGANIZATION_NOT_FOUND"
    )
    now = httpx.get(f"{root}/sandbox/clock", headers=headers).json()["now"]
    assert now == sb.now
    moving = {
        o["operation_id"]
        for o in sb.truth(SEEDED).operations
        if o["status"] not in spec.OPERATION_TERMINAL and o["status"] != "confirmed_latest"
    }
    before = len(sb.truth(SEEDED).transitions)
    r = httpx.post(f"{root}/sandbox/clock/advance", json={"seconds": 3600}, headers=headers)
    assert r.json() == {"now": now + 3600}
    after = sb.truth(SEEDED).transitions
    assert len(after) > before and all(ts <= now + 3600 for _, _, ts in after)
    assert {o for o, _, _ in after[before:]} & moving
    assert httpx.post(f"{root}/sandbox/clock/advance", json={"seconds": -1}, headers=headers).status_code == 400


def test_live_mode_follows_wall_time_and_keeps_producing_work(monkeypatch) -> None:
    """The simulated clock runs ``speed`` times the wall clock, here one the test moves (no sleep, exact)."""
    wall = [1000.0]
    monkeypatch.setattr(sandbox_module, "SimClock", functools.partial(SimClock, wall=lambda: wall[0]))
    # an hour of history is enough behind it: the claim is about the work made after the start
    sb = Sandbox(seed=3, days=1 / 24, operations_per_day=20000, speed=600.0, start=START)
    assert sb.now == START
    ops_before = len(sb.truth("sandbox-key").operations)
    wall[0] += 0.5  # half a wall second: 300 simulated seconds
    assert sb.now == START + 300
    with sb.serve() as server:
        r = httpx.get(f"{server.base_url}/channels", headers={"Authorization": "Apikey sandbox-key"})
        assert r.status_code == 200
    assert len(sb.truth("sandbox-key").operations) > ops_before


def _layout(shape: str) -> dict:
    sb = Sandbox(orgs=("k",), seed=4, days=1, operations_per_day=1500, shape=shape, start=START)
    truth = sb.truth("k")
    channels = truth.channels
    operations = truth.operations
    per_channel = Counter(  # from the logs' index (offset, id, type, created): no event decoded
        c["channel_id"]
        for c in channels
        for _, _, kind, _ in truth.event_index(c["channel_id"])
        if kind == "operation.status"
    )
    return {
        "channels": len(channels),
        "channels with operations": len(per_channel),
        "transactions": Counter(len(o["transactions"]) for o in operations),
        "operations": len(operations),
        "queries": len(truth.queries),
        "drafts in flight": sum(o["status"] == "pending_signature" for o in operations),
        "watcher channels": len({w["channel_id"] for w in truth.watchers}),
    }


@pytest.mark.slow
def test_each_shape_lays_the_history_out_as_its_name_says() -> None:
    default = _layout("default")
    assert default["channels"] == 5 and default["transactions"].keys() <= {1, 2, 3}
    one = _layout("one-channel")
    assert one["channels"] == 1 and one["channels with operations"] == 1 and one["watcher channels"] == 1
    many = _layout("many-channels")
    assert many["channels"] == 300 and many["channels with operations"] > 250
    assert _layout("many-transactions")["transactions"].keys() == {16}
    long_lived = _layout("long-lived")
    assert long_lived["drafts in flight"] > 10 * max(default["drafts in flight"], 1)
    heavy = _layout("query-heavy")
    assert heavy["queries"] > 8 * heavy["operations"] and default["queries"] < default["operations"]


def test_the_cli_knows_every_shape_and_an_unknown_one_is_refused() -> None:
    from toolkit.cli import SANDBOX_SHAPES, main
    from toolkit.sandbox.scenarios import SHAPES

    assert tuple(SHAPES) == SANDBOX_SHAPES
    assert main(["sandbox", "--shape", "no-such-shape", "--port", "0"]) == 2
    with pytest.raises(ValueError, match="unknown scenario shape"):
        Sandbox(shape="no-such-shape")


def test_the_event_index_is_what_the_served_events_say(sb) -> None:
    """``Truth.event_index`` reads ids, types and times from the log's index, signing and decoding nothing: it must
    agree with the events decoded as served."""
    truth = sb.truth(SEEDED)
    for channel in truth.channels:
        events = truth.events(channel["channel_id"])
        index = truth.event_index(channel["channel_id"])
        assert [(o, i, k) for o, i, k, _ in index] == [
            (e["headers"]["offset"], e["event_id"], e["headers"]["type"]) for e in events
        ]
        # the search compares the newest payload time so far (a late event does not step back)
        assert [t for *_, t in index] == list(itertools.accumulate((e["payload"]["timestamp"] for e in events), max))
