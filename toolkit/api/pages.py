"""Pages and paginators: one small state machine per paging mechanism of the service.

- :class:`OffsetPaginator`: ``limit``/``offset`` row-skip lists answering ``{data, has_more}``.
- :class:`EventCursorPaginator`: the two event endpoints, where ``offset`` is a per-channel *message* offset to start
  from (events come back in ascending ``headers.offset`` from there) and the envelope is ``{events, has_more}``
  (``data`` is accepted too).

Each yields :class:`Page` objects that carry the request that produced them, so an error or an audit row can name it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ResponseFormatError
from .wire import DecodedEvents

Params = dict[str, Any]


@dataclass(frozen=True)
class Page:
    """One page of a list: its records, whether more follow, and the request (path and parameters) behind it."""

    records: list[dict[str, Any]]
    has_more: bool
    path: str
    params: Params = field(default_factory=dict)

    def describe(self) -> str:
        """``GET path?params`` for messages."""
        query = "&".join(f"{k}={v}" for k, v in self.params.items())
        return f"GET {self.path}" + (f"?{query}" if query else "")


@dataclass(frozen=True)
class EventPage(Page):
    """A page of events; ``next_offset`` is the message offset to ask for next (highest seen + 1)."""

    next_offset: int | None = None


@dataclass(frozen=True)
class WireEventPage(EventPage):
    """A page of events as the loaders read it: ``decoded`` (typed, payloads as raw text) when the page has exactly
    the documented shape; otherwise ``records`` (generic dicts) with ``payload_texts``, each payload's raw JSON
    text in the same order (``None`` where there is none)."""

    decoded: DecodedEvents | None = None
    payload_texts: list[bytes | None] | None = None


def unwrap_list(body: Any, path: str, params: Mapping[str, Any], *, keys: tuple[str, ...] = ("data",)) -> Page:
    """Check a list envelope and turn it into a :class:`Page`; a body of another shape is a ResponseFormatError."""
    if not isinstance(body, dict):
        raise ResponseFormatError(f"expected a JSON object list envelope, got {type(body).__name__}", method="GET",
                                  path=path)
    for key in keys:
        records = body.get(key)
        if isinstance(records, list):
            break
    else:
        raise ResponseFormatError(f"the list envelope has no {' or '.join(repr(k) for k in keys)} array",
                                  method="GET", path=path)
    has_more = body.get("has_more", False)
    if not isinstance(has_more, bool):
        raise ResponseFormatError(f"has_more is {has_more!r}, not a boolean", method="GET", path=path)
    records = [r for r in records if isinstance(r, dict)] if not all(isinstance(r, dict) for r in records) else records
    return Page(records=records, has_more=has_more, path=path, params=dict(params))


def event_offset(event: Mapping[str, Any]) -> int | None:
    """``headers.offset`` of an event as an int, or ``None`` when it is missing or not an integer."""
    headers = event.get("headers")
    value = headers.get("offset") if isinstance(headers, dict) else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


class _Paginator:
    """What every paginator shares: the base parameters, the page size, the current ``offset`` and ``done``."""

    def __init__(self, path: str, params: Mapping[str, Any] | None = None, *, limit: int, start: int = 0) -> None:
        self.path = path
        self.base = dict(params or {})
        self.limit = limit
        self.offset = start
        self.done = False

    def next_request(self) -> Params:
        """Parameters of the next request."""
        return {**self.base, "limit": self.limit, "offset": self.offset}


class OffsetPaginator(_Paginator):
    """``limit``/``offset`` row-skip paging: ask, read ``has_more``, move ``offset`` by the rows received."""

    def update(self, page: Page) -> None:
        """Advance past ``page``; an empty page ends the walk even if it claims more (a service bug, not a loop)."""
        self.offset += len(page.records)
        self.done = not page.has_more or not page.records


class EventCursorPaginator(_Paginator):
    """Message-offset paging of the event endpoints: start at ``offset``, continue from the highest offset + 1."""

    def update(self, page: Page) -> int | None:
        """Advance past ``page``; returns the next offset. Ends when nothing more comes or offsets stop moving."""
        return self.advance(max((o for o in map(event_offset, page.records) if o is not None), default=None),
                            page.has_more)

    def advance(self, highest: int | None, has_more: bool) -> int:
        """Advance past a page whose highest event offset is ``highest``; returns the next offset."""
        if highest is None or highest < self.offset:
            self.done = True
            return self.offset
        self.offset = highest + 1
        self.done = not has_more
        return self.offset
