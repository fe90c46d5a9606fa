"""Pages and paginators: one small state machine per paging mechanism of the service.

- :class:`OffsetPaginator`: ``limit``/``offset`` row-skip lists answering ``{data, has_more}``.
- :class:`EventCursorPaginator`: the two event endpoints, where ``offset`` is a per-channel *message* offset to start
  from (events come back in ascending ``headers.offset`` from there) and the envelope is ``{events, has_more}``
  (``data`` is accepted too).
- :class:`WireEventPaginator`: the event log as the loaders read it, a page in the documented shape decoded straight
  from the bytes (:mod:`.wire`), any other parsed generically.

:meth:`toolkit.api.Client.paginate` is the one loop that drives any of them: it asks a paginator for the next
request, sends it (through a read-ahead pool or not), hands the body to :meth:`Paginator.read` and the result to
:meth:`Paginator.turn`, which advances the paginator and builds the page yielded. Each page carries the request that
produced it, so an error or an audit row can name it.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from ..errors import ResponseFormatError
from ..event_wire import EventColumns, columns_from_records, offset_value
from . import exactjson
from .wire import decode_event_page, raw_texts

Params = dict[str, Any]
#: The payloads and proofs of a page's events as the raw JSON texts the service sent (:func:`.wire.raw_texts`).
Texts = tuple[list[bytes | None], list[bytes | None]]


@dataclass(frozen=True)
class Page:
    """One page of a list: its records, whether more follow, and the request (path and parameters) behind it."""

    records: list[dict[str, Any]]
    has_more: bool
    path: str
    params: Params = field(default_factory=dict)
    #: Items of the list that are not objects and were left out, each named by its position.
    rejected: tuple[str, ...] = ()
    #: Why the walk stopped at this page although the service did not end it cleanly (``None`` when it did):
    #: a page that brings nothing new, offsets that go backwards, a page that cannot be read.
    problem: str | None = None
    #: The page could not be read at all (``records`` is empty): the stream stops here for this run.
    unreadable: bool = False

    def describe(self) -> str:
        """``GET /path?params`` for messages."""
        query = "&".join(f"{k}={v}" for k, v in self.params.items())
        return f"GET /{self.path.lstrip('/')}" + (f"?{query}" if query else "")


@dataclass(frozen=True)
class EventPage(Page):
    """A page of events; ``next_offset`` is the message offset to ask for next (highest seen + 1)."""

    next_offset: int | None = None


@dataclass(frozen=True)
class WireEventPage(EventPage):
    """A page of events as the loaders read it: its events in ``columns``, one shape whichever way the page was
    read (:class:`~toolkit.event_wire.EventColumns`: typed when the page has exactly the documented shape, else
    from the generic parse, unknown fields kept); ``records`` stays empty. ``None`` for a page not read."""

    columns: EventColumns | None = None


#: The arrays an event list's envelope may hold its events in (WIRE.md's ``events``; ``data`` as API.md has it).
EVENT_KEYS = ("events", "data")


def check_list(body: Any, path: str, *, keys: tuple[str, ...] = ("data",)) -> tuple[str, list[Any], bool]:
    """A list envelope's parts: the first of ``keys`` holding an array, that array and ``has_more``; a body of
    another shape is a ResponseFormatError."""
    if not isinstance(body, dict):
        raise ResponseFormatError(
            f"expected a JSON object list envelope, got {type(body).__name__}", method="GET", path=path
        )
    for key in keys:
        records = body.get(key)
        if isinstance(records, list):
            break
    else:
        raise ResponseFormatError(
            f"the list envelope has no {' or '.join(repr(k) for k in keys)} array", method="GET", path=path
        )
    has_more = body.get("has_more", False)
    if not isinstance(has_more, bool):
        raise ResponseFormatError(f"has_more is {has_more!r}, not a boolean", method="GET", path=path)
    return key, records, has_more


def unwrap_list(body: Any, path: str, params: Mapping[str, Any], *, keys: tuple[str, ...] = ("data",)) -> Page:
    """Check a list envelope and turn it into a :class:`Page`; a body of another shape is a ResponseFormatError."""
    key, records, has_more = check_list(body, path, keys=keys)
    rejected: tuple[str, ...] = ()
    if not all(isinstance(r, dict) for r in records):
        rejected = tuple(
            f"item #{i} of {key!r} is {_kind(r)}, not an object"
            for i, r in enumerate(records)
            if not isinstance(r, dict)
        )
        records = [r for r in records if isinstance(r, dict)]
    return Page(records=records, has_more=has_more, path=path, params=dict(params), rejected=rejected)


def _kind(value: Any) -> str:
    text = repr(value)
    return f"a {type(value).__name__} ({text if len(text) <= 40 else text[:37] + '...'})"


def event_offset(event: Mapping[str, Any]) -> int | None:
    """``headers.offset`` of an event as an int, or ``None`` when it is missing or not an integer."""
    headers = event.get("headers")
    return offset_value(headers.get("offset")) if isinstance(headers, dict) else None


PageT = TypeVar("PageT", bound=Page)


class Paginator(Generic[PageT]):
    """What every paginator shares: the base parameters, the page size, the current ``offset`` and ``done``, and the
    steps :meth:`toolkit.api.Client.paginate` drives: :meth:`next_request`, :attr:`parse`, :meth:`read`,
    :meth:`turn`, and :meth:`unreadable` for a page that cannot be read."""

    #: How the body of a successful answer is parsed (``None``: the client's exact JSON parse).
    parse: Callable[[bytes], Any] | None = None

    def __init__(self, path: str, params: Mapping[str, Any] | None = None, *, limit: int, start: int = 0) -> None:
        self.path = path
        self.base = dict(params or {})
        self.limit = limit
        self.offset = start
        self.done = False
        self.problem: str | None = None

    def next_request(self) -> Params:
        """Parameters of the next request."""
        return {**self.base, "limit": self.limit, "offset": self.offset}

    def unreadable(self, request: Params) -> PageT:
        """The empty page standing for ``request`` when its answer cannot be read (carried by a BadPageError)."""
        raise NotImplementedError

    def check(self, body: Any) -> None:
        """Raise ResponseFormatError when the parsed ``body`` is not this walk's envelope. The client runs it while
        the answer is at hand (a page of the wrong shape is then retried, and its error names the request id); it
        keeps no state, so it may run on any thread."""

    def read(self, body: Any, request: Params) -> Any:
        """Check the parsed ``body`` of ``request``; a body of the wrong shape raises ResponseFormatError."""
        raise NotImplementedError

    def turn(self, read: Any, request: Params) -> PageT:
        """Advance past what :meth:`read` returned; the page to yield (with the :attr:`problem` that ended the walk,
        if one did)."""
        raise NotImplementedError


#: How many recent pages of an offset walk are remembered to tell whether a page brings a new id.
RECENT_PAGES = 20


class OffsetPaginator(Paginator[Page]):
    """``limit``/``offset`` row-skip paging: ask, read ``has_more``, move ``offset`` by the rows received.

    With ``key`` (the id field of the list's records) a page whose ids all came on the last :data:`RECENT_PAGES`
    pages of the walk, or that repeats any earlier page of the walk exactly, yet says ``has_more``, ends the walk
    with a :attr:`problem`: a service that repeats itself forever, in a cycle of any length, must not hold a loop.
    Lists can shift while they are read, so a few repeated ids are normal. (A fingerprint per page, not every id, is
    kept for the whole walk: memory stays small on a list of millions.)
    """

    def __init__(
        self, path: str, params: Mapping[str, Any] | None = None, *, limit: int, start: int = 0, key: str | None = None
    ) -> None:
        super().__init__(path, params, limit=limit, start=start)
        self.key = key
        self._recent: deque[list[str]] = deque()
        self._seen: Counter[str] = Counter()
        self._pages: set[int] = set()

    def unreadable(self, request: Params) -> Page:
        """An empty page for ``request``."""
        return Page([], False, self.path, request)

    def check(self, body: Any) -> None:
        """The ``{data, has_more}`` envelope, or ResponseFormatError."""
        check_list(body, self.path)

    def read(self, body: Any, request: Params) -> Page:
        """The ``{data, has_more}`` envelope as a page."""
        return unwrap_list(body, self.path, request)

    def turn(self, read: Page, request: Params) -> Page:
        """Advance past the page; it carries the :attr:`problem` if it ended the walk."""
        self.update(read)
        return replace(read, problem=self.problem) if self.problem else read

    def update(self, page: Page) -> None:
        """Advance past ``page``; the walk ends when ``has_more`` is false, or with a :attr:`problem` when the page
        is empty or brings no new id although it claims more."""
        asked = self.offset
        self.offset += len(page.records)
        self.done = not page.has_more or not page.records
        if page.has_more and not page.records:
            self.problem = "has_more is true but the page is empty; the walk stops here (rows past it may be missing)"
        elif self.key is not None and page.has_more:
            ids = [str(r.get(self.key)) for r in page.records]
            fingerprint = hash(tuple(ids))
            if fingerprint in self._pages or all(i in self._seen for i in ids):
                self.done = True
                self.problem = (
                    f"has_more is true but all {len(ids)} items were on an earlier page of this walk; "
                    f"the walk stops here (rows past offset {asked} may be missing)"
                )
            self._remember(ids)
            self._pages.add(fingerprint)

    def _remember(self, ids: list[str]) -> None:
        self._recent.append(ids)
        self._seen.update(ids)
        if len(self._recent) > RECENT_PAGES:
            self._seen.subtract(self._recent.popleft())
            self._seen += Counter()  # drop the ids no longer remembered


class EventCursorPaginator(Paginator[EventPage]):
    """Message-offset paging of the event endpoints: start at ``offset``, continue from the highest offset + 1.

    Offsets that go backwards (a page whose highest offset is below the one asked for) or a page that claims more
    but holds no event end the walk with a :attr:`problem`; the offset stays where it was, never past events not
    read.
    """

    def unreadable(self, request: Params) -> EventPage:
        """An empty page for ``request``, naming the offset the walk stands at."""
        return EventPage([], False, self.path, request, next_offset=self.offset)

    def check(self, body: Any) -> None:
        """The ``{events, has_more}`` envelope (``data`` accepted too), or ResponseFormatError."""
        check_list(body, self.path, keys=EVENT_KEYS)

    def read(self, body: Any, request: Params) -> Page:
        """The ``{events, has_more}`` envelope (``data`` accepted too) as a page."""
        return unwrap_list(body, self.path, request, keys=EVENT_KEYS)

    def turn(self, read: Page, request: Params) -> EventPage:
        """Advance past the page; an :class:`EventPage` naming the offset to ask for next."""
        next_offset = self.update(read)
        return EventPage(
            read.records,
            read.has_more,
            self.path,
            request,
            rejected=read.rejected,
            problem=self.problem,
            next_offset=next_offset,
        )

    def update(self, page: Page) -> int | None:
        """Advance past ``page``; returns the next offset."""
        return self.advance(
            max((o for o in map(event_offset, page.records) if o is not None), default=None), page.has_more
        )

    def advance(self, highest: int | None, has_more: bool) -> int:
        """Advance past a page whose highest event offset is ``highest``; returns the next offset."""
        if highest is None:
            self.done = True
            if has_more:
                self.problem = "has_more is true but the page holds no event with an offset; the walk stops here"
            return self.offset
        if highest < self.offset:
            self.done = True
            self.problem = (
                f"offsets go backwards: the page's highest offset is {highest}, below the {self.offset} "
                "asked for; the walk stops here"
            )
            return self.offset
        self.offset = highest + 1
        self.done = not has_more
        return self.offset


def parse_event_page(content: bytes) -> tuple[EventColumns, bool] | tuple[Any, Texts | None]:
    """The typed decode of an event page (its columns and ``has_more``), or the generic parse with each payload's
    and proofs' raw text."""
    decoded = decode_event_page(content)
    if decoded is not None:
        return decoded
    return exactjson.loads(content, past_float_range=True), raw_texts(content)


class WireEventPaginator(EventCursorPaginator):
    """The event log's message-offset paging as the loaders read it: a page in the documented shape is decoded
    straight from the bytes, any other is parsed generically with each payload's raw JSON text kept beside it; both
    are put in the same columns here (:class:`~toolkit.event_wire.EventColumns`)."""

    parse = staticmethod(parse_event_page)

    def unreadable(self, request: Params) -> WireEventPage:
        """An empty page for ``request``, naming the offset the walk stands at."""
        return WireEventPage([], False, self.path, request, next_offset=self.offset)

    def check(self, body: Any) -> None:
        """A decoded page has the documented shape; the generic parse is checked as an event envelope."""
        if not isinstance(body[0], EventColumns):
            super().check(body[0])

    def read(self, body: Any, request: Params) -> tuple[EventColumns, bool] | tuple[Page, Texts | None]:
        """The decoded page as it is, or the generic envelope checked, with the payload texts."""
        if isinstance(body[0], EventColumns):
            return body
        parsed, texts = body
        return super().read(parsed, request), texts

    def turn(self, read: tuple[EventColumns, bool] | tuple[Page, Texts | None], request: Params) -> WireEventPage:
        """Advance past the page; a :class:`WireEventPage` naming the offset to ask for next."""
        if isinstance(read[0], EventColumns):
            columns, has_more = read
            next_offset = self.advance(max(columns.offsets, default=None), has_more)
            return WireEventPage(
                [], has_more, self.path, request, problem=self.problem, next_offset=next_offset, columns=columns
            )
        page, texts = read
        if texts is not None and len(texts[0]) != len(page.records):  # an envelope the two read differently
            texts = None
        next_offset = self.update(page)
        return WireEventPage(
            [],
            page.has_more,
            self.path,
            request,
            rejected=page.rejected,
            problem=self.problem,
            next_offset=next_offset,
            columns=columns_from_records(page.records, *(texts or ())),
        )
