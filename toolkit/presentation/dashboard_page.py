"""The dashboard as its own web page, served by ``chainops dashboard`` on 127.0.0.1: filters (network, channel,
status, period) in a plain form, a summary line, and every declared view (:mod:`toolkit.metrics.declarations`:
latency per status, failure rates, finality stages, stuck operations, ...), each a figure above its table (a view
declared with no figure of its own: its table alone), as the widget dashboard (:mod:`toolkit.dashboard_app`)
and the report show them. A view with nothing to show says so in text.

No notebook, kernel or Voilà: a small HTTP server from the standard library answers ``GET /`` (the page, the filters
in its query string) and ``GET /figure/<view>.png`` (a view's figure, drawn on request, so the page appears as soon
as its tables are ready). Nothing on the page is fetched from beyond the server.

The door (docs/reliability.md, "The dashboard's door"): it binds to 127.0.0.1 and answers only requests whose
``Host`` names loopback (or a name the user gave), so a web page cannot read it through a name of its own (DNS
rebinding); a connection has :data:`IDLE_TIMEOUT` seconds to send its request; at most :data:`MAX_CONNECTIONS` are
served at once. Each request looks at the warehouse file first (:func:`file_identity`): a sync that landed shows on
the next request, filter lists included. A stop interrupts the statements being run and waits for its threads.
"""

from __future__ import annotations

import html
import io
import ipaddress
import logging
import re
import selectors
import socket
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from .. import metrics, spec
from ..errors import ChainopsError
from ..warehouse import Warehouse
from .dashboard_widgets import (
    _TABLE_COLUMNS,
    EMPTY,
    FIGURED,
    VIEW_METRICS,
    VIEWS,
    compute_views,
    file_identity,
    status_note,
    summary_sentence,
)
from .figures import png_bytes
from .report import html_table
from .tables import TABLE_CSS, hide_rows

#: Rows of a view's table shown before the rest is folded away (none is left out).
MAX_ROWS = 30
_CSS = (
    """
body { font-family: system-ui, sans-serif; margin: 1rem auto; max-width: 78rem; padding: 0 1rem; color: #222; }
form { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: flex-end; }
label { display: flex; flex-direction: column; font-size: 0.85rem; color: #444; }
select, input { font: inherit; max-width: 16rem; }
nav a { margin-right: 1rem; } section { border-top: 1px solid #ddd; margin-top: 1rem; }
img { max-width: 100%; } .error { color: #a00; font-weight: bold; } .meta { color: #555; }
"""
    + TABLE_CSS
)


class Options:
    """What the filters offer: the warehouse's networks and channels (read again whenever the file changes)."""

    def __init__(self, warehouse: metrics.WarehouseLike) -> None:
        with metrics._open(warehouse) as wh:
            self.networks = [
                str(n)
                for n in wh.query(
                    "SELECT DISTINCT coalesce(n.name, o.chain_selector) AS name FROM operations o LEFT JOIN networks n "
                    "ON n.chain_selector = o.chain_selector WHERE o.chain_selector IS NOT NULL ORDER BY name"
                )["name"]
            ]
            channels = wh.query("SELECT channel_id, coalesce(name, channel_id) AS name FROM channels ORDER BY name")
            self.channels = [(str(i), str(n)) for i, n in zip(channels["channel_id"], channels["name"], strict=True)]
            span = wh.query("SELECT min(created_at) AS first FROM operations")["first"]
        self.first = None if span.empty or span.isna().iloc[0] else span.iloc[0]


def _filters(query: dict[str, list[str]]) -> tuple[dict[str, Any], list[str] | None, str]:
    """The metrics' filters, the statuses and the failure-rate bucket from the page's query string."""

    def many(name: str) -> list[str] | None:
        values = [v for v in query.get(name, []) if v]
        return values or None

    def one(name: str) -> str | None:
        values = many(name)
        return values[0] if values else None

    filters = {"channel": many("channel"), "network": many("network"), "since": one("since"), "until": one("until")}
    return filters, many("status"), one("bucket") or "1d"


def _select(name: str, label: str, options: list[tuple[str, str]], chosen: list[str] | None) -> str:
    e = html.escape
    items = "".join(
        f'<option value="{e(v)}"{" selected" if chosen and v in chosen else ""}>{e(text)}</option>'
        for v, text in options
    )
    return f'<label>{e(label)}<select name="{name}" multiple size="5">{items}</select></label>'


def render_page(warehouse: metrics.WarehouseLike, options: Options, query: dict[str, list[str]]) -> str:
    """The whole page for the filters in ``query`` (the tables computed here; figures linked as images)."""
    return page_and_tables(warehouse, options, query)[0]


def page_and_tables(
    warehouse: metrics.WarehouseLike, options: Options, query: dict[str, list[str]]
) -> tuple[str, dict[str, Any] | None]:
    """The page (see :func:`render_page`) and the views' tables it shows (None when the filters were refused)."""
    e = html.escape
    filters, statuses, bucket = _filters(query)
    form = [
        _select("network", "Network", [(n, n) for n in options.networks], filters["network"]),
        _select("channel", "Channel", [(i, f"{n} ({i[:8]}…)" if n != i else i) for i, n in options.channels],
                filters["channel"]),
        _select("status", "Status", [(s, s) for s in spec.OPERATION_STATUSES], statuses),
        f'<label>Since (UTC; 2026-11-20, 7d)<input name="since" value="{e(filters["since"] or "")}"></label>',
        f'<label>Until (UTC)<input name="until" value="{e(filters["until"] or "")}"></label>',
        f'<label>Bucket<input name="bucket" value="{e(bucket)}" size="4"></label>',
        '<button type="submit">Show</button> <a href="/">All</a>',
    ]  # fmt: skip
    parts = [
        "<h1>Chain operations dashboard</h1>",
        f'<form method="get" action="/">{"".join(form)}</form>',
        '<p class="meta">Nothing selected in a list means all of it; ctrl/cmd-click picks several. '
        f"{e(status_note())} Times are UTC.</p>",
    ]
    try:
        tables, _ = compute_views(warehouse, filters, statuses, bucket, draw=False)
    except (ValueError, ChainopsError) as exc:  # an unknown filter value, a bad period: said on the page
        parts.append(f'<p class="error" id="error">{e(str(exc))}</p>')
        return _page("".join(parts)), None
    parts.append(f'<p id="summary">{html.escape(summary_sentence(tables))}</p>')
    views = dict(VIEWS)
    parts.append("<nav>" + "".join(f'<a href="#{key}">{e(title)}</a>' for key, title in views.items()) + "</nav>")
    image_query = urlencode([(k, v) for k, values in query.items() for v in values], doseq=True)
    for key, title in views.items():
        parts.append(f'<section id="{key}"><h2>{e(title)}</h2>')
        df = tables[key]
        if df.empty:
            parts.append(f'<p class="empty">{e(EMPTY[key])}</p>')
        else:
            if key in FIGURED:  # a view declared with no figure of its own shows its table alone
                parts.append(f'<img alt="{e(title)}" width="1000" src="/figure/{key}.png?{e(image_query)}">')
            shown, hidden = hide_rows(df, VIEW_METRICS[key], shown_by=None)
            parts.append(html_table(shown, _TABLE_COLUMNS[key], max_rows=MAX_ROWS, metric=VIEW_METRICS[key]))
            parts += [f'<p class="meta">{e(n)}</p>' for n in hidden]
        parts.append("</section>")
    return _page("".join(parts)), tables


def _page(body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Chain operations dashboard</title>'
        f"<style>{_CSS}</style></head><body>{body}</body></html>\n"
    )


def render_figures(
    warehouse: metrics.WarehouseLike, query: dict[str, list[str]], tables: dict[str, Any] | None = None
) -> dict[str, bytes]:
    """Every view's figure as PNG bytes, for the filters in ``query`` (``tables``: the views' tables for them)."""
    filters, statuses, bucket = _filters(query)
    _, figures = compute_views(warehouse, filters, statuses, bucket, tables=tables)
    return {view: png_bytes(figure) for view, figure in figures.items()}


class _Stopping(Exception):
    """The dashboard is stopping: no new read of the warehouse starts."""


class _Readers:
    """The warehouse connections open right now, so that a stop can interrupt the queries they run (a thread still
    inside DuckDB as Python exits aborts the process)."""

    def __init__(self, warehouse: str) -> None:
        self.warehouse = warehouse
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._open: set[Warehouse] = set()

    @contextmanager
    def open(self) -> Iterator[Warehouse]:
        """The warehouse opened read-only for the block (closed after it: a sync can write between two requests)."""
        if self.stopping.is_set():
            raise _Stopping("the dashboard is stopping")
        wh = Warehouse(self.warehouse, read_only=True)
        try:
            with self._lock:
                self._open.add(wh)
            if self.stopping.is_set():  # asked while it opened: interrupt() may have missed it
                raise _Stopping("the dashboard is stopping")
            yield wh
        finally:
            with self._lock:
                self._open.discard(wh)
            wh.close()

    def interrupt(self) -> None:
        """Interrupt the statement each open connection runs (one between statements starts its next: call again)."""
        with self._lock:
            for wh in self._open:
                with suppress(Exception):
                    wh.con.interrupt()


Stamp = tuple[tuple[int, ...], ...] | None


class _Cache:
    """The pages and figures of the last few filter sets, and the filters' lists, for the warehouse file as it is
    now: each request looks at the file's identity (:func:`file_identity`) first, and what was computed for another
    identity is dropped, so a sync that lands shows on the next request. Errors are never kept."""

    SIZE = 4

    def __init__(self, readers: _Readers, options: Options, stamp: Stamp) -> None:
        self.readers = readers
        # pages and figures each computed once per filter set; a page never waits for figures being drawn
        self.page_lock, self.figure_lock = threading.Lock(), threading.Lock()
        self._lock = threading.Lock()  # the stores below
        self.stamp = stamp
        self.options: tuple[Stamp, Options] | None = (stamp, options) if stamp is not None else None
        self.pages: dict[tuple[Stamp, str], tuple[str, dict[str, Any]]] = {}
        self.figures: dict[tuple[Stamp, str], dict[str, bytes]] = {}

    def _look(self) -> Stamp:
        """The file's identity now; what was kept for another one is dropped."""
        stamp = file_identity(self.readers.warehouse)
        with self._lock:
            if stamp != self.stamp:
                self.stamp = stamp
                self.pages.clear()
                self.figures.clear()
                if self.options is not None and self.options[0] != stamp:
                    self.options = None
        return stamp

    def _store(self, store: dict[tuple[Stamp, str], Any], stamp: Stamp, key: str, value: Any) -> None:
        with self._lock:
            if stamp is None or stamp != self.stamp:  # the file changed while it was computed: not kept
                return
            while len(store) >= _Cache.SIZE:
                store.pop(next(iter(store)))
            store[(stamp, key)] = value

    def page(self, key: str, query: dict[str, list[str]]) -> str:
        """The page for the query string ``key`` (parsed: ``query``), computed unless kept for the file as it is."""
        with self.page_lock:
            stamp = self._look()  # before reading: a sync landing meanwhile shows as a new identity next time
            kept = self.pages.get((stamp, key))
            if kept is not None:
                return kept[0]
            with self.readers.open() as wh:
                options = self.options[1] if self.options is not None and self.options[0] == stamp else Options(wh)
                page, tables = page_and_tables(wh, options, query)
            with self._lock:
                if stamp is not None and stamp == self.stamp:
                    self.options = (stamp, options)
            if tables is not None:  # a refused filter is said again next time, never kept
                self._store(self.pages, stamp, key, (page, tables))
            return page

    def figure(self, view: str, key: str, query: dict[str, list[str]]) -> bytes:
        """A view's figure for the query string ``key``, computed unless kept for the file as it is."""
        with self.figure_lock:
            stamp = self._look()
            figures = self.figures.get((stamp, key))
            if figures is None:
                page = self.pages.get((stamp, key))
                with self.readers.open() as wh:
                    figures = render_figures(wh, query, page[1] if page is not None else None)
                self._store(self.figures, stamp, key, figures)
            return figures[view]

    def warm(self) -> None:
        """Compute the unfiltered page and its figures ahead of the first visit."""
        self.page("", {})
        if not self.readers.stopping.is_set():
            self.figure("latency", "", {})


#: The names the dashboard answers to (the request's ``Host``, with any port or none): loopback only, so that a
#: web page cannot read the dashboard through a name of its own pointed at 127.0.0.1 (DNS rebinding).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: Seconds a connection has, from the moment it is taken, to send its whole request line and headers.
IDLE_TIMEOUT = 10.0
#: Seconds an answer may take to be taken by its client.
WRITE_TIMEOUT = 30.0
#: Connections served at once (one thread each); more wait, unaccepted, until one ends.
MAX_CONNECTIONS = 16
#: Seconds a stop waits for a request being answered to end (its DuckDB statement interrupted).
STOP_WAIT = 10.0

_HOST_NAME = re.compile(r"(?:\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?)")


def allowed_host(name: str) -> str:
    """A host name the dashboard should answer to besides loopback (``--allow-host``), as requests spell it:
    lower case, an IPv6 address in brackets. Raises ``ValueError`` for anything else (a port, a URL, a wildcard)."""
    value = name.strip().lower()
    if ":" in value and not value.startswith("["):
        with suppress(ValueError):
            value = f"[{ipaddress.IPv6Address(value)}]"  # ::1 -> [::1]
    if not _HOST_NAME.fullmatch(value):
        raise ValueError(
            f"{name!r} is not a host name: give the name alone, as the browser's address bar shows it, without "
            "scheme, port or path (dashboard.example, [fd00::1])"
        )
    return value


def _host_name(header: str) -> str | None:
    """The name a ``Host`` header gives (lower case, without its port), or None when it is not ``name[:port]``."""
    value = header.strip().lower()
    name, sep, port = value.rpartition(":") if not value.endswith("]") else (value, "", "")
    if not sep:
        name = value
    elif not (port.isdigit() and len(port) <= 5 and int(port) <= 65535) or (":" in name and not name.endswith("]")):
        return None
    return name if _HOST_NAME.fullmatch(name) else None


class _DeadlineReader(io.RawIOBase):
    """The connection's bytes, read under a deadline for the whole request head (a client that sends one byte at a
    time, or nothing, is cut off when it passes)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.deadline: float | None = None

    def readable(self) -> bool:
        """Always: it is the reading side of the connection."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Read what is there, waiting no later than the deadline (then ``TimeoutError``)."""
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request was not sent in time")
            self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class _Server(HTTPServer):
    """An HTTP server on loopback that serves each connection in a thread of its own, at most ``max_connections`` at
    once (the others wait in the kernel's queue, unaccepted, with no thread), and that a stop ends at once: the
    accept loop, every open connection and every warehouse statement being run."""

    request_queue_size = 128  # connections that wait unaccepted for a thread (more are refused by the kernel)
    POLL = 0.1  # seconds between two looks at the stop flag

    def __init__(
        self,
        port: int,
        handler: type[BaseHTTPRequestHandler],
        *,
        hosts: frozenset[str],
        idle_timeout: float,
        max_connections: int,
    ) -> None:
        super().__init__(("127.0.0.1", port), handler)
        self.hosts, self.idle_timeout, self.max_connections = hosts, idle_timeout, max_connections
        self.stopping = threading.Event()
        self._room = threading.Condition()
        self._active: dict[threading.Thread, socket.socket] = {}

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a thread once fewer than ``max_connections`` are being served."""
        with self._room:
            while len(self._active) >= self.max_connections and not self.stopping.is_set():
                self._room.wait()
            if self.stopping.is_set():
                self.shutdown_request(request)
                return
            thread = threading.Thread(
                target=self._serve, args=(request, client_address), name="chainops-dashboard-request", daemon=True
            )
            self._active[thread] = request
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: this connection is closed, the next may find one
            with self._room:
                self._active.pop(thread, None)
            self.shutdown_request(request)

    def _serve(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            with self._room:
                self._active.pop(threading.current_thread(), None)
                self._room.notify_all()
                self.shutdown_request(request)  # under the lock: stop() never shuts a socket already closed

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (reset, closed mid-answer) is no error of the dashboard's; anything else is one
        line in the log, never a traceback on the terminal."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            _LOG.warning("a request failed: %s: %s", type(exc).__name__, exc)

    def accept_until_stopped(self) -> None:
        """The accept loop: serve each connection that arrives until :meth:`stop` (it looks every ``POLL`` s).

        ``serve_forever`` is not used because its ``shutdown()`` waits for the loop with no bound, and a stop must
        end whatever the loop is doing; this loop is joined with a deadline instead (see :func:`serving`)."""
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            while not self.stopping.is_set():
                if selector.select(_Server.POLL) and not self.stopping.is_set():
                    self._handle_request_noblock()  # accept() cannot wait: the listening socket does not block

    def server_activate(self) -> None:
        """Listen, without blocking: a connection gone between ``select`` and ``accept`` must not hold the loop."""
        super().server_activate()
        self.socket.setblocking(False)

    def stop(self) -> list[threading.Thread]:
        """Stop accepting, cut every open connection; returns the threads still serving one (see :func:`serving`)."""
        self.stopping.set()  # the accept loop ends within POLL
        with self._room:
            self._room.notify_all()
        with self._room:
            for sock in self._active.values():
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # a read or a write in progress ends now
            return list(self._active)


_LOG = logging.getLogger("toolkit.dashboard")


def _handler(cache: _Cache) -> type[BaseHTTPRequestHandler]:

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall between them
        server: _Server
        server_version, sys_version = "chainops-dashboard", ""  # no versions for a prober to match

        def setup(self) -> None:
            super().setup()
            self.reader = _DeadlineReader(self.connection)
            self.rfile = io.BufferedReader(self.reader)

        def handle_one_request(self) -> None:
            self.reader.deadline = time.monotonic() + self.server.idle_timeout
            super().handle_one_request()

        def do_GET(self) -> None:
            self.reader.deadline = None
            self.connection.settimeout(WRITE_TIMEOUT)
            refusal = self._refusal()
            if refusal is not None:
                self._send(*refusal)
                return
            url = urlsplit(self.path)
            query = parse_qs(url.query, keep_blank_values=False)
            try:
                if url.path == "/":
                    self._send(200, "text/html; charset=utf-8", cache.page(url.query, query).encode())
                    return
                view = url.path.removeprefix("/figure/").removesuffix(".png")
                if url.path.startswith("/figure/") and view in FIGURED and view in VIEWS:
                    self._send(200, "image/png", cache.figure(view, url.query, query))
                    return
                self._send(404, "text/plain; charset=utf-8", b"not found: the dashboard is at /\n")
            except _Stopping:
                return  # the connection is being cut
            except Exception as exc:  # a page that says what failed, never a dropped connection
                message = f"The dashboard could not be drawn: {type(exc).__name__}: {exc}"
                self._send(500, "text/plain; charset=utf-8", message.encode())

        def _refusal(self) -> tuple[int, str, bytes] | None:
            """Why this request is not answered (status, type, text), or None: one ``Host`` naming loopback or a
            name given with ``--allow-host``, and a path (not a URL) as the target."""
            kind = "text/plain; charset=utf-8"
            hosts = self.headers.get_all("Host") or []
            if len(hosts) != 1 or not self.path.startswith("/"):
                return 400, kind, b"a request names its host once (one Host header) and asks for a path\n"
            name = _host_name(hosts[0])
            if name is None or (name not in LOOPBACK_HOSTS and name not in self.server.hosts):
                text = (
                    "this dashboard answers only requests addressed to 127.0.0.1, localhost or [::1] (and to names "
                    "given with chainops dashboard --allow-host NAME)\n"
                )
                return 403, kind, text.encode()
            return None

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("X-Frame-Options", "DENY")
            self.send_header("Content-Security-Policy", _CSP)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet: the terminal shows the URL, not every request

    return Handler


#: Nothing on the page runs or is fetched from elsewhere; no other site frames it or receives its form.
_CSP = (
    "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)


def _quietly(func: Any) -> Any:
    def run() -> None:
        with suppress(Exception):  # the visit that needs it computes it again, and shows what failed
            func()

    return run


def threads_left() -> list[threading.Thread]:
    """The dashboard's threads still running in this process (none once :func:`serving` ended, unless a figure being
    drawn outlasted :data:`STOP_WAIT`)."""
    return [t for t in threading.enumerate() if t.name.startswith("chainops-dashboard") and t.is_alive()]


@contextmanager
def serving(
    warehouse: str | Path,
    port: int = 0,
    *,
    allow_hosts: Iterable[str] = (),
    idle_timeout: float = IDLE_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
) -> Iterator[str]:
    """Serve the dashboard of ``warehouse`` on 127.0.0.1:``port`` (0 picks a free one) in a background thread;
    yields its URL and stops the server when the block ends.

    It answers requests whose ``Host`` names loopback (:data:`LOOPBACK_HOSTS`) or one of ``allow_hosts`` (see
    :func:`allowed_host`), and 403 to any other; a connection has ``idle_timeout`` seconds to send its request;
    ``max_connections`` are served at once. Every request looks at the warehouse file first: a sync that landed
    shows at once, filter lists included. When the block ends, the accept loop, every open connection and every
    statement being run are stopped, and the dashboard's threads are waited for (up to :data:`STOP_WAIT`)."""
    path = str(warehouse)
    hosts = frozenset(allowed_host(h) for h in allow_hosts)
    readers = _Readers(path)
    stamp = file_identity(path)
    with readers.open() as wh:  # a missing or foreign file fails here, before anything is served
        options = Options(wh)
    cache = _Cache(readers, options, stamp)
    server = _Server(
        port, _handler(cache), hosts=hosts, idle_timeout=idle_timeout, max_connections=max(1, max_connections)
    )
    threads: list[threading.Thread] = []
    try:
        loop = threading.Thread(target=server.accept_until_stopped, name="chainops-dashboard", daemon=True)
        loop.start()
        threads.append(loop)
        # the first visit finds the unfiltered page ready (a failure here is shown to that visit instead)
        warm = threading.Thread(target=_quietly(cache.warm), name="chainops-dashboard-warm", daemon=True)
        warm.start()
        threads.append(warm)
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        readers.stopping.set()
        readers.interrupt()
        if threads:
            threads += server.stop()
        deadline = time.monotonic() + STOP_WAIT
        for thread in threads:
            while thread.is_alive() and time.monotonic() < deadline:
                readers.interrupt()  # again: a computation runs several statements, one after another
                thread.join(0.05)
        server.server_close()


__all__ = [
    "EMPTY",
    "IDLE_TIMEOUT",
    "LOOPBACK_HOSTS",
    "MAX_CONNECTIONS",
    "MAX_ROWS",
    "Options",
    "allowed_host",
    "file_identity",
    "page_and_tables",
    "render_figures",
    "render_page",
    "serving",
    "threads_left",
]
