"""Record every answer a sync reads, then serve those answers again from memory, pre-serialised, at once.

- :class:`RecordingTransport`: an httpx transport that passes each request on and appends ``(method and target,
  status, body)`` to a file, in the order the requests were made.
- ``python -m benchmarks.replay FILE``: a minimal HTTP/1.1 server on 127.0.0.1 (plain asyncio, keep-alive) that
  answers each recorded request, keyed by method, path and query, with the recorded bytes. It prints
  ``serving on http://127.0.0.1:PORT/v1``; a line ``stats`` on its standard input answers one JSON line
  ``{"requests": N, "misses": [...]}``. A request the recording lacks gets ``418`` with a body naming it, and is
  listed among the misses, so a benchmark whose sync asks for something else fails loudly instead of timing it.

Used by ``benchmarks/cpu_bench.py``: with the service's CPU out of the way, the sync has nearly both cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import httpx

_HEAD = struct.Struct("<IHQ")  # key length, status, body length
_REASONS = {200: b"OK", 404: b"Not Found", 418: b"Not Recorded"}


def write_record(out: BinaryIO, key: bytes, status: int, body: bytes) -> None:
    """Append one answer to a recording."""
    out.write(_HEAD.pack(len(key), status, len(body)))
    out.write(key)
    out.write(body)


def read_records(path: Path) -> Iterator[tuple[bytes, int, bytes]]:
    """Every ``(key, status, body)`` of a recording, in the order the requests were made."""
    with path.open("rb") as f:
        while head := f.read(_HEAD.size):
            key_len, status, body_len = _HEAD.unpack(head)
            yield f.read(key_len), status, f.read(body_len)


def request_key(method: str, target: bytes) -> bytes:
    """What a recorded answer is found by: ``b"GET /v1/path?query"``."""
    return method.encode() + b" " + target


class RecordingTransport(httpx.HTTPTransport):
    """An httpx transport that appends every answer (read whole) to ``path``."""

    def __init__(self, path: Path, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._out = path.open("ab")
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Pass the request on, record its answer, hand the answer back."""
        response = super().handle_request(request)
        body = response.read()
        with self._lock:
            write_record(self._out, request_key(request.method, request.url.raw_path), response.status_code, body)
        return response

    def close(self) -> None:
        """Close the recording and the connections."""
        with self._lock:
            self._out.close()
        super().close()


class ReplayServer:
    """The recorded answers, served by asyncio on 127.0.0.1 (a free port) until the loop stops."""

    def __init__(self, path: Path) -> None:
        self.answers: dict[bytes, tuple[bytes, bytes]] = {}
        for key, status, body in read_records(path):
            reason = _REASONS.get(status, b"Recorded")
            head = b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (
                status,
                reason,
                len(body),
            )
            self.answers.setdefault(key, (head, body))  # the service is frozen (--speed 0): a repeat is the same
        self.requests = 0
        self.misses: list[str] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer one connection's requests, in order, until it closes."""
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, target, _ = head.split(b" ", 2)
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if length:
                    await reader.readexactly(length)
                self.requests += 1
                answer = self.answers.get(method + b" " + target)
                if answer is None:
                    self.misses.append((method + b" " + target).decode(errors="replace"))
                    body = json.dumps({"type": "NOT_RECORDED", "message": f"not recorded: {target!r}"}).encode()
                    answer = (
                        b"HTTP/1.1 418 Not Recorded\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                        % len(body),
                        body,
                    )
                writer.writelines(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            return
        finally:
            writer.close()


async def _main(path: Path) -> None:
    replay = ReplayServer(path)
    server = await asyncio.start_server(replay.serve, "127.0.0.1", 0, backlog=256, limit=2**20)
    port = server.sockets[0].getsockname()[1]
    print(f"serving on http://127.0.0.1:{port}/v1", flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        if line.strip() == "stats":
            print(json.dumps({"requests": replay.requests, "misses": replay.misses[:20]}), flush=True)
        elif line.strip() == "reset":
            replay.requests, replay.misses = 0, []
            print("{}", flush=True)
    server.close()
    with contextlib.suppress(Exception):
        await server.wait_closed()


if __name__ == "__main__":
    asyncio.run(_main(Path(sys.argv[1])))
