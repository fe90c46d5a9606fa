"""A latency proxy: an HTTP/1.1 proxy on 127.0.0.1 that holds every request ``delay`` seconds before passing it on
to the service behind it (the sandbox), as a wide-area link would, and counts the requests in flight.

A request is in flight from the moment its head has arrived until its answer has been sent back whole; the proxy
records the most there ever were at once (:attr:`LatencyProxy.max_in_flight`). :meth:`LatencyProxy.hold_after` holds
every request after the next ``n`` until :meth:`LatencyProxy.release`: a test kills or signals its client at a chosen
request, whatever the machine's speed. Each connection from the client gets
its own keep-alive connection to the service, so the proxy adds no queueing of its own. Plain asyncio sockets: the
proxy parses only the heads (``Content-Length`` and chunked bodies are relayed as they are), so it costs little CPU
beside the client and the service. Used by ``tests/integration/test_parallel_sync.py`` and
``benchmarks/latency_bench.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from urllib.parse import urlsplit


class LatencyProxy:
    """Serve on 127.0.0.1 (a free port) in a daemon thread; use as a context manager.

    ``base_url`` is the service's base URL with the proxy's host and port (its path, such as ``/v1``, kept).
    """

    def __init__(self, upstream_base_url: str, delay: float) -> None:
        parts = urlsplit(upstream_base_url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.path = parts.path
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests = 0
        #: Every request: (arrived, answered, HTTP status), monotonic seconds.
        self.log: list[tuple[float, float, int]] = []
        self.port = 0
        #: Set when a request arrives that :meth:`hold_after` holds.
        self.held = threading.Event()
        self._hold_from: int | None = None
        self._hold_matching = b""
        #: Requests whose request line held what :meth:`hold_after` last matched on (all of them when it matched "").
        self.matched = 0
        self._released: asyncio.Event | None = None
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)

    @property
    def base_url(self) -> str:
        """The URL to give the client instead of the service's."""
        return f"http://127.0.0.1:{self.port}{self.path}"

    def reset(self, matching: str = "") -> None:
        """Start counting afresh (requests, those whose request line contains ``matching``, the most in flight)."""
        with self._lock:
            self.requests = self.matched = 0
            self._hold_matching = matching.encode()
            self.log = []
            self.max_in_flight = self.in_flight

    def hold_after(self, n: int, matching: str = "") -> None:
        """Pass the next ``n`` requests whose request line contains ``matching`` (and any other) on, and hold every
        matching one after them (unanswered, :attr:`held` set) until :meth:`release`."""
        assert self._loop is not None, "the proxy is not running"

        async def arm() -> None:
            self._released = asyncio.Event()

        asyncio.run_coroutine_threadsafe(arm(), self._loop).result(10)
        with self._lock:
            self._hold_matching = matching.encode()
            self.matched = 0
            self._hold_from = n
            self.held.clear()

    def release(self) -> None:
        """Pass the held requests on (a client killed meanwhile gets no answer) and hold no more."""
        with self._lock:
            self._hold_from = None
        released = self._released
        if released is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(released.set)

    def __enter__(self) -> LatencyProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the latency proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    # ---- the event loop, in its thread ----------------------------------------------------------------------

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        self._server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=256))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            with contextlib.suppress(Exception):  # connections still open when the proxy stops: dropped quietly
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.close()

    def _enter(self, head: bytes) -> asyncio.Event | None:
        """Count a request in; the event to wait for when it is held."""
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self._hold_matching not in head.split(b"\r\n", 1)[0]:
                return None
            self.matched += 1
            if self._hold_from is None or self.matched <= self._hold_from:
                return None
            self.held.set()
            return self._released

    def _leave(self, arrived: float, status: int) -> None:
        with self._lock:
            self.in_flight -= 1
            self.log.append((arrived, time.monotonic(), status))

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                try:
                    head = await client_r.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
                    return
                body = await _read_body(client_r, head, request=True)
                hold = self._enter(head)
                arrived, status = time.monotonic(), 0
                try:
                    if hold is not None:
                        await hold.wait()
                    await asyncio.sleep(self.delay)
                    if upstream is None:
                        upstream = await asyncio.open_connection(*self.upstream)
                    up_r, up_w = upstream
                    up_w.write(head + body)
                    await up_w.drain()
                    answer = await up_r.readuntil(b"\r\n\r\n")
                    status = int(answer.split(b" ", 2)[1])
                    answer += await _read_body(up_r, answer, request=False)
                    client_w.write(answer)
                    await client_w.drain()
                finally:
                    self._leave(arrived, status)
                if _closes(head) or _closes(answer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            return
        finally:
            for writer in (client_w, upstream[1] if upstream else None):
                if writer is not None:
                    writer.close()


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def _closes(head: bytes) -> bool:
    return (_header(head, b"connection") or b"").lower() == b"close"


async def _read_body(reader: asyncio.StreamReader, head: bytes, *, request: bool) -> bytes:
    """The body after ``head``, as it came: ``Content-Length`` bytes, a chunked body whole, or (an answer without
    either) everything until the connection closes."""
    length = _header(head, b"content-length")
    if length is not None:
        return await reader.readexactly(int(length))
    if (_header(head, b"transfer-encoding") or b"").lower() == b"chunked":
        out = bytearray()
        while True:
            size_line = await reader.readuntil(b"\r\n")
            out += size_line
            if int(size_line.split(b";")[0].strip(), 16) == 0:
                while (line := await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers, then the empty line
                    out += line
                return bytes(out + line)
            out += await reader.readexactly(int(size_line.split(b";")[0].strip(), 16) + 2)
    if request or head.split(b" ", 2)[1:2] in ([b"204"], [b"304"]):
        return b""
    return await reader.read()


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.support.latency_proxy UPSTREAM_BASE_URL DELAY_MS``: serve in this process (so the proxy's
    CPU is not the client's) and print ``serving on URL``; then on standard input, ``stats`` prints ``{"requests": n,
    "max_in_flight": m}`` and ``reset`` starts counting afresh; end of input stops it."""
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(description="an HTTP proxy on 127.0.0.1 adding a delay to every request")
    parser.add_argument("upstream", help="the service's base URL, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("delay_ms", type=float, help="milliseconds added to every request")
    args = parser.parse_args(argv)
    with LatencyProxy(args.upstream, args.delay_ms / 1000) as proxy:
        print(f"serving on {proxy.base_url}", flush=True)
        for line in sys.stdin:
            if line.strip() == "reset":
                proxy.reset()
                print("ok", flush=True)
            elif line.strip() == "stats":
                print(json.dumps({"requests": proxy.requests, "max_in_flight": proxy.max_in_flight}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
