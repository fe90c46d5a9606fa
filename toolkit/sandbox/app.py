"""The raw ASGI app: routing, authentication, fault injection and the /sandbox control API. No framework."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolkit.sandbox import openapi, router
from toolkit.sandbox.apierror import ApiError, validation
from toolkit.sandbox.backend import Backend
from toolkit.sandbox.don import committee, signer_info
from toolkit.sandbox.faults import Fault, FaultInjector
from toolkit.sandbox.messages import Request, Response, error_response, json_response
from toolkit.sandbox.params import check_query
from toolkit.sandbox.schemas import QUERY_PARAMS
from toolkit.spec import ErrorType

if TYPE_CHECKING:
    from toolkit.sandbox.sandbox import Sandbox

Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
HEALTH = Response(200, b'{"status":"ok"}')
#: Paths under /v1 served without authentication, and the methods each answers.
PUBLIC = {"/v1/health-check": ("GET", "HEAD"), "/v1/openapi.json": ("GET", "HEAD")}
log = logging.getLogger("toolkit.sandbox")


class _Drop(Exception):
    """Raised where no transport is reachable, to make the server close the connection."""


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, ErrorType.VALIDATION_ERROR, message)


class SandboxApp:
    """ASGI 3 application serving ``/v1`` and ``/sandbox`` for one :class:`Sandbox`."""

    def __init__(self, sandbox: Sandbox, faults: FaultInjector) -> None:
        self.sandbox = sandbox
        self.faults = faults

    def __repr__(self) -> str:
        return "<SandboxApp>"

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        """ASGI entry point."""
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        body = await _read_body(receive)
        req = Request.from_scope(scope, body)
        if req.path.startswith("/v1/") and PUBLIC.get(req.path.rstrip("/")) is None:
            await self._serve_v1(req, send)
        else:
            await _send(send, self.answer(req))

    def answer(self, req: Request) -> Response:
        """Answer one request synchronously as served, fault injection aside (the public paths, ``/v1``,
        ``/sandbox``): the in-process transport's entry (:mod:`toolkit.sandbox.inprocess`)."""
        public = PUBLIC.get(req.path.rstrip("/"))
        return _public(req, public) if public is not None else self.handle(req)

    async def _serve_v1(self, req: Request, send: Send) -> None:
        fault = self.faults.pick(req.headers.get("authorization"))
        if fault is Fault.DROP:
            await _drop(send)
            return
        if fault is Fault.RATE_LIMIT:
            wait = self.faults.config.retry_after
            # delay-seconds is a whole number (RFC 9110 10.2.3): a fraction is rounded up
            headers = ((b"retry-after", str(math.ceil(wait)).encode()),) if wait is not None else ()
            err = ApiError(429, ErrorType.VALIDATION_ERROR, "rate limit exceeded", headers=headers)
            await _send(send, error_response(err))
            return
        if fault is Fault.FAIL:
            await _send(send, error_response(ApiError(500, ErrorType.INTERNAL_ERROR, "internal error")))
            return
        response = self.handle(req)
        if fault is Fault.SLOW:
            await asyncio.sleep(self.faults.config.slow_seconds)
        elif fault is Fault.MALFORMED:
            response = Response(200, b'{"data":[{"unterminated": tru')
        elif fault is Fault.TRUNCATE:
            await _truncate(send, response, self.faults.truncate_at(len(response.body)))
            return
        await _send(send, response)

    def handle(self, req: Request) -> Response:
        """Answer one request synchronously (auth, clock sync, dispatch); errors become ApplicationError bodies."""
        try:
            return self._dispatch(req)
        except ApiError as err:
            return error_response(err)
        except Exception:  # a sandbox bug: answer like the service would, keep the traceback in the log
            log.exception("sandbox failed on %s %s", req.method, req.path)
            return error_response(ApiError(500, ErrorType.INTERNAL_ERROR, "internal error"))

    def _dispatch(self, req: Request) -> Response:
        path = req.path
        if path.startswith("/sandbox/"):
            return self._control(req, path[len("/sandbox/") :].rstrip("/"))
        if not path.startswith("/v1/"):
            raise ApiError(404, ErrorType.NOT_FOUND, "no such endpoint")
        found = router.resolve(path[3:])
        if found is None:
            raise ApiError(404, ErrorType.NOT_FOUND, "no such endpoint")
        pattern, methods, args = found
        handler = methods.get(req.method)
        if handler is None:
            raise _not_allowed(req.method, router.allow(methods))
        with self.sandbox.lock:
            backend = self._authenticate(req)
            check_query(QUERY_PARAMS.get((req.method, pattern), ()), req.query)
            self.sandbox.sync()
            return handler(backend, req, *args)

    def _authenticate(self, req: Request) -> Backend:
        header = req.headers.get("authorization")
        if header is None:
            raise _unauthorized("missing Authorization header")
        scheme, _, key = header.strip().partition(" ")
        key = key.strip()
        if scheme.lower() != "apikey" or not key or " " in key:
            raise _unauthorized("malformed Authorization header; expected 'Apikey <API_KEY>'")
        backend = self.sandbox.backend_for(key)
        if backend is not None:
            return backend
        if self.sandbox.is_not_onboarded(key):
            raise ApiError(401, ErrorType.ORGANIZATION_NOT_FOUND, "organization is not onboarded")
        raise _unauthorized("invalid API key")

    def _control(self, req: Request, route: str) -> Response:
        with self.sandbox.lock:
            backend = self._authenticate(req)
            if route == "signers" and req.method == "GET":
                info = signer_info(backend.org.org_id, backend.org.owner, committee(self.sandbox.seed).addresses)
                return json_response(info)
            if route == "clock" and req.method == "GET":
                return json_response({"now": self.sandbox.sync()})
            if route == "clock/advance" and req.method == "POST":
                seconds = _advance_seconds(req.body)
                return json_response({"now": self.sandbox.advance(seconds)})
        raise ApiError(404, ErrorType.NOT_FOUND, "no such sandbox endpoint")


def _not_allowed(method: str, allowed: str) -> ApiError:
    """405 with the ``Allow`` header (RFC 9110)."""
    headers = ((b"allow", allowed.encode()),)
    return ApiError(405, ErrorType.VALIDATION_ERROR, f"method {method} not allowed here", headers=headers)


def _public(req: Request, methods: tuple[str, ...]) -> Response:
    """The health check and the OpenAPI description: no key, no faults."""
    if req.method not in methods:
        return error_response(_not_allowed(req.method, ", ".join(methods)))
    if req.path.rstrip("/") == "/v1/openapi.json":
        return Response(200, openapi.document_bytes())
    return HEALTH


def _advance_seconds(body: bytes) -> int:
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        raise validation("body must be JSON") from None
    seconds = data.get("seconds") if isinstance(data, dict) else None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < math.inf:
        raise validation("seconds must be a non-negative number")
    return int(seconds)


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def _send(send: Send, response: Response) -> None:
    await send({"type": "http.response.start", "status": response.status, "headers": response.raw_headers()})
    await send({"type": "http.response.body", "body": response.body})


def _transport(send: Send) -> Any:
    """The connection's transport, reached through uvicorn's bound ``send`` (None elsewhere)."""
    return getattr(getattr(send, "__self__", None), "transport", None)


async def _drop(send: Send) -> None:
    transport = _transport(send)
    if transport is None:
        raise _Drop("connection dropped by fault injection")
    transport.abort()
    for _ in range(3):  # let the server see the disconnect before the app returns
        await asyncio.sleep(0)


async def _truncate(send: Send, response: Response, keep: int) -> None:
    await send({"type": "http.response.start", "status": response.status, "headers": response.raw_headers()})
    await send({"type": "http.response.body", "body": response.body[:keep], "more_body": True})
    transport = _transport(send)
    if transport is None:
        raise _Drop("connection closed mid-body by fault injection")
    with contextlib.suppress(Exception):
        transport.close()
    for _ in range(3):
        await asyncio.sleep(0)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
