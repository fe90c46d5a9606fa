"""Revisits and reorgs from hand-built event histories, with duplicated events that must not count."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.support.builders import ETHEREUM, SEPOLIA, T0, build, ladder, op_event, op_record, refresh
from toolkit import metrics
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
