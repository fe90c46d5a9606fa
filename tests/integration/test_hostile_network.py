"""A sync against what a real network, a real service and a real machine produce (issue 28), over real HTTP on 127.0.0.1
with tests/support/hostile.py's server: a body that trickles, one channel that refuses, a record fetched by id that
comes back wrong, a gzip bomb, ids that are not path segments. Expected rows come from the server's own generated
organisation; no assert is about time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import duckdb
import pytest

from tests.conftest import TEST_KEY
from tests.support.hostile import (
    BAD_EVENT_OFFSET,
    BAD_OPERATIONS_OFFSET,
    BAD_RECORD_INDEX,
    REPEATED_FIRST,
    Defects,
    HostileServer,
    Org,
)
from tests.support.hostile_sync import quick_retry
from tests.support.hostile_sync import sync_against as run
from tests.support.hostile_sync import warehouse_rows as rows
from toolkit.api import Client
from toolkit.config import Settings
from toolkit.loader import sync

#: Real sockets or processes (hostile servers, the sandbox over HTTP, `chainops` as a process): the fast tier
#: skips them (docs/testing.md); `make test` runs them.
pytestmark = pytest.mark.slow

ORG = Org()
EVENTS = len(ORG.events[ORG.target])


def per_channel(path, table: str) -> dict[str, int]:
    return dict(rows(path, f"SELECT channel_id, count(*) FROM {table} GROUP BY ALL"))


def others_whole(path, table: str) -> None:
    want = {"events": ORG.events, "operations": ORG.operations, "queries": ORG.queries}[table]
    got = per_channel(path, table)
    assert {c: n for c, n in got.items() if c != ORG.target} == {c: len(v) for c, v in want.items() if c != ORG.target}


# ---- 1. a body that trickles ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 4])
def test_a_trickling_event_page_ends_at_the_deadline_and_the_rest_is_synced(workers, tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    defects = Defects(trickle_page=True, trickle_interval=0.05, trickle_seconds=120)
    with HostileServer(TEST_KEY, defects) as server:
        result = run(server, path, deadline=1.0, workers=workers)
        assert server.trickles["started"] >= 1 and server.trickles["finished"] == 0
    assert result.outcome == "partial", result.summary()
    asked = f"/channels/{ORG.target}/events?limit=200&offset={BAD_EVENT_OFFSET}"
    assert any(asked in p and "deadline of 1 s" in p for p in result.problems), result.problems
    assert result.gaps == {ORG.target: [[BAD_EVENT_OFFSET, BAD_EVENT_OFFSET + 199]]}
    stored = rows(path, 'SELECT count(*) FROM events WHERE channel_id = ? AND "offset" BETWEEN 200 AND 399', ORG.target)
    assert stored == [(0,)] and per_channel(path, "events")[ORG.target] == EVENTS - 200
    others_whole(path, "events")
    others_whole(path, "operations")


def test_a_trickling_operations_page_stops_that_stream_only(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    defects = Defects(trickle_page=True, bad_page_kind="operations", trickle_interval=0.05, trickle_seconds=120)
    with HostileServer(TEST_KEY, defects) as server:
        result = run(server, path, deadline=1.0, workers=4)
    assert result.outcome == "partial", result.summary()
    asked = f"/channels/{ORG.target}/operations?limit=100&offset={BAD_OPERATIONS_OFFSET}"
    assert any(asked in p and "sent too slowly" in p for p in result.problems), result.problems
    others_whole(path, "operations")
    others_whole(path, "queries")


def _start_sync(base_url: str, path, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    env |= {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": base_url, "CHAINOPS_WAREHOUSE": str(path)}
    return subprocess.Popen(
        [sys.executable, "-m", "toolkit", "sync", "--quiet", *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("workers", ["1", "4"])
def test_the_first_sigterm_stops_a_sync_waiting_for_a_trickling_body(workers, tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    defects = Defects(trickle_page=True, trickle_interval=0.5, trickle_seconds=600)
    with HostileServer(TEST_KEY, defects) as server:
        proc = _start_sync(server.base_url, path, "--workers", workers)
        try:
            server_saw = server.stopping.wait  # a wait that ends early only if the server stops
            while not server.trickles["started"] and proc.poll() is None:
                server_saw(0.05)
            assert proc.poll() is None, proc.communicate()
            proc.send_signal(signal.SIGTERM)  # once
            _, err = proc.communicate(timeout=90)  # a hang guard, not a measure: the trickle lasts 600 s
        finally:
            if proc.poll() is None:
                proc.kill()
        assert server.trickles["finished"] == 0  # it stopped while the body was still coming
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert rows(path, "SELECT outcome FROM sync_runs") == [("interrupted",)]


# ---- 5. an answer that expands without bound ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["events", "operations"])
def test_a_gzip_bomb_fails_its_page_cleanly_and_the_rest_is_synced(kind, tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, Defects(gzip_bomb_page=True, bad_page_kind=kind, bomb_bytes=2**30)) as server:
        result = run(server, path, workers=1)
    assert result.outcome == "partial", result.summary()
    offset = BAD_EVENT_OFFSET if kind == "events" else BAD_OPERATIONS_OFFSET
    asked = f"/channels/{ORG.target}/{kind}?limit={200 if kind == 'events' else 100}&offset={offset}"
    assert any(asked in p and "67,108,864 bytes decoded" in p for p in result.problems), result.problems
    others_whole(path, "events")
    others_whole(path, "operations")


def test_the_cap_is_the_clients_own_setting(tmp_path) -> None:
    # the same server, no bomb: a cap below a real page refuses it; this shows the cap counts decoded bytes
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, Defects(gzip_bomb_page=True, bomb_bytes=0)) as server:
        result = run(server, path, workers=1, max_body_bytes=20_000)
    assert result.outcome == "partial"
    assert any("20,000 bytes decoded" in p for p in result.problems), result.problems


# ---- 2. one channel refused --------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [403, 404, 409, 410, 451])
@pytest.mark.parametrize("kinds", [("watchers",), ("operations", "queries"), ("events",)])
def test_one_refused_channel_is_a_problem_and_every_other_channel_is_synced(status, kinds, tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    defects = Defects(channel_refused=frozenset(kinds), channel_refused_status=status)
    with HostileServer(TEST_KEY, defects) as server:
        first = run(server, path, workers=1)
        second = run(server, path, workers=4)  # every run, in either mode
    for result in (first, second):
        assert result.outcome == "partial", result.summary()
        for kind in kinds:
            named = [p for p in result.problems if f"/channels/{ORG.target}/{kind}" in p and f"answered {status}" in p]
            assert named, result.problems
    for table in ("events", "operations", "queries"):
        others_whole(path, table)
    if "events" not in kinds:
        assert per_channel(path, "events")[ORG.target] == EVENTS
    if "operations" not in kinds:
        assert per_channel(path, "operations")[ORG.target] == len(ORG.operations[ORG.target])


# ---- 3. a record fetched by id that comes back wrong --------------------------------------------------------------

BAD = ORG.operations[ORG.target][BAD_RECORD_INDEX]["operation_id"]
OTHER = ORG.operations[ORG.channel_list[1]["channel_id"]][0]


@pytest.mark.parametrize(
    "body",
    [b"[]", b"42", b'"hello"', b"true", b"", b"null", b"{}", json.dumps(OTHER).encode()],
    ids=["list", "number", "string", "true", "empty", "null", "no-id", "another-record"],
)
def test_a_record_fetched_by_id_that_comes_back_wrong_stays_queued_and_is_named(body, tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    # the operations pass stops at a bad page, so the target's operation #BAD_RECORD_INDEX is fetched by id
    defects = Defects(truncated_page=True, bad_page_kind="operations", record_body=body)
    with HostileServer(TEST_KEY, defects) as server:
        first = run(server, path)
        asked_once = server.asked[("operations", ORG.target, "")]
        second = run(server, path)
        asked_twice = server.asked[("operations", ORG.target, "")]
    for result in (first, second):
        assert result.outcome == "partial", result.summary()
        assert any(f"GET /channels/{ORG.target}/operations/{BAD}" in p for p in result.problems), result.problems
        assert not any(BAD in r for r in result.rejected), result.rejected  # not taken for a 404
    assert rows(path, "SELECT id FROM sync_refetch") == [(BAD,)]  # still queued
    assert asked_twice > asked_once  # and asked again by the next run
    assert rows(path, "SELECT count(*) FROM operations WHERE operation_id = ?", BAD) == [(0,)]
    # another record in the answer is not stored as the one asked for, nor moved to the asking channel
    other_channel = ORG.channel_list[1]["channel_id"]
    assert rows(path, "SELECT channel_id FROM operations WHERE operation_id = ?", OTHER["operation_id"]) == [
        (other_channel,)
    ]
    want = {c: len(o) for c, o in ORG.operations.items()}
    assert per_channel(path, "operations") == {**want, ORG.target: want[ORG.target] - 1}


def test_only_a_404_drops_a_queued_record(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    org = Org()
    gone = org.operations[org.target].pop(BAD_RECORD_INDEX)  # listed by no page, named by its events: 404 by id
    with HostileServer(TEST_KEY, Defects(), org) as server:
        result = run(server, path)
    assert any(gone["operation_id"] in r and "404" in r for r in result.rejected), result.rejected
    assert rows(path, "SELECT id FROM sync_refetch") == []


# ---- 6. ids that are not path segments ----------------------------------------------------------------------------

HOSTILE_IDS = ("../../networks", "x?y=1", "x#frag", "a/b%2Fc")


@pytest.mark.parametrize("workers", [1, 4])
def test_ids_are_sent_as_one_path_segment_and_an_id_that_cannot_be_one_is_a_problem(workers, tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    org = Org(channels=6, channel_ids=(*HOSTILE_IDS, ".."))
    with HostileServer(TEST_KEY, org=org) as server:
        result = run(server, path, workers=workers)
        sent = list(server.paths)
    assert result.outcome == "partial", result.summary()
    assert any("'..'" in p and "path segment" in p for p in result.problems), result.problems
    # every request stayed under /v1, inside its own channel's path
    assert all(p.startswith("/v1/") for p in sent), [p for p in sent if not p.startswith("/v1/")]
    assert [p for p in sent if p.startswith("/v1/networks")] == ["/v1/networks"]
    assert not any(p.startswith("/v1/channels/../") or p.startswith("/v1/channels/%2E%2E/") for p in sent)
    # each hostile but encodable id is its own channel, synced whole; '..' nothing but its channel row
    for table, want in (("events", org.events), ("operations", org.operations), ("queries", org.queries)):
        got = per_channel(path, table)
        assert {c: got.get(c, 0) for c in want} == {**{c: len(v) for c, v in want.items()}, "..": 0}, table
    assert ("..",) in rows(path, "SELECT channel_id FROM channels")


# ---- 7. holes that never fill -------------------------------------------------------------------------------------


def event_requests(server: HostileServer) -> dict[str, int]:
    """Event requests per channel so far (poll pages, newest-first polls and the gap pass's pages)."""
    out: dict[str, int] = {}
    for (kind, cid, _), n in server.asked.items():
        if kind == "events":
            out[cid] = out.get(cid, 0) + n
    return out


def test_holes_confirmed_empty_cost_a_page_not_a_request_each_and_are_not_read_again(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    holes = EVENTS - 1  # offsets 1, 3, ..., 2 * EVENTS - 3
    other = ORG.channel_list[1]["channel_id"]
    with HostileServer(TEST_KEY, Defects(offset_step=2)) as server:
        first = run(server, path)
        after_first = event_requests(server)
        second = run(server, path)
        after_second = event_requests(server)
        settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={})
        with Client(server.base_url, TEST_KEY, retry=quick_retry()) as c:
            full = sync(settings, client=c, quiet=True, full=True)
    # the first run reads the holes a page at a time (not one request each) and reports them
    assert first.outcome == "partial" and len(first.gaps[ORG.target]) == holes
    pages = -(-EVENTS // 200)
    assert after_first[ORG.target] <= after_first[other] + pages + 1, (after_first, pages)
    saved = rows(path, "SELECT cursor FROM sync_state WHERE stream = ?", f"holes_confirmed_empty:{ORG.target}")
    assert [h[:2] for h in json.loads(saved[0][0])["holes"]] == [[2 * i + 1, 2 * i + 1] for i in range(holes)]
    # the next run asks no more for the channel with holes than for one without, and is no longer partial
    second_asked = {c: after_second[c] - after_first[c] for c in after_second}
    assert second_asked[ORG.target] == second_asked[other], second_asked
    assert second.outcome == "ok" and second.gaps == {}, second.summary()
    # --full reads them again
    assert len(full.gaps[ORG.target]) == holes
    assert per_channel(path, "events")[ORG.target] == EVENTS


# ---- 8. one id in two channels ------------------------------------------------------------------------------------


def test_ids_repeated_in_two_channels_are_reported_with_what_is_kept(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    org = Org(shared_ids=5)
    first, second = (c["channel_id"] for c in org.channel_list[:2])
    with HostileServer(TEST_KEY, org=org) as server:
        result = run(server, path)
    assert result.outcome == "partial", result.summary()
    for table in ("operations", "queries"):
        said = [p for p in result.problems if p.startswith(f"5 {table} id(s) came in two channels")]
        assert len(said) == 1, result.problems
        # the message says which channel's row is kept; the warehouse holds exactly that
        kept = said[0].rsplit("kept as channel ", 1)[1].rstrip(")")
        other = first if kept == second else second
        assert {kept, other} == {first, second}
        key = "operation_id" if table == "operations" else "query_id"
        shared = [r[key] for r in (org.operations if table == "operations" else org.queries)[second][:5]]
        assert rows(path, f"SELECT DISTINCT channel_id FROM {table} WHERE list_contains(?, {key})", shared) == [(kept,)]
        total = sum(len(v) for v in (org.operations if table == "operations" else org.queries).values())
        assert rows(path, f"SELECT count(*) FROM {table}") == [(total - 5,)]


# ---- 12. a lone surrogate in one channel's name -------------------------------------------------------------------


def test_a_lone_surrogate_in_a_channel_name_spoils_nothing_else(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    org = Org()
    org.channel_list[0]["name"] = "broken \ud800 name"  # sent escaped, as "\ud800": valid JSON, not Unicode
    with HostileServer(TEST_KEY, org=org) as server:
        result = run(server, path)
    assert result.outcome == "ok", result.summary()
    assert rows(path, "SELECT name FROM channels WHERE channel_id = ?", org.target) == [("broken \ufffd name",)]
    assert per_channel(path, "events") == {c: len(e) for c, e in org.events.items()}


def test_a_300_character_network_name_is_exported_under_a_short_partition(tmp_path) -> None:
    from toolkit.export import export_parquet

    path = tmp_path / "wh.duckdb"
    org = Org()
    long_name = "Ethereum Mainnet " + "ł" * 300  # 617 bytes of UTF-8, far past a file name's 255
    org.networks[0]["name"] = long_name
    with HostileServer(TEST_KEY, org=org) as server:
        assert run(server, path).outcome == "ok"
    out = tmp_path / "export"
    written = export_parquet(path, out)
    assert written["events"] >= 1
    parts = [p.name for p in (out / "events").iterdir()]
    assert all(len(name.encode()) <= 255 for name in parts) and len(parts) == 1, parts
    con = duckdb.connect()
    exported = con.execute(f"SELECT count(*) FROM read_parquet('{out}/events/**/*.parquet')").fetchone()[0]
    assert exported == sum(len(e) for e in org.events.values())
    names = con.execute(f"SELECT name FROM read_parquet('{out}/networks/**/*.parquet')").fetchall()
    assert (long_name,) in names  # the whole name is kept where it is a value, not a directory


def test_numbers_sent_as_strings_are_stored_as_numbers_with_a_note(tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    org = Org()
    op = org.operations[org.target][0]
    op["created_at"], op["deadline"] = str(op["created_at"]), "0"
    org.events[org.target][3]["headers"]["offset"] = "3"
    with HostileServer(TEST_KEY, org=org) as server:
        result = run(server, path)
    assert result.outcome == "partial", result.summary()
    notes = [p for p in result.problems if "held values of another type than documented" in p]
    assert any(p.startswith("1 operations record(s)") and "created_at, deadline" in p for p in notes), notes
    assert any(p.startswith("1 events record(s)") for p in notes), notes
    sql = "SELECT epoch(created_at)::BIGINT, deadline, extra FROM operations WHERE operation_id = ?"
    (created, deadline, extra) = rows(path, sql, op["operation_id"])[0]
    assert (created, deadline) == (int(op["created_at"]), 0)
    kept = json.loads(extra)["_invalid"]  # the values as sent
    assert kept["created_at"] == op["created_at"] and kept["deadline"] == "0"
    assert rows(path, 'SELECT count(*) FROM events WHERE channel_id = ? AND "offset" = 3', org.target) == [(1,)]


@pytest.mark.parametrize("generic_page", [False, True], ids=["documented-page", "generic-page"])
def test_a_payload_that_repeats_a_name_is_stored_as_its_last_value_everywhere(generic_page, tmp_path) -> None:
    # the first event's payload names status twice ("sending", then its real "accepted") and a workflow id twice
    # ("first", then "last"): the typed column, the stored payload's ->> and json_extract read the same, the last
    path = tmp_path / "wh.duckdb"
    event = ORG.events[ORG.target][0]
    real = event["payload"]["status"]
    assert real != REPEATED_FIRST
    # "oops" among the events sends the page down the careful path
    defects = Defects(repeated_payload_names=True, non_object_item=generic_page)
    with HostileServer(TEST_KEY, defects) as server:
        result = run(server, path)
    assert result.outcome == "partial", result.summary()
    notes = [p for p in result.problems if "repeated a name inside one JSON object" in p]
    assert len(notes) == 1 and event["event_id"] in notes[0], result.problems
    assert "payload.status, payload.operation_status_workflow_id" in notes[0], notes
    sql = (
        "SELECT status, payload->>'status', json_extract_string(payload, '$.operation_status_workflow_id'), extra "
        "FROM events WHERE event_id = ?"
    )
    ((column, read, workflow, extra),) = rows(path, sql, event["event_id"])
    assert (column, read, workflow) == (real, real, "last")
    kept = json.loads(extra)
    assert kept["_repeated_names"] == ["payload.status", "payload.operation_status_workflow_id"]
    sent = kept["_sent_payload"]  # the text as sent, both values of each name in their order
    assert sent.index(f'"status": "{REPEATED_FIRST}"') < sent.index(f'"status": "{real}"')
    assert sent.index('"first"') < sent.index('"last"')
    transitions = rows(
        path, "SELECT status FROM operation_transitions WHERE operation_id = ?", event["payload"]["operation_id"]
    )
    assert (REPEATED_FIRST,) in transitions  # op #0 really goes through sending, once: its own later event
    assert transitions.count((REPEATED_FIRST,)) == 1
    assert rows(path, "SELECT count(*) FROM events WHERE extra LIKE '%_repeated_names%'") == [(1,)]


def test_an_operation_record_that_repeats_a_field_keeps_the_last_value_and_is_noted(tmp_path) -> None:
    # the first operations page's first record says "status" twice: "sending", then its real status
    path = tmp_path / "wh.duckdb"
    op = ORG.operations[ORG.target][0]
    assert op["status"] != REPEATED_FIRST
    with HostileServer(TEST_KEY, Defects(repeated_record_name=True)) as server:
        result = run(server, path)
    assert result.outcome == "partial", result.summary()
    notes = [p for p in result.problems if "repeated a name inside one JSON object" in p]
    assert notes and f"operation_id {op['operation_id']}, status" in notes[0], result.problems
    ((status, extra),) = rows(path, "SELECT status, extra FROM operations WHERE operation_id = ?", op["operation_id"])
    assert status == op["status"]  # the last value
    assert json.loads(extra)["_repeated_names"] == ["status"]
    assert rows(path, "SELECT count(*) FROM operations WHERE extra LIKE '%_repeated_names%'") == [(1,)]


def test_a_name_repeated_inside_a_records_nested_object_is_noted_on_the_record(tmp_path) -> None:
    # the first record's first transaction says "value" twice ("7", then its real value): the record is named, its
    # extra lists the repeat by path, and the nested object gains no field the service never sent
    path = tmp_path / "wh.duckdb"
    op = ORG.operations[ORG.target][0]
    real = op["transactions"][0]["value"]
    assert real != "7"
    with HostileServer(TEST_KEY, Defects(repeated_nested_record_name=True)) as server:
        result = run(server, path)
    assert result.outcome == "partial", result.summary()
    notes = [p for p in result.problems if "repeated a name inside one JSON object" in p]
    assert notes and f"operation_id {op['operation_id']}, transactions[0].value" in notes[0], result.problems
    ((extra,),) = rows(path, "SELECT extra FROM operations WHERE operation_id = ?", op["operation_id"])
    assert json.loads(extra)["_repeated_names"] == ["transactions[0].value"]
    stored = rows(path, "SELECT value, extra FROM operation_transactions WHERE operation_id = ?", op["operation_id"])
    assert stored == [(real, None)]  # the last value, and no mark inside the transaction
