"""Issue 39, item 5: ``draft_cancel_rate`` projects a draft still waiting from every draft's exit from
``pending_signature`` (its own competing-risks curve), not from the finished operations of its age bin.

The bias it replaces: a cancelled draft is finished at once, a signed one only once confirmed, and an age bin a
factor of two wide counts the cancellations a draft has already outlived. Here the signed drafts are all still in
flight (broadcasting), and ten cancellations fall in the waiting draft's age bin but before its age: the finished
operations of that bin and later are 14 cancelled and 5 expired, so the old projection gave the waiting draft a
14/19 chance of being cancelled. The expectation is worked by hand (Aalen–Johansen, events before censorings).

The point estimate is the known count plus the *median* number of the waiting drafts that will be cancelled (each
with its chance, independently): the single guess off by the least in expectation, where the mean (the sum of the
chances) read above the final value in most cohorts, a cancellation being a rare outcome of a few young drafts.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pandas as pd
import pytest

from tests.support.builders import BASE, ETHEREUM, RELAY, SEPOLIA, T0, build, ladder, op_event, op_record, refresh
from toolkit import metrics
from toolkit.metrics.common import Sql
from toolkit.metrics.drafts import projected_units
from toolkit.metrics.outcomes import operation_cohort
from toolkit.metrics.stats import count_median

WINDOW = 10_000  # each draft with a deadline has 10,000 s to be signed
WAITING_AT = 50_000  # the waiting drafts are created here
AS_OF = WAITING_AT + 1_000  # and read 1,000 s later


def _at(seconds: int) -> pd.Timestamp:
    return pd.Timestamp(T0 + seconds, unit="s", tz="UTC")


def _draft(op: str, created: int, *, status: str, chain: str = ETHEREUM, deadline: bool = True) -> dict:
    record = op_record(op, status, chain=chain, created=created, updated=created)
    record["deadline"] = T0 + created + WINDOW if deadline else 0
    return record


def _warehouse(path, waiting: int = 1, finished: bool = False):
    """The drafts above; ``waiting`` Ethereum drafts created at ``WAITING_AT`` + 0, 1, ... s; ``finished`` adds, in
    the cohort's window, a draft cancelled after 80 s and four signed operations (never drafts) confirmed."""
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
    for k in range(waiting):  # 1,000 - k s old when read: u0 just under 0.1, after the quick cancellations
        op = "waiting" if k == 0 else f"waiting-{k}"
        events += ladder(op, ("pending_signature",), (WAITING_AT + k,))
        records.append(_draft(op, WAITING_AT + k, status="pending_signature"))
    if finished:
        events += ladder("gone", ("pending_signature", "cancelled"), (WAITING_AT + 10, WAITING_AT + 90))
        records.append(_draft("gone", WAITING_AT + 10, status="cancelled"))
        for i in range(4):
            c = WAITING_AT + 20 + i
            events += ladder(f"signed-ok-{i}", RELAY, tuple(range(c, c + len(RELAY))))
            records.append(op_record(f"signed-ok-{i}", "confirmed", created=c, updated=c + len(RELAY)))
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


def _chances(wh, since: pd.Timestamp, until: pd.Timestamp) -> dict[str, tuple[float, float]]:
    """Each waiting draft of the operations created in ``[since, until)``: its (cancel, expiry) chance."""
    cohort = operation_cohort(Sql().period("created_at", since, until), [], {}, {})
    _, units = projected_units(wh, cohort.ctes, cohort.units, [], cohort.params)
    units = units[units["waiting"]]
    pairs = zip(units["p_draft_cancelled"], units["p_draft_expired"], strict=True)
    return dict(zip(units["unit_id"], pairs, strict=True))


def _median(chances: list[Fraction]) -> int:
    """The median count of independent events, by listing every outcome (exact fractions)."""
    mass = [Fraction(0)] * (len(chances) + 1)
    for outcome in itertools.product((0, 1), repeat=len(chances)):
        weight = Fraction(1)
        for hit, p in zip(outcome, chances, strict=True):
            weight *= p if hit else 1 - p
        mass[sum(outcome)] += weight
    return next(m for m in range(len(mass)) if sum(mass[: m + 1]) >= Fraction(1, 2))


def test_a_waiting_draft_is_projected_on_every_drafts_exit(tmp_path) -> None:
    wh = _warehouse(tmp_path / "w.duckdb")
    since, until = (_at(WAITING_AT), _at(WAITING_AT + 600))
    df = metrics.failure_rates(wh, since=since, until=until).set_index("network")
    eth, sep = df.loc["Ethereum Mainnet"], df.loc["Ethereum Sepolia"]
    assert (eth.operations, eth.in_flight, sep.operations, sep.in_flight) == (1, 1, 1, 1)
    chances = _chances(wh, since, until)
    # Ethereum, on the deadline clock (u = share of the 10,000 s window): 30 drafts, the waiting one at u0 = 0.1.
    #   u=0.08: at risk 30, 10 leave (all cancelled)   S = 20/30
    #   (the waiting draft censored at 0.1)
    #   u=0.3:  at risk 19, 4 leave (cancelled)         S = 20/30 * 15/19
    #   u=0.5:  at risk 15, 10 leave (signed)           S = 20/30 * 15/19 * 5/15
    #   the 5 left reach u = 1 and expire.
    # From u0 = 0.1: cancelled S(0.3-)/S(0.1) * 4/19 = 4/19; expired S(1-)/S(0.1) = 15/19 * 5/15 = 5/19.
    assert chances["waiting"] == pytest.approx((4 / 19, 5 / 19))
    # the point: no cancellation known, and one chance of 4/19 makes a median of 0 cancelled (the mean was 4/19)
    assert eth.draft_cancel_rate == 0.0
    assert eth.draft_expiry_rate == pytest.approx(5 / 19)
    assert eth.draft_cancel_rate_low == 0.0 < 4 / 19 < eth.draft_cancel_rate_high  # a projection carries uncertainty
    # Sepolia, no deadline, in seconds: 22 drafts (free-old censored at 5,000 s, free-waiting at 500 s).
    #   100 s:   at risk 22, 12 cancelled                           S = 10/22
    #   1000 s:  at risk 9 (22 - 12 - free-waiting), 4 cancelled    S = 10/22 * 5/9
    #   2000 s:  at risk 5, 4 signed                                S = 10/22 * 5/9 * 1/5
    # From 500 s: cancelled S(1000-)/S(500) * 4/9 = 4/9, signed 5/9 * 4/5 = 4/9, still a draft 1/9; never expires.
    assert chances["free-waiting"] == pytest.approx((4 / 9, 0.0))
    assert sep.draft_cancel_rate == 0.0  # 4/9 < 1/2
    assert sep.draft_expiry_rate == 0.0
    # the relayed rates are not touched by a waiting draft
    assert (eth.relayed, sep.relayed) == (0, 0)


@pytest.mark.parametrize(
    ("start", "waiting"),
    [(WAITING_AT, 3), (WAITING_AT + 1, 2)],  # the three waiting drafts, or the two created a second later
)
def test_the_point_is_the_known_count_and_the_median_count_still_to_come(tmp_path, start, waiting) -> None:
    """Three waiting drafts, each cancelled with chance 4/19 (the curve is the one worked above: the quick
    cancellations at 800 s come before their ~1,000 s, the next at 3,000 s after), beside one draft cancelled and
    four operations confirmed in the same window."""
    wh = _warehouse(tmp_path / "w.duckdb", waiting=3, finished=True)
    since, until = _at(start), _at(WAITING_AT + 600)
    row = metrics.failure_rates(wh, since=since, until=until).set_index("network").loc["Ethereum Mainnet"]
    chances = {op: c for op, c in _chances(wh, since, until).items() if op.startswith("waiting")}  # Ethereum's
    assert len(chances) == waiting and all(c == pytest.approx(4 / 19) for c, _ in chances.values())
    operations = waiting + 1 + 4
    assert (row.operations, row.draft_cancelled, row.in_flight) == (operations, 1, waiting)
    # three chances of 4/19: P(none) = (15/19)^3 = 3375/6859 < 1/2, median 1; two: (15/19)^2 = 225/361, median 0
    median = _median([Fraction(4, 19)] * waiting)
    assert median == {3: 1, 2: 0}[waiting]
    assert row.draft_cancel_rate == pytest.approx((1 + median) / operations)
    mean = (1 + waiting * 4 / 19) / operations  # what the point was: the interval is still the mean's
    assert row.draft_cancel_rate_low < row.draft_cancel_rate < row.draft_cancel_rate_high
    assert row.draft_cancel_rate_low < mean < row.draft_cancel_rate_high


@pytest.mark.parametrize(
    "chances",
    [
        [],
        [Fraction(1, 2)],
        [Fraction(3, 5)],
        [Fraction(3, 10)] * 2,
        [Fraction(1, 10)] * 6,
        [Fraction(1), Fraction(1, 5), Fraction(0)],
        [Fraction(9, 10), Fraction(1, 20), Fraction(2, 5), Fraction(7, 10), Fraction(1, 3), Fraction(1, 4)],
        [Fraction(7, 10)] * 10,
    ],
)
def test_count_median_against_every_outcome_listed(chances) -> None:
    assert count_median([float(c) for c in chances]) == _median(chances)
