"""One HTTP exchange under a whole-request deadline and a cap on the decoded body, stoppable at once.

httpx's timeouts bound each socket read, not the exchange: a body trickling one byte every two seconds never trips a
30 s read timeout and can hold a request for hours. And a thread blocked in a socket read does not see a deferred
stop (SIGTERM, Ctrl-C; see :mod:`toolkit.signals`) until the read returns. So each exchange runs on a daemon thread
of its own, reading the body chunk by chunk and counting its decoded bytes, while the calling thread waits in short
steps and looks at the deadline and for a stop request between them. When either comes first the caller gives up at
once: the exchange is told to stop, its socket is shut down when the answer has begun (which ends a blocked read
there and then), and the thread, a daemon, never holds up the caller or the end of the process.

The threads are kept once their exchange ends (a few, :data:`IDLE_THREADS`) and the next exchange runs on one of
them: a new thread for each of the 1,305 requests of ``benchmarks.cpu_bench``'s sync (200,000 events) made them cost
1.08–1.14 CPU-s where kept threads cost 0.62–0.70 and bare httpx 0.51–0.70, and the caller waited for each new
thread to be scheduled. A thread whose exchange was abandoned is busy until that exchange returns; the next exchange
takes another.

A body whose decoded size passes the cap (a gzip bomb, an endless chunked body) is refused as a malformed answer
when it passes it, so memory stays bounded by the cap whatever the service sends.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import threading
import time
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from ..signals import check_stop

#: Seconds the calling thread waits before it looks at the deadline and for a stop request again.
POLL_SECONDS = 0.1
#: The most bytes one step of gzip or deflate decoding makes.
DECODE_STEP = 2**20
#: Threads kept waiting for the next exchange once theirs has ended (more, when exchanges overlap, end with them).
IDLE_THREADS = 4


class TooLarge(Exception):
    """The answer's decoded body is larger than the cap."""

    def __init__(self, size: int, cap: int) -> None:
        self.size = size
        self.cap = cap
        super().__init__(f"the answer is larger than {cap:,} bytes decoded (at least {size:,}), the most a page may be")


class DeadlinePassed(Exception):
    """The exchange did not end before its deadline; ``begun`` says whether the answer had begun (its status and
    headers had arrived, the body was coming too slowly)."""

    def __init__(self, begun: bool = False) -> None:
        self.begun = begun
        super().__init__("the answer " + ("came too slowly" if begun else "did not begin") + " before the deadline")


class Exchange:
    """One request and its whole answer, run on a daemon thread (see the module docstring)."""

    def __init__(self, http: httpx.Client, request: httpx.Request, *, max_bytes: int) -> None:
        self._http = http
        self._request = request
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._stream: Any = None  # the answer's network stream, once its headers have arrived
        self._released = False
        self.cancelled = threading.Event()
        self.done = threading.Event()
        self.begun = False
        self.response: httpx.Response | None = None
        self.content = b""
        self.error: BaseException | None = None

    def run(self) -> None:
        """(On the exchange's thread.) Send the request and read the whole answer, or record why not; then set
        :attr:`done`."""
        try:
            self.send_and_read()
        finally:
            self.done.set()

    def send_and_read(self) -> None:
        """:meth:`run` without setting :attr:`done` (whoever calls it sets it)."""
        try:
            response = self._http.send(self._request, stream=True)
            try:
                with self._lock:
                    self.begun = True
                    self._stream = response.extensions.get("network_stream")
                    if self.cancelled.is_set():
                        return
                self.content = self._read(response)
                self.response = response
            finally:
                with self._lock:
                    self._released = True
                response.close()
        except BaseException as exc:  # handed to the caller (or dropped, when it has given up)
            self.error = exc

    def _read(self, response: httpx.Response) -> bytes:
        declared = response.headers.get("Content-Length", "")
        encoding = response.headers.get("Content-Encoding", "").strip().lower()
        if declared.isdigit() and int(declared) > self._max_bytes and encoding in ("", "identity"):
            raise TooLarge(int(declared), self._max_bytes)
        body = bytearray()
        chunks, chunk = self._decoded(response, encoding), b""
        try:
            for chunk in chunks:
                if self.cancelled.is_set():
                    raise DeadlinePassed()
                if len(body) + len(chunk) > self._max_bytes:
                    raise TooLarge(len(body) + len(chunk), self._max_bytes)
                body += chunk
            return bytes(body)
        except BaseException:
            # the traceback keeps this frame, and with it ``body`` (up to the cap) and the decoder's last step (1 MiB):
            # let them go now, not whenever the traceback does
            del body, chunk
            chunks.close()
            raise

    @staticmethod
    def _decoded(response: httpx.Response, encoding: str) -> Iterator[bytes]:
        """The body decoded, in pieces of at most :data:`DECODE_STEP` bytes for gzip and deflate (a 64 KB chunk of a
        gzip bomb expands to 64 MB at once otherwise); other encodings as httpx decodes them."""
        if encoding not in ("gzip", "x-gzip", "deflate"):
            yield from response.iter_bytes()
            return
        # gzip, or deflate as zlib (or gzip) framing; raw deflate is tried when that framing is not there
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding != "deflate" else 32 + zlib.MAX_WBITS)
        first = True
        for raw in response.iter_raw():
            data = raw
            while data:
                try:
                    out = decoder.decompress(data, DECODE_STEP)
                except zlib.error as exc:
                    if not (first and encoding == "deflate"):
                        raise httpx.DecodingError(f"the {encoding} body cannot be decoded ({exc})") from None
                    decoder, first = zlib.decompressobj(-zlib.MAX_WBITS), False
                    continue
                first = False
                yield out
                data = decoder.unconsumed_tail
        if not decoder.eof and encoding != "deflate":
            raise httpx.DecodingError(f"the {encoding} body ends part-way")

    def cancel(self) -> None:
        """Tell the exchange to stop; shut its socket down if its answer has begun and is still being read (a read
        blocked on it then returns at once)."""
        self.cancelled.set()
        with self._lock:
            if self._stream is None or self._released:
                return
            sock = self._stream.get_extra_info("socket")
            if isinstance(sock, socket.socket):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class _Threads:
    """The daemon threads exchanges run on: an exchange runs on an idle one, or on a new one when none is idle;
    once it ends, its thread waits for the next exchange, unless :data:`IDLE_THREADS` already wait."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Exchange] = queue.SimpleQueue()
        self._idle = 0

    def forget(self) -> None:
        """(In a forked child, which has none of the parent's threads.) No thread is idle."""
        self._lock = threading.Lock()
        self._jobs = queue.SimpleQueue()
        self._idle = 0

    def start(self, job: Exchange) -> None:
        """Run ``job`` on a thread of its own (not waited for)."""
        with self._lock:
            if self._idle:
                self._idle -= 1
                self._jobs.put(job)  # exactly one idle thread is waiting for it
                return
        threading.Thread(target=self._serve, args=(job,), name="chainops-request", daemon=True).start()

    def _serve(self, job: Exchange) -> None:
        while True:
            keep = False
            try:
                job.send_and_read()
            finally:
                with self._lock:  # idle before the caller hears: its next exchange finds this thread
                    keep = self._idle < IDLE_THREADS
                    self._idle += keep
                job.done.set()
            del job  # a waiting thread holds no answer
            if not keep:
                return
            job = self._jobs.get()


_THREADS = _Threads()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_THREADS.forget)


def exchange(
    http: httpx.Client,
    method: str,
    path: str,
    *,
    params: Mapping[str, Any] | None,
    json_body: Any,
    deadline: float,
    max_bytes: int,
    inline: bool = False,
) -> tuple[httpx.Response, bytes]:
    """Send one request and read its whole answer before ``deadline`` (a :func:`time.monotonic` time); return the
    response (headers, status; its stream closed) and its decoded body.

    Raises :class:`DeadlinePassed` when the deadline comes first, :class:`TooLarge` when the decoded body passes
    ``max_bytes``, whatever httpx raised for the exchange, and the deferred stop (:func:`~toolkit.signals.check_stop`)
    as soon as one is asked for. In every case but success the exchange is abandoned, its connection closed.

    The exchange runs on a thread of :class:`_Threads`. ``inline`` is for a transport that answers at once in the
    calling thread, with no socket to wait on (the sandbox's in-process transport): the exchange runs there, without
    a thread (which costs more than such an answer: thread start and hand-over were ~40% of the CPU of a run of
    in-process requests)."""
    request = http.build_request(method, path, params=params, json=json_body)
    job = Exchange(http, request, max_bytes=max_bytes)
    if inline:
        job.run()
    else:
        _THREADS.start(job)
        try:
            while not job.done.wait(max(0.0, min(POLL_SECONDS, deadline - time.monotonic()))):
                check_stop()
                if time.monotonic() >= deadline:
                    raise DeadlinePassed(job.begun)
        except BaseException:
            job.cancel()
            raise
    if job.error is not None:
        # the error's traceback holds the exchange's frame, which holds ``job``: dropped from ``job``, so no cycle
        # keeps the answer's memory alive until the garbage collector happens to run
        error, job.error = job.error, None
        raise error
    assert job.response is not None
    return job.response, job.content


__all__ = ["DeadlinePassed", "Exchange", "TooLarge", "exchange"]
