"""The modelled views on hand-made event histories: duplicates, gaps, disorder, ties, test networks, drafts."""

from __future__ import annotations

from tests.warehouse.helpers import ETHEREUM, SEPOLIA, T0, load, op_event

NETWORKS = [
    {
        "chain_selector": ETHEREUM,
        "name": "Ethereum Mainnet",
        "chain_id": "1",
        "chain_family": "evm",
        "type": "mainnet",
        "id": "n1",
        "created_at": T0,
        "updated_at": T0,
    },
]


def transitions(wh, op):
    return wh.con.execute(
        "SELECT status, epoch(entered_at)::BIGINT, next_status, seconds_in_status, network "
        "FROM operation_transitions WHERE operation_id = ? ORDER BY entered_at, stage_rank",
        [op],
    ).fetchall()


def test_full_ladder_gives_time_in_each_status(tmp_path) -> None:
    ladder = ["accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed"]
    times = [0, 2, 5, 17, 29, 420, 800]
    events = [op_event("op-1", s, T0 + t) for s, t in zip(ladder, times, strict=True)]
    wh = load(tmp_path / "w.duckdb", events=events, networks=NETWORKS)
    rows = transitions(wh, "op-1")
    assert [r[0] for r in rows] == ladder
    assert [r[3] for r in rows] == [2, 3, 12, 12, 391, 380, None]
    assert rows[0][2] == "sending" and rows[-1][2] is None
    assert {r[4] for r in rows} == {"Ethereum Mainnet"}


def test_duplicates_and_out_of_order_storage_do_not_change_transitions(tmp_path) -> None:
    events = [
        op_event("op-1", "sent", T0 + 5),
        op_event("op-1", "accepted", T0),
        op_event("op-1", "sending", T0 + 2),
        op_event("op-1", "sent", T0 + 5),  # the same move seen twice with another event id
    ]
    dup = op_event("op-1", "accepted", T0)
    events += [dup, dict(dup)]  # the same event id twice in one page
    wh = load(tmp_path / "w.duckdb", events=events)
    rows = transitions(wh, "op-1")
    assert [(r[0], r[3]) for r in rows] == [("accepted", 2), ("sending", 3), ("sent", None)]


def test_missing_intermediate_status_spans_the_gap(tmp_path) -> None:
    events = [
        op_event("op-1", "accepted", T0),
        op_event("op-1", "broadcasting", T0 + 30),
        op_event("op-1", "confirmed_latest", T0 + 42),
    ]
    wh = load(tmp_path / "w.duckdb", events=events)
    assert [(r[0], r[3]) for r in transitions(wh, "op-1")] == [
        ("accepted", 30),
        ("broadcasting", 12),
        ("confirmed_latest", None),
    ]


def test_several_statuses_in_one_second_follow_stage_order(tmp_path) -> None:
    events = [op_event("op-1", s, T0 + 1) for s in ("sent", "sending", "accepted")] + [
        op_event("op-1", "broadcasting", T0 + 4)
    ]
    wh = load(tmp_path / "w.duckdb", events=events)
    assert [(r[0], r[2], r[3]) for r in transitions(wh, "op-1")] == [
        ("accepted", "sending", 0),
        ("sending", "sent", 0),
        ("sent", "broadcasting", 3),
        ("broadcasting", None, None),
    ]


def test_test_network_ends_at_confirmed_latest_without_a_terminal(tmp_path) -> None:
    events = [
        op_event("op-t", s, T0 + t, chain=SEPOLIA)
        for s, t in (("accepted", 0), ("sending", 1), ("sent", 2), ("broadcasting", 3), ("confirmed_latest", 15))
    ]
    wh = load(tmp_path / "w.duckdb", events=events)
    row = wh.con.execute(
        "SELECT last_status, terminal_status, confirmed_latest_at IS NOT NULL, confirmed_at, network "
        "FROM operation_lifecycle WHERE operation_id = 'op-t'"
    ).fetchone()
    assert row == ("confirmed_latest", None, True, None, SEPOLIA)  # unknown network shows its selector


def test_drafts_and_failures_in_the_lifecycle(tmp_path) -> None:
    events = [
        op_event("d-1", "pending_signature", T0),
        op_event("d-1", "accepted", T0 + 60),
        op_event("d-2", "pending_signature", T0),
        op_event("d-2", "cancelled", T0 + 10),
        op_event("d-3", "pending_signature", T0),
        op_event("d-3", "expired", T0 + 3600),
        op_event("f-1", "accepted", T0),
        op_event("f-1", "sending", T0 + 1),
        op_event("f-1", "failed", T0 + 9, reason="execution reverted: ERC20: transfer amount exceeds balance"),
    ]
    wh = load(tmp_path / "w.duckdb", events=events)
    rows = dict(
        (r[0], r[1:])
        for r in wh.con.execute(
            "SELECT operation_id, last_status, terminal_status, status_reason, "
            "epoch(terminal_at)::BIGINT - epoch(created_at)::BIGINT FROM operation_lifecycle"
        ).fetchall()
    )
    assert rows["d-1"] == ("accepted", None, None, None)
    assert rows["d-2"] == ("cancelled", "cancelled", "", 10)
    assert rows["d-3"] == ("expired", "expired", "", 3600)
    assert rows["f-1"] == ("failed", "failed", "execution reverted: ERC20: transfer amount exceeds balance", 9)
    d1 = transitions(wh, "d-1")
    assert [(r[0], r[3]) for r in d1] == [("pending_signature", 60), ("accepted", None)]


def test_unknown_status_is_kept_and_ordered_after_known_ones(tmp_path) -> None:
    events = [
        op_event("op-1", "accepted", T0),
        op_event("op-1", "requeued", T0 + 3),
        op_event("op-1", "sending", T0 + 3),
    ]
    wh = load(tmp_path / "w.duckdb", events=events)
    assert [r[0] for r in transitions(wh, "op-1")] == ["accepted", "sending", "requeued"]
