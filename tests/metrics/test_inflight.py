"""Outcomes and in-flight projections (docs/metrics.md) on hand-built warehouses; every expected value is worked out
here from the scenario, by plain arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tests.support.builders import ETHEREUM, NETWORKS, SEPOLIA, T0, build, ladder, query_event, refresh
from toolkit import metrics
from toolkit.metrics import inflight
from toolkit.metrics.stats import wilson_interval

FULL = ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed")
TO_LATEST = FULL[:5]
FAILS = ("accepted", "sending", "sent", "broadcasting", "failed")
UNTYPED = "1111111111111111111"
UNTYPED_NETWORK = {
    "id": "n-x",
    "name": "Untyped Chain",
    "chain_selector": UNTYPED,
    "chain_id": "999",
    "chain_family": "evm",
    "created_at": T0,
    "updated_at": T0,
}


@pytest.fixture(params=["live", "refreshed"])
def mode(request) -> str:
    """Every case on the live views and on the materialised models."""
    return request.param


def make(tmp_path, mode: str, **records):
    wh = build(tmp_path / "w.duckdb", **records)
    return refresh(wh) if mode == "refreshed" else wh


def wilson(k: float, n: float) -> tuple[float, float]:
    low, high = wilson_interval(k, n)
    return float(low), float(high)


def test_drafts_are_not_in_the_failure_rate(tmp_path, mode) -> None:
    events = ladder("f1", ("accepted", "sending", "failed"), (0, 1, 5), reason="out of gas")
    for i in range(3):
        events += ladder(f"c{i}", FULL, (0, 1, 2, 3, 15, 400, 800))
    events += ladder("x1", ("accepted", "sending", "expired"), (0, 1, 900), reason="deadline elapsed")
    events += ladder("d1", ("pending_signature", "expired"), (0, 600), reason="deadline elapsed before signing")
    events += ladder("d2", ("pending_signature", "expired"), (0, 700), reason="deadline elapsed before signing")
    events += ladder("d3", ("pending_signature", "cancelled"), (0, 60))
    row = metrics.failure_rates(make(tmp_path, mode, events=events)).iloc[0]
    assert (row.operations, row.relayed, row.terminal, row.in_flight) == (8, 5, 5, 0)
    assert (row.confirmed, row.failed, row.expired, row.cancelled) == (3, 1, 1, 0)
    assert (row.draft_expired, row.draft_cancelled, row.unknown) == (2, 1, 0)
    # over the 5 relayed operations only; nothing in flight: the plain Wilson interval
    assert row.failure_rate == pytest.approx(1 / 5) and row.expiry_rate == pytest.approx(1 / 5)
    assert (row.failure_rate_low, row.failure_rate_high) == pytest.approx(wilson(1, 5))
    assert row.draft_expiry_rate == pytest.approx(2 / 8) and row.draft_cancel_rate == pytest.approx(1 / 8)
    assert (row.draft_expiry_rate_low, row.draft_expiry_rate_high) == pytest.approx(wilson(2, 8))


def test_an_unknown_last_status_is_its_own_outcome(tmp_path, mode) -> None:
    events = ladder("ok", FULL, (0, 1, 2, 3, 15, 400, 800))
    events += ladder("odd", ("accepted", "sending", "quarantined"), (0, 1, 50))
    row = metrics.failure_rates(make(tmp_path, mode, events=events)).iloc[0]
    assert (row.operations, row.relayed, row.terminal, row.unknown, row.in_flight) == (2, 2, 2, 1, 0)
    assert (row.confirmed, row.failed) == (1, 0)
    assert row.failure_rate == 0.0 and (row.failure_rate_low, row.failure_rate_high) == pytest.approx(wilson(0, 2))


def test_latest_only_is_decided_by_the_network_type(tmp_path, mode) -> None:
    events = ladder("e1", TO_LATEST, (0, 1, 2, 3, 15))  # mainnet: waiting for safe, in flight
    events += ladder("s1", TO_LATEST, (0, 1, 2, 3, 12), chain=SEPOLIA)  # testnet: ends at latest
    events += ladder("u1", TO_LATEST, (0, 1, 2, 3, 20), chain=UNTYPED)  # no type: inferred from its operations
    wh = make(tmp_path, mode, events=events, networks=[*NETWORKS, UNTYPED_NETWORK])
    rates = metrics.failure_rates(wh).set_index("network")
    assert (rates.loc["Ethereum Mainnet", "confirmed"], rates.loc["Ethereum Mainnet", "in_flight"]) == (0, 1)
    assert (rates.loc["Ethereum Sepolia", "confirmed"], rates.loc["Ethereum Sepolia", "in_flight"]) == (1, 0)
    assert (rates.loc["Untyped Chain", "confirmed"], rates.loc["Untyped Chain", "in_flight"]) == (1, 0)
    fin = metrics.finality_breakdown(wh).set_index("network")
    assert fin["latest_only"].to_dict() == {"Ethereum Mainnet": False, "Ethereum Sepolia": True, "Untyped Chain": True}
    assert pd.isna(fin.loc["Ethereum Mainnet", "latest_only_basis"])
    assert fin.loc["Ethereum Sepolia", "latest_only_basis"] == "testnet"
    assert fin.loc["Untyped Chain", "latest_only_basis"] == "inferred"
    assert fin["in_flight"].to_dict() == {"Ethereum Mainnet": 1, "Ethereum Sepolia": 0, "Untyped Chain": 0}


def test_a_testnet_that_reached_finality_is_not_latest_only(tmp_path, mode) -> None:
    events = ladder("s1", FULL, (0, 1, 2, 3, 12, 30, 60), chain=SEPOLIA)
    events += ladder("s2", TO_LATEST, (0, 1, 2, 3, 12), chain=SEPOLIA)  # so it is still in flight
    rates = metrics.failure_rates(make(tmp_path, mode, events=events)).iloc[0]
    assert (rates.confirmed, rates.in_flight) == (1, 1)


# ---- projection ------------------------------------------------------------------------------------------------

DAY = 86_400
HISTORY_FAILED, HISTORY_OK = 10, 30  # finished long ago, each after 100 s in broadcasting
COHORT_FAILED, COHORT_OK = 2, 8  # finished in the period, the same way
IN_FLIGHT = 5  # in broadcasting for 50 s at the newest event
PERIOD = {
    "since": pd.Timestamp(T0 + DAY - 10, unit="s", tz="UTC"),
    "until": pd.Timestamp(T0 + DAY + 2000, unit="s", tz="UTC"),
}


def projection_events(in_flight: int = IN_FLIGHT) -> list[dict]:
    events = []
    for i in range(HISTORY_FAILED):
        events += ladder(f"hf{i}", FAILS, (0, 1, 2, 3, 103), reason="execution reverted")
    for i in range(HISTORY_OK):
        events += ladder(f"ho{i}", (*TO_LATEST, "confirmed_safe", "confirmed"), (0, 1, 2, 3, 103, 200, 300))
    start = DAY
    for i in range(COHORT_FAILED):
        events += ladder(f"cf{i}", FAILS, (start, start + 1, start + 2, start + 3, start + 103), reason="reverted")
    for i in range(COHORT_OK):
        events += ladder(
            f"co{i}", FULL, (start, start + 1, start + 2, start + 3, start + 103, start + 200, start + 300)
        )
    late = start + 1000
    for i in range(in_flight):
        events += ladder(f"w{i}", FAILS[:4], (late, late + 1, late + 2, late + 3))
    # the newest event of the warehouse (on another network): the data is as of late + 53
    events += ladder("clock", TO_LATEST, (late, late + 1, late + 2, late + 3, late + 53), chain=SEPOLIA)
    return events


def expected_interval(rate: float, den: float, m: int, p: float, n_ref: int) -> tuple[float, float]:
    """The documented interval, by hand: sampling variance, outcomes to come and the estimated probability."""
    sampling = rate * (1 - rate) / den
    extra = (m * p * (1 - p) + m * m / n_ref * p * (1 - p)) / den**2
    n_eff = den * sampling / (sampling + extra)
    # the final failure count is whole: the low bound at the whole count below the estimate, the high one above
    k = rate * n_eff
    return wilson(math.floor(k), n_eff)[0], wilson(min(math.ceil(k), n_eff), n_eff)[1]


def test_projection_uses_the_history_of_the_same_status_and_age(tmp_path, mode) -> None:
    wh = make(tmp_path, mode, events=projection_events())
    row = metrics.failure_rates(wh, network=ETHEREUM, **PERIOD).iloc[0]
    assert (row.operations, row.terminal, row.failed, row.in_flight) == (15, 10, 2, 5)
    # 50 finished operations spent 100 s in broadcasting (>= the 50 s the five have spent): 12 of them failed
    p = (HISTORY_FAILED + COHORT_FAILED) / 50
    rate = (COHORT_FAILED + IN_FLIGHT * p) / (10 + IN_FLIGHT)
    assert row.failure_rate == pytest.approx(rate)
    assert (row.failure_rate_low, row.failure_rate_high) == pytest.approx(expected_interval(rate, 15, 5, p, 50))
    # finality: the five will reach finalized with the 38/50 that did, fail with 12/50
    fin = metrics.finality_breakdown(wh, network=ETHEREUM, **PERIOD).iloc[0]
    assert fin.in_flight == 5
    assert fin.finalized_share == pytest.approx((COHORT_OK + 5 * 38 / 50) / 15)
    assert fin.failed_share == pytest.approx((COHORT_FAILED + 5 * 12 / 50) / 15)


def test_nothing_in_flight_is_the_plain_wilson_interval(tmp_path, mode) -> None:
    wh = make(tmp_path, mode, events=projection_events(in_flight=0))
    row = metrics.failure_rates(wh, network=ETHEREUM, **PERIOD).iloc[0]
    assert row.in_flight == 0 and row.failure_rate == pytest.approx(2 / 10)
    assert (row.failure_rate_low, row.failure_rate_high) == pytest.approx(wilson(2, 10))


def moments(known_x: float, known_n: float, m: int, p: float, n_ref: int) -> pd.DataFrame:
    """The aggregates project() reads, for ``m`` in-flight units of one cell with failure probability ``p``."""
    x, every = "i_x", inflight.EVERY
    return pd.DataFrame(
        {
            f"known_{x}": [known_x],
            f"known_{every}": [known_n],
            f"e_{x}": [m * p],
            f"e_{every}": [float(m)],
            f"e_{x}__{x}": [m * p * p],
            f"e_{every}__{every}": [float(m)],
            f"e_{x}__{every}": [m * p],
            f"w_{x}": [m * m / n_ref * p],
            f"w_{every}": [m * m / n_ref],
            f"w_{x}__{x}": [m * m / n_ref * p * p],
            f"w_{every}__{every}": [m * m / n_ref],
            f"w_{x}__{every}": [m * m / n_ref * p],
            "unprojected": [0],
        }
    )


def test_the_interval_widens_as_more_of_the_cohort_is_in_flight() -> None:
    ratio = inflight.Ratio("rate", "i_x")
    widths = []
    for m in (0, 10, 40, 80):  # 100 operations, rate 0.2 whichever way: fewer finished, more projected
        est, low, high = inflight.ratio_interval(moments(20 - m * 0.2, 100 - m, m, 0.2, 50), ratio)
        assert est[0] == pytest.approx(0.2)
        widths.append(high[0] - low[0])
    assert widths == sorted(widths) and widths[0] < widths[-1]
    assert widths[0] == pytest.approx(np.subtract(*wilson(20, 100)[::-1]))


def test_the_estimate_always_lies_within_its_interval() -> None:
    rng = np.random.default_rng(13)
    ratio = inflight.Ratio("rate", "i_x")
    for _ in range(500):
        known_n = int(rng.integers(0, 50))
        m = int(rng.integers(0 if known_n else 1, 50))
        p = float(rng.choice([0.0, 1.0, rng.random()]))
        known_x = int(rng.integers(0, known_n + 1))
        est, low, high = inflight.ratio_interval(moments(known_x, known_n, m, p, int(rng.integers(1, 200))), ratio)
        assert 0 <= low[0] <= est[0] <= high[0] <= 1, (known_x, known_n, m, p)


def test_a_unit_without_any_reference_leaves_the_estimate_unknown() -> None:
    df = moments(1, 2, 1, 0.5, 10).assign(unprojected=[1])
    est, low, high = inflight.ratio_interval(df, inflight.Ratio("rate", "i_x"))
    assert math.isnan(est[0]) and math.isnan(low[0]) and math.isnan(high[0])


# ---- queries -----------------------------------------------------------------------------------------------------


def test_a_query_answered_after_it_expired_is_expired_with_a_late_answer(tmp_path, mode) -> None:
    plan = {
        "late": (("accepted", 0), ("sent", 2), ("expired", 60), ("completed", 90)),
        "tie": (("accepted", 0), ("sent", 2), ("completed", 60), ("expired", 60)),
        "ok": (("accepted", 0), ("sent", 2), ("completed", 12)),
        "bad": (("accepted", 0), ("sent", 2), ("failed", 10)),
    }
    events = [query_event(q, s, t) for q, moves in plan.items() for s, t in moves]
    wh = make(tmp_path, mode, events=events)
    life = wh.query("SELECT query_id, status, terminal_status, terminal_at, late_answer FROM query_lifecycle")
    life = life.set_index("query_id")
    assert life["terminal_status"].to_dict() == {
        "late": "expired",
        "tie": "expired",
        "ok": "completed",
        "bad": "failed",
    }
    assert life["late_answer"].to_dict() == {"late": True, "tie": True, "ok": False, "bad": False}
    assert life.loc["late", "terminal_at"] == pd.Timestamp(T0 + 60, unit="s", tz="UTC")
    df = metrics.query_latency(wh).set_index("outcome")
    assert df.loc["expired", "queries"] == 2 and (df["late_answers"] == 2).all()
    assert (df["in_flight"] == 0).all()
    assert df.loc["expired", "expiry_rate"] == pytest.approx(2 / 4)
    assert (df.loc["expired", "expiry_rate_low"], df.loc["expired", "expiry_rate_high"]) == pytest.approx(wilson(2, 4))
