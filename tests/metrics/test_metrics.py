"""Every metric on hand-made tiny warehouses, with the values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from benchmarks.support.km_reference import km_percentile
from tests.support.builders import (
    ETHEREUM,
    SEPOLIA,
    T0,
    build,
    ladder,
    op_event,
    op_record,
    query_event,
    refresh,
    watcher_event,
    watcher_record,
    watcher_status,
)
from tests.support.cli import run_in_process
from toolkit import metrics, spec

FULL = ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed")
TO_LATEST = FULL[:5]


@pytest.fixture(params=["live", "refreshed"])
def mode(request) -> str:
    """Every metric is checked on the live views and on the materialised models."""
    return request.param


def make(tmp_path, mode: str, **records):
    wh = build(tmp_path / "w.duckdb", **records)
    return refresh(wh) if mode == "refreshed" else wh


# ---- status latency ----------------------------------------------------------------------------------------------


def test_status_latency_over_daily_buckets(tmp_path, mode) -> None:
    day = 86_400
    events = ladder("a", ("accepted", "sending"), (0, 10)) + ladder("a2", ("accepted", "sending"), (0, 14))
    events += ladder("b", ("accepted", "sending"), (day, day + 20)) + ladder(
        "b2", ("accepted", "sending"), (day, day + 30)
    )
    wh = make(tmp_path, mode, events=events)
    df = metrics.status_latency(wh, by=["status"], bucket="1d")
    day0 = pd.Timestamp(T0, unit="s", tz="UTC").floor("D")
    got = [(r.status, r.bucket, r.entered, r.n, r.censored, r.p50_s) for r in df.itertuples()]
    # two finished per day, nothing censored: the p50 of two values is their midpoint
    assert got[0] == ("accepted", day0, 2, 2, 0, 12.0)
    assert got[1] == ("accepted", day0 + pd.Timedelta(days=1), 2, 2, 0, 25.0)
    # every operation is still in `sending` as of the newest event (day + 30): censored, so no durations ended
    assert [(g[0], g[1], g[3], g[4]) for g in got[2:]] == [
        ("sending", day0, 0, 2),
        ("sending", day0 + pd.Timedelta(days=1), 0, 2),
    ]
    assert str(df["bucket"].dtype) == "datetime64[us, UTC]"


def test_status_latency_quantiles_and_time_since_creation(tmp_path, mode) -> None:
    gaps = [2 * (i + 1) for i in range(10)]  # 2, 4, ..., 20
    events = []
    for i, gap in enumerate(gaps):
        events += ladder(f"op{i}", ("accepted", "sending"), (0, gap))
    wh = make(tmp_path, mode, events=events, operations=[op_record("op0", "sending", created=-3, updated=2)])
    row = metrics.status_latency(wh, by=["network", "status"], status="accepted").iloc[0]
    assert (row.network, row.status, row.entered, row.n, row.censored) == ("Ethereum Mainnet", "accepted", 10, 10, 0)
    assert row.mean_s == pytest.approx(np.mean(gaps))
    # nothing censored: Hyndman-Fan type 2; p99 would need 100 observations, but nothing open can change it: final
    want = [float(np.quantile(gaps, q, method="averaged_inverted_cdf")) for q in (0.5, 0.9, 0.99)]
    assert [row.p50_s, row.p90_s, row.p99_s, row.max_s] == [*want, 20.0] == [11.0, 19.0, 20.0, 20.0]
    assert row.notes == "p99: n=10 < 100, final (nothing open can change it)"
    sending = metrics.status_latency(wh, by=["status"], status="sending").iloc[0]
    assert (sending.n, sending.censored) == (0, 10) and math.isnan(sending.p50_s)
    # op0 counts from its record's created_at: 2 + 3 = 5; the others from their first event: 4, 6, ..., 20
    since = [5, *gaps[1:]]
    assert sending.since_created_p50_s == float(np.quantile(since, 0.5, method="averaged_inverted_cdf"))
    assert sending.since_created_p90_s == float(np.quantile(since, 0.9, method="averaged_inverted_cdf"))


def test_status_latency_censors_operations_still_in_a_status(tmp_path, mode) -> None:
    events = []
    for i, gap in enumerate((10, 20, 30, 40)):
        events += ladder(f"a{i}", ("accepted", "sending", "sent"), (0, gap, gap + 1))
    events += ladder("c", ("accepted", "sending", "failed"), (0, 5, 100), reason="nonce too low")  # newest: T0+100
    events += ladder("b0", ("accepted",), (50,))  # still accepted: censored at 100 - 50 = 50
    events += ladder("b1", ("accepted",), (60,))  # censored at 40
    events += ladder("r", ("accepted",), (70,))  # its record says it expired: not in flight, not censored
    events += ladder("m", TO_LATEST, (0, 1, 2, 3, 4))  # mainnet, waiting for safe: censored in confirmed_latest
    events += ladder("s", TO_LATEST, (0, 1, 2, 3, 4), chain=SEPOLIA)  # latest-only: final, no duration
    wh = make(tmp_path, mode, events=events, operations=[op_record("r", "expired", updated=80)])
    df = metrics.status_latency(wh).set_index(["network", "status"])
    accepted = df.loc[("Ethereum Mainnet", "accepted")]
    # accepted: ended 10, 20, 30, 40, 5 (and m's 1); censored 50 and 40; r's time is unknown and left out.
    durations = [10, 20, 30, 40, 5, 1, 50, 40]
    censored = [False] * 6 + [True] * 2
    assert (accepted.entered, accepted.n, accepted.censored) == (9, 6, 2)
    # by hand, 8 observations: S(1)=7/8 S(5)=6/8 S(10)=5/8 S(20)=4/8 exactly -> midpoint to the next event, 30: 25;
    # the finished-only median would be 15 (1, 5, 10, 20, 30, 40)
    assert accepted.p50_s == km_percentile(durations, censored, 0.5) == 25.0
    assert math.isnan(accepted.p90_s) and "p90: n=8 < 10" in accepted.notes
    assert accepted.mean_s == pytest.approx(np.mean([10, 20, 30, 40, 5, 1]))
    sending = df.loc[("Ethereum Mainnet", "sending")]
    assert (sending.entered, sending.n, sending.censored) == (6, 6, 0)  # a* to sent, c to failed, m to sent
    failed = df.loc[("Ethereum Mainnet", "failed")]
    assert (failed.entered, failed.n, failed.censored) == (1, 0, 0) and math.isnan(failed.p50_s)
    assert failed.notes.startswith("no durations: 1 entered")
    sent = df.loc[("Ethereum Mainnet", "sent")]
    assert (sent.entered, sent.n, sent.censored) == (5, 1, 4)  # a0..a3 still in sent; m moved on
    latest = df.loc[("Ethereum Mainnet", "confirmed_latest")]
    assert (latest.entered, latest.n, latest.censored) == (1, 0, 1)
    sep = df.loc[("Ethereum Sepolia", "confirmed_latest")]
    assert (sep.entered, sep.n, sep.censored) == (1, 0, 0)


# ---- failure rates -----------------------------------------------------------------------------------------------


def outcomes_history() -> tuple[list[dict], list[dict]]:
    events, ops = [], []
    for i in range(7):
        events += ladder(f"e-ok{i}", FULL, (0, 1, 2, 3, 15, 400, 800))
    events += ladder("e-f1", ("accepted", "sending", "failed"), (0, 1, 5), reason="nonce too low")
    events += ladder(
        "e-f2",
        ("accepted", "sending", "sent", "broadcasting", "failed"),
        (0, 1, 2, 3, 20),
        reason="execution reverted: Pausable: paused",
    )
    events += ladder("e-wait", TO_LATEST, (0, 1, 2, 3, 15))  # mainnet: still waiting for safe and finalized
    for i in range(4):
        events += ladder(f"s-ok{i}", TO_LATEST, (0, 1, 2, 3, 12), chain=SEPOLIA)
    events += ladder("s-exp", ("pending_signature", "expired"), (0, 3600), chain=SEPOLIA, reason="deadline elapsed")
    events += ladder("s-can", ("pending_signature", "cancelled"), (0, 60), chain=SEPOLIA)
    return events, ops


def test_failure_rates_count_latest_only_networks_as_confirmed(tmp_path, mode) -> None:
    events, _ = outcomes_history()
    df = metrics.failure_rates(make(tmp_path, mode, events=events)).set_index("network")
    eth, sep = df.loc["Ethereum Mainnet"], df.loc["Ethereum Sepolia"]
    cols = ["operations", "relayed", "terminal", "confirmed", "failed", "expired", "cancelled"]
    cols += ["draft_expired", "draft_cancelled", "unknown", "in_flight"]
    assert eth[cols].tolist() == [10, 10, 9, 7, 2, 0, 0, 0, 0, 0, 1]
    assert sep[cols].tolist() == [6, 4, 4, 4, 0, 0, 0, 1, 1, 0, 0]
    # e-wait (a mainnet operation waiting in confirmed_latest) is in flight: 7 finished operations went through
    # confirmed_latest (fewer than 20), so it takes its group's finished ones: fails with p = 2/9.
    p = 2 / 9
    rate = (2 + p) / (9 + 1)
    assert eth.failure_rate == pytest.approx(rate)
    sampling = rate * (1 - rate) / 10
    extra = (p * (1 - p) + p * (1 - p) / 9) / 10**2  # outcome to come + its estimated probability (n = 9)
    n_eff = 10 * sampling / (sampling + extra)
    low, high = metrics.wilson_interval(rate * n_eff, n_eff)
    assert (eth.failure_rate_low, eth.failure_rate_high) == (pytest.approx(float(low)), pytest.approx(float(high)))
    # drafts are not in the failure rate's denominator; they have rates of their own over all operations
    assert sep.failure_rate == 0.0 and sep.expiry_rate == 0.0 and sep.cancel_rate == 0.0
    low, high = metrics.wilson_interval(0, 4)
    assert (sep.failure_rate_low, sep.failure_rate_high) == (pytest.approx(float(low)), pytest.approx(float(high)))
    assert sep.draft_expiry_rate == pytest.approx(1 / 6) and sep.draft_cancel_rate == pytest.approx(1 / 6)
    low, high = metrics.wilson_interval(1, 6)
    assert (sep.draft_expiry_rate_low, sep.draft_expiry_rate_high) == (
        pytest.approx(float(low)),
        pytest.approx(float(high)),
    )


def test_wilson_interval_matches_published_values() -> None:
    low, high = metrics.wilson_interval([10, 0, 5], [100, 10, 0])
    assert low[0] == pytest.approx(0.05523, abs=5e-5) and high[0] == pytest.approx(0.17437, abs=5e-5)
    assert low[1] == 0 and high[1] == pytest.approx(0.27753, abs=5e-5)
    assert math.isnan(low[2]) and math.isnan(high[2])


def test_failure_rates_by_wallet_channel_and_week(tmp_path, mode) -> None:
    events = ladder("a1", ("accepted", "sending", "failed"), (0, 1, 5), reason="out of gas", channel="ch-a")
    events += ladder("a2", FULL, (0, 1, 2, 3, 15, 400, 800), channel="ch-a")
    events += ladder("b1", FULL, (0, 1, 2, 3, 15, 400, 800), channel="ch-b")
    ops = [
        op_record("a1", "failed", channel="ch-a", address="0x" + "01" * 20, updated=5),
        op_record("a2", "confirmed", channel="ch-a", address="0x" + "01" * 20, updated=800),
        op_record("b1", "confirmed", channel="ch-b", address="0x" + "02" * 20, updated=800, created=8 * 86_400),
    ]
    wh = make(tmp_path, mode, events=events, operations=ops)
    by_wallet = metrics.failure_rates(wh, by=["address"]).set_index("address")
    assert by_wallet.loc["0x" + "01" * 20, "failure_rate"] == 0.5
    assert by_wallet.loc["0x" + "02" * 20, "failure_rate"] == 0.0
    by_channel = metrics.failure_rates(wh, by=["channel_id"])
    assert list(by_channel["channel_id"]) == ["ch-a", "ch-b"] and list(by_channel["failed"]) == [1, 0]
    weekly = metrics.failure_rates(wh, by=[], bucket="1w")
    assert list(weekly["operations"]) == [2, 1] and (weekly["bucket"].dt.day_of_week == 0).all()
    assert metrics.failure_rates(wh, channel="ch-b")["operations"].tolist() == [1]


# ---- failure reasons ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "status", "category"),
    [
        ("execution reverted: ERC20: transfer amount exceeds balance", "failed", "revert"),
        ("execution reverted", "failed", "revert"),
        ("out of gas", "failed", "gas"),
        ("intrinsic gas too low", "failed", "gas"),
        ("insufficient funds for gas * price + value", "failed", "gas"),
        ("max fee per gas less than block base fee", "failed", "gas"),
        ("nonce too low", "failed", "nonce"),
        ("replacement transaction underpriced", "failed", "gas"),
        ("chain unavailable: RPC endpoint timeout", "failed", "chain_unavailable"),
        ("deadline elapsed before broadcast", "expired", "deadline"),
        ("", "expired", "deadline"),
        ("something new", "failed", "other"),
        (None, "failed", "other"),
    ],
)
def test_failure_taxonomy(reason, status, category) -> None:
    assert metrics.classify_failure(reason, status) == category


def test_failure_reasons_keep_the_raw_text_in_their_category(tmp_path, mode) -> None:
    reasons = ["execution reverted: A"] * 3 + ["execution reverted: B"] + ["nonce too low"] * 2 + ["weird"]
    events = []
    for i, reason in enumerate(reasons):
        events += ladder(f"f{i}", ("accepted", "sending", "failed"), (0, 1, 5), reason=reason)
    events += ladder("x1", ("pending_signature", "expired"), (0, 60), reason="deadline elapsed")
    events += ladder("ok", FULL, (0, 1, 2, 3, 15, 400, 800))
    wh = make(tmp_path, mode, events=events)
    df = metrics.failure_reasons(wh)
    got = [(r.category, r.reason, r.status, r.operations, r.category_operations, r.rank) for r in df.itertuples()]
    assert got == [
        ("revert", "execution reverted: A", "failed", 3, 4, 1),
        ("nonce", "nonce too low", "failed", 2, 2, 2),
        ("deadline", "deadline elapsed", "expired", 1, 1, 3),
        ("revert", "execution reverted: B", "failed", 1, 4, 4),
        ("other", "weird", "failed", 1, 1, 5),
    ]
    assert df["share"].sum() == pytest.approx(1.0) and df.loc[0, "category_share"] == pytest.approx(0.5)
    assert list(df["category"].cat.categories) == list(metrics.FAILURE_CATEGORIES) and df["category"].cat.ordered
    assert len(metrics.failure_reasons(wh, top=2)) == 2
    assert metrics.failure_reasons(wh, status="expired")["reason"].tolist() == ["deadline elapsed"]


# ---- finality ----------------------------------------------------------------------------------------------------


def test_finality_breakdown_stages_times_and_latest_only_networks(tmp_path, mode) -> None:
    events = ladder("e1", FULL, (0, 1, 2, 3, 15, 400, 800))
    events += ladder(
        "e2", ("accepted", "sending", "sent", "broadcasting", "confirmed_safe", "confirmed"), (0, 1, 2, 3, 410, 820)
    )  # the confirmed_latest event is missing
    events += ladder("e3", ("accepted", "sending", "failed"), (0, 1, 5), reason="nonce too low")
    events += ladder("e4", TO_LATEST, (0, 1, 2, 3, 30))
    events += ladder("d1", ("pending_signature", "cancelled"), (0, 10))  # never relayed
    events += ladder("s1", TO_LATEST, (0, 1, 2, 3, 12), chain=SEPOLIA)
    events += ladder("s2", TO_LATEST, (0, 1, 2, 3, 20), chain=SEPOLIA)
    df = metrics.finality_breakdown(make(tmp_path, mode, events=events)).set_index("network")
    eth, sep = df.loc["Ethereum Mainnet"], df.loc["Ethereum Sepolia"]
    assert (eth.operations, eth.reached_latest, eth.reached_safe, eth.reached_finalized, eth.failed) == (4, 3, 2, 2, 1)
    # e4 waits in confirmed_latest on a mainnet: in flight, already at latest. Too little history at every level of
    # the back-off, so its other stages take the group's finished operations (e1, e2, e3): 2/3 safe and finalized,
    # 1/3 failed.
    assert eth.in_flight == 1 and sep.in_flight == 0
    assert eth.latest_share == pytest.approx((2 + 1) / 4)
    assert (eth.safe_share, eth.finalized_share) == (pytest.approx((2 + 2 / 3) / 4), pytest.approx((2 + 2 / 3) / 4))
    assert eth.failed_share == pytest.approx((1 + 1 / 3) / 4)
    assert eth.safe_share_low < eth.safe_share < eth.safe_share_high
    assert (sep.latest_share, sep.safe_share) == (1.0, 0.0)
    low, high = metrics.wilson_interval(2, 2)  # nothing in flight: the plain Wilson interval
    assert (sep.latest_share_low, sep.latest_share_high) == (pytest.approx(float(low)), pytest.approx(float(high)))
    assert not eth.latest_only and sep.latest_only
    assert pd.isna(eth.latest_only_basis) and sep.latest_only_basis == "testnet"
    # As of the newest event (T0 + 820), e4 waits in confirmed_latest on a mainnet: censored for the later stages
    # (at 820 s since accepted, 790 s since latest). e2's missing latest event leaves it out of to_latest; e3 failed
    # and is no observation of any stage time. Two or three observations each.
    assert (eth.to_latest_p50_s, eth.to_latest_censored) == (22.5, 0)  # 15 and 30: the midpoint
    # to_safe: 400, 410 and 820 censored: S(400) = 2/3, S(410) = 1/3 -> 410 (405 from the finished alone)
    assert (eth.to_safe_p50_s, eth.to_safe_censored) == (410.0, 1)
    # to_finalized: 800, 820 and 820 censored (the event first): S(800) = 2/3, S(820) = 1/3 -> 820
    assert (eth.to_finalized_p50_s, eth.to_finalized_censored) == (820.0, 1)
    # latest_to_safe: 385 and 790 censored: S(385) = 1/2 and no later event, so the median is somewhere from 385 s
    # on: NULL, with the reason; the same for latest_to_finalized (785 and 790 censored)
    assert math.isnan(eth.latest_to_safe_p50_s) and eth.latest_to_safe_censored == 1
    assert "latest_to_safe p50: survival is exactly 50% from 385 s on and nothing ended after it" in eth.notes
    assert (eth.safe_to_finalized_p50_s, eth.safe_to_finalized_censored) == (405.0, 0)
    assert math.isnan(eth.latest_to_finalized_p50_s) and eth.latest_to_finalized_censored == 1
    assert "latest_to_finalized p50: survival is exactly 50% from 785 s on" in eth.notes
    # p90 needs 10 observations unless nothing open can change it: to_latest (15, 30) and safe_to_finalized (400,
    # 410) have nothing censored, so their p90 is final; the others have a stay open before it
    assert (eth.to_latest_p90_s, eth.safe_to_finalized_p90_s) == (30.0, 410.0)
    for label in ("to_safe", "to_finalized", "latest_to_safe", "latest_to_finalized"):
        assert math.isnan(eth[f"{label}_p90_s"]), label
    assert "to_safe p90: n=3 < 10;" in eth.notes and "to_latest p90: n=2 < 10, final" in eth.notes
    assert (sep.operations, sep.reached_latest, sep.reached_safe, sep.reached_finalized) == (2, 2, 0, 0)
    assert (sep.to_latest_p50_s, sep.to_safe_censored) == (16.0, 0)  # latest-only: safe is never coming
    assert sep.to_latest_p90_s == 20.0 and math.isnan(sep.to_safe_p50_s)  # 12 and 20, nothing open: final
    assert "to_safe: no observations" in sep.notes
    times = metrics.finality_times(tmp_path / "w.duckdb")
    assert sorted(times.loc[times.network == "Ethereum Mainnet", "to_latest_s"].dropna()) == [15.0, 30.0]


# ---- queries -----------------------------------------------------------------------------------------------------


def test_query_latency_per_network_and_outcome(tmp_path, mode) -> None:
    plan = {
        "q1": (("accepted", 0), ("sending", 1), ("sent", 3), ("completed", 13)),
        "q2": (("accepted", 0), ("sending", 2), ("sent", 4), ("completed", 24)),
        "q3": (("accepted", 0), ("sending", 1), ("sent", 2), ("failed", 12)),
        "q4": (("accepted", 0), ("sending", 1), ("sent", 2), ("expired", 300)),
        "q5": (("accepted", 0), ("sending", 1)),
    }
    events = [query_event(q, s, t) for q, moves in plan.items() for s, t in moves]
    record = {
        "query_id": "q1",
        "channel_id": "ch-1",
        "status": "completed",
        "query_kind": "evm_call",
        "chain_selector": ETHEREUM,
        "created_at": T0,
        "accepted_at": T0,
        "sending_at": T0 + 1,
        "sent_at": T0 + 3,
        "completed_at": T0 + 13,
    }
    df = metrics.query_latency(make(tmp_path, mode, events=events, queries=[record]))
    assert list(df["outcome"]) == ["completed", "failed", "expired", "in_flight"]
    done = df.iloc[0]
    assert (
        done.queries,
        done.accepted_to_sending_p50_s,
        done.sending_to_sent_p50_s,
        done.sent_to_terminal_p50_s,
        done.accepted_to_terminal_p50_s,
    ) == (2, 1.5, 2.0, 15.0, 18.5)
    assert (df["finished"] == 4).all()
    assert (df["failure_rate"] == 0.25).all() and (df["expiry_rate"] == 0.25).all()
    expired = df.iloc[2]
    # one observation and nothing open: its p50 is final, shown below the sample-size rule with a note
    assert expired.sent_to_terminal_p50_s == 298.0
    assert "sent_to_terminal p50: n=1 < 2, final (nothing open can change it)" in expired.notes
    # q5 is in flight in `sending` as of the newest event (T0 + 300): censored at 299 s since sending and 300 s
    # since accepted; its accepted_to_sending (1 s) is known
    flight = df.iloc[3]
    assert (flight.accepted_to_sending_censored, flight.sending_to_sent_censored) == (0, 1)
    assert (flight.sent_to_terminal_censored, flight.accepted_to_terminal_censored) == (0, 1)
    assert (done.accepted_to_terminal_censored, done.sending_to_sent_censored) == (0, 0)
    overall = metrics.query_latency(tmp_path / "w.duckdb", by=[])
    assert (overall.loc[0, "queries"], overall.loc[0, "finished"], overall.loc[0, "failure_rate"]) == (5, 4, 0.25)
    # accepted_to_terminal over all five: 13, 24, 12, 300 ended and q5 censored at 300 (after the expiry: events
    # first): S(12)=4/5 S(13)=3/5 S(24)=2/5 -> p50 24 (the finished alone: 18.5)
    assert overall.loc[0, "accepted_to_terminal_p50_s"] == 24.0
    assert overall.loc[0, "accepted_to_terminal_censored"] == 1


# ---- stuck operations --------------------------------------------------------------------------------------------


def stuck_history() -> tuple[list[dict], list[dict]]:
    events = []
    for i in range(10):  # history: `sent` lasts 10 s on Ethereum
        events += ladder(f"h{i}", ("accepted", "sending", "sent", "broadcasting", "confirmed"), (0, 1, 2, 12, 13))
    events += ladder("s1", ("accepted", "sending", "sent"), (998, 999, 1000))
    events += ladder("s2", ("accepted", "sending", "sent"), (1088, 1089, 1090))
    events += ladder("t1", TO_LATEST, (0, 1, 2, 3, 12), chain=SEPOLIA)  # final on a latest-only network
    events += ladder("t2", TO_LATEST, (0, 1, 2, 3, 12), chain=SEPOLIA)
    events += ladder("f1", ("accepted", "sending", "failed"), (0, 1, 5), reason="nonce too low")
    events += ladder("r1", ("accepted", "sending", "sent"), (0, 1, 2))  # its record says it is confirmed
    events += [op_event("late", "accepted", T0 + 1100)]
    return events, [op_record("r1", "confirmed", updated=900)]


def test_stuck_operations_by_network_p90_multiple(tmp_path, mode) -> None:
    events, ops = stuck_history()
    wh = make(tmp_path, mode, events=events, operations=ops)
    df = metrics.stuck_operations(wh, min_seconds=0)  # now = the newest event, T0 + 1100
    assert list(df["operation_id"]) == ["s1"]
    row = df.iloc[0]
    assert (row.status, row.age_s, row.network_p90_s, row.threshold_s) == ("sent", 100.0, 10.0, 30.0)
    assert row.threshold_basis == "network"
    assert row.entered_at == pd.Timestamp(T0 + 1000, unit="s", tz="UTC")
    assert metrics.stuck_operations(wh)["threshold_s"].tolist() == [60.0]  # at least 60 s by default
    assert list(metrics.stuck_operations(wh, min_seconds=0, thresholds={"sent": 5})["operation_id"]) == ["s1", "s2"]
    earlier = metrics.stuck_operations(wh, min_seconds=0, now=pd.Timestamp(T0 + 1050, unit="s", tz="UTC"))
    assert list(earlier["operation_id"]) == ["s1"] and earlier.iloc[0].age_s == 50.0
    summary = metrics.stuck_operations(wh, min_seconds=0, thresholds={"sent": 5}, by=["network", "status"])
    assert summary[["network", "status", "stuck", "max_age_s"]].values.tolist() == [
        ["Ethereum Mainnet", "sent", 2, 100.0]
    ]


def test_stuck_operations_default_threshold_is_reproducible(tmp_path, mode) -> None:
    events, ops = stuck_history()
    wh = make(tmp_path, mode, events=events, operations=ops)
    assert metrics.latest_event_time(wh) == pd.Timestamp(T0 + 1100, unit="s", tz="UTC")
    df = metrics.stuck_operations(wh, multiple=1.0, min_seconds=0)
    assert df.equals(metrics.stuck_operations(wh, multiple=1.0, min_seconds=0))
    assert list(df["operation_id"]) == ["s1"]  # threshold 1 x p90 = 10 s: s2 has been in `sent` exactly 10 s
    assert df.iloc[0].threshold_s == 10.0


# ---- proofs ------------------------------------------------------------------------------------------------------


def test_proof_coverage_against_the_rules_and_signature_minimum(tmp_path, mode) -> None:
    events = ladder("o", ("confirmed_latest",), (10,), signatures=4)
    events += ladder("o", ("confirmed_safe",), (20,), signatures=3)
    events += ladder("o", ("confirmed",), (30,), signatures=None)  # a proof is missing
    events += ladder("o", ("accepted",), (0,))
    unexpected = op_event("o2", "accepted", T0)
    unexpected["headers"]["proofs"] = [{"signatures": ["0x00"] * 4}]
    events += [
        unexpected,
        query_event("q", "completed", 5, signatures=5),
        query_event("q", "accepted", 0),
        watcher_event("w", 5, signatures=4),
        watcher_event("w", 6, signatures=None),
        watcher_status("w", "active", 1),
    ]
    df = metrics.proof_coverage(make(tmp_path, mode, events=events)).set_index("type")
    op = df.loc["operation.status"]
    assert (
        op.events,
        op.must_have_proof,
        op.with_proof,
        op.missing_proof,
        op.enough_signatures,
        op.too_few_signatures,
        op.unexpected_proofs,
    ) == (5, 3, 2, 1, 1, 1, 1)
    assert (op.signatures_min, op.signatures_p50, op.signatures_max) == (3.0, 3.5, 4.0)
    assert op.coverage == pytest.approx(2 / 3) and op.min_signatures == spec.PROOF_MIN_SIGNATURES
    q, w, ws = df.loc["query.status"], df.loc["watcher.event"], df.loc["watcher.status"]
    assert (q.events, q.must_have_proof, q.with_proof, q.signatures_p50) == (2, 1, 1, 5.0)
    assert (w.events, w.must_have_proof, w.with_proof, w.missing_proof) == (2, 2, 1, 1)
    assert (ws.events, ws.must_have_proof) == (1, 0) and math.isnan(ws.coverage)


#: Which events must carry a DON proof, written out by hand from API.md ("Events", rules 2-5) for every status of
#: every status event type (never from toolkit.spec, which the metric itself uses).
PROOF_RULES: dict[str, dict[str, bool]] = {
    "operation.status": {
        "pending_signature": False,
        "accepted": False,
        "sending": False,
        "sent": False,
        "broadcasting": False,
        "confirmed_latest": True,
        "confirmed_safe": True,
        "confirmed": True,
        "failed": False,
        "cancelled": False,
        "expired": False,
    },
    "query.status": {
        "accepted": False,
        "sending": False,
        "sent": False,
        "completed": True,
        "failed": True,
        "expired": False,
    },
    "watcher.status": {s: False for s in ("pending", "active", "failed", "archiving", "archived", "archive_failed")},
    "wallet.status": {s: False for s in ("pending", "deploying", "deployed", "failed", "archived")},
}


def test_proof_rules_are_api_md_for_every_type_and_status(tmp_path) -> None:
    events = []
    for etype, rules in PROOF_RULES.items():
        for s in rules:
            events.append(
                {
                    "event_id": f"{etype}-{s}",
                    "headers": {"type": etype, "offset": len(events)},
                    "payload": {
                        "status": s,
                        "timestamp": T0,
                        "operation_id": "o",
                        "query_id": "q",
                        "watcher_id": "w",
                        "wallet_id": "x",
                    },
                }
            )
    events.append(watcher_event("w", 0))
    df = metrics.proof_coverage(build(tmp_path / "w.duckdb", events=events), by=["type", "status"])
    got = {(r.type, r.status if isinstance(r.status, str) else None): r.must_have_proof == 1 for r in df.itertuples()}
    want = {(t, s): need for t, rules in PROOF_RULES.items() for s, need in rules.items()}
    want[("watcher.event", None)] = True  # every observed contract event carries a proof (rule 2)
    assert got == want


# ---- watchers ----------------------------------------------------------------------------------------------------


def test_watcher_activity_per_hour_with_the_status_then(tmp_path, mode) -> None:
    events = [
        watcher_status("w1", s, t) for s, t in (("pending", 0), ("active", 30), ("archiving", 7200), ("archived", 7240))
    ]
    events += [watcher_event("w1", t) for t in (100, 200, 3700, 7230)]
    wh = make(tmp_path, mode, events=events, watchers=[watcher_record("w1", "transfers", "archived")])
    df = metrics.watcher_activity(wh)
    hour0 = pd.Timestamp(T0, unit="s", tz="UTC").floor("h")
    assert [(r.bucket - hour0, r.events, r.status, r.name) for r in df.itertuples()] == [
        (pd.Timedelta(0), 2, "active", "transfers"),
        (pd.Timedelta(hours=1), 1, "active", "transfers"),
        (pd.Timedelta(hours=2), 1, "archived", "transfers"),
    ]
    assert df["status"].cat.ordered and list(df["status"].cat.categories) == list(spec.WATCHER_STATUSES)
    history = metrics.watcher_status_history(wh)
    assert [(r.status, r.seconds_in_status) for r in history.itertuples()][:3] == [
        ("pending", 30.0),
        ("active", 7170.0),
        ("archiving", 40.0),
    ]
    assert history.iloc[-1].status == "archived" and pd.isna(history.iloc[-1].exited_at)
    by_network = metrics.watcher_activity(wh, by=["network"], bucket="1d")
    assert by_network["events"].sum() == 4 and set(by_network["network"]) == {"Ethereum Mainnet"}


def test_watcher_activity_counts_events_stored_without_a_time_apart(tmp_path, mode) -> None:
    # an invalid timestamp is stored NULL (kept in extra._invalid): the as-of join refused null keys (exit 2)
    untimed = watcher_event("w1", 0)
    untimed["payload"]["timestamp"] = "not a time"
    status_untimed = watcher_status("w1", "archiving", 0)
    status_untimed["payload"]["timestamp"] = "later"
    events = [watcher_status("w1", "active", 30), status_untimed, watcher_event("w1", 100), untimed]
    wh = make(tmp_path, mode, events=events, watchers=[watcher_record("w1", "transfers", "active")])
    df = metrics.watcher_activity(wh)
    hour0 = pd.Timestamp(T0, unit="s", tz="UTC").floor("h")
    got = [(r.bucket, r.events, r.status, r.name) for r in df.itertuples()]
    assert got[0] == (hour0, 1, "active", "transfers")
    assert len(got) == 2 and pd.isna(got[1][0]) and pd.isna(got[1][2]) and got[1][1:4:2] == (1, "transfers")
    assert metrics.watcher_activity(wh, since=hour0)["events"].sum() == 1  # a period holds only timed events
    if mode == "refreshed":
        wh.close()
        run = run_in_process("metrics", "watcher-activity", "--warehouse", str(tmp_path / "w.duckdb"))
        assert run.returncode == 0, run.stderr
        assert "transfers" in run.stdout
