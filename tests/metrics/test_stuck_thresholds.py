"""Stuck operations in a status no operation on their network has left yet: the threshold comes from the other
networks, then from the state machine (a draft's own deadline, one hour for a relay status)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.support.builders import ETHEREUM, SEPOLIA, T0, build, ladder, op_event, op_record, refresh
from toolkit import metrics

HOUR = 3600


def test_threshold_basis_network_other_networks_state_machine_explicit(tmp_path: Path) -> None:
    events = []
    for i in range(5):  # Sepolia: `sent` lasts 20 s; Ethereum has no `sent` history at all
        events += ladder(f"sep{i}", ("accepted", "sending", "sent", "broadcasting"), (0, 1, 2, 22), chain=SEPOLIA)
    for i in range(5):  # Ethereum: `accepted` lasts 4 s
        events += ladder(f"eth{i}", ("accepted", "sending", "failed"), (0, 4, 5), chain=ETHEREUM)
    now = 10_000
    events += ladder("e-sent", ("accepted", "sending", "sent"), (100, 104, 200))  # 9,800 s in sent > 3 x 20 s
    events += ladder("e-acc", ("accepted",), (9_000,))  # 1,000 s in accepted > 3 x 4 s (its own network)
    # broadcasting: nobody anywhere has left it; Sepolia's ops have sat in it for hours: the state machine's 1 h
    # pending_signature: a draft with a deadline 500 s after it was created (past), one with none (1 h default)
    events += [op_event("draft-dl", "pending_signature", T0 + 8_000), op_event("draft-no", "pending_signature", T0)]
    events += [op_event("draft-young", "pending_signature", T0 + 9_000)]  # no deadline, 1,000 s: not stuck yet
    events += [op_event("clock", "accepted", T0 + now, chain=SEPOLIA)]  # the newest event: the as-of time
    dl = op_record("draft-dl", "pending_signature", created=8_000, updated=8_000)
    dl["deadline"] = T0 + 8_500
    records = [
        dl,
        op_record("draft-no", "pending_signature"),
        op_record("draft-young", "pending_signature", created=9_000),
    ]
    wh = refresh(build(tmp_path / "w.duckdb", events=events, operations=records))

    df = metrics.stuck_operations(wh).set_index("operation_id")
    got = {op: (row.status, row.threshold_basis, row.threshold_s) for op, row in df.iterrows()}
    assert got["e-sent"] == ("sent", "other networks", 60.0)  # 3 x p90 20 s
    assert got["e-acc"] == ("accepted", "network", 60.0)  # 3 x 4 s, at least 60 s
    assert got["draft-dl"] == ("pending_signature", "state machine", 500.0)  # until its own deadline
    assert got["draft-no"] == ("pending_signature", "state machine", float(HOUR))
    for i in range(5):  # 9,978 s in broadcasting, nobody has left it anywhere
        assert got[f"sep{i}"] == ("broadcasting", "state machine", float(HOUR))
    assert "draft-young" not in got and "clock" not in got
    assert df.loc["e-sent", "network_p90_s"] is None or pd.isna(df.loc["e-sent", "network_p90_s"])

    explicit = metrics.stuck_operations(wh, thresholds={"broadcasting": 20_000}).set_index("operation_id")
    assert not any(explicit.index.str.startswith("sep"))
    assert explicit.loc["e-sent", "threshold_basis"] == "other networks"
    assert (
        metrics.stuck_operations(wh, thresholds={"sent": 5}).set_index("operation_id").loc["e-sent", "threshold_basis"]
        == "explicit"
    )
