"""Walks over a channel's event search (``GET /channels/{id}/events/search``) as the loaders read them.

The search's ``offset`` is a message offset, as the poll's is (WIRE.md: "described identically"): a page holds
matching events from that offset on, and the walk continues after the highest offset it holds. The order of the
events within a page is not specified anywhere, so nothing here relies on it: the next offset is the page's
highest, whatever its position. Events are deduplicated by ``event_id`` where they are stored.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .. import spec
from .client import Client, _bad_page
from .exactjson import loads
from .pages import EventCursorPaginator, WireEventPage, unwrap_list
from .wire import DecodedEvents, decode_event_page, raw_payloads

#: The largest page event search serves.
SEARCH_PAGE_LIMIT = spec.PAGE_LIMITS["events_search"].maximum


def _parse(content: bytes) -> DecodedEvents | tuple[Any, list[bytes | None] | None]:
    """The typed decode of a page, or the generic parse with each payload's raw text."""
    decoded = decode_event_page(content)
    if decoded is not None:
        return decoded
    return loads(content), raw_payloads(content)


def search_wire_pages(
    client: Client,
    channel_id: str,
    filters: Mapping[str, Any],
    *,
    start: int = 0,
    limit: int = SEARCH_PAGE_LIMIT,
) -> Iterator[WireEventPage]:
    """Every page of a channel's event search with ``filters`` (``type`` a list, ``created.gte``/``.lt`` unix
    seconds; ``None`` values are left out), from message offset ``start``, in the shape the poll walk gives
    (:meth:`Client.event_wire_pages`): decoded straight from the bytes when the page has the documented shape.

    A walk that stops early says why in the last page's :attr:`~.pages.Page.problem` (offsets going backwards, more
    claimed with nothing on the page); a page that cannot be read raises :class:`~toolkit.errors.BadPageError`.
    """
    path = f"channels/{channel_id}/events/search"
    params = {k: v for k, v in filters.items() if v is not None}
    pager = EventCursorPaginator(path, params, limit=limit, start=start)
    while not pager.done:
        request = pager.next_request()
        with _bad_page(WireEventPage([], False, path, request, next_offset=pager.offset)):
            body = client.request("GET", path, params=request, parse=_parse)
            if not isinstance(body, DecodedEvents):
                parsed, texts = body
                page = unwrap_list(parsed, path, request, keys=("events", "data"))
        if isinstance(body, DecodedEvents):
            highest = max((e.headers.offset for e in body.events), default=None)
            next_offset = pager.advance(highest, body.has_more)
            yield WireEventPage(
                [], body.has_more, path, request, problem=pager.problem, next_offset=next_offset, decoded=body
            )
            continue
        if texts is not None and len(texts) != len(page.records):
            texts = None
        next_offset = pager.update(page)
        yield WireEventPage(
            page.records,
            page.has_more,
            path,
            request,
            rejected=page.rejected,
            problem=pager.problem,
            next_offset=next_offset,
            payload_texts=texts,
        )
