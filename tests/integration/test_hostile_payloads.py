"""Hostile payloads (issue 38): a payload nested about as deep as the parsers go, an event the 0.8 description lets
come without ``event_id``. A sync over real HTTP on 127.0.0.1 against tests/support/hostile.py's server; what must be
stored comes from the server's own generated organisation."""

from __future__ import annotations

import json

import pytest

from tests.conftest import TEST_KEY
from tests.support.hostile import BAD_EVENT_OFFSET, DEEP_EVENT_OFFSET, Defects, HostileServer, Org
from tests.support.hostile_sync import sync_against as run
from tests.support.hostile_sync import warehouse_rows as rows

#: Real sockets (hostile servers): the fast tier skips them (docs/testing.md); `make test` runs them.
pytestmark = pytest.mark.slow

ORG = Org()
TARGET = ORG.target


def offsets(path, channel: str) -> set[int]:
    return {o for (o,) in rows(path, 'SELECT "offset" FROM events WHERE channel_id = ?', channel)}


def test_a_payload_nested_1000_deep_leaves_out_that_event_by_name_and_every_other_is_stored(tmp_path) -> None:
    # orjson reads the page (1,024 levels) where msgspec does not (about 1,000 less the stack): the generic path has
    # no text as sent, and writing the payload again recursed past Python's limit (a traceback, 0 events, for good)
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, Defects(deep_payload_depth=1000)) as server:
        first = run(server, path)
        again = run(server, path)
    assert first.outcome == again.outcome == "partial", first.summary()
    request = f"GET /channels/{TARGET}/events?limit=200&offset={BAD_EVENT_OFFSET}"
    named = [r for r in first.rejected if f"offset {DEEP_EVENT_OFFSET}" in r]
    assert named and all("field 'payload' is nested more than 512 levels deep" in r for r in named)
    assert request in named[0]  # then once more from the gap pass's re-read of that offset
    every = {c: set(range(len(e))) for c, e in ORG.events.items()}
    assert offsets(path, TARGET) == every[TARGET] - {DEEP_EVENT_OFFSET}  # the other 199 events of its page too
    assert all(offsets(path, c) == want for c, want in every.items() if c != TARGET)
    assert first.gaps == again.gaps == {TARGET: [[DEEP_EVENT_OFFSET, DEEP_EVENT_OFFSET]]}
    ((message,),) = rows(path, "SELECT message FROM sync_runs ORDER BY started_at DESC LIMIT 1")
    assert f"offset {DEEP_EVENT_OFFSET}" in message and "Traceback" not in message


@pytest.mark.parametrize("depth", [200, 500])
def test_a_payload_nested_as_deep_as_can_be_stored_is_kept_as_sent(depth, tmp_path) -> None:
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, Defects(deep_payload_depth=depth)) as server:
        result = run(server, path)
    assert result.outcome == "ok", result.summary()
    ((payload,),) = rows(
        path, 'SELECT payload FROM events WHERE channel_id = ? AND "offset" = ?', TARGET, DEEP_EVENT_OFFSET
    )
    nested = json.loads(payload)["nested"]
    for _ in range(depth - 1):
        (nested,) = nested
    assert nested == []
    assert offsets(path, TARGET) == set(range(len(ORG.events[TARGET])))


def test_an_event_without_event_id_is_stored_under_its_channel_and_offset(tmp_path) -> None:
    # 0.8 does not require event_id: the page path rejected such an event (the run partial, the offset a gap, for
    # good) where poll_events kept it
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, Defects(event_without_id=True)) as server:
        first = run(server, path)
        again = run(server, path)
    assert first.outcome == again.outcome == "ok", first.summary()
    assert not first.rejected and not first.gaps
    every = {c: set(range(len(e))) for c, e in ORG.events.items()}
    assert all(offsets(path, c) == want for c, want in every.items())
    ((event_id, payload),) = rows(
        path, 'SELECT event_id, payload FROM events WHERE channel_id = ? AND "offset" = ?', TARGET, DEEP_EVENT_OFFSET
    )
    assert event_id == f"offset:{TARGET}:{DEEP_EVENT_OFFSET}"
    assert json.loads(payload) == ORG.events[TARGET][DEEP_EVENT_OFFSET]["payload"]
    # the second run adds nothing: the same offset names the same row
    assert again.rows["events"] == again.updated["events"] == 0, again.summary()
    ((count,),) = rows(path, "SELECT count(*) FROM events")
    assert count == sum(map(len, every.values()))
