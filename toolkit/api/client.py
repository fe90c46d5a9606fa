"""The service client: one keep-alive httpx client, the ``Apikey`` auth, retries, and typed errors.

Every endpoint of the service has one method. List endpoints have a ``*_pages`` method yielding
:class:`~toolkit.api.pages.Page` objects (what the loaders use) and an ``iter_*`` method yielding records.
Results are the plain dicts the service sent (unknown fields kept), typed by :mod:`toolkit.api.resources`.

>>> with Client("http://127.0.0.1:8080/v1", "key") as client:  # doctest: +SKIP
...     for channel in client.iter_channels():
...         print(channel["name"])
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast
from urllib.parse import quote

import httpx
import orjson

from .. import spec
from ..config import Secret, Settings, check_api_key, check_base_url, redact
from ..errors import (
    AnswerTooLargeError,
    ApiError,
    BadPageError,
    InvalidIdError,
    RateLimitError,
    ResponseFormatError,
    TransportError,
    api_error_class,
)
from ..signals import check_stop, pause
from . import exactjson
from .auth import ApiKeyAuth
from .concurrency import ReadAhead, RequestPool
from .exchange import DeadlinePassed, TooLarge, exchange
from .pages import (
    EVENT_KEYS,
    EventCursorPaginator,
    EventPage,
    OffsetPaginator,
    Page,
    PageT,
    Paginator,
    WireEventPage,
    WireEventPaginator,
    check_list,
    unwrap_list,
)
from .resources import (
    Channel,
    Event,
    HealthCheck,
    Network,
    Operation,
    Query,
    QueryAccepted,
    Wallet,
    Watcher,
    WatcherSummary,
)
from .retry import RetryPolicy, parse_retry_after, retrying

log = logging.getLogger("toolkit.api")

Record = dict[str, Any]
#: Both archived and active: named explicitly because the service hides archived rows by default.
ALL_CHANNEL_STATUSES = spec.CHANNEL_STATUSES
ALL_WALLET_STATUSES = spec.WALLET_STATUSES
#: Every watcher (the default of :meth:`Client.watcher_pages`). Not sent as a filter: 0.8 allows no ``archive_failed``
#: in it, so every watcher is two walks, the default listing (all but archived) and then ``status=archived``.
ALL_WATCHER_STATUSES = spec.WATCHER_STATUSES
#: The most a single answer's body may hold once decoded (gzip undone): 64 MiB, over 30 times a full page of 200
#: events that each carry 16 transactions and their proofs. A larger answer fails as a malformed one, so what a
#: service (or a gzip bomb) sends can never take the process's memory.
MAX_BODY_BYTES = 64 * 2**20


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings every client of this process shares: certifi's roots, as httpx makes them for each client
    otherwise (loading the roots costs about 20 ms of CPU a client). The environment is not read (``trust_env``
    stays off, as for the clients)."""
    return httpx.create_ssl_context(trust_env=False)


class Client:
    """A client for one organisation of the service.

    ``base_url`` ends in ``/v1``; the key is sent only over https, or plain http to a loopback address.
    ``transport`` lets tests mount an app in-process; ``retry`` sets the retry policy (see :mod:`.retry`).
    The client is safe to share between threads; it counts the requests and retries it made.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | Secret,
        *,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        max_connections: int = 16,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.base_url = check_base_url(base_url)
        self.max_body_bytes = max_body_bytes
        key = check_api_key(api_key)
        self._key = key
        self.retry = retry or RetryPolicy()
        self._http = httpx.Client(
            base_url=self.base_url + "/",
            auth=ApiKeyAuth(key),
            timeout=timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout, connect=10.0),
            transport=transport,
            verify=tls_context() if transport is None else True,
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            headers={"Accept": "application/json", "User-Agent": "chainops-toolkit"},
            trust_env=False,
        )
        # a transport that answers in the calling thread, with no socket (the sandbox's in-process one), is asked
        # there: a thread per request would only add cost (see exchange)
        self._inline = bool(getattr(transport, "answers_in_caller", False))
        self._lock = threading.Lock()
        self._refusals_as_pages = 0
        self._paused_until = 0.0
        self.requests = 0
        self.retries = 0

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> Client:
        """A client for the service named by ``settings`` (a ConfigError says how to set what is missing)."""
        base_url, key = settings.require_service()
        return cls(base_url, key, **kwargs)

    def __repr__(self) -> str:
        return f"Client(base_url={self.base_url!r})"

    def redact(self, text: str) -> str:
        """``text`` with this client's key replaced by ``***`` (for anything shown or stored)."""
        return redact(text, self._key)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def channel_refusals_as_bad_pages(self) -> Iterator[None]:
        """While the block runs, a page of one channel's list (``channels/{id}/...``) that the service refuses with
        a status of ``spec.CHANNEL_REFUSED_STATUSES`` (the channel deleted after it was listed, forbidden, gone)
        raises :class:`BadPageError` naming the request, as an unreadable page does, instead of its
        :class:`ApiError`: a sync then stops that channel's stream only. Outside it, the ApiError is raised."""
        with self._lock:
            self._refusals_as_pages += 1
        try:
            yield
        finally:
            with self._lock:
                self._refusals_as_pages -= 1

    # ---- the one request seam -------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        parse: Callable[[bytes], Any] | None = None,
    ) -> Any:
        """Send one request with retries; return the parsed JSON body (``None`` for an empty body).

        ``parse`` replaces the JSON parse of a successful body; a ``ValueError`` it raises is a malformed answer,
        retried like one.
        """
        path = path.lstrip("/")
        deadline = time.monotonic() + self.retry.deadline  # the whole request, every attempt and wait included
        attempt = 0
        for attempt_ctl in retrying(self.retry, sleep=pause):  # a wait a stop request cuts short
            with attempt_ctl:
                attempt += 1
                if attempt > 1:
                    with self._lock:
                        self.retries += 1
                    log.info("retrying %s /%s (attempt %d)", method, self.redact(path), attempt)
                return self._send_once(method, path, params, json_body, parse or _parse_json, attempt, deadline)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send_once(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        json_body: Any,
        parse: Callable[[bytes], Any],
        attempt: int,
        deadline: float,
    ) -> Any:
        """One attempt, ending by ``deadline`` (a :func:`time.monotonic` time) however slowly the answer comes; an
        error it raises is complete (it names the attempt, so the last one raised says how many were made)."""
        check_stop()  # a safe point: no lock of ours or httpx's is held between two requests
        self._wait_if_paused()
        with self._lock:
            self.requests += 1
        where = {"method": method, "path": "/" + path, "attempts": attempt}
        try:
            response, content = exchange(
                self._http,
                method,
                path,
                params=_clean_params(params),
                json_body=json_body,
                deadline=deadline,
                max_bytes=self.max_body_bytes,
                inline=self._inline,
            )
        except DeadlinePassed as exc:
            limit = f"the request's deadline of {self.retry.deadline:g} s"
            if exc.begun:  # the answer came, too slowly to be read: a bad page, like a body cut short
                reason = f"the answer was not whole within {limit} (sent too slowly)"
                raise ResponseFormatError(reason, **where) from None
            raise TransportError(f"no answer began within {limit}", **where) from None
        except TooLarge as exc:  # not transient: the same answer comes again, and each costs up to the cap
            raise AnswerTooLargeError(str(exc), **where) from None
        except httpx.TimeoutException as exc:
            raise TransportError(f"timed out ({type(exc).__name__})", **where) from None
        except httpx.RemoteProtocolError as exc:
            if _cut_short(exc):  # the answer began and stopped part-way: a bad page, not a service that is down
                raise ResponseFormatError(self.redact(f"the answer was cut short ({exc})"), **where) from None
            raise TransportError(self.redact(f"{type(exc).__name__}: {exc}"), **where) from None
        except httpx.DecodingError as exc:  # a gzip or deflate body that cannot be undone: a malformed answer
            raise ResponseFormatError(self.redact(f"the answer cannot be decoded ({exc})"), **where) from None
        except httpx.HTTPError as exc:
            # httpx names the URL at most, but h11 quotes a header value it refuses (the key): redact
            raise TransportError(self.redact(f"{type(exc).__name__}: {exc}"), **where) from None
        if response.is_success:
            try:
                return parse(content)
            except ResponseFormatError as exc:  # parsed, but not the documented envelope (a paginator's check)
                request_id = request_id_of(response, None, self.redact)
                raise ResponseFormatError(self.redact(exc.reason), request_id=request_id, **where) from None
            except (ValueError, RecursionError) as exc:  # orjson.JSONDecodeError is a ValueError; msgspec recurses
                reason = "is nested too deeply" if isinstance(exc, RecursionError) else f"is not valid JSON ({exc})"
                request_id = request_id_of(response, None, self.redact)
                raise ResponseFormatError(self.redact(f"the answer {reason}"), request_id=request_id, **where) from None
        error = _error_from_response(response, method, "/" + path, self.redact, attempts=attempt, content=content)
        if isinstance(error, RateLimitError):
            self._pause(error.retry_after if error.retry_after is not None else self.retry.initial)
        raise error

    def _pause(self, seconds: float) -> None:
        """After a 429, every thread sharing this client holds its next request for ``seconds`` (backing off
        together instead of each thread hammering the limit on its own schedule)."""
        with self._lock:
            self._paused_until = max(self._paused_until, time.monotonic() + min(seconds, self.retry.maximum))

    def _wait_if_paused(self) -> None:
        delay = self._paused_until - time.monotonic()
        if delay > 0:
            pause(delay)

    # ---- paging helpers -------------------------------------------------------------------------------------

    def paginate(
        self,
        paginator: Paginator[PageT],
        *,
        pool: RequestPool | None = None,
        until: int | Callable[[], int | None] | None = None,
    ) -> Iterator[PageT]:
        """Every page of one walk, the one paging loop of the client: ``paginator`` (one per paging mechanism, see
        :mod:`.pages`) says what to ask for next, how to read each answer and when the walk ends.

        A walk that stops early says why in the last page's :attr:`~Page.problem`; a page that cannot be read even
        after the retries raises :class:`BadPageError` (its ``page`` names the request, and the offset for events).
        With ``pool``, the requests go through it and the pages the walk is predicted to ask for next are fetched
        while it waits (:class:`~.concurrency.ReadAhead`), up to the offset ``until`` when it is known (or a function
        telling it, asked once a page comes back full); the pages and their order are the same."""
        path = paginator.path
        parse = _checked_parse(paginator.parse or _parse_json, paginator.check)
        with self._sender(path, paginator.next_request(), paginator.limit, pool, until, parse=parse) as send:
            while not paginator.done:
                request = paginator.next_request()
                with _bad_page(paginator.unreadable(request), refusals=self._refusals_as_pages > 0):
                    read = paginator.read(send(request), request)
                yield paginator.turn(read, request)

    def offset_pages(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        limit: int,
        start: int = 0,
        pool: RequestPool | None = None,
    ) -> Iterator[Page]:
        """Every page of a ``{data, has_more}`` list, walking ``offset`` forward from ``start``
        (:class:`~.pages.OffsetPaginator` through :meth:`paginate`).

        A page that brings no new id although it claims more ends the walk; that last page carries the
        :attr:`~Page.problem`. A page that cannot be read even after the retries raises :class:`BadPageError`.
        With ``pool``, the requests go through it and the pages the walk is predicted to ask for next are fetched
        while it waits (:class:`~.concurrency.ReadAhead`); the pages and their order are the same.
        """
        key = _ID_FIELDS.get(path.rsplit("/", 1)[-1])
        return self.paginate(OffsetPaginator(path, params, limit=limit, start=start, key=key), pool=pool)

    def event_pages(
        self, channel_id: str, *, start: int = 0, limit: int = 200, search: bool = False, **filters: Any
    ) -> Iterator[EventPage]:
        """Every page of a channel's events from message offset ``start`` forward (poll, or search with filters;
        :class:`~.pages.EventCursorPaginator` through :meth:`paginate`).

        Offsets that go backwards end the walk with a :attr:`~Page.problem` on the last page; a page that cannot be
        read raises :class:`BadPageError`."""
        path = f"channels/{segment(channel_id)}/events" + ("/search" if search else "")
        return self.paginate(EventCursorPaginator(path, filters, limit=limit, start=start))

    def event_wire_pages(
        self,
        channel_id: str,
        *,
        start: int = 0,
        limit: int = 200,
        pool: RequestPool | None = None,
        until: int | Callable[[], int | None] | None = None,
    ) -> Iterator[WireEventPage]:
        """Every page of a channel's event log from message offset ``start``, as the loaders read it: a page in the
        documented shape decoded straight from the bytes (:mod:`.wire`), any other parsed generically
        (:class:`~.pages.WireEventPaginator` through :meth:`paginate`).

        As :meth:`event_pages`: a walk that stops early says why in the last page's :attr:`~Page.problem`, and a
        page that cannot be read raises :class:`BadPageError` (its ``page`` names the request and offset).
        With ``pool``, the requests go through it and the pages that follow are fetched while the walk waits (the
        offsets are a contiguous sequence, so the page after ``offset`` starts at ``offset + limit``), up to the
        offset ``until`` when it is known (the channel's newest; or a function telling it, asked once a page comes back
        full); the pages and their order are the same."""
        pager = WireEventPaginator(f"channels/{segment(channel_id)}/events", {}, limit=limit, start=start)
        return self.paginate(pager, pool=pool, until=until)

    @contextlib.contextmanager
    def _sender(
        self,
        path: str,
        first: Mapping[str, Any],
        limit: int,
        pool: RequestPool | None,
        until: int | Callable[[], int | None] | None,
        *,
        parse: Callable[[bytes], Any] | None = None,
    ) -> Iterator[Callable[[Mapping[str, Any]], Any]]:
        """How a walk over ``offset`` sends its requests: one at a time here, or through ``pool`` reading ahead.
        Every request of one walk differs only in its ``offset`` (``first`` gives the rest)."""
        if pool is None:
            yield lambda request: self.request("GET", path, params=request, parse=parse)
            return
        template = dict(first)
        ahead = ReadAhead(
            pool,
            lambda offset: self.request("GET", path, params={**template, "offset": offset}, parse=parse),
            step=limit,
            # a known end costs no wasted request: keep the pool busy while this walk's pages are handed over
            depth=2 * pool.workers if until is not None else pool.workers,
            until=until,
        )
        try:
            yield lambda request: ahead.get(int(request["offset"]))
        finally:
            ahead.close()

    # ---- health and networks --------------------------------------------------------------------------------

    def health_check(self) -> HealthCheck:
        """``GET /health-check``: the liveness answer (needs no key)."""
        return self.request("GET", "health-check")

    def list_networks(self) -> list[Network]:
        """``GET /networks``: every network the organisation can use."""
        return cast(list[Network], next(self.network_pages()).records)

    def network_pages(self, *, pool: RequestPool | None = None) -> Iterator[Page]:
        """``GET /networks`` as its one page (the list has no paging; with ``pool``, sent through it)."""
        with _bad_page(Page([], False, "networks", {})):
            parse = _list_parse("networks")
            body = (
                pool.call(self.request, "GET", "networks", parse=parse)
                if pool
                else self.request("GET", "networks", parse=parse)
            )
            page = unwrap_list(body, "networks", {})
        yield page

    # ---- wallets --------------------------------------------------------------------------------------------

    def wallet_pages(
        self, *, status: Sequence[str] | None = ALL_WALLET_STATUSES, pool: RequestPool | None = None, **filters: Any
    ) -> Iterator[Page]:
        """Pages of ``GET /wallets`` (archived too unless ``status`` says otherwise)."""
        return self.offset_pages(
            "wallets", {"status": status, **filters}, limit=spec.PAGE_LIMITS["wallets"].maximum, pool=pool
        )

    def iter_wallets(self, **filters: Any) -> Iterator[Wallet]:
        """Every wallet (archived too by default)."""
        for page in self.wallet_pages(**filters):
            yield from cast(list[Wallet], page.records)

    def get_wallet(self, wallet_id: str) -> Wallet:
        """``GET /wallets/{id}``."""
        return self.request("GET", f"wallets/{segment(wallet_id)}")

    def create_wallet(self, body: Mapping[str, Any]) -> Wallet:
        """``POST /wallets``: a new wallet in ``pending``."""
        return self.request("POST", "wallets", json_body=dict(body))

    def update_wallet(self, wallet_id: str, body: Mapping[str, Any]) -> Wallet:
        """``PATCH /wallets/{id}``: rename, describe, or archive (``{"status": "archived"}``)."""
        return self.request("PATCH", f"wallets/{segment(wallet_id)}", json_body=dict(body))

    def rename_wallet(self, wallet_id: str, name: str) -> Wallet:
        """Rename a wallet (names are unique within the organisation)."""
        return self.update_wallet(wallet_id, {"name": name})

    def archive_wallet(self, wallet_id: str) -> Wallet:
        """Archive a wallet; it then refuses new operations."""
        return self.update_wallet(wallet_id, {"status": "archived"})

    # ---- channels -------------------------------------------------------------------------------------------

    def channel_pages(
        self, *, status: Sequence[str] | None = ALL_CHANNEL_STATUSES, pool: RequestPool | None = None, **filters: Any
    ) -> Iterator[Page]:
        """Pages of ``GET /channels`` (archived too unless ``status`` says otherwise)."""
        return self.offset_pages(
            "channels", {"status": status, **filters}, limit=spec.PAGE_LIMITS["channels"].maximum, pool=pool
        )

    def iter_channels(self, **filters: Any) -> Iterator[Channel]:
        """Every channel (archived too by default)."""
        for page in self.channel_pages(**filters):
            yield from cast(list[Channel], page.records)

    def get_channel(self, channel_id: str) -> Channel:
        """``GET /channels/{id}``."""
        return self.request("GET", f"channels/{segment(channel_id)}")

    def create_channel(self, name: str, description: str | None = None) -> Channel:
        """``POST /channels``."""
        body = {"name": name} | ({"description": description} if description is not None else {})
        return self.request("POST", "channels", json_body=body)

    def update_channel(self, channel_id: str, body: Mapping[str, Any]) -> Channel:
        """``PATCH /channels/{id}``: rename, describe or archive."""
        return self.request("PATCH", f"channels/{segment(channel_id)}", json_body=dict(body))

    def rename_channel(self, channel_id: str, name: str) -> Channel:
        """Rename a channel."""
        return self.update_channel(channel_id, {"name": name})

    def archive_channel(self, channel_id: str) -> Channel:
        """Archive a channel (refused with a conflict while it has active watchers)."""
        return self.update_channel(channel_id, {"status": "archived"})

    # ---- watchers -------------------------------------------------------------------------------------------

    def watcher_pages(
        self,
        channel_id: str,
        *,
        status: Sequence[str] | None = ALL_WATCHER_STATUSES,
        pool: RequestPool | None = None,
        **filters: Any,
    ) -> Iterator[Page]:
        """Pages of ``GET /channels/{id}/watchers`` (summaries; every watcher unless ``status`` says otherwise).

        Every watcher, archived and ``archive_failed`` included, is listed with requests the 0.8 description allows:
        the listing without a status filter (the service hides only archived watchers from it), then
        ``status=archived``; a watcher archived between the two walks is given once. A ``status`` other than every
        status is sent as it is, and ``None`` sends none (archived watchers hidden)."""
        path, limit = f"channels/{segment(channel_id)}/watchers", spec.PAGE_LIMITS["watchers"].maximum
        if status is None or set(status) != set(ALL_WATCHER_STATUSES):
            return self.offset_pages(path, {"status": status, **filters}, limit=limit, pool=pool)
        archived = [spec.WatcherStatus.ARCHIVED.value]
        return _once_by_id(
            "watcher_id",
            lambda: self.offset_pages(path, dict(filters), limit=limit, pool=pool),
            lambda: self.offset_pages(path, {**filters, "status": archived}, limit=limit, pool=pool),
        )

    def iter_watchers(self, channel_id: str, **filters: Any) -> Iterator[WatcherSummary]:
        """Every watcher summary of a channel."""
        for page in self.watcher_pages(channel_id, **filters):
            yield from cast(list[WatcherSummary], page.records)

    def get_watcher(self, channel_id: str, watcher_id: str) -> Watcher:
        """``GET /channels/{id}/watchers/{watcher_id}``: the full watcher."""
        path = f"channels/{segment(channel_id)}/watchers/{segment(watcher_id)}"
        return self.request("GET", path, parse=_record_parse("watcher_id", watcher_id))

    def create_watcher(self, channel_id: str, body: Mapping[str, Any]) -> Watcher:
        """``POST /channels/{id}/watchers`` from a service or an ABI: a watcher in ``pending``."""
        return self.request("POST", f"channels/{segment(channel_id)}/watchers", json_body=dict(body))

    def update_watcher(self, channel_id: str, watcher_id: str, body: Mapping[str, Any]) -> Watcher:
        """``PATCH`` a watcher: rename (200) or archive (202, ``archiving``)."""
        path = f"channels/{segment(channel_id)}/watchers/{segment(watcher_id)}"
        return self.request("PATCH", path, json_body=dict(body))

    def rename_watcher(self, channel_id: str, watcher_id: str, name: str) -> Watcher:
        """Rename a watcher (names are unique within the channel)."""
        return self.update_watcher(channel_id, watcher_id, {"name": name})

    def archive_watcher(self, channel_id: str, watcher_id: str) -> Watcher:
        """Start archiving a watcher; it answers in ``archiving``."""
        return self.update_watcher(channel_id, watcher_id, {"status": "archived"})

    # ---- operations -----------------------------------------------------------------------------------------

    def operation_pages(
        self, channel_id: str, *, start: int = 0, pool: RequestPool | None = None, **filters: Any
    ) -> Iterator[Page]:
        """Pages of ``GET /channels/{id}/operations`` (filters: status, chain_selector, address, wallet_id, ...)."""
        return self.offset_pages(
            f"channels/{segment(channel_id)}/operations",
            filters,
            limit=spec.PAGE_LIMITS["operations"].maximum,
            start=start,
            pool=pool,
        )

    def iter_operations(self, channel_id: str, **filters: Any) -> Iterator[Operation]:
        """Every operation of a channel."""
        for page in self.operation_pages(channel_id, **filters):
            yield from cast(list[Operation], page.records)

    def get_operation(self, channel_id: str, operation_id: str) -> Operation:
        """``GET /channels/{id}/operations/{operation_id}``. An answer that is not that record (not an object, or
        another ``operation_id``) is a malformed answer (:class:`~toolkit.errors.ResponseFormatError`), retried;
        the same holds for :meth:`get_query` and :meth:`get_watcher`."""
        path = f"channels/{segment(channel_id)}/operations/{segment(operation_id)}"
        return self.request("GET", path, parse=_record_parse("operation_id", operation_id))

    def create_operation(self, channel_id: str, body: Mapping[str, Any]) -> str:
        """``POST /channels/{id}/operations``; returns the new ``operation_id`` (a draft without ``signature``).

        The service answers an ``OperationResponse`` (:class:`~toolkit.api.resources.OperationResponse`) holding only
        that id; fetch the record with :meth:`get_operation`.
        """
        answer = self.request("POST", f"channels/{segment(channel_id)}/operations", json_body=dict(body))
        return str(answer["operation_id"])

    def finalize_operation(self, channel_id: str, operation_id: str, *, signature: str, digest: str) -> Operation:
        """Finalize a draft: ``PATCH`` with ``status=accepted``, ``signature`` and ``digest``."""
        body = {"status": "accepted", "signature": signature, "digest": digest}
        path = f"channels/{segment(channel_id)}/operations/{segment(operation_id)}"
        return self.request("PATCH", path, json_body=body)

    def cancel_operation(self, channel_id: str, operation_id: str) -> Operation:
        """Cancel a draft: ``PATCH`` with ``status=cancelled``."""
        body = {"status": "cancelled"}
        path = f"channels/{segment(channel_id)}/operations/{segment(operation_id)}"
        return self.request("PATCH", path, json_body=body)

    # ---- queries --------------------------------------------------------------------------------------------

    def query_pages(
        self, channel_id: str, *, start: int = 0, pool: RequestPool | None = None, **filters: Any
    ) -> Iterator[Page]:
        """Pages of ``GET /channels/{id}/queries`` (filters: status, query_kind, chain_selector)."""
        return self.offset_pages(
            f"channels/{segment(channel_id)}/queries",
            filters,
            limit=spec.PAGE_LIMITS["queries"].maximum,
            start=start,
            pool=pool,
        )

    def iter_queries(self, channel_id: str, **filters: Any) -> Iterator[Query]:
        """Every query of a channel."""
        for page in self.query_pages(channel_id, **filters):
            yield from cast(list[Query], page.records)

    def get_query(self, channel_id: str, query_id: str) -> Query:
        """``GET /channels/{id}/queries/{query_id}``."""
        path = f"channels/{segment(channel_id)}/queries/{segment(query_id)}"
        return self.request("GET", path, parse=_record_parse("query_id", query_id))

    def create_query(self, channel_id: str, body: Mapping[str, Any]) -> QueryAccepted:
        """``POST /channels/{id}/queries`` (202): ``{query_id, status}``; same ``idempotency_key`` = same query."""
        return self.request("POST", f"channels/{segment(channel_id)}/queries", json_body=dict(body))

    # ---- events ---------------------------------------------------------------------------------------------

    def poll_events(self, channel_id: str, *, offset: int | None = None, limit: int = 200) -> EventPage:
        """``GET /channels/{id}/events``: newest first without ``offset``; from message ``offset`` forward with it."""
        path = f"channels/{segment(channel_id)}/events"
        params = {"limit": limit, "offset": offset}
        body = self.request("GET", path, params=params, parse=_list_parse(path, keys=EVENT_KEYS))
        page = unwrap_list(body, path, params, keys=EVENT_KEYS)
        return EventPage(page.records, page.has_more, path, page.params)

    def search_events(self, channel_id: str, **filters: Any) -> EventPage:
        """One page of ``GET /channels/{id}/events/search`` (filters: type, created.gte, status, ...)."""
        path = f"channels/{segment(channel_id)}/events/search"
        body = self.request("GET", path, params=filters, parse=_list_parse(path, keys=EVENT_KEYS))
        page = unwrap_list(body, path, filters, keys=EVENT_KEYS)
        return EventPage(page.records, page.has_more, path, page.params)

    def get_event(self, channel_id: str, event_id: str) -> Event:
        """``GET /channels/{id}/events/search/{event_id}``."""
        return self.request("GET", f"channels/{segment(channel_id)}/events/search/{segment(event_id)}")


def segment(value: str) -> str:
    """``value`` (an id) escaped as one path segment: ``/``, ``?``, ``#``, ``%`` and every other reserved character
    percent-encoded, so an id can never reach another path (``../../networks``) or become a query or fragment.
    Raises :class:`~toolkit.errors.InvalidIdError` for an id that cannot be a segment at all: empty, ``.``, ``..``,
    or not encodable as UTF-8 (a lone surrogate)."""
    text = str(value)
    if text in ("", ".", ".."):
        raise InvalidIdError(text, "a path segment cannot be empty, '.' or '..'")
    try:
        return quote(text, safe="")
    except UnicodeEncodeError:
        raise InvalidIdError(text, "it is not valid Unicode (a lone surrogate)") from None


def is_segment(value: str) -> bool:
    """Whether ``value`` can be sent as one path segment (see :func:`segment`)."""
    try:
        segment(value)
    except InvalidIdError:
        return False
    return True


def _parse_json(content: bytes) -> Any:
    return exactjson.loads_marking_repeats(content)  # a record that repeats a name says so (in its extra)


def _checked_parse(parse: Callable[[bytes], Any], check: Callable[[Any], object]) -> Callable[[bytes], Any]:
    """``parse`` followed by ``check`` of the parsed body: the check runs while the answer is at hand, so a body of
    the wrong shape is retried, and named with the service's request id, like any other malformed answer."""

    def parse_and_check(content: bytes) -> Any:
        body = parse(content)
        check(body)
        return body

    return parse_and_check


def _record_parse(field: str, wanted: str) -> Callable[[bytes], Any]:
    """The JSON parse of one record fetched by id, checked to be that record: an object whose ``field`` is
    ``wanted`` (an empty body, ``null``, ``[]``, ``42`` or another record is a malformed answer, never stored)."""

    def check(body: Any) -> None:
        if not isinstance(body, dict):
            shown = "an empty body" if body is None else f"a JSON {type(body).__name__} ({_short(body)})"
            raise ResponseFormatError(f"the answer is {shown}, not the record asked for")
        if body.get(field) != wanted:
            raise ResponseFormatError(f"the answer is another record ({field} {_short(body.get(field))})")

    return _checked_parse(_parse_json, check)


def _short(value: Any) -> str:
    """A value from the service as a message shows it: its repr, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _list_parse(path: str, *, keys: tuple[str, ...] = ("data",)) -> Callable[[bytes], Any]:
    """The JSON parse of a one-page list's answer with its envelope checked (see :func:`_checked_parse`)."""
    return _checked_parse(_parse_json, lambda body: check_list(body, path, keys=keys))


#: The id field of each offset list's records, by the last segment of its path.
_ID_FIELDS = {
    "channels": "channel_id",
    "wallets": "wallet_id",
    "watchers": "watcher_id",
    "operations": "operation_id",
    "queries": "query_id",
}


def _once_by_id(key: str, *walks: Callable[[], Iterator[Page]]) -> Iterator[Page]:
    """The pages of ``walks`` one after the other, each record given once (by its ``key``): a record that moved
    from one walk's listing to the next one's while they were read is kept where it was met first."""
    seen: set[str] = set()
    for walk in walks:
        for page in walk():
            fresh = [r for r in page.records if not (isinstance(r.get(key), str) and r[key] in seen)]
            seen.update(r[key] for r in fresh if isinstance(r.get(key), str))
            yield page if len(fresh) == len(page.records) else replace(page, records=fresh)


@contextlib.contextmanager
def _bad_page(empty: Page, *, refusals: bool = False) -> Iterator[None]:
    """Turn a page that cannot be read (after the retries) into a :class:`BadPageError` carrying ``empty``, the
    page's request, marked unreadable with the reason; with ``refusals``, a channel's list refused with a status of
    ``spec.CHANNEL_REFUSED_STATUSES`` too (see :meth:`Client.channel_refusals_as_bad_pages`)."""
    try:
        yield
    except BadPageError:
        raise
    except ResponseFormatError as exc:
        tries = f" (after {exc.attempts} attempts)" if exc.attempts > 1 else ""
        page = replace(empty, problem=f"the page cannot be read: {exc.reason}{tries}", unreadable=True)
        raise BadPageError(exc, page) from None
    except ApiError as exc:
        if not refusals or exc.status not in spec.CHANNEL_REFUSED_STATUSES or not _channel_scoped(empty.path):
            raise
        # the channel was listed, then refused (deleted since, forbidden...): that channel's stream stops, not the run
        said = str(exc).removeprefix(f"{exc.method} {exc.path} ")
        page = replace(empty, problem=f"the channel's {empty.path.rsplit('/', 1)[-1]} were refused: {said}")
        raise BadPageError(exc, page) from None


def _channel_scoped(path: str) -> bool:
    """Whether ``path`` is one channel's resource list (``channels/{id}/...``), not the channel list itself."""
    return path.lstrip("/").startswith("channels/") and path.strip("/").count("/") >= 2


def _text(content: bytes, charset: str | None) -> str:
    """A body as text in its declared charset (UTF-8 when none, or one Python does not know), never failing."""
    try:
        return content.decode(charset or "utf-8", "replace")
    except LookupError:
        return content.decode("utf-8", "replace")


def _cut_short(exc: httpx.RemoteProtocolError) -> bool:
    """Whether the connection closed part-way through the body (h11: "peer closed connection without sending
    complete message body"), as opposed to before any answer."""
    text = str(exc).lower()
    return "complete message body" in text or "incomplete" in text


def _clean_params(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Drop ``None`` values; sequences become repeated keys (httpx does that for lists)."""
    if not params:
        return None
    out: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:
            continue
        out[key] = list(value) if isinstance(value, tuple | set | frozenset) else value
    return out


#: The longest request id kept; the characters kept (printable ASCII, no space): an id, not a message.
_REQUEST_ID_MAX = 128
_REQUEST_ID_CHARS = re.compile(r"[!-~]+")


def request_id_of(response: httpx.Response, body: Any, redact: Callable[[str], str]) -> str | None:
    """The id the service gave this answer: the ``X-Request-Id`` header, else a ``request_id`` string in the JSON
    error ``body``; ``None`` when neither holds a usable one. Redacted (a proxy may echo anything) and bounded."""
    value = response.headers.get("X-Request-Id")
    if value is None and isinstance(body, dict) and isinstance(body.get("request_id"), str):
        value = body["request_id"]
    if not value:
        return None
    value = redact(value.strip())
    return value[:_REQUEST_ID_MAX] if _REQUEST_ID_CHARS.fullmatch(value) else None


def _error_from_response(
    response: httpx.Response,
    method: str,
    path: str,
    redact: Callable[[str], str] = lambda text: text,
    *,
    attempts: int = 1,
    content: bytes | None = None,
) -> ApiError:
    """Map a non-2xx answer to its typed error, complete: the ``ApplicationError`` body when there is one, the
    request id, ``Retry-After``, and which attempt this was.

    ``redact`` removes the key from the service's message or body before it is kept (some proxies echo it)."""
    error_type = code = message = None
    content = response.content if content is None else content
    try:
        body = orjson.loads(content) if content else None
    except (orjson.JSONDecodeError, RecursionError):
        body = None
    if isinstance(body, dict):
        error_type = redact(body["type"]) if isinstance(body.get("type"), str) else None
        code = redact(body["code"]) if isinstance(body.get("code"), str) else None
        message = redact(body["message"]) if isinstance(body.get("message"), str) else None
    elif content:
        # redacted before it is cut: a cut could split the key
        message = redact(_text(content, response.charset_encoding))[:200]
    cls = api_error_class(response.status_code, error_type)
    return cls(
        status=response.status_code,
        method=method,
        path=path,
        type=error_type,
        code=code,
        message=message,
        attempts=attempts,
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
        request_id=request_id_of(response, body, redact),
    )
