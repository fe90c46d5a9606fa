"""A hostile server: answers the documented endpoints of the service (WIRE.md) for a small generated organisation,
over real HTTP on 127.0.0.1, with each defect a sync must survive switchable.

The organisation (:class:`Org`) is generated here, independently of the toolkit, so tests can state what a sync must
store from the server's own data. Defects (:class:`Defects`) hit the first channel (:attr:`Org.target`) unless they
say otherwise. Requests are counted per kind of path (:attr:`HostileServer.counts`) so a test can show that no walk
loops.
"""

from __future__ import annotations

import functools
import json
import struct
import threading
import time
import uuid
import zlib
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, unquote, urlsplit

T0 = 1_795_000_000
ETHEREUM = "5009297550715157269"
BASE = "15971525489660198786"
OPERATION_STEPS = ("accepted", "sending", "sent", "broadcasting")
#: Where a bad page is served: the target channel's events page asked at this offset, or its operations page.
BAD_EVENT_OFFSET = 200
BAD_OPERATIONS_OFFSET = 100
#: The target's operation whose single GET cannot be read (with ``bad_record``): past the bad operations page, so it
#: is one the sync fetches one by one.
BAD_RECORD_INDEX = 105
_MARK = "@@HOSTILE@@"
_DEEP_MARK = "@@DEEP@@"
#: The target's event that ``deep_payload_depth`` and ``event_without_id`` change: inside the page at BAD_EVENT_OFFSET.
DEEP_EVENT_OFFSET = BAD_EVENT_OFFSET + 3
#: The first value of the repeated ``status`` (see ``Defects.repeated_payload_names``).
REPEATED_FIRST = "sending"


def _id(*parts: object) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "hostile/" + "/".join(map(str, parts))))


@dataclass(frozen=True)
class Defects:
    """What the server gets wrong (all off: it answers like the service)."""

    #: The target's events page asked at offset 400 answers offsets 0-199 again, with has_more true.
    offsets_backwards: bool = False
    #: List kinds (channels, wallets, operations, queries, events) whose every page says has_more true; a page asked
    #: past the end answers the list's first page again.
    has_more_forever: frozenset[str] = frozenset()
    #: The target's operation #0 and its events carry chain_selector 2**64 as a JSON number.
    huge_chain_selector_number: bool = False
    #: The target's operation #0 has created_at 1795000000.5; event offset 5 a payload timestamp with .5; event
    #: offset 7 the header offset 7.5.
    fractional_numbers: bool = False
    #: The target's first operations page has the number 42 at position 3 of ``data``; its first events page the
    #: string "oops" at position 5 of ``events``.
    non_object_item: bool = False
    #: One page of the target (see ``bad_page_kind``) is invalid UTF-8, nested 10,000 deep, or cut short, always.
    invalid_utf8_page: bool = False
    deep_nesting_page: bool = False
    truncated_page: bool = False
    #: The same page announced whole (its full Content-Length) and the connection closed half-way through the body.
    cut_connection_page: bool = False
    #: ``events`` (the page at offset 200), ``operations`` (the page at offset 100), ``channels`` (the first page) or
    #: ``networks`` (the one answer of ``GET /networks``).
    bad_page_kind: str = "events"
    #: GET of the target's operation #BAD_RECORD_INDEX answers a body nested 10,000 deep, always.
    bad_record: bool = False
    #: Every request answers 401 with an ApplicationError whose message quotes the key it was sent.
    echo_key_401: bool = False
    #: Every request answers 500 with an HTML page quoting the Authorization header.
    echo_key_500_html: bool = False
    #: The bad page (see ``bad_page_kind``) announced whole and then sent one byte every ``trickle_interval`` seconds
    #: for ``trickle_seconds``, then the rest at once (so a client with no whole-request deadline gets it, late).
    trickle_page: bool = False
    trickle_interval: float = 0.2
    trickle_seconds: float = 20.0
    #: The bad page sent gzip-encoded, a small body that expands to ``bomb_bytes`` of JSON whitespace and more.
    gzip_bomb_page: bool = False
    bomb_bytes: int = 2**30
    #: The target's event offsets step by this much (0, 2, 4, ... for 2): holes that no re-read fills.
    offset_step: int = 1
    #: The target channel's sub-paths of these kinds (watchers, operations, queries, events) answer this status with
    #: an ApplicationError (a channel deleted after the channel list was read, or refused to this key).
    channel_refused: frozenset[str] = frozenset()
    channel_refused_status: int = 404
    #: GET of the target's operation #BAD_RECORD_INDEX answers 200 with this body (``b"[]"``, ``b"42"``, ...), always.
    record_body: bytes | None = None
    #: The target's first event (offset 0) repeats two names inside its payload, as sent: ``status`` (first
    #: :data:`REPEATED_FIRST`, last its real status) and ``operation_status_workflow_id`` (``"first"``, ``"last"``).
    repeated_payload_names: bool = False
    #: The target's first operations page repeats ``status`` in its first record (``REPEATED_FIRST`` first, its real
    #: status last).
    repeated_record_name: bool = False
    #: The target's first operations page's first record repeats ``value`` inside its first transaction (``"7"``
    #: first, its real value last): a repeat nested in a record.
    repeated_nested_record_name: bool = False
    #: The target's event at offset :data:`DEEP_EVENT_OFFSET` carries a payload field ``nested`` of this many lists
    #: one inside the other (0: none); every other event is as documented.
    deep_payload_depth: int = 0
    #: The target's event at offset :data:`DEEP_EVENT_OFFSET` has no ``event_id`` (0.8 does not require one).
    event_without_id: bool = False


@dataclass
class Org:
    """The generated organisation: a few channels, each with operations, queries and ``operation.status`` events
    at contiguous offsets from 0."""

    channels: int = 3
    operations_per_channel: int = 120
    queries_per_channel: int = 30
    #: Ids for the first channels in place of generated ones (hostile ids: ``../../networks``, ``x?y=1``, ...).
    channel_ids: tuple[str, ...] = ()
    #: The second channel's first ``shared_ids`` operations and queries carry the first channel's ids.
    shared_ids: int = 0
    networks: list[dict[str, Any]] = field(default_factory=list)
    channel_list: list[dict[str, Any]] = field(default_factory=list)
    wallets: list[dict[str, Any]] = field(default_factory=list)
    operations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    queries: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.networks = [
            {
                "id": _id("net", n),
                "name": name,
                "chain_selector": sel,
                "chain_id": cid,
                "chain_family": "evm",
                "type": "mainnet",
                "created_at": T0,
                "updated_at": T0,
            }
            for n, (name, sel, cid) in enumerate([("Ethereum Mainnet", ETHEREUM, "1"), ("Base", BASE, "8453")])
        ]
        wallet_address = "0x" + "ab" * 20
        self.wallets = [
            {
                "wallet_id": _id("wallet"),
                "name": "main",
                "address": wallet_address,
                "wallet_owner_address": "0x" + "cd" * 20,
                "chain_selector": ETHEREUM,
                "wallet_type": "ecdsa",
                "status": "deployed",
                "configuration": {},
                "allowed_rsa_signers": [],
                "allowed_ecdsa_signers": [],
                "created_at": T0,
            }
        ]
        for c in range(self.channels):
            cid = self.channel_ids[c] if c < len(self.channel_ids) else _id("channel", c)
            self.channel_list.append(
                {"channel_id": cid, "name": f"hostile-{c}", "status": "active", "created_at": T0 + c}
            )
            ops, events = [], []
            for i in range(self.operations_per_channel):
                created = T0 + 100 + i * 10
                op = {
                    "operation_id": _id("op", 0 if c == 1 and i < self.shared_ids else c, i),
                    "status": OPERATION_STEPS[-1],
                    "chain_selector": ETHEREUM,
                    "address": wallet_address,
                    "wallet_operation_id": str(1000 + i),
                    "deadline": 0,
                    "transactions": [{"to": "0x" + "11" * 20, "value": "0", "data": "0x"}],
                    "signature": None,
                    "created_at": created,
                    "updated_at": created + len(OPERATION_STEPS) - 1,
                }
                ops.append(op)
                for step, status in enumerate(OPERATION_STEPS):
                    events.append(
                        {
                            "event_id": _id("event", c, i, status),
                            "headers": {"type": "operation.status", "offset": len(events), "proofs": []},
                            "payload": {
                                "status": status,
                                "status_reason": "",
                                "operation_id": op["operation_id"],
                                "wallet_operation_id": op["wallet_operation_id"],
                                "address": wallet_address,
                                "chain_selector": ETHEREUM,
                                "timestamp": created + step,
                            },
                        }
                    )
            self.operations[cid] = ops
            self.events[cid] = events
            self.queries[cid] = [
                {
                    "query_id": _id("query", 0 if c == 1 and q < self.shared_ids else c, q),
                    "channel_id": cid,
                    "status": "completed",
                    "query_kind": "evm_call",
                    "chain_selector": BASE,
                    "target": "0x" + "22" * 20,
                    "created_at": T0 + 50 + q,
                    "updated_at": T0 + 60 + q,
                    "accepted_at": T0 + 50 + q,
                    "completed_at": T0 + 60 + q,
                }
                for q in range(self.queries_per_channel)
            ]

    @property
    def target(self) -> str:
        """The channel the defects hit."""
        return self.channel_list[0]["channel_id"]


class _LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 with a free port, run for a ``with`` block."""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        # shutdown() waits for the serving loop to look at its flag, which it does once per poll_interval (0.5 s by
        # default): every test closing a server waited up to half a second for nothing
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


class HostileServer(_LoopbackServer):
    """The server, in a thread on a free port of 127.0.0.1; use as a context manager."""

    def __init__(self, key: str, defects: Defects | None = None, org: Org | None = None) -> None:
        self.key = key
        self.defects = defects or Defects()
        self.org = org or Org()
        self.counts: Counter[str] = Counter()
        self.asked: Counter[tuple[str, str, str]] = Counter()  # (kind, channel, offset) of each list request
        self.trickles: Counter[str] = Counter()
        self.paths: list[str] = []  # every path asked for, as sent (percent-encoded)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._serve(_handler(self))

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        super().__exit__(*exc)

    # ---- answering --------------------------------------------------------------------------------------------

    def trickle(self, out: Any, body: bytes) -> None:
        """Send ``body`` a byte every ``trickle_interval`` s for ``trickle_seconds``, then the rest; record in
        :attr:`trickles` when one starts (``started``) and whether it ended whole (``finished``)."""
        d = self.defects
        with self._lock:
            self.trickles["started"] += 1
        ends = time.monotonic() + d.trickle_seconds
        sent = 0
        try:
            while sent < len(body) and time.monotonic() < ends and not self.stopping.is_set():
                out.write(body[sent : sent + 1])
                out.flush()
                sent += 1
                self.stopping.wait(d.trickle_interval)
            if self.stopping.is_set():
                return
            out.write(body[sent:])
            out.flush()
            with self._lock:
                self.trickles["finished"] += 1
        except OSError:  # the client gave up (closed its connection)
            with self._lock:
                self.trickles["abandoned"] += 1

    def answer(self, path: str, query: dict[str, list[str]], auth: str) -> tuple[int, str, bytes]:
        """``(status, content type, body)`` for a GET."""
        with self._lock:
            self.paths.append(path)
        parts = [unquote(p) for p in path.split("/") if p][1:]  # without "v1"; each segment decoded
        kind = parts[-1] if len(parts) in (1, 3) else parts[-2]
        params = {k: v[-1] for k, v in query.items()}
        with self._lock:
            self.counts[kind] += 1
            self.asked[(kind, parts[1] if len(parts) > 2 else "", params.get("offset", ""))] += 1
        d = self.defects
        if d.echo_key_500_html:
            page = f"<html><body><h1>502 Bad Gateway</h1><p>upstream refused {auth}</p></body></html>"
            return 500, "text/html", page.encode()
        if auth != f"Apikey {self.key}" or d.echo_key_401:
            sent = auth.removeprefix("Apikey ")
            return 401, "application/json", _dumps({"type": "UNAUTHORIZED", "message": f"API key {sent} is not valid"})
        org = self.org
        if parts == ["networks"]:
            return self._body("networks", "", 0, {"data": org.networks, "has_more": False})
        if parts == ["channels"]:
            return self._list("channels", "", org.channel_list, params, limit=20)
        if parts == ["wallets"]:
            return self._list("wallets", "", org.wallets, params, limit=50)
        if len(parts) < 3 or parts[0] != "channels" or parts[1] not in org.operations:
            return 404, "application/json", _dumps({"type": "NOT_FOUND", "message": "no such path"})
        cid = parts[1]
        if cid == org.target and parts[2] in d.channel_refused:
            status = d.channel_refused_status
            kind_of = {403: "FORBIDDEN", 404: "NOT_FOUND", 409: "CONFLICT", 410: "GONE", 451: "UNAVAILABLE"}
            message = f"channel {cid} is not available (kanał niedostępny)"  # not ASCII, as a real service may say
            body = {"type": kind_of.get(status, "ERROR"), "message": message}
            return status, "application/json", _dumps(body)
        if parts[2] == "watchers" and len(parts) == 3:
            return self._list("watchers", cid, [], params, limit=20)
        if parts[2] in ("operations", "queries"):
            items = (org.operations if parts[2] == "operations" else org.queries)[cid]
            items = self._altered(parts[2], cid, items)
            if len(parts) == 4:
                found = [x for x in items if isinstance(x, dict) and parts[3] in x.values()]
                if found and d.bad_record and cid == org.target and found[0] is items[BAD_RECORD_INDEX]:
                    return 200, "application/json", b'{"operation_id": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
                if found and d.record_body is not None and cid == org.target and found[0] is items[BAD_RECORD_INDEX]:
                    return 200, "application/json", d.record_body
                if found:
                    return 200, "application/json", _dumps(found[0])
                return 404, "application/json", _dumps({"type": "NOT_FOUND", "message": "no such record"})
            statuses = query.get("status")
            if statuses:
                items = [x for x in items if not isinstance(x, dict) or x.get("status") in statuses]
            return self._list(parts[2], cid, items, params, limit=20)
        if parts[2] == "events" and len(parts) == 3:
            return self._events(cid, params)
        return 404, "application/json", _dumps({"type": "NOT_FOUND", "message": "no such path"})

    def _altered(self, kind: str, cid: str, items: list[Any]) -> list[Any]:
        d = self.defects
        altered = d.huge_chain_selector_number or d.fractional_numbers or d.offset_step > 1 or d.deep_payload_depth
        if cid != self.org.target or not (altered or d.event_without_id):
            return items
        items = [json.loads(json.dumps(x)) for x in items]
        if kind == "events" and d.offset_step > 1:
            for i, event in enumerate(items):
                event["headers"]["offset"] = i * d.offset_step
        if kind == "operations" and d.huge_chain_selector_number:
            items[0]["chain_selector"] = 2**64
        if kind == "operations" and d.fractional_numbers:
            items[0]["created_at"] = T0 + 100.5
        if kind == "events" and d.huge_chain_selector_number:
            for event in items[: len(OPERATION_STEPS)]:
                event["payload"]["chain_selector"] = 2**64
        if kind == "events" and d.deep_payload_depth:
            items[DEEP_EVENT_OFFSET]["payload"]["nested"] = _DEEP_MARK
        if kind == "events" and d.event_without_id:
            del items[DEEP_EVENT_OFFSET]["event_id"]
        if kind == "events" and d.fractional_numbers:
            items[5]["payload"]["timestamp"] += 0.5
            items[7]["headers"]["offset"] = 7.5
        return items

    def _list(
        self, kind: str, cid: str, items: list[Any], params: dict[str, str], *, limit: int
    ) -> tuple[int, str, bytes]:
        limit = int(params.get("limit", limit))
        offset = int(params.get("offset", 0))
        page = items[offset : offset + limit]
        has_more = offset + limit < len(items)
        if kind in self.defects.has_more_forever:
            has_more = True
            page = page or items[:limit]
        page = list(page)
        if self.defects.non_object_item and cid == self.org.target and kind == "operations" and offset == 0:
            page.insert(3, 42)
        return self._body(kind, cid, offset, {"data": page, "has_more": has_more})

    def _events(self, cid: str, params: dict[str, str]) -> tuple[int, str, bytes]:
        events = self._altered("events", cid, self.org.events[cid])
        limit = int(params.get("limit", 200))
        if "offset" not in params:  # newest first
            return 200, "application/json", _dumps({"events": events[::-1][:limit], "has_more": len(events) > limit})
        offset = int(params["offset"])
        step = self.defects.offset_step if cid == self.org.target else 1
        first = -(-offset // step)  # the first event at or after the offset asked for
        page = events[first : first + limit]
        has_more = first + limit < len(events)
        d = self.defects
        if "events" in d.has_more_forever:
            has_more = True
            page = page or events[:limit]
        if d.offsets_backwards and cid == self.org.target and offset >= 400:
            page, has_more = events[:200], True
        page = list(page)
        if d.non_object_item and cid == self.org.target and offset == 0:
            page.insert(5, "oops")
        return self._body("events", cid, offset, {"events": page, "has_more": has_more})

    def _body(self, kind: str, cid: str, offset: int, envelope: dict[str, Any]) -> tuple[int, str, bytes]:
        d = self.defects
        bad_at = {"events": BAD_EVENT_OFFSET, "operations": BAD_OPERATIONS_OFFSET}.get(d.bad_page_kind, 0)
        bad = cid == (self.org.target if kind not in ("channels", "networks") else "") and kind == d.bad_page_kind
        bad = bad and offset == bad_at
        items = envelope.get("data", envelope.get("events"))
        if bad and items and (d.invalid_utf8_page or d.deep_nesting_page):
            first = items[0] = json.loads(json.dumps(items[0]))
            (first.get("payload", first))["note"] = _MARK
        body = _dumps(envelope)
        if d.repeated_payload_names and kind == "events" and cid == self.org.target and offset == 0:
            status = self.org.events[cid][0]["payload"]["status"]
            sent = f'"payload": {{"status": "{status}"'.encode()
            body = body.replace(
                sent,
                f'"payload": {{"status": "{REPEATED_FIRST}", "operation_status_workflow_id": "first", '
                f'"status": "{status}", "operation_status_workflow_id": "last"'.encode(),
                1,
            )
        if d.repeated_record_name and kind == "operations" and cid == self.org.target and offset == 0:
            status = json.dumps(envelope["data"][0]["status"])
            real = f'"status": {status}'.encode()
            body = body.replace(real, f'"status": "{REPEATED_FIRST}", '.encode() + real, 1)
        if d.repeated_nested_record_name and kind == "operations" and cid == self.org.target and offset == 0:
            body = body.replace(b'"transactions": [{', b'"transactions": [{"value": "7", ', 1)
        if d.deep_payload_depth and kind == "events" and cid == self.org.target:
            depth = d.deep_payload_depth
            body = body.replace(json.dumps(_DEEP_MARK).encode(), b"[" * depth + b"]" * depth)
        if bad and d.invalid_utf8_page:
            body = body.replace(json.dumps(_MARK).encode(), b'"\xff\xfe not UTF-8"')
        if bad and d.deep_nesting_page:
            body = body.replace(json.dumps(_MARK).encode(), b"[" * 10_000 + b"]" * 10_000)
        if bad and d.truncated_page:
            body = body[: len(body) // 2]
        if bad and d.cut_connection_page:
            body = CutBody(body)
        if bad and d.trickle_page:
            body = TrickleBody(body)
        if bad and d.gzip_bomb_page:
            body = GzipBody(_gzip_bomb(body, d.bomb_bytes))
        return 200, "application/json", body


class CutBody(bytes):
    """A body whose full length is announced but of which only half is sent before the connection is closed."""


class TrickleBody(bytes):
    """A body whose full length is announced and which is sent a byte at a time (see ``Defects.trickle_page``)."""


class GzipBody(bytes):
    """A body sent with ``Content-Encoding: gzip``."""


@functools.lru_cache(maxsize=4)
def _gzip_bomb(body: bytes, size: int) -> bytes:
    """``body`` after ``size`` bytes of spaces (valid JSON whitespace), gzipped: about 1 KB per MB. Built from one
    compressed megabyte repeated (each ends in a full flush, so every copy is the same bytes), in well under a second
    for a gigabyte."""
    block = b" " * 2**20
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # raw deflate: the gzip frame is written here
    one = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    copies = size // len(block)
    crc = 0
    for _ in range(copies):
        crc = zlib.crc32(block, crc)
    tail = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    last = tail.compress(body) + tail.flush()
    crc = zlib.crc32(body, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc, (copies * len(block) + len(body)) % 2**32)
    return header + one * copies + last + trailer


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


def _handler(server: HostileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms delayed-ACK stall between

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            status, content_type, body = server.answer(
                url.path, parse_qs(url.query), self.headers.get("Authorization", "")
            )
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if isinstance(body, GzipBody):
                self.send_header("Content-Encoding", "gzip")
            self.end_headers()
            if isinstance(body, TrickleBody):
                server.trickle(self.wfile, body)
                return
            if isinstance(body, CutBody):
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


#: What a scripted handler answers: ``(status, headers, body)``.
Answer = tuple[int, dict[str, str], bytes]


class ScriptedServer(_LoopbackServer):
    """A server over real HTTP on 127.0.0.1 whose every GET is answered by ``script(path, query)`` (a test's own
    function: any status, headers and body, and it may block, for a slow answer). Use as a context manager;
    :attr:`paths` lists what was asked, in order."""

    def __init__(self, script: Any) -> None:
        self.script = script
        self.paths: list[str] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as above

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                with outer._lock:
                    outer.paths.append(self.path)
                status, headers, body = outer.script(url.path, parse_qs(url.query))
                try:
                    self.send_response(status)
                    for name, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the client gave up on this answer (closed its connection)
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._serve(Handler)
