"""Serving the sandbox over HTTP with uvicorn: in a daemon thread (:func:`start_server`) or blocking
(:func:`run_server`). Only loopback addresses are accepted."""

from __future__ import annotations

import http.client
import socket
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

import uvicorn

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class ServerHandle:
    """A running server: ``base_url``, ``stop()``, and a context manager that stops on exit."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, host: str, port: int) -> None:
        self._server = server
        self._thread = thread
        self.host = host
        self.port = port

    def __repr__(self) -> str:
        return f"<ServerHandle {self.base_url}>"

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        """Whether the server thread is alive."""
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit, force it if it has not within half of ``timeout``, and wait for its thread."""
        self._server.should_exit = True
        self._thread.join(timeout / 2)
        if self._thread.is_alive():  # still waiting on a connection or task: stop without waiting for it
            self._server.force_exit = True
            self._thread.join(timeout / 2)

    def wait(self) -> None:
        """Block until the server stops."""
        while self._thread.is_alive():
            self._thread.join(0.5)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _answers(host: str, port: int) -> bool:
    try:
        conn = http.client.HTTPConnection(host, port, timeout=1.0)
        conn.request("GET", "/v1/health-check")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


def start_server(app: Any, host: str = "127.0.0.1", port: int = 0, timeout: float = 15.0) -> ServerHandle:
    """Run ``app`` with uvicorn on ``host:port`` (0 = a free port) in a daemon thread; return once it answers."""
    if host not in LOOPBACK:
        raise ValueError("the sandbox binds to loopback addresses only (127.0.0.1)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted sockets inherit it: no 40 ms stalls
    sock.bind((host, port))
    sock.listen(128)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="error",
        access_log=False,
        lifespan="on",
        http="h11",
        loop="asyncio",
        ws="none",
        timeout_keep_alive=30,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="sandbox-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.started and _answers(host, port):
            return ServerHandle(server, thread, host, port)
        if not thread.is_alive():
            break
        time.sleep(0.02)
    server.should_exit = True
    raise RuntimeError("sandbox server did not start")


def run_server(
    host: str = "127.0.0.1",
    port: int = 8080,
    orgs: Iterable[str] = ("sandbox-key",),
    not_onboarded: Iterable[str] = (),
    seed: int = 7,
    days: float = 3,
    empty: bool = False,
    speed: float = 0.0,
    fail_rate: float = 0.0,
    rate_limit: float | None = None,
    rate_limit_retry_after: float | None = None,
    operations_per_day: float = 400,
    start: int | None = None,
    slow_rate: float = 0.0,
    slow_seconds: float = 5.0,
    truncate_rate: float = 0.0,
    drop_rate: float = 0.0,
    malformed_rate: float = 0.0,
    shape: str = "default",
    forge_share: float = 0.0,
) -> None:
    """Build a :class:`Sandbox`, serve it, print ``serving on http://HOST:PORT/v1`` once it answers (then the DON
    signer addresses and each organisation's id and workflow owner, one a line: what ``chainops verify`` needs),
    and block
    until Ctrl-C (which stops it cleanly)."""
    from toolkit.sandbox.sandbox import Sandbox

    sandbox = Sandbox(
        orgs=tuple(orgs),
        not_onboarded=tuple(not_onboarded),
        seed=seed,
        days=days,
        operations_per_day=operations_per_day,
        empty=empty,
        speed=speed,
        start=start,
        fail_rate=fail_rate,
        rate_limit=rate_limit,
        rate_limit_retry_after=rate_limit_retry_after,
        slow_rate=slow_rate,
        slow_seconds=slow_seconds,
        truncate_rate=truncate_rate,
        drop_rate=drop_rate,
        malformed_rate=malformed_rate,
        shape=shape,
        forge_share=forge_share,
    )
    handle = start_server(sandbox.app, host, port)
    print(f"serving on http://{host}:{handle.port}/v1", flush=True)
    # one value a line, each under 80 columns: the signers' list joined was 430 characters on one line
    print("DON signers (4 of these 10 sign each report), for `chainops verify --signers`:", flush=True)
    print("\n".join(f"  {address}" for address in sandbox.signers), flush=True)
    for index, key in enumerate(dict.fromkeys(orgs), 1):
        info = sandbox.signer_info(key)
        print(f"organisation {index}: org id {info['org_id']}", flush=True)
        print(f"  workflow owner {info['workflow_owner']}", flush=True)
    if forge_share:
        print(f"forging {forge_share:.1%} of proofs (--forge-share)", flush=True)
    try:
        handle.wait()
    except KeyboardInterrupt:
        pass
    finally:
        handle.stop()
        sys.stdout.flush()
