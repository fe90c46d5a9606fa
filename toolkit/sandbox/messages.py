"""Plain request/response values for the raw ASGI app, and the JSON envelopes the service answers with."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from toolkit.sandbox.apierror import ApiError

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
JSON_HEADERS = ((b"content-type", b"application/json"),)


@dataclass
class Request:
    """One HTTP request as the handlers see it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes = b""

    @classmethod
    def from_scope(cls, scope: dict, body: bytes) -> Request:
        """Build from an ASGI http scope and the full body."""
        query: dict[str, list[str]] = {}
        for key, value in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
            query.setdefault(key, []).append(value)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        return cls(scope["method"].upper(), scope["path"], query, headers, body)


@dataclass
class Response:
    """One HTTP answer: status, body bytes and extra headers."""

    status: int
    body: bytes
    headers: tuple[tuple[bytes, bytes], ...] = field(default_factory=tuple)

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """Headers for ``http.response.start``, with content type and length."""
        return [*JSON_HEADERS, (b"content-length", str(len(self.body)).encode()), *self.headers]


def dumps(obj: object) -> bytes:
    """Compact JSON bytes."""
    return _dumps(obj).encode()


def json_response(obj: object, status: int = 200) -> Response:
    """A JSON answer."""
    return Response(status, dumps(obj))


def error_response(err: ApiError) -> Response:
    """The ``ApplicationError`` answer of an :class:`ApiError`."""
    return Response(err.status, dumps(err.body()), err.headers)


def list_response(items: list, has_more: bool) -> Response:
    """A ``{data, has_more}`` list envelope."""
    return Response(200, dumps({"data": items, "has_more": has_more}))


def events_response(inner: bytes, has_more: bool) -> Response:
    """An ``{events, has_more}`` envelope around pre-serialised events (``inner`` is comma-joined JSON)."""
    tail = b'],"has_more":true}' if has_more else b'],"has_more":false}'
    return Response(200, b"".join((b'{"events":[', inner, tail)))
