"""The sandbox answering an httpx client in the caller's thread, without a socket: an ``httpx`` transport over the
app's synchronous :meth:`~toolkit.sandbox.app.SandboxApp.answer`.

For code that needs the service's answers but not a network (tests of the client, the sync and the metrics; a
notebook's demo). What only a socket shows is not here: fault injection (slow, truncated or dropped answers, 429s,
5xx) needs :meth:`Sandbox.serve <toolkit.sandbox.sandbox.Sandbox.serve>`, and a sandbox with faults configured
refuses this transport rather than answer without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from toolkit.sandbox.messages import Request

if TYPE_CHECKING:
    from toolkit.sandbox.app import SandboxApp

#: The base URL a client of this transport uses: a loopback address, where plain http with a key is allowed (nothing
#: connects to it).
BASE_URL = "http://127.0.0.1/v1"


class InProcessTransport(httpx.BaseTransport):
    """An httpx transport answered by a :class:`~toolkit.sandbox.app.SandboxApp` in the calling thread."""

    #: Read by :class:`toolkit.api.Client`: answers come at once, in the caller's thread, so the client asks here
    #: rather than on a thread of its own per request (nothing can trickle or hang without a socket).
    answers_in_caller = True

    def __init__(self, app: SandboxApp) -> None:
        if app.faults.config.active:
            raise ValueError("fault injection needs a socket: serve the sandbox (Sandbox.serve) to test faults")
        self.app = app

    def __repr__(self) -> str:
        return "<InProcessTransport>"

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Answer ``request`` as the served app would (same status, headers and body)."""
        body = request.read()
        headers = {k.lower(): v for k, v in request.headers.items()}
        query: dict[str, list[str]] = {}
        for key, value in request.url.params.multi_items():
            query.setdefault(key, []).append(value)
        answer = self.app.answer(Request(request.method.upper(), request.url.path, query, headers, body))
        content = b"" if request.method.upper() == "HEAD" else answer.body
        raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in answer.raw_headers()]
        return httpx.Response(answer.status, headers=raw, content=content, request=request)
