"""The dashboard as its own web page, served by ``chainops dashboard`` on 127.0.0.1: filters (network, channel,
status, period) in a plain form, a summary line, and the four views (latency per status, failure rates, finality
stages, stuck operations), each a figure above its table, as the widget dashboard (:mod:`toolkit.dashboard_app`)
and the report show them. A view with nothing to show says so in text.

No notebook, kernel or Voilà: a small HTTP server from the standard library answers ``GET /`` (the page, the filters
in its query string) and ``GET /figure/<view>.png`` (a view's figure, drawn on request, so the page appears as soon
as its tables are ready). Nothing on the page is fetched from beyond the server.
"""

from __future__ import annotations

import html
import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from . import metrics, spec
from .dashboard_app import _TABLE_COLUMNS, EMPTY, VIEW_METRICS, VIEWS, compute_views
from .errors import ChainopsError
from .present import TABLE_CSS, format_percent, hide_rows, plural
from .report import html_table

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
    """What the filters offer: the warehouse's networks and channels (read once, when the server starts)."""

    def __init__(self, warehouse: str) -> None:
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


def render_page(warehouse: str, options: Options, query: dict[str, list[str]]) -> str:
    """The whole page for the filters in ``query`` (the tables computed here; figures linked as images)."""
    return page_and_tables(warehouse, options, query)[0]


def page_and_tables(warehouse: str, options: Options, query: dict[str, list[str]]) -> tuple[str, dict[str, Any] | None]:
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
        '<p class="meta">Nothing selected in a list means all of it; ctrl/cmd-click picks several. Status filters '
        "the latency and stuck views. Times are UTC.</p>",
    ]
    try:
        tables, _ = compute_views(warehouse, filters, statuses, bucket, draw=False)
    except (ValueError, ChainopsError) as exc:  # an unknown filter value, a bad period: said on the page
        parts.append(f'<p class="error" id="error">{e(str(exc))}</p>')
        return _page("".join(parts)), None
    parts.append(f'<p id="summary">{_summary(tables, filters)}</p>')
    parts.append("<nav>" + "".join(f'<a href="#{key}">{e(title)}</a>' for key, title in VIEWS.items()) + "</nav>")
    image_query = urlencode([(k, v) for k, values in query.items() for v in values], doseq=True)
    for key, title in VIEWS.items():
        parts.append(f'<section id="{key}"><h2>{e(title)}</h2>')
        df = tables[key]
        if df.empty:
            parts.append(f'<p class="empty">{e(EMPTY[key])}</p>')
        else:
            parts.append(f'<img alt="{e(title)}" width="1000" src="/figure/{key}.png?{e(image_query)}">')
            shown, hidden = hide_rows(df, VIEW_METRICS[key])
            parts.append(html_table(shown, _TABLE_COLUMNS[key], max_rows=MAX_ROWS, metric=VIEW_METRICS[key]))
            parts += [f'<p class="meta">{e(n.removesuffix(" (--wide shows them)"))}</p>' for n in hidden]
        parts.append("</section>")
    return _page("".join(parts)), tables


def _summary(tables: dict[str, Any], filters: dict[str, Any]) -> str:
    rates = tables["failure"]
    ops, terminal, failed = (int(rates[c].sum()) if len(rates) else 0 for c in ("operations", "terminal", "failed"))
    rate = format_percent(failed / terminal) if terminal else "no finished operations"
    since = filters["since"] or "the start"
    until = filters["until"] or "now"
    return html.escape(
        f"{plural(ops, 'operation')} created from {since} to {until}; failure rate {rate} of finished relayed "
        f"operations; {plural(len(tables['stuck']), 'operation')} stuck now."
    )


def _page(body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Chain operations dashboard</title>'
        f"<style>{_CSS}</style></head><body>{body}</body></html>\n"
    )


def render_figures(
    warehouse: str, query: dict[str, list[str]], tables: dict[str, Any] | None = None
) -> dict[str, bytes]:
    """Every view's figure as PNG bytes, for the filters in ``query`` (``tables``: the views' tables for them)."""
    filters, statuses, bucket = _filters(query)
    _, figures = compute_views(warehouse, filters, statuses, bucket, tables=tables)
    out = {}
    for view, figure in figures.items():
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=90, metadata={"Software": None})
        out[view] = buffer.getvalue()
    return out


class _Cache:
    """The pages and figures of the last few filter sets (the warehouse is read-only while served: a page computed
    once is the same the next time)."""

    SIZE = 4

    def __init__(self, warehouse: str, options: Options) -> None:
        self.warehouse, self.options = warehouse, options
        # pages and figures each computed once per filter set; a page never waits for figures being drawn
        self.page_lock, self.figure_lock = threading.Lock(), threading.Lock()
        self.pages: dict[str, tuple[str, dict[str, Any] | None]] = {}
        self.figures: dict[str, dict[str, bytes]] = {}

    @staticmethod
    def _keep(store: dict[str, Any], key: str, make: Any) -> Any:
        if key not in store:
            while len(store) >= _Cache.SIZE:
                store.pop(next(iter(store)))
            store[key] = make()
        return store[key]

    def page(self, key: str, query: dict[str, list[str]]) -> str:
        with self.page_lock:
            return self._keep(self.pages, key, lambda: page_and_tables(self.warehouse, self.options, query))[0]

    def figure(self, view: str, key: str, query: dict[str, list[str]]) -> bytes:
        with self.figure_lock:
            page = self.pages.get(key)
            tables = page[1] if page is not None else None
            return self._keep(self.figures, key, lambda: render_figures(self.warehouse, query, tables))[view]

    def warm(self) -> None:
        """Compute the unfiltered page and its figures ahead of the first visit."""
        self.page("", {})
        self.figure("latency", "", {})


def _handler(cache: _Cache) -> type[BaseHTTPRequestHandler]:

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall between them

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query, keep_blank_values=False)
            try:
                if url.path == "/":
                    self._send(200, "text/html; charset=utf-8", cache.page(url.query, query).encode())
                    return
                view = url.path.removeprefix("/figure/").removesuffix(".png")
                if url.path.startswith("/figure/") and view in VIEWS:
                    self._send(200, "image/png", cache.figure(view, url.query, query))
                    return
                self._send(404, "text/plain; charset=utf-8", b"not found: the dashboard is at /\n")
            except Exception as exc:  # a page that says what failed, never a dropped connection
                message = f"The dashboard could not be drawn: {type(exc).__name__}: {exc}"
                self._send(500, "text/plain; charset=utf-8", message.encode())

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet: the terminal shows the URL, not every request

    return Handler


def _quietly(func: Any) -> Any:
    def run() -> None:
        with suppress(Exception):  # the visit that needs it computes it again, and shows what failed
            func()

    return run


@contextmanager
def serving(warehouse: str | Path, port: int = 0) -> Iterator[str]:
    """Serve the dashboard of ``warehouse`` on 127.0.0.1:``port`` (0 picks a free one) in a background thread;
    yields its URL and stops the server when the block ends."""
    path = str(warehouse)
    cache = _Cache(path, Options(path))
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(cache))
    # the loop looks at shutdown()'s flag once per poll_interval (0.5 s by default): stopping took up to that long
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="chainops-dashboard", daemon=True
    )
    thread.start()
    # the first visit finds the unfiltered page ready (a failure here is shown to that visit instead)
    threading.Thread(target=_quietly(cache.warm), name="chainops-dashboard-warm", daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


__all__ = ["EMPTY", "MAX_ROWS", "Options", "page_and_tables", "render_figures", "render_page", "serving"]
