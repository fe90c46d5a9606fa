"""Issue 39, item 6: docs/metrics.md answers what an analyst reading a row of ``failure-rates`` had to guess, and
the answers hold: which rates ``in_flight`` projects, what ``terminal`` counts, that ``deadline: 0`` means no
deadline, the query rates' denominator, and what the ``messy`` shape adds to ``default``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.builders import build, ladder, op_record, refresh
from toolkit import metrics

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
RELAY = ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed")


def _text() -> str:
    return re.sub(r"\s+", " ", DOC.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "answer",
    [
        "**Which rates `in_flight` projects.**",
        "A draft still waiting for its signature is projected only into the draft rates",
        "shows `failure_rate` exactly 2/276",
        "`terminal`: the relayed ones that have ended",
        "**`deadline: 0` means no deadline**",
        "**Query rates**",
        "`failed / finished` (and `expired / finished`) once every query has ended",
        "**What `messy` adds to `default`.**",
    ],
)
def test_metrics_md_answers(answer: str) -> None:
    assert answer in _text()


def test_a_waiting_draft_is_projected_only_into_the_draft_rates(tmp_path) -> None:
    """The documented row: 20 relayed operations, 2 failed, and one draft waiting (without a deadline): the relayed
    rates are exact with the plain Wilson interval, ``terminal`` is every relayed one, and ``in_flight`` is 1."""
    events, records = [], []
    for i in range(20):
        statuses = ("accepted", "sending", "failed") if i < 2 else RELAY
        events += ladder(f"op-{i}", statuses, tuple(range(10 * i, 10 * i + len(statuses))), reason="nonce too low")
    events += ladder("draft", ("pending_signature",), (500,))
    record = op_record("draft", "pending_signature", created=500, updated=500)
    assert record["deadline"] == 0  # no deadline
    records.append(record)
    row = metrics.failure_rates(refresh(build(tmp_path / "w.duckdb", events=events, operations=records))).iloc[0]
    assert (row.operations, row.relayed, row.terminal, row.failed, row.confirmed, row.in_flight) == (
        21,
        20,
        20,
        2,
        18,
        1,
    )
    assert row.failure_rate == 2 / 20
    low, high = metrics.wilson_interval(2, 20)
    assert (row.failure_rate_low, row.failure_rate_high) == (pytest.approx(float(low)), pytest.approx(float(high)))
    # no deadline: it never expires by one
    assert row.draft_expiry_rate == 0.0
