"""Issue 39, item 5: ``draft_cancel_rate`` projects a draft still waiting from every draft's exit from
``pending_signature`` (its own competing-risks curve), not from the finished operations of its age bin.

The bias it replaces: a cancelled draft is finished at once, a signed one only once confirmed, and an age bin a
factor of two wide counts the cancellations a draft has already outlived. Here the signed drafts are all still in
flight (broadcasting), and ten cancellations fall in the waiting draft's age bin but before its age: the finished
operations of that bin and later are 14 cancelled and 5 expired, so the old projection gave the waiting draft a
14/19 chance of being cancelled. The expectation is worked by hand (Aalen–Johansen, events before censorings).
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.support.builders import BASE, ETHEREUM, SEPOLIA, T0, build, ladder, op_event, op_record, refresh
from toolkit import metrics

WINDOW = 10_000  # each draft with a deadline has 10,000 s to be signed
WAITING_AT = 50_000  # the waiting drafts are created here
AS_OF = WAITING_AT + 1_000  # and read 1,000 s later


def _at(seconds: int) -> pd.Timestamp:
    return pd.Timestamp(T0 + seconds, unit="s", tz="UTC")


def _draft(op: str, created: int, *, status: str, chain: str = ETHEREUM, deadline: bool = True) -> dict:
    record = op_record(op, status, chain=chain, created=created, updated=created)
    record["deadline"] = T0 + created + WINDOW if deadline else 0
    return record


def _warehouse(path):
    events, records = [], []
    relay = ("accepted", "sending", "sent", "broadcasting")
    for i in range(10):  # cancelled at u = 0.08 (800 s)
        c = 100 * i
        events += ladder(f"quick-{i}", ("pending_signature", "cancelled"), (c, c + 800))
        records.append(_draft(f"quick-{i}", c, status="cancelled"))
    for i in range(4):  # cancelled at u = 0.3
        c = 2_000 + 100 * i
        events += ladder(f"late-{i}", ("pending_signature", "cancelled"), (c, c + 3_000))
        records.append(_draft(f"late-{i}", c, status="cancelled"))
    for i in range(10):  # signed at u = 0.5, still broadcasting when read: not finished
        c = 40_000 + 100 * i
        events += ladder(f"signed-{i}", ("pending_signature", *relay), (c, c + 5_000, c + 5_001, c + 5_002, c + 5_003))
        records.append(_draft(f"signed-{i}", c, status="broadcasting"))
    for i in range(5):  # expired at the deadline
        c = 3_000 + 100 * i
        events += ladder(f"expired-{i}", ("pending_signature", "expired"), (c, c + WINDOW))
        records.append(_draft(f"expired-{i}", c, status="expired"))
    events += ladder("waiting", ("pending_signature",), (WAITING_AT,))
    records.append(_draft("waiting", WAITING_AT, status="pending_signature"))
    # drafts without a deadline (Sepolia): timed in seconds since creation
    for i, (fate, after) in enumerate([("cancelled", 100)] * 12 + [("cancelled", 1_000)] * 4):
        events += ladder(f"free-{i}", ("pending_signature", fate), (10 * i, 10 * i + after), chain=SEPOLIA)
        records.append(_draft(f"free-{i}", 10 * i, status=fate, chain=SEPOLIA, deadline=False))
    for i in range(4):  # signed after 2,000 s and confirmed
        c = 100 + 10 * i
        statuses = ("pending_signature", *relay, "confirmed_latest")
        events += ladder(f"free-signed-{i}", statuses, (c, c + 2_000, c + 2_001, c + 2_002, c + 2_003, c + 2_004),
                         chain=SEPOLIA)  # fmt: skip
        records.append(_draft(f"free-signed-{i}", c, status="confirmed_latest", chain=SEPOLIA, deadline=False))
    events += ladder("free-old", ("pending_signature",), (AS_OF - 5_000,), chain=SEPOLIA)  # waiting 5,000 s
    records.append(_draft("free-old", AS_OF - 5_000, status="pending_signature", chain=SEPOLIA, deadline=False))
    events += ladder("free-waiting", ("pending_signature",), (WAITING_AT + 500,), chain=SEPOLIA)  # waiting 500 s
    records.append(_draft("free-waiting", WAITING_AT + 500, status="pending_signature", chain=SEPOLIA, deadline=False))
    events.append(op_event("clock", "broadcasting", T0 + AS_OF, chain=BASE))
    return refresh(build(path, events=events, operations=records))


def test_a_waiting_draft_is_projected_on_every_drafts_exit(tmp_path) -> None:
    wh = _warehouse(tmp_path / "w.duckdb")
    since, until = (_at(WAITING_AT), _at(WAITING_AT + 600))
    df = metrics.failure_rates(wh, since=since, until=until).set_index("network")
    eth, sep = df.loc["Ethereum Mainnet"], df.loc["Ethereum Sepolia"]
    assert (eth.operations, eth.in_flight, sep.operations, sep.in_flight) == (1, 1, 1, 1)
    # Ethereum, on the deadline clock (u = share of the 10,000 s window): 30 drafts, the waiting one at u0 = 0.1.
    #   u=0.08: at risk 30, 10 leave (all cancelled)   S = 20/30
    #   (the waiting draft censored at 0.1)
    #   u=0.3:  at risk 19, 4 leave (cancelled)         S = 20/30 * 15/19
    #   u=0.5:  at risk 15, 10 leave (signed)           S = 20/30 * 15/19 * 5/15
    #   the 5 left reach u = 1 and expire.
    # From u0 = 0.1: cancelled S(0.3-)/S(0.1) * 4/19 = 4/19; expired S(1-)/S(0.1) = 15/19 * 5/15 = 5/19.
    assert eth.draft_cancel_rate == pytest.approx(4 / 19)
    assert eth.draft_expiry_rate == pytest.approx(5 / 19)
    assert eth.draft_cancel_rate_low < 4 / 19 < eth.draft_cancel_rate_high  # a projection carries uncertainty
    # Sepolia, no deadline, in seconds: 22 drafts (free-old censored at 5,000 s, free-waiting at 500 s).
    #   100 s:   at risk 22, 12 cancelled                           S = 10/22
    #   1000 s:  at risk 9 (22 - 12 - free-waiting), 4 cancelled    S = 10/22 * 5/9
    #   2000 s:  at risk 5, 4 signed                                S = 10/22 * 5/9 * 1/5
    # From 500 s: cancelled S(1000-)/S(500) * 4/9 = 4/9, signed 5/9 * 4/5 = 4/9, still a draft 1/9; never expires.
    assert sep.draft_cancel_rate == pytest.approx(4 / 9)
    assert sep.draft_expiry_rate == 0.0
    # the relayed rates are not touched by a waiting draft
    assert (eth.relayed, sep.relayed) == (0, 0)
