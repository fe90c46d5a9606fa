"""``draft_expiry_rate`` and its interval against a plain computation from the way a small warehouse was built: the
product-limit curve of staying a draft (per network with enough drafts, else every network's), each waiting draft's
chance to expire, and the moments (counts of the finished, sums over the open, cells of a twentieth of the window)
that :func:`~toolkit.metrics.inflight.ratio_interval` turns into the interval. Nothing here reads the warehouse."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import pandas as pd
import pytest

from tests.support.builders import ETHEREUM, SEPOLIA, T0, build, ladder, op_record, refresh
from toolkit import metrics
from toolkit.metrics.drafts import DRAFT_EXPIRY
from toolkit.metrics.inflight import EVERY, MIN_REFERENCE, ratio_interval

AS_OF = 12_000
NAMES = {ETHEREUM: "Ethereum Mainnet", SEPOLIA: "Ethereum Sepolia"}


@dataclass
class Unit:
    """One operation as built: ``fate`` expired / relayed / cancelled (at ``at``), in_flight (relayed at ``at``),
    waiting (a draft), or done (relayed and ended, never a draft)."""

    op: str
    chain: str
    created: int
    deadline: int | None
    fate: str
    at: int | None = None
    draft: bool = True


def _units() -> list[Unit]:
    units = []
    for i in range(25):  # Ethereum: 25 drafts with a 10,000 s window, its own curve
        c, dl = 400 * i, 400 * i + 10_000
        if i < 5:
            units.append(Unit(f"e{i}", ETHEREUM, c, dl, "expired", dl))
        elif i < 10:  # relayed at u = 0.5 .. 0.7
            units.append(Unit(f"e{i}", ETHEREUM, c, dl, "relayed", c + 5_000 + 500 * (i - 5)))
        elif i < 13:  # three cancelled at u = 0.6, tied with one relayed
            units.append(Unit(f"e{i}", ETHEREUM, c, dl, "cancelled", c + 6_000))
        elif i < 16:  # relayed at u = 0.05, still in flight
            units.append(Unit(f"e{i}", ETHEREUM, c, dl, "in_flight", c + 500))
        else:  # waiting at u0 = 0.56 .. 0.24
            units.append(Unit(f"e{i}", ETHEREUM, c, dl, "waiting"))
    units += [Unit("e-nodl-1", ETHEREUM, 9_000, None, "waiting"), Unit("e-nodl-2", ETHEREUM, 9_500, None, "waiting")]
    for j, fate in enumerate(["expired", "relayed", "cancelled", "waiting", "waiting", "waiting"]):
        c = 1_000 + 1_500 * j  # Sepolia: six drafts, 8,000 s windows; too few: every network's curve
        at = {"expired": c + 8_000, "relayed": c + 4_000, "cancelled": c + 2_000}.get(fate)
        units.append(Unit(f"s{j}", SEPOLIA, c, c + 8_000, fate, at))
    units.append(Unit("s-late", SEPOLIA, 500, 3_500, "waiting"))  # past its deadline, no expiry yet
    units += [Unit(f"e-done-{i}", ETHEREUM, 100 * i, None, "done", 100 * i + 50, draft=False) for i in range(4)]
    units += [Unit(f"s-done-{i}", SEPOLIA, 200 * i, None, "done", 200 * i + 30, draft=False) for i in range(3)]
    units.append(Unit("e-relayed-dl", ETHEREUM, 11_000, 15_000, "in_flight", 11_000, draft=False))
    units.append(Unit("clock", ETHEREUM, AS_OF, None, "in_flight", AS_OF, draft=False))
    return units


def _steps(u: Unit) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The statuses the unit went through and when."""
    first = ("pending_signature",) if u.draft else ()
    if u.fate == "waiting":
        return first, (u.created,)
    if u.fate == "relayed":
        return (*first, "accepted", "confirmed"), (u.created, u.at, u.at + 100)
    if u.fate == "done":
        return ("accepted", "confirmed"), (u.created, u.at)
    status = {"expired": "expired", "cancelled": "cancelled", "in_flight": "accepted"}[u.fate]
    return (*first, status), (u.created, u.at)[-len(first) - 1 :]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory):
    events, records = [], []
    for u in _units():
        chain = {"chain": u.chain}
        steps = _steps(u)
        events += ladder(u.op, *steps, **chain)
        record = op_record(u.op, steps[0][-1], created=u.created, updated=steps[1][-1], **chain)
        record["deadline"] = None if u.deadline is None else T0 + u.deadline
        records.append(record)
    return refresh(build(tmp_path_factory.mktemp("drafts") / "w.duckdb", events=events, operations=records))


def _observation(u: Unit) -> tuple[float, bool]:
    """(u, left) of a draft with a deadline: left when relayed or cancelled, at 1 when expired, else censored."""
    window = u.deadline - u.created
    if u.fate == "expired":
        return 1.0, False
    if u.fate in ("relayed", "cancelled", "in_flight"):
        return min(max((u.at - u.created) / window, 0.0), 1 - 1e-9), True
    return min(max((AS_OF - u.created) / window, 0.0), 1.0), False


def _expire(reference: list[tuple[float, bool]], u0: float) -> tuple[float, int]:
    """P(expire | waiting at u0): the product over the leaving times after u0 of (1 - leaving / at risk); and the
    drafts at risk at the first of those times (0 when none)."""
    if u0 >= 1:
        return 1.0, 0
    p, first = 1.0, None
    for t in sorted({u for u, left in reference if left and u > u0}):
        at_risk = sum(1 for u, _ in reference if u >= t)
        p *= 1 - sum(1 for u, left in reference if left and u == t) / at_risk
        first = at_risk if first is None else first
    return p, first or 0


def _expected(group_of) -> pd.DataFrame:
    """Point estimate and interval per group (``group_of(unit)``), computed unit by unit."""
    units = _units()
    reference: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for u in units:
        if u.draft and u.deadline is not None:
            reference[u.chain].append(_observation(u))
    pooled = [o for obs in reference.values() for o in obs]
    moments: dict[object, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    cells: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for u in units:
        m, g = moments[group_of(u)], group_of(u)
        if u.fate in ("expired", "relayed", "cancelled", "done"):
            m["known_x"] += u.fate == "expired" and u.draft
            m["known_every"] += 1
            continue
        m["e_every"] += 1
        window = None if u.deadline is None else u.deadline - u.created
        u0 = None if window is None else min(max((AS_OF - u.created) / window, 0.0), 1.0)
        p, n, curve = 0.0, 1.0, ""
        if u.fate == "waiting" and window:
            own = len(reference[u.chain]) >= MIN_REFERENCE
            p, after = _expire(reference[u.chain] if own else pooled, u0)
            n, curve = max(after, 1), u.chain if own else "*"
        m["e_x"] += p
        m["e_xx"] += p * p
        cells[(g, curve, None if u0 is None else math.floor(u0 * 20))].append((p, n))
    for (g, _, _), members in cells.items():
        count, mean, n = len(members), sum(p for p, _ in members) / len(members), min(n for _, n in members)
        w1 = count**2 / n
        moments[g]["w_x"] += w1 * mean
        moments[g]["w_xx"] += w1 * mean**2
        moments[g]["w_every"] += w1
    x = DRAFT_EXPIRY.numerator
    rows = [
        {
            "group": g,
            f"known_{x}": m["known_x"],
            f"known_{EVERY}": m["known_every"],
            f"e_{x}": m["e_x"],
            f"e_{EVERY}": m["e_every"],
            f"e_{x}__{x}": m["e_xx"],
            f"e_{EVERY}__{EVERY}": m["e_every"],
            f"e_{x}__{EVERY}": m["e_x"],
            f"w_{x}": m["w_x"],
            f"w_{x}__{x}": m["w_xx"],
            f"w_{EVERY}": m["w_every"],
            f"w_{EVERY}__{EVERY}": m["w_every"],
            f"w_{x}__{EVERY}": m["w_x"],
            "unprojected": 0.0,
        }
        for g, m in moments.items()
    ]
    df = pd.DataFrame(rows)
    df["rate"], df["low"], df["high"] = ratio_interval(df, DRAFT_EXPIRY)
    return df.set_index("group")


@pytest.mark.parametrize("by", [["network"], []])
def test_draft_expiry_rate_and_interval_match_a_unit_by_unit_computation(warehouse, by) -> None:
    want = _expected((lambda u: NAMES[u.chain]) if by else (lambda u: "all"))
    got = metrics.failure_rates(warehouse, by=by)
    got.index = got["network"] if by else ["all"]
    assert sorted(got.index) == sorted(want.index)
    for group, row in want.iterrows():
        assert row["rate"] > 0 and row["low"] < row["rate"] < row["high"], group  # the projection is exercised
        for ours, theirs in (("rate", ""), ("low", "_low"), ("high", "_high")):
            assert got.loc[group, f"draft_expiry_rate{theirs}"] == pytest.approx(row[ours], rel=1e-12), (group, ours)


def test_the_waiting_drafts_are_projected_not_counted(warehouse) -> None:
    """Sepolia: one draft expired of 10 operations, four drafts waiting (one past its deadline, at probability 1,
    the others between 0 and 1): the estimate sits above (1 + 1) / 10 and below (1 + 4) / 10."""
    rate = metrics.failure_rates(warehouse).set_index("network").loc[NAMES[SEPOLIA], "draft_expiry_rate"]
    assert 2 / 10 < rate < 5 / 10
