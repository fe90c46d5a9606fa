"""A sync against a server that answers like the service but with hostile content (tests/support/hostile.py): nothing
is lost silently, no walk loops, one bad page stops nothing else, and every departure is noted or reported with its
request. Expected values come from the server's own generated organisation."""

from __future__ import annotations

import json

import pytest

from tests.conftest import TEST_KEY
from tests.support.hostile import BAD_EVENT_OFFSET, BAD_OPERATIONS_OFFSET, BAD_RECORD_INDEX, Defects, HostileServer, Org
from tests.support.hostile_sync import sync_against as run
from tests.support.hostile_sync import warehouse_rows as rows

#: Real sockets or processes (hostile servers, the sandbox over HTTP, `chainops` as a process): the fast tier
#: skips them (docs/testing.md); `make test` runs them.
pytestmark = pytest.mark.slow

ORG = Org()
EVENTS = len(ORG.events[ORG.target])  # per channel
OPERATIONS = ORG.operations_per_channel


def per_channel(path, table: str) -> dict[str, int]:
    return dict(rows(path, f"SELECT channel_id, count(*) FROM {table} GROUP BY ALL"))


def stored_run(path) -> tuple:
    return rows(path, "SELECT outcome, message, gaps FROM sync_runs ORDER BY started_at DESC LIMIT 1")[0]


def cursor(path, name: str) -> dict:
    return json.loads(rows(path, "SELECT cursor FROM sync_state WHERE stream = ?", name)[0][0])


def test_the_server_without_defects_is_synced_whole(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY) as server:
        result = run(server, path)
    assert result.outcome == "ok", result.summary()
    assert per_channel(path, "events") == {c: len(e) for c, e in ORG.events.items()}
    assert per_channel(path, "operations") == {c: len(o) for c, o in ORG.operations.items()}
    assert per_channel(path, "queries") == {c: len(q) for c, q in ORG.queries.items()}


def test_offsets_going_backwards_are_a_reported_gap_and_the_cursor_never_passes_them(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, Defects(offsets_backwards=True)) as server:
        first = run(server, path)
        second = run(server, path)
    target = ORG.target
    for result in (first, second):
        assert result.outcome == "partial"
        assert result.gaps == {target: [[400, EVENTS - 1]]}
        assert any(
            f"GET /channels/{target}/events?limit=200&offset=400" in p and "backwards" in p for p in result.problems
        ), result.problems
    outcome, message, gaps = stored_run(path)
    assert outcome == "partial" and "offset=400" in message and json.loads(gaps) == {target: [[400, EVENTS - 1]]}
    assert rows(path, 'SELECT min("offset"), max("offset"), count(*) FROM events WHERE channel_id = ?', target) == [
        (0, 399, 400)
    ]
    assert cursor(path, f"events:{target}") == {"next_offset": 400}
    others = {c: n for c, n in per_channel(path, "events").items() if c != target}
    assert others == {c: len(e) for c, e in ORG.events.items() if c != target}


@pytest.mark.parametrize("kind", ["channels", "operations", "queries", "events"])
def test_has_more_forever_with_the_same_items_never_loops_and_is_reported(kind, tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, Defects(has_more_forever=frozenset({kind}))) as server:
        result = run(server, path)
        counts = server.counts[kind]
    assert result.outcome == "partial", result.summary()
    assert any("has_more" in p or "backwards" in p for p in result.problems), result.problems
    assert stored_run(path)[1] and "GET /" in stored_run(path)[1]
    # every real page once, and the one repeated page that shows the walk makes no progress
    pages = {"channels": 1, "operations": -(-OPERATIONS // 100), "queries": 1, "events": -(-EVENTS // 200)}[kind]
    streams = 1 if kind == "channels" else ORG.channels
    extra = ORG.channels if kind == "events" else 0  # the newest-first poll asked for the channel's head
    assert counts <= streams * (pages + 1) + extra
    # nothing was missing: the server only repeated itself past the end
    assert per_channel(path, "events") == {c: len(e) for c, e in ORG.events.items()}
    assert per_channel(path, "operations") == {c: len(o) for c, o in ORG.operations.items()}
    if kind == "operations":  # the repeated page's rows never move the saved offset past the list's end
        assert {cursor(path, f"operations:{c}")["offset"] for c in ORG.operations} == {OPERATIONS}


def test_a_huge_chain_selector_number_is_stored_exactly_and_noted(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, Defects(huge_chain_selector_number=True)) as server:
        result = run(server, path)
    assert result.outcome == "partial"
    assert any(
        "extra._invalid (first: chain_selector)" in p and f"/channels/{ORG.target}/" in p for p in result.problems
    ), result.problems
    op_id = ORG.operations[ORG.target][0]["operation_id"]
    selector, extra = rows(path, "SELECT chain_selector, extra FROM operations WHERE operation_id = ?", op_id)[0]
    assert selector == "18446744073709551616"
    assert json.loads(extra)["_invalid"]["chain_selector"] == 2**64
    events = rows(path, "SELECT chain_selector, extra, payload FROM events WHERE operation_id = ?", op_id)
    assert len(events) == 4
    for selector, extra, payload in events:
        assert selector == "18446744073709551616" and json.loads(extra)["_invalid"]["chain_selector"] == 2**64
        assert '"chain_selector": 18446744073709551616' in payload  # the text the server sent


def test_fractional_numbers_are_never_truncated_silently(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, Defects(fractional_numbers=True)) as server:
        result = run(server, path)
    target = ORG.target
    assert result.outcome == "partial"
    assert any("operations record(s)" in p and "extra._invalid" in p for p in result.problems), result.problems
    assert any(
        "events record(s)" in p and "extra._invalid" in p and f"/channels/{target}/events" in p for p in result.problems
    ), result.problems
    op = ORG.operations[target][0]
    created, extra = rows(
        path, "SELECT epoch(created_at), extra FROM operations WHERE operation_id = ?", op["operation_id"]
    )[0]
    assert created == op["created_at"] and json.loads(extra)["_invalid"]["created_at"] == op["created_at"] + 0.5
    sent = ORG.events[target]
    ts, extra = rows(path, "SELECT epoch(ts), extra FROM events WHERE event_id = ?", sent[5]["event_id"])[0]
    assert ts == sent[5]["payload"]["timestamp"]
    assert json.loads(extra)["_invalid"]["payload.timestamp"] == sent[5]["payload"]["timestamp"] + 0.5
    offset, extra = rows(path, 'SELECT "offset", extra FROM events WHERE event_id = ?', sent[7]["event_id"])[0]
    assert offset == 7 and json.loads(extra)["_invalid"]["headers.offset"] == 7.5


def test_a_list_item_that_is_not_an_object_is_reported_with_its_position_and_request(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, Defects(non_object_item=True)) as server:
        result = run(server, path)
    target = ORG.target
    assert result.outcome == "partial"
    message = stored_run(path)[1]
    assert f"item #3 of 'data' is a int (42), not an object (from GET /channels/{target}/operations" in message
    assert f"item #5 of 'events' is a str ('oops'), not an object (from GET /channels/{target}/events" in message
    assert per_channel(path, "operations")[target] == OPERATIONS
    assert per_channel(path, "events")[target] == EVENTS


BAD_PAGES = {
    "invalid-utf8": Defects(invalid_utf8_page=True),
    "deep-nesting": Defects(deep_nesting_page=True),
    "truncated": Defects(truncated_page=True),
    "cut-connection": Defects(cut_connection_page=True),
}


@pytest.mark.parametrize("defect", sorted(BAD_PAGES))
def test_a_bad_event_page_is_a_gap_and_the_rest_of_the_organisation_is_synced(defect, tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    target = ORG.target
    with HostileServer(TEST_KEY, BAD_PAGES[defect]) as server:
        result = run(server, path)
        asked_once = server.asked[("events", target, str(BAD_EVENT_OFFSET))]
        again = run(server, path)
        asked_twice = server.asked[("events", target, str(BAD_EVENT_OFFSET))]
    assert result.outcome == again.outcome == "partial", result.summary()
    # the page of 200 offsets is skipped and the channel read past it; the hole is re-read once and recorded
    bad_end = BAD_EVENT_OFFSET + 200 - 1
    assert result.gaps == again.gaps == {target: [[BAD_EVENT_OFFSET, bad_end]]}
    request = f"GET /channels/{target}/events?limit=200&offset={BAD_EVENT_OFFSET}"
    message = stored_run(path)[1]
    assert request in message and "cannot be read" in message
    assert "Traceback" not in message and "RecursionError" not in message
    stored = {o for (o,) in rows(path, 'SELECT "offset" FROM events WHERE channel_id = ?', target)}
    assert stored == set(range(EVENTS)) - set(range(BAD_EVENT_OFFSET, bad_end + 1))
    assert cursor(path, f"events:{target}") == {"next_offset": EVENTS}
    assert asked_twice > asked_once > 0  # the next run asks for the bad page again
    assert {c: n for c, n in per_channel(path, "events").items() if c != target} == {
        c: len(e) for c, e in ORG.events.items() if c != target
    }
    assert per_channel(path, "operations") == {c: len(o) for c, o in ORG.operations.items()}


@pytest.mark.parametrize("defect", sorted(BAD_PAGES))
def test_a_bad_operations_page_stops_that_stream_only(defect, tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    target = ORG.target
    defects = Defects(**{**BAD_PAGES[defect].__dict__, "bad_page_kind": "operations"})
    with HostileServer(TEST_KEY, defects) as server:
        result = run(server, path)
    assert result.outcome == "partial", result.summary()
    assert f"GET /channels/{target}/operations?limit=100&offset={BAD_OPERATIONS_OFFSET}" in stored_run(path)[1]
    # the pass stops at the bad page; the operations past it come one by one, named by their events
    assert server.counts["operations"] > ORG.channels * 2 + OPERATIONS - BAD_OPERATIONS_OFFSET - 1
    assert per_channel(path, "operations") == {c: len(o) for c, o in ORG.operations.items()}
    assert cursor(path, f"operations:{target}") == {"offset": BAD_OPERATIONS_OFFSET, "complete": False}
    assert per_channel(path, "events") == {c: len(e) for c, e in ORG.events.items()}


def test_a_record_that_cannot_be_read_is_reported_kept_queued_and_asked_again(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    target = ORG.target
    bad = ORG.operations[target][BAD_RECORD_INDEX]["operation_id"]
    defects = Defects(deep_nesting_page=True, bad_page_kind="operations", bad_record=True)
    with HostileServer(TEST_KEY, defects) as server:
        result = run(server, path)
        again = run(server, path)
        asked = server.asked[("operations", target, "")]
    assert result.outcome == again.outcome == "partial"
    assert any(f"GET /channels/{target}/operations/{bad}" in p and "not valid JSON" in p for p in result.problems)
    want = {c: len(o) for c, o in ORG.operations.items()}
    assert per_channel(path, "operations") == {**want, target: want[target] - 1}  # every other one is in
    assert rows(path, "SELECT id FROM sync_refetch") == [(bad,)]  # still queued, so the next run asks again
    assert asked >= 2


def test_channels_past_a_bad_channels_page_are_still_synced_when_already_known(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY) as server:
        assert run(server, path).outcome == "ok"
        server.defects = Defects(deep_nesting_page=True, bad_page_kind="channels")
        before = {c: server.asked[("events", c, str(len(e)))] for c, e in ORG.events.items()}
        result = run(server, path)
        after = {c: server.asked[("events", c, str(len(e)))] for c, e in ORG.events.items()}
    assert result.outcome == "partial"
    assert any("GET /channels?" in p and "cannot be read" in p for p in result.problems), result.problems
    # every channel the warehouse knew had its event log read past its cursor, though the list could not be read
    assert all(after[c] == before[c] + 1 for c in ORG.events), (before, after)
    assert per_channel(path, "events") == {c: len(e) for c, e in ORG.events.items()}
