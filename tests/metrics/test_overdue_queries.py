"""Queries past their expires_at with no terminal event, as of the newest event time."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.support.builders import ETHEREUM, SEPOLIA, T0, build, query_event, refresh
from toolkit import metrics


def _record(query: str, status: str, *, created: int, expires: int | None, chain: str = ETHEREUM, **at: int) -> dict:
    record = {
        "query_id": query,
        "channel_id": "ch-1",
        "status": status,
        "query_kind": "evm_call",
        "chain_selector": chain,
        "created_at": T0 + created,
        "accepted_at": T0 + created,
        **{f"{k}_at": T0 + v for k, v in at.items()},
    }
    if expires is not None:
        record["expires_at"] = T0 + expires
    return record


def test_queries_past_expiry_without_an_end_are_overdue(tmp_path: Path) -> None:
    records = [
        _record("stale-1", "sent", created=0, expires=300, sending=1, sent=2),  # 700 s past, no end: overdue
        _record("stale-2", "accepted", created=100, expires=400, chain=SEPOLIA),  # 600 s past: overdue
        _record("done-1", "completed", created=0, expires=300, sending=1, sent=2, completed=10),  # answered
        _record("late-1", "sent", created=0, expires=300, sending=1, sent=2),  # expired by an event below
        _record("young-1", "sent", created=900, expires=1200, sending=901, sent=902),  # not yet past expires_at
        _record("ended-later", "sent", created=0, expires=300, sending=1, sent=2),  # ends after the as-of time
        _record("no-ttl", "sent", created=0, expires=None, sending=1, sent=2),  # no expires_at: never judged
    ]
    events = [
        query_event("late-1", "expired", 300),
        query_event("young-1", "sent", 1000),  # the newest event: the data is as of T0 + 1000
        query_event("events-only", "sent", 5),  # no record, so no expires_at
    ]
    wh = refresh(build(tmp_path / "w.duckdb", events=events, queries=records))
    df = metrics.overdue_queries(wh)
    assert df["query_id"].tolist() == ["ended-later", "stale-1", "stale-2"]  # the most overdue first
    assert df["overdue_s"].tolist() == [700.0, 700.0, 600.0]
    # judged as of a later time, ended-later has ended (its record's completed_at) and young-1 is overdue
    wh.con.execute(
        "UPDATE queries SET status = 'completed', completed_at = to_timestamp(?) WHERE query_id = ?",
        [T0 + 1500, "ended-later"],
    )
    later = metrics.overdue_queries(wh, now=pd.Timestamp(T0 + 2000, unit="s", tz="UTC"))
    assert later["query_id"].tolist() == ["stale-1", "stale-2", "young-1"]
    grouped = metrics.overdue_queries(wh, by=["network"])
    assert dict(zip(grouped["network"], grouped["overdue"], strict=True)) == {
        "Ethereum Mainnet": 2,  # stale-1 and ended-later (it ends after the as-of time)
        "Ethereum Sepolia": 1,
    }
    assert metrics.METRICS["overdue-queries"] is metrics.overdue_queries


def test_an_empty_warehouse_has_none(tmp_path: Path) -> None:
    wh = refresh(build(tmp_path / "w.duckdb"))
    assert metrics.overdue_queries(wh).empty
