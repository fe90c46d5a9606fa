"""The event-search walk does not rely on the order of the events within a page (none is documented)."""

from __future__ import annotations

import json
import random

import httpx

from tests.conftest import TEST_KEY
from toolkit.api import Client
from toolkit.api.search import search_wire_pages

TYPES = ["operation.status", "query.status", "watcher.event"]


def log(n: int) -> list[dict]:
    return [
        {
            "event_id": f"00000000-0000-4000-8000-{i:012d}",
            "headers": {"type": TYPES[i % 3], "offset": i, "proofs": []},
            "payload": {"status": "sent", "timestamp": 1_700_000_000 + i},
        }
        for i in range(n)
    ]


def shuffled_search(events: list[dict], seen: list[dict]) -> httpx.MockTransport:
    """A search that answers the events from message offset ``offset`` that match, each page in random order."""
    rng = random.Random(3)

    def handle(request: httpx.Request) -> httpx.Response:
        q = request.url.params
        seen.append(dict(q.multi_items()))
        types = set(q.get_list("type")) or set(TYPES)
        gte = int(q.get("created.gte", "0"))
        start, limit = int(q["offset"]), int(q["limit"])
        match = [
            e
            for e in events
            if e["headers"]["offset"] >= start and e["headers"]["type"] in types and e["payload"]["timestamp"] >= gte
        ]
        page = match[:limit]
        rng.shuffle(page)
        return httpx.Response(200, content=json.dumps({"events": page, "has_more": len(match) > limit}).encode())

    return httpx.MockTransport(handle)


def test_every_event_is_read_whatever_the_order_within_pages() -> None:
    events = log(1000)
    seen: list[dict] = []
    with Client("https://service.test/v1", TEST_KEY, transport=shuffled_search(events, seen)) as client:
        filters = {"type": ["operation.status", "query.status"], "created.gte": 1_700_000_100, "created.lt": None}
        pages = list(search_wire_pages(client, "c1", filters))
    got = [i for p in pages for i in (p.columns.event_ids if p.columns else [])]
    want = [e["event_id"] for e in events if e["headers"]["type"] != "watcher.event" and e["headers"]["offset"] >= 100]
    assert sorted(got) == sorted(want) and len(got) == len(set(got))
    assert len(seen) == -(-len(want) // 200)  # one request per page, none repeated
    assert all(s["type"] in ("operation.status", "query.status") and "created.lt" not in s for s in seen)
    assert not any(p.problem for p in pages)
