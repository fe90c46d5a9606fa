"""Revisits and reorgs from hand-built event histories, with duplicated events that must not count."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from tests.support.builders import ETHEREUM, SEPOLIA, T0, build, ladder, op_event, op_record, refresh
from toolkit import metrics, spec
from toolkit.warehouse import Warehouse

SINCE = pd.Timestamp(T0, unit="s", tz="UTC")


def _dup(event: dict, *, new_id: bool) -> dict:
    """The same event again: with the same event id (re-delivery) or a new one (the service sent it twice)."""
    copy = {**event, "headers": dict(event["headers"]), "payload": dict(event["payload"])}
    if new_id:
        copy["event_id"] = event["event_id"][:-7] + "9" + event["event_id"][-6:]
        copy["headers"]["offset"] = event["headers"]["offset"] + 100_000
    return copy


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    reorg = ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "broadcasting", "confirmed_latest")
    events = ladder("reorg-1", (*reorg, "confirmed_safe", "confirmed"), [10 * k for k in range(9)])
    plain = ladder("plain-1", ("accepted", "sending", "sent", "broadcasting", "confirmed_latest"), [0, 5, 9, 12, 20])
    # plain-1: the same event delivered with a second id at the same time (out of order), and broadcasting reported
    # twice in a row at different times: one stay, no revisit
    plain.append(_dup(plain[4], new_id=True))
    plain.append(_dup(plain[1], new_id=True))
    plain.append(op_event("plain-1", "broadcasting", T0 + 15))
    back = ladder(
        "deep-1",
        ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "sent", "broadcasting", "confirmed_latest"),
        [0, 1, 2, 3, 4, 5, 6, 7],
        chain=SEPOLIA,
    )
    # within the finality stages: confirmed_safe back to confirmed_latest is a revisit, not a reorg
    soft = ladder("soft-1", ("accepted", "confirmed_latest", "confirmed_safe", "confirmed_latest"), [0, 1, 2, 3])
    records = [
        op_record("reorg-1", "confirmed", created=0, updated=80),
        op_record("plain-1", "confirmed_latest", created=0, updated=20),
        op_record("deep-1", "confirmed_latest", chain=SEPOLIA, created=0, updated=7),
        op_record("soft-1", "confirmed_latest", created=0, updated=3),
        op_record("old-1", "confirmed_latest", created=-1000, updated=-900),
    ]
    old = ladder("old-1", ("accepted", "confirmed_latest", "broadcasting"), [-1000, -950, -900])
    wh = build(tmp_path / "w.duckdb", events=[*events, *plain, *back, *soft, *old], operations=records)
    # a re-delivery of events already held (same event ids) in a later sync
    build(tmp_path / "w.duckdb", events=[_dup(events[5], new_id=False), _dup(back[5], new_id=False)], wh=wh)
    return refresh(wh)


def test_revisits_and_reorgs_per_network(warehouse: Warehouse) -> None:
    df = metrics.revisits(warehouse, since=SINCE)
    rows = {
        r["chain_selector"]: r
        for r in metrics.revisits(warehouse, by=["chain_selector"], since=SINCE).to_dict("records")
    }
    eth, sep = rows[ETHEREUM], rows[SEPOLIA]
    # Ethereum: reorg-1 (broadcasting and confirmed_latest again, 1 reorg), soft-1 (confirmed_latest again),
    # plain-1 (duplicates only)
    assert (eth["operations"], eth["operations_revisited"], eth["revisits"]) == (3, 2, 3)
    assert (eth["operations_reorged"], eth["reorgs"]) == (1, 1)
    # Sepolia: deep-1 went back to sent: sent, broadcasting, confirmed_latest again
    assert (sep["operations"], sep["operations_revisited"], sep["revisits"], sep["reorgs"]) == (1, 1, 3, 1)
    assert set(df.columns) >= {"network", "operations", "revisits", "reorgs", "operations_reorged"}


def test_the_period_selects_by_creation(warehouse: Warehouse) -> None:
    everything = metrics.revisits(warehouse, by=[])
    assert everything[["operations", "reorgs"]].iloc[0].tolist() == [5, 3]  # old-1 reorged before the period


def test_registered_for_the_command_line() -> None:
    assert metrics.METRICS["revisits"] is metrics.revisits


def _python_steps(moves: list[tuple[str, int]]) -> dict[str, tuple[int, int]]:
    """Per status, (entries, reorg entries) of one operation's ``(status, time)`` events, computed here from the
    rules in docs/metrics.md, independently of the SQL: distinct (status, time) pairs ordered by time, then stage
    (unknown statuses last), then name; consecutive repeats of a status are one stay; a reorg is an entry at
    broadcasting or earlier right after a finality stage."""
    rank = {s: i for i, s in enumerate(spec.OPERATION_STATUSES)}
    order = sorted(set(moves), key=lambda m: (m[1], rank.get(m[0], 10**6), m[0]))
    steps: list[str] = []
    for status, _ in order:
        if not steps or steps[-1] != status:
            steps.append(status)
    out: dict[str, list[int]] = {}
    finality = {rank[s] for s in spec.FINALITY_STAGES}
    for i, status in enumerate(steps):
        entry = out.setdefault(status, [0, 0])
        entry[0] += 1
        before = rank.get(steps[i - 1]) if i else None
        if before in finality and rank.get(status, 10**6) <= rank["broadcasting"]:
            entry[1] += 1
    return {s: (e, r) for s, (e, r) in out.items()}


def test_each_transitions_entries_and_reorgs_follow_the_step_rules_on_random_histories(tmp_path: Path) -> None:
    """Random histories (statuses out of order, repeated at the same and at other times, unknown statuses,
    duplicates under new ids): every operation's entries and reorg entries in operation_transitions, and its
    revisits and reorgs in operation_lifecycle, are those of the step rules computed in Python."""
    rng = random.Random(1234)
    statuses = [*spec.OPERATION_STATUSES, "mystery_status", "another_unknown"]
    events, expected = [], {}
    for i in range(400):
        op = f"op-{i}"
        moves = []
        for _ in range(rng.randint(1, 9)):
            status = rng.choice(statuses)
            t = rng.choice([0, 0, 1, 2, 3, 5, 8]) + rng.randint(0, 3)
            moves.append((status, t))
            if rng.random() < 0.2:  # the same move again (a duplicate under a new id)
                moves.append((status, t))
        events += [op_event(op, s, T0 + t) for s, t in moves]
        expected[op] = _python_steps(moves)
    wh = refresh(build(tmp_path / "w.duckdb", events=events))
    got: dict[str, dict[str, tuple[int, int]]] = {}
    for op, status, entries, reorgs in wh.con.execute(
        "SELECT operation_id, status, entries, reorg_entries FROM operation_transitions"
    ).fetchall():
        got.setdefault(op, {})[status] = (entries, reorgs)
    assert got == expected
    per_op = {
        r[0]: (r[1], r[2])
        for r in wh.con.execute("SELECT operation_id, revisits, reorgs FROM operation_lifecycle").fetchall()
    }
    assert per_op == {
        op: (sum(e - 1 for e, _ in v.values()), sum(r for _, r in v.values())) for op, v in expected.items()
    }
    assert sum(r for v in expected.values() for _, r in v.values()) > 20  # the histories do hold reorgs
    assert sum(e - 1 for v in expected.values() for e, _ in v.values()) > 50  # and revisits
    wh.close()
