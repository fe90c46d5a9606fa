"""Metrics against the truth: the sandbox knows every transition it made; a sync over real HTTP must give exactly
the failure rates, finality stages and query latencies computed independently from that truth."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from tests.conftest import TEST_KEY
from toolkit import metrics, spec
from toolkit.config import Settings
from toolkit.sync import sync

pytestmark = pytest.mark.slow
RELAY = {"accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed", "failed"}


@pytest.fixture(scope="module")
def synced(server, tmp_path_factory):
    path = tmp_path_factory.mktemp("exact") / "sync.duckdb"
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={})
    result = sync(settings, quiet=True)
    assert result.outcome == "ok", result.summary()
    return str(path)


@pytest.fixture(scope="module")
def truth(sandbox):
    """Per operation: network name and {status: time entered}, from the engine's own record of its moves."""
    t = sandbox.truth(TEST_KEY)
    names = {n["chain_selector"]: n["name"] for n in t.networks}
    kinds = {n["name"]: n["type"] for n in t.networks}
    network = {o["operation_id"]: names[o["chain_selector"]] for o in t.operations}
    moves: dict[str, dict[str, int]] = defaultdict(dict)
    for op, status, ts in t.transitions:
        moves[op].setdefault(status, ts)
    return network, moves, kinds, t.queries, names


def last_status(entered: dict[str, int]) -> str:
    return max(entered, key=lambda s: (entered[s], spec.OPERATION_STAGE_ORDER[s]))


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(centre - half, 0.0), min(centre + half, 1.0)


def latest_only_networks(network, moves) -> set[str]:
    reached = defaultdict(set)
    for op, entered in moves.items():
        reached[network[op]] |= set(entered)
    return {n for n, s in reached.items() if "confirmed_latest" in s and not s & {"confirmed_safe", "confirmed"}}


def test_latest_only_networks_are_the_test_networks(truth) -> None:
    network, moves, kinds, _, _ = truth
    latest_only = latest_only_networks(network, moves)
    assert latest_only and all(kinds[n] == "testnet" for n in latest_only)


def outcome_of(entered: dict[str, int], latest_only: bool) -> str | None:
    """An operation's outcome as docs/metrics.md defines it, from the truth."""
    last = last_status(entered)
    relayed = bool(RELAY & set(entered))
    if last in ("confirmed", "failed"):
        return last
    if last in ("expired", "cancelled"):
        return last if relayed else f"draft_{last}"
    if last == "confirmed_latest" and latest_only:
        return "confirmed"
    return "unknown" if last not in spec.OPERATION_STATUSES else None


def test_failure_rates_match_the_truth_exactly(synced, truth) -> None:
    network, moves, kinds, _, _ = truth
    # latest-only by type: a testnet where nothing reached confirmed_safe or confirmed; never a mainnet
    latest_only = {n for n in latest_only_networks(network, moves) if kinds[n] == "testnet"}
    want: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for op, name in network.items():
        outcome = outcome_of(moves[op], name in latest_only)
        relayed = bool(RELAY & set(moves[op]))
        counts = want[name]
        counts["operations"] += 1
        counts["relayed"] += relayed
        counts["terminal"] += relayed and outcome is not None
        counts["in_flight"] += outcome is None
        if outcome:
            counts[outcome] += 1
    df = metrics.failure_rates(synced).set_index("network")
    assert set(df.index) == set(want)
    cols = ["operations", "relayed", "terminal", "confirmed", "failed", "expired", "cancelled"]
    cols += ["draft_expired", "draft_cancelled", "unknown", "in_flight"]
    for name, counts in want.items():
        row = df.loc[name]
        for col in cols:
            assert row[col] == counts[col], (name, col)
        if counts["in_flight"] == 0:  # nothing to project: the plain rate over relayed operations
            assert row.failure_rate == pytest.approx(counts["failed"] / counts["terminal"])
            assert (row.failure_rate_low, row.failure_rate_high) == pytest.approx(
                wilson(counts["failed"], counts["terminal"])
            )
        assert row.failure_rate_low <= row.failure_rate <= row.failure_rate_high
        assert row.draft_expiry_rate_low <= row.draft_expiry_rate <= row.draft_expiry_rate_high


def quantiles(values: list[float]) -> tuple[float, float]:
    if not values:
        return (math.nan, math.nan)
    return float(np.quantile(values, 0.5)), float(np.quantile(values, 0.9))


def test_finality_breakdown_matches_the_truth_exactly(synced, truth) -> None:
    network, moves, _, _, _ = truth
    latest_only = latest_only_networks(network, moves)
    per: dict[str, dict] = defaultdict(lambda: defaultdict(int) | {"times": defaultdict(list)})
    for op, name in network.items():
        entered = moves[op]
        if not RELAY & set(entered):
            continue
        row = per[name]
        row["operations"] += 1
        row["reached_latest"] += bool({"confirmed_latest", "confirmed_safe", "confirmed"} & set(entered))
        row["reached_safe"] += bool({"confirmed_safe", "confirmed"} & set(entered))
        row["reached_finalized"] += "confirmed" in entered
        row["failed"] += last_status(entered) == "failed"
        for label, (end, start) in metrics.FINALITY_TIMES.items():
            end_s, start_s = end.removesuffix("_at"), start.removesuffix("_at")
            if end_s in entered and start_s in entered:
                row["times"][label].append(entered[end_s] - entered[start_s])
    df = metrics.finality_breakdown(synced).set_index("network")
    assert set(df.index) == set(per)
    for name, want in per.items():
        got = df.loc[name]
        for col in ("operations", "reached_latest", "reached_safe", "reached_finalized", "failed"):
            assert got[col] == want[col], (name, col)
        assert bool(got.latest_only) == (name in latest_only)
        for label in metrics.FINALITY_TIMES:
            p50, p90 = quantiles(want["times"][label])
            assert (got[f"{label}_p50_s"], got[f"{label}_p90_s"]) == pytest.approx((p50, p90), nan_ok=True), (
                name,
                label,
            )
    assert df["latest_only"].any() and not df["latest_only"].all()


def test_query_latency_matches_the_truth_exactly(synced, truth) -> None:
    _, _, _, queries, names = truth
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for q in queries:
        outcome = q["status"] if q["status"] in spec.QUERY_TERMINAL else "in_flight"
        groups[(names[q["chain_selector"]], outcome)].append(q)
    df = metrics.query_latency(synced)
    got = {(r.network, r.outcome): r for r in df.itertuples()}
    assert set(got) == set(groups)
    for key, qs in groups.items():
        row = got[key]
        assert row.queries == len(qs)
        terminal = [q for q in qs if q["status"] in spec.QUERY_TERMINAL]
        pairs = {
            "accepted_to_sending": [q["sending_at"] - q["accepted_at"] for q in qs if q.get("sending_at")],
            "sending_to_sent": [q["sent_at"] - q["sending_at"] for q in qs if q.get("sent_at") and q.get("sending_at")],
            "sent_to_terminal": [q[f"{q['status']}_at"] - q["sent_at"] for q in terminal if q.get("sent_at")],
            "accepted_to_terminal": [q[f"{q['status']}_at"] - q["accepted_at"] for q in terminal],
        }
        for label, values in pairs.items():
            assert (getattr(row, f"{label}_p50_s"), getattr(row, f"{label}_p90_s")) == pytest.approx(
                quantiles(values), nan_ok=True
            ), (key, label)
