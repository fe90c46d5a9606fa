"""The materialised models: the public views give the same rows before and after a refresh, refreshes are
incremental and idempotent, and late, duplicated or out-of-order events are folded in exactly."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.builders import (
    ETHEREUM,
    NETWORKS,
    SEPOLIA,
    T0,
    build,
    empty_warehouse,
    ladder,
    op_event,
    op_record,
    refresh,
)
from toolkit import spec
from toolkit.warehouse import Warehouse
from toolkit.warehouse import model_tables as models_module
from toolkit.warehouse.model_tables import MODEL_VERSION, refresh_models
from toolkit.warehouse.views import MODELS_STREAM

TRANSITION_SQL = """SELECT operation_id, status, epoch(entered_at)::BIGINT, next_status, seconds_in_status,
    seconds_since_created, channel_id, chain_selector, network, status_reason FROM operation_transitions
    ORDER BY operation_id, entered_at, stage_rank"""
LIFECYCLE_SQL = "SELECT * FROM operation_lifecycle ORDER BY operation_id"


def snapshot(wh: Warehouse) -> tuple[list, dict]:
    return wh.con.execute(TRANSITION_SQL).fetchall(), wh.arrow(LIFECYCLE_SQL).to_pydict()


def materialised(wh: Warehouse) -> int:
    return wh.con.execute("SELECT count(*) FROM model_operation_transitions").fetchone()[0]


def edge_case_events() -> list[dict]:
    """Every edge case of the issue in one history."""
    ev = ladder(
        "full",
        ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed"),
        (0, 2, 5, 17, 29, 420, 800),
    )
    ev += [
        op_event("dup", "sent", T0 + 5),
        op_event("dup", "accepted", T0),
        op_event("dup", "sending", T0 + 2),
        op_event("dup", "sent", T0 + 5),
    ]
    ev += [
        op_event("gap", "accepted", T0),
        op_event("gap", "broadcasting", T0 + 30),
        op_event("gap", "confirmed_latest", T0 + 42),
    ]
    ev += [op_event("tie", s, T0 + 1) for s in ("sent", "sending", "accepted")] + [
        op_event("tie", "broadcasting", T0 + 4)
    ]
    ev += ladder(
        "test", ("accepted", "sending", "sent", "broadcasting", "confirmed_latest"), (0, 1, 2, 3, 15), chain=SEPOLIA
    )
    ev += ladder("d-ok", ("pending_signature", "accepted"), (0, 60))
    ev += ladder("d-cancel", ("pending_signature", "cancelled"), (0, 10))
    ev += ladder("d-expire", ("pending_signature", "expired"), (0, 3600), reason="deadline elapsed")
    ev += ladder("fail", ("accepted", "sending", "failed"), (0, 1, 9), reason="execution reverted")
    ev += [op_event("odd", "accepted", T0), op_event("odd", "requeued", T0 + 3), op_event("odd", "sending", T0 + 3)]
    return ev


def test_views_are_identical_before_and_after_the_refresh(tmp_path) -> None:
    wh = build(
        tmp_path / "w.duckdb",
        events=edge_case_events(),
        operations=[op_record("full", "confirmed", created=-5, updated=800)],
    )
    before = snapshot(wh)
    assert materialised(wh) == 0
    result = refresh_models(wh)
    assert result.rebuilt and result.operations == 10 and materialised(wh) == result.transitions
    assert snapshot(wh) == before
    assert wh.con.execute("SELECT count(*) FROM model_stale_operations").fetchone()[0] == 0


def test_refresh_is_idempotent_and_incremental(tmp_path) -> None:
    wh = refresh(build(tmp_path / "w.duckdb", events=edge_case_events()))
    tables = [
        wh.arrow(f"SELECT * FROM {t} ORDER BY ALL").to_pydict()
        for t in ("model_operation_transitions", "model_operation_lifecycle")
    ]
    again = refresh_models(wh)
    assert (again.operations, again.transitions, again.rebuilt) == (0, 0, False)
    assert tables == [
        wh.arrow(f"SELECT * FROM {t} ORDER BY ALL").to_pydict()
        for t in ("model_operation_transitions", "model_operation_lifecycle")
    ]
    build(tmp_path / "w.duckdb", wh=wh, events=[op_event("gap", "confirmed_safe", T0 + 400)])
    later = refresh_models(wh)
    assert (later.operations, later.rebuilt) == (1, False)


def test_late_and_earlier_events_are_exact_before_and_after_refresh(tmp_path) -> None:
    wh = refresh(build(tmp_path / "w.duckdb", events=ladder("op", ("accepted", "sent"), (0, 10))))
    # a late sync brings the missing middle move and a duplicate of `sent` stamped earlier than the first copy
    build(tmp_path / "w.duckdb", wh=wh, events=[op_event("op", "sending", T0 + 4), op_event("op", "sent", T0 + 8)])
    want = [("accepted", "sending", 4.0), ("sending", "sent", 4.0), ("sent", None, None)]
    rows = wh.con.execute(
        "SELECT status, next_status, seconds_in_status FROM operation_transitions ORDER BY entered_at"
    ).fetchall()
    assert rows == want  # live path: the operation is stale until the next refresh
    refresh_models(wh)
    assert (
        wh.con.execute(
            "SELECT status, next_status, seconds_in_status FROM model_operation_transitions ORDER BY entered_at"
        ).fetchall()
        == want
    )


def test_an_operation_record_arriving_later_updates_created_at(tmp_path) -> None:
    wh = refresh(build(tmp_path / "w.duckdb", events=ladder("op", ("accepted", "sending"), (10, 12))))
    assert wh.con.execute(
        "SELECT seconds_since_created FROM operation_transitions WHERE status = 'sending'"
    ).fetchone() == (2.0,)
    build(tmp_path / "w.duckdb", wh=wh, operations=[op_record("op", "sending", created=0, updated=12)])
    assert wh.con.execute(
        "SELECT seconds_since_created FROM operation_transitions WHERE status = 'sending'"
    ).fetchone() == (12.0,)
    refresh_models(wh)
    assert wh.con.execute(
        "SELECT seconds_since_created FROM model_operation_transitions WHERE status = 'sending'"
    ).fetchone() == (12.0,)


def test_a_new_model_version_rebuilds(tmp_path) -> None:
    wh = refresh(build(tmp_path / "w.duckdb", events=edge_case_events()))
    before = snapshot(wh)
    wh.set_cursor(MODELS_STREAM, {"version": MODEL_VERSION - 1})
    result = refresh_models(wh)
    assert result.rebuilt and result.operations == 10
    assert snapshot(wh) == before
    assert wh.get_cursor(MODELS_STREAM)["version"] == MODEL_VERSION


def test_chunked_refresh_gives_the_same_rows(tmp_path, monkeypatch) -> None:
    wh = build(tmp_path / "w.duckdb", events=edge_case_events())
    before = snapshot(wh)
    monkeypatch.setattr(models_module, "CHUNK_BOUNDS", (3, 3))
    result = refresh_models(wh)
    assert result.operations == 10
    assert snapshot(wh) == before


def test_lifecycle_keeps_operations_without_events(tmp_path) -> None:
    wh = refresh(build(tmp_path / "w.duckdb", operations=[op_record("quiet", "failed", created=0, updated=9)]))
    row = wh.con.execute(
        "SELECT last_status, terminal_status, epoch(terminal_at)::BIGINT, network FROM operation_lifecycle"
    ).fetchall()
    assert row == [("failed", "failed", T0 + 9, "Ethereum Mainnet")]


# ---- property: any history, loaded in any batches with refreshes in between, matches a reference ---------------


def reference(events: list[tuple[str, str, str, int]]) -> set[tuple]:
    """(operation, status, entered, next status, seconds) from (event_id, operation, status, ts), independently."""
    by_id = {eid: (op, status, ts) for eid, op, status, ts in events}
    entered: dict[tuple[str, str], int] = {}
    for op, status, ts in by_id.values():
        entered[(op, status)] = min(ts, entered.get((op, status), ts))
    per_op = defaultdict(list)
    for (op, status), ts in entered.items():
        per_op[op].append((ts, spec.OPERATION_STAGE_ORDER.get(status, 1000), status))
    out = set()
    for op, moves in per_op.items():
        moves.sort()
        for (t0, _, s0), nxt in itertools.zip_longest(moves, moves[1:]):
            out.add((op, s0, T0 + t0, nxt[2] if nxt else None, float(nxt[0] - t0) if nxt else None))
    return out


histories = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(spec.OPERATION_STATUSES[:8]),
        st.integers(min_value=0, max_value=6),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    history=histories,
    cuts=st.lists(st.integers(min_value=0, max_value=14), max_size=3),
    refresh_after=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_any_history_in_any_batches_matches_the_reference(tmp_path_factory, history, cuts, refresh_after) -> None:
    path = tmp_path_factory.mktemp("prop") / "w.duckdb"
    events = []
    for i, (op, status, t) in enumerate(history):
        ev = op_event(op, status, T0 + t, event_id=f"00000000-0000-4000-a000-{i:012d}")
        events.append(ev)
    bounds = sorted({0, len(events), *(min(c, len(events)) for c in cuts)})
    wh = empty_warehouse(path)
    seen: list[tuple[str, str, str, int]] = []
    for (lo, hi), do_refresh in zip(itertools.pairwise(bounds), refresh_after, strict=False):
        build(path, wh=wh, networks=NETWORKS, events=events[lo:hi])
        seen += [
            (e["event_id"], e["payload"]["operation_id"], e["payload"]["status"], e["payload"]["timestamp"] - T0)
            for e in events[lo:hi]
        ]
        if do_refresh:
            refresh_models(wh)
        got = set(
            wh.con.execute(
                "SELECT operation_id, status, epoch(entered_at)::BIGINT, next_status, "
                "seconds_in_status FROM operation_transitions"
            ).fetchall()
        )
        assert got == reference(seen)
    wh.close()


def test_network_names_come_from_networks_or_show_the_selector(tmp_path) -> None:
    wh = refresh(
        build(
            tmp_path / "w.duckdb",
            events=[op_event("x", "accepted", T0, chain=ETHEREUM), op_event("y", "accepted", T0, chain="123")],
        )
    )
    assert dict(wh.con.execute("SELECT operation_id, network FROM operation_lifecycle").fetchall()) == {
        "x": "Ethereum Mainnet",
        "y": "123",
    }


def test_an_unchanged_record_stored_again_leaves_its_operation_fresh(tmp_path) -> None:
    record = op_record("op", "confirmed_latest", chain=SEPOLIA, created=0, updated=12)
    wh = refresh(
        build(
            tmp_path / "w.duckdb",
            operations=[record],
            events=ladder("op", ("accepted", "confirmed_latest"), (0, 12), chain=SEPOLIA),
        )
    )
    before = snapshot(wh)
    build(tmp_path / "w.duckdb", wh=wh, operations=[record])  # every sync re-lists operations still in flight
    assert snapshot(wh) == before  # computed live until the refresh, to the same rows
    unchanged = refresh_models(wh)
    assert (unchanged.operations, unchanged.pieces) == (0, 0)  # left out before the work is planned
    assert wh.con.execute("SELECT count(*) FROM model_stale_operations").fetchone()[0] == 0
    build(tmp_path / "w.duckdb", wh=wh, operations=[{**record, "status": "failed", "updated_at": T0 + 20}])
    assert wh.con.execute("SELECT operation_id FROM model_stale_operations").fetchall() == [("op",)]
    assert wh.con.execute("SELECT terminal_status FROM operation_lifecycle").fetchall() == [("failed",)]
    assert refresh_models(wh).operations == 1


def test_a_reader_in_another_process_gets_in_between_pieces_and_the_refresh_carries_on(tmp_path, monkeypatch) -> None:
    import subprocess
    import sys

    path = tmp_path / "w.duckdb"
    wh = build(path, events=edge_case_events())
    before = snapshot(wh)
    monkeypatch.setattr(models_module, "CHUNK_BOUNDS", (2, 2))  # five pieces of two operations
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from toolkit.warehouse import Warehouse\n"
            "with Warehouse(sys.argv[1], read_only=True, wait=60) as wh: print(wh.count('events'))",
            str(path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    readers_file = path.parent / f"{path.name}.readers"
    while not readers_file.exists():  # the reader is waiting for the file
        assert reader.poll() is None, reader.communicate()
    stepped_aside = []

    def between() -> bool:
        stepped_aside.append(wh.yield_to_readers(pause=0.5))
        return stepped_aside[-1]

    result = refresh_models(wh, between=between)
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    assert int(out) == len(edge_case_events())
    assert stepped_aside[0] and len(stepped_aside) == result.pieces - 1 == 4
    assert result.operations == 10 and snapshot(wh) == before
    assert wh.con.execute("SELECT count(*) FROM model_stale_operations").fetchone()[0] == 0


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    created=st.lists(
        st.one_of(st.none(), st.integers(min_value=0, max_value=5), st.integers(min_value=0, max_value=10**7)),
        min_size=1,
        max_size=40,
    ),
    size=st.integers(min_value=1, max_value=12),
)
def test_the_pieces_cover_every_stale_operation_exactly_once(tmp_path_factory, created, size) -> None:
    """Operations with a record (some in a burst of the same few seconds, some years apart) and operations known
    from events only: every stale one lands in exactly one piece, and the pieces go oldest first."""
    path = tmp_path_factory.mktemp("plan") / "w.duckdb"
    records = [op_record(f"op{i}", "accepted", created=c) for i, c in enumerate(created) if c is not None]
    events = [op_event(f"op{i}", "accepted", T0 + (c or 0)) for i, c in enumerate(created)]
    wh = build(path, operations=records, events=events)
    models_module._stage_stale(wh)
    pieces = models_module._plan(wh, size)
    landed = Counter()
    starts = []
    for piece in pieces:
        ids = [
            r[0] for r in wh.con.execute(f"SELECT operation_id FROM _model_stale WHERE {piece.predicate()}").fetchall()
        ]
        landed.update(ids)
        starts.append(piece.lo)
    assert landed == Counter(f"op{i}" for i in range(len(created)))
    assert starts == sorted(starts)
    wh.close()
