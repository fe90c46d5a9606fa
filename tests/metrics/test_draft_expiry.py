"""Issue 29, item 1: ``draft_expiry_rate`` projects drafts still waiting on their deadline's clock. The expectation is
recomputed here in plain Python from the raw HTTP answers of a ``long-lived`` sandbox (drafts with 4–5-day
deadlines), following docs/metrics.md ("Drafts, on their deadline's clock"), with loops, not the toolkit's code."""

from __future__ import annotations

from collections import defaultdict

import pandas as pd
import pytest

from benchmarks.support import rawhistory as raw
from tests.conftest import TEST_KEY
from toolkit import metrics
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.sandbox import Sandbox

pytestmark = pytest.mark.slow
START = 1_795_000_000
RELAY = ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed", "failed")


@pytest.fixture(scope="module")
def long_lived(tmp_path_factory):
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=3, days=5, operations_per_day=300, shape="long-lived", start=START)
    path = str(tmp_path_factory.mktemp("drafts") / "long.duckdb")
    with sandbox.serve(host="127.0.0.1", port=0) as server:
        sync(Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={}), quiet=True)
        ops, as_of = raw.read_history(server.base_url, TEST_KEY)  # one read of every list and log
    return path, ops, as_of


def _relayed_at(op: raw.RawOperation) -> int | None:
    times = [op.first(s) for s in RELAY if op.first(s) is not None]
    return min(times) if times else None


def _observation(op: raw.RawOperation, fate: str | None, as_of: int) -> tuple[float, bool] | None:
    """(u, left) of a draft with a deadline: left when relayed or cancelled, at 1 when expired, else censored."""
    window = op.deadline - op.created_at
    if fate == "draft_expired":
        return 1.0, False
    if fate == "draft_cancelled":
        return min((op.entries()[-1][1] - op.created_at) / window, 1 - 1e-9), True
    relayed = _relayed_at(op)
    if relayed is not None:
        return min(max((relayed - op.created_at) / window, 0.0), 1 - 1e-9), True
    if fate is None:
        return min(max((as_of - op.created_at) / window, 0.0), 1.0), False
    return None


def _p_expire(reference: list[tuple[float, bool]], u0: float) -> float:
    """Product over the leaving times after u0 of (1 - leaving / at risk): staying a draft up to the deadline."""
    if u0 >= 1:
        return 1.0
    p = 1.0
    for t in sorted({u for u, left in reference if left and u > u0}):
        leaving = sum(1 for u, left in reference if left and u == t)
        at_risk = sum(1 for u, _ in reference if u >= t)
        p *= 1 - leaving / at_risk
    return p


def test_draft_expiry_on_the_deadlines_clock_matches_a_hand_computation(long_lived) -> None:
    path, ops, as_of = long_lived
    latest_only = raw.latest_only_networks(ops)
    fates = {o.operation_id: raw.outcome(o, latest_only) for o in ops}
    by_network: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for op in ops:
        was_draft = any(s == "pending_signature" for s, _ in op.entries()) or op.last_status() == "pending_signature"
        if was_draft and op.deadline is not None and op.deadline > op.created_at:
            obs = _observation(op, fates[op.operation_id], as_of)
            if obs is not None:
                by_network[op.network].append(obs)
    pooled = [o for obs in by_network.values() for o in obs]
    since = as_of - 2 * 86400
    want: dict[str, list[float]] = defaultdict(list)
    waiting_seen = 0
    for op in ops:
        if not since <= op.created_at < as_of + 1:
            continue
        fate = fates[op.operation_id]
        waiting = fate is None and _relayed_at(op) is None and op.last_status() == "pending_signature"
        if fate is not None:
            want[op.network].append(1.0 if fate == "draft_expired" else 0.0)
        elif waiting and op.deadline:
            waiting_seen += 1
            ref = by_network[op.network] if len(by_network[op.network]) >= 20 else pooled
            want[op.network].append(_p_expire(ref, (as_of - op.created_at) / (op.deadline - op.created_at)))
        else:
            want[op.network].append(0.0)
    assert waiting_seen >= 20, "too few drafts waiting at the reading to test the projection"
    rates = metrics.failure_rates(
        path, since=pd.Timestamp(since, unit="s", tz="UTC"), until=pd.Timestamp(as_of + 1, unit="s", tz="UTC")
    ).set_index("network")
    for network, values in want.items():
        row = rates.loc[network]
        assert row["draft_expiry_rate"] == pytest.approx(sum(values) / len(values)), network
        assert row["draft_expiry_rate_low"] <= row["draft_expiry_rate"] <= row["draft_expiry_rate_high"], network
