"""Paging: offset lists, the event message-offset cursor, array filters as repeated keys."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.conftest import TEST_KEY
from toolkit.api import Client
from toolkit.api.retry import RetryPolicy
from toolkit.errors import ResponseFormatError


def serve_list(items: list[dict], seen: list[httpx.Request], key: str = "data"):
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        limit = int(request.url.params["limit"])
        offset = int(request.url.params.get("offset", 0))
        page = items[offset : offset + limit]
        return httpx.Response(200, json={key: page, "has_more": offset + limit < len(items)})

    return httpx.MockTransport(handler)


def test_offset_pages_walk_every_row_with_the_maximum_limit() -> None:
    rows = [{"operation_id": f"op-{i}"} for i in range(250)]
    seen: list[httpx.Request] = []
    with Client("http://127.0.0.1:9/v1", TEST_KEY, transport=serve_list(rows, seen)) as client:
        got = list(client.iter_operations("c1", status=["failed", "expired"]))
    assert got == rows
    assert [r.url.params["offset"] for r in seen] == ["0", "100", "200"]
    assert {r.url.params["limit"] for r in seen} == {"100"}
    assert seen[0].url.params.get_list("status") == ["failed", "expired"]
    assert seen[0].url.path == "/v1/channels/c1/operations"


def test_channels_name_archived_explicitly() -> None:
    seen: list[httpx.Request] = []
    with Client("http://127.0.0.1:9/v1", TEST_KEY, transport=serve_list([], seen)) as client:
        assert list(client.iter_channels()) == []
    assert seen[0].url.params.get_list("status") == ["active", "archived"]
    assert seen[0].url.params["limit"] == "50"


def test_a_page_claiming_more_but_empty_ends_the_walk() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, json={"data": [], "has_more": True})

    with Client("http://127.0.0.1:9/v1", TEST_KEY, transport=httpx.MockTransport(handler)) as client:
        assert list(client.iter_queries("c1")) == []
    assert len(calls) == 1


def event(offset: int) -> dict:
    return {
        "event_id": f"e{offset}",
        "headers": {"type": "operation.status", "offset": offset, "proofs": []},
        "payload": {"status": "accepted"},
    }


def test_event_pages_follow_message_offsets_and_accept_data_or_events() -> None:
    log = [event(i) for i in range(5, 460)]
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        start = int(request.url.params["offset"])
        limit = int(request.url.params["limit"])
        page = [e for e in log if e["headers"]["offset"] >= start][:limit]
        key = "events" if len(seen) % 2 else "data"  # old and new envelopes both work
        return httpx.Response(200, json={key: page, "has_more": page[-1] is not log[-1] if page else False})

    with Client("http://127.0.0.1:9/v1", TEST_KEY, transport=httpx.MockTransport(handler)) as client:
        pages = list(client.event_pages("c1", start=5))
    got = [e for p in pages for e in p.records]
    assert got == log
    assert [r.url.params["offset"] for r in seen] == ["5", "205", "405"]
    assert pages[-1].next_offset == 460


def test_event_pages_stop_when_offsets_do_not_move() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, json={"events": [event(3)], "has_more": True})

    with Client("http://127.0.0.1:9/v1", TEST_KEY, transport=httpx.MockTransport(handler)) as client:
        pages = list(client.event_pages("c1", start=10))
    assert len(calls) == 1 and pages[0].next_offset == 10


def test_wire_pages_decode_documented_pages_and_parse_others_keeping_the_payload_text() -> None:
    """The loaders' reader: a documented page comes decoded (typed, payload as the text sent); a page with an
    unknown field comes as dicts with each payload's raw text; both follow the message offsets."""
    log = [event(i) for i in range(0, 300)]
    log[250]["headers"]["region"] = "eu"  # an unknown header field: that page takes the careful path

    def handler(request: httpx.Request) -> httpx.Response:
        start = int(request.url.params["offset"])
        page = [e for e in log if e["headers"]["offset"] >= start][:200]
        body = json.dumps({"events": page, "has_more": page[-1] is not log[-1]}, indent=1)  # spaces, newlines
        return httpx.Response(200, content=body.encode())

    with Client("http://127.0.0.1:9/v1", TEST_KEY, transport=httpx.MockTransport(handler)) as client:
        pages = list(client.event_wire_pages("c1"))
    fast, careful = pages
    assert [len(fast.columns), len(careful.columns)] == [200, 100]
    assert fast.columns.typed and not careful.columns.typed  # one shape, two ways of reading it
    assert fast.columns.event_ids == [f"e{i}" for i in range(200)]
    assert fast.columns.fields["status"][0] == "accepted"
    assert bytes(fast.columns.payloads[0]) == b'{\n    "status": "accepted"\n   }'  # verbatim, not re-serialised
    assert careful.columns.event_ids == [f"e{i}" for i in range(200, 300)]
    assert careful.columns.payloads[50] == b'{\n    "status": "accepted"\n   }'
    assert careful.columns.extras[50] == {"headers": {"region": "eu"}}
    assert (fast.next_offset, careful.next_offset) == (200, 300)


def test_wire_pages_retry_a_malformed_body_then_report_it_with_the_request() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, content=b'{"events": [{"event_id": "e1", "head')

    no_wait = RetryPolicy(attempts=3, initial=0.0, maximum=0.0, floor=0.0)
    client = Client("http://127.0.0.1:9/v1", TEST_KEY, transport=httpx.MockTransport(handler), retry=no_wait)
    with client, pytest.raises(ResponseFormatError) as info:
        list(client.event_wire_pages("c1", start=7))
    assert len(calls) == 3
    assert "GET /channels/c1/events" in str(info.value)


def test_an_offset_walk_that_cycles_through_more_pages_than_it_remembers_still_stops() -> None:
    from toolkit.api.pages import RECENT_PAGES, OffsetPaginator, Page

    cycle = RECENT_PAGES + 15  # longer than the window of recent pages
    pages = [[{"id": f"{p}-{i}"} for i in range(10)] for p in range(cycle)]
    pager = OffsetPaginator("things", limit=10, key="id")
    asked = 0
    while not pager.done:
        assert asked < 3 * cycle, "the walk never stopped"
        pager.update(Page(pages[asked % cycle], True, "things", pager.next_request()))
        asked += 1
    assert asked == cycle + 1 and pager.problem is not None and "earlier page" in pager.problem
