"""Metrics against the truth: the sandbox knows every transition it made; a sync over real HTTP must give exactly
the failure rates, finality stages and query latencies computed independently from that truth."""

from __future__ import annotations

import math
from collections import defaultdict

import duckdb
import pytest

from tests.conftest import TEST_KEY
from tests.metrics.km_reference import km_percentile
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


def test_failure_rates_match_the_truth_exactly(synced, truth) -> None:
    network, moves, _, _, _ = truth
    latest_only = latest_only_networks(network, moves)
    want: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for op, name in network.items():
        last = last_status(moves[op])
        outcome = (
            last
            if last in spec.OPERATION_TERMINAL
            else ("confirmed" if last == "confirmed_latest" and name in latest_only else None)
        )
        counts = want[name]
        counts["operations"] += 1
        counts["terminal"] += outcome is not None
        if outcome:
            counts[outcome] += 1
    df = metrics.failure_rates(synced).set_index("network")
    assert set(df.index) == set(want)
    for name, counts in want.items():
        row = df.loc[name]
        for col in ("operations", "terminal", "confirmed", "failed", "expired", "cancelled"):
            assert row[col] == counts[col], (name, col)
        assert row.in_flight == counts["operations"] - counts["terminal"]
        assert row.failure_rate == pytest.approx(counts["failed"] / counts["terminal"])
        assert (row.failure_rate_low, row.failure_rate_high) == pytest.approx(
            wilson(counts["failed"], counts["terminal"])
        )
    assert df["failed"].sum() > 0 and df["expired"].sum() > 0 and df["cancelled"].sum() > 0


#: The finality times, written out here rather than read from the code under test: (end status, start status).
STAGE_TIMES = {
    "to_latest": ("confirmed_latest", "accepted"),
    "to_safe": ("confirmed_safe", "accepted"),
    "to_finalized": ("confirmed", "accepted"),
    "latest_to_safe": ("confirmed_safe", "confirmed_latest"),
    "safe_to_finalized": ("confirmed", "confirmed_safe"),
    "latest_to_finalized": ("confirmed", "confirmed_latest"),
}
STAGES = ("confirmed_latest", "confirmed_safe", "confirmed")


@pytest.fixture(scope="module")
def as_of(synced) -> float:
    """The time the data is as of: the newest event time stored (unix seconds), read with plain SQL."""
    with duckdb.connect(synced, read_only=True) as con:
        return float(con.execute("SELECT epoch(max(ts)) FROM events").fetchone()[0])


def percentiles(observations: list[tuple[float, bool]]) -> tuple[float, float]:
    """p50 and p90 of (duration, censored) pairs by the naive reference Kaplan-Meier, with the sample-size rule."""
    durations = [d for d, _ in observations]
    censored = [c for _, c in observations]
    return km_percentile(durations, censored, 0.5), km_percentile(durations, censored, 0.9)


def test_finality_breakdown_matches_the_truth_exactly(synced, truth, as_of) -> None:
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
        last = last_status(entered)
        row["failed"] += last == "failed"
        in_flight = last not in spec.OPERATION_TERMINAL and not (last == "confirmed_latest" and name in latest_only)
        for label, (end, start) in STAGE_TIMES.items():
            if start not in entered:
                continue
            if end in entered:
                row["times"][label].append((entered[end] - entered[start], False))
                continue
            later = STAGES[STAGES.index(end) + 1 :]
            never = name in latest_only and end != "confirmed_latest"
            if in_flight and not never and not set(later) & set(entered):
                row["times"][label].append((as_of - entered[start], True))
    df = metrics.finality_breakdown(synced).set_index("network")
    assert set(df.index) == set(per)
    for name, want in per.items():
        got = df.loc[name]
        for col in ("operations", "reached_latest", "reached_safe", "reached_finalized", "failed"):
            assert got[col] == want[col], (name, col)
        assert bool(got.latest_only) == (name in latest_only)
        for label in STAGE_TIMES:
            observations = want["times"][label]
            p50, p90 = percentiles(observations)
            assert (got[f"{label}_p50_s"], got[f"{label}_p90_s"]) == pytest.approx((p50, p90), nan_ok=True), (
                name,
                label,
            )
            assert got[f"{label}_censored"] == sum(c for _, c in observations), (name, label)
    assert df["latest_only"].any() and not df["latest_only"].all()


def test_query_latency_matches_the_truth_exactly(synced, truth, as_of) -> None:
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
        pairs: dict[str, list[tuple[float, bool]]] = defaultdict(list)
        for q in qs:
            done = q["status"] in spec.QUERY_TERMINAL
            at = {s: q.get(f"{s}_at") for s in ("accepted", "sending", "sent")}
            at["terminal"] = q.get(f"{q['status']}_at") if done else None
            for label, (start, end, later) in (
                ("accepted_to_sending", ("accepted", "sending", ("sent", "terminal"))),
                ("sending_to_sent", ("sending", "sent", ("terminal",))),
                ("sent_to_terminal", ("sent", "terminal", ())),
                ("accepted_to_terminal", ("accepted", "terminal", ())),
            ):
                if not at[start]:
                    continue
                if at[end]:
                    pairs[label].append((at[end] - at[start], False))
                elif not done and not any(at[s] for s in later):
                    pairs[label].append((as_of - at[start], True))  # in flight: censored now
        for label in ("accepted_to_sending", "sending_to_sent", "sent_to_terminal", "accepted_to_terminal"):
            observations = pairs[label]
            assert (getattr(row, f"{label}_p50_s"), getattr(row, f"{label}_p90_s")) == pytest.approx(
                percentiles(observations), nan_ok=True
            ), (key, label)
            assert getattr(row, f"{label}_censored") == sum(c for _, c in observations), (key, label)


def test_the_comparison_covers_censored_operations(synced) -> None:
    df = metrics.finality_breakdown(synced)
    assert df[[c for c in df.columns if c.endswith("_censored")]].to_numpy().sum() > 0
    assert metrics.status_latency(synced)["censored"].sum() > 0
