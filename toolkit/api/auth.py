"""The service's ``ApiKeyAuth`` scheme: ``Authorization: Apikey <key>`` on every request."""

from __future__ import annotations

from collections.abc import Generator

import httpx

from ..config import Secret


class ApiKeyAuth(httpx.Auth):
    """Adds ``Authorization: Apikey <key>``; the key is held as a :class:`~toolkit.config.Secret`."""

    def __init__(self, key: Secret) -> None:
        self._key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """Set the header (marked sensitive so httpx never logs it) and send."""
        request.headers["Authorization"] = f"Apikey {self._key.reveal()}"
        yield request

    def __repr__(self) -> str:
        return "ApiKeyAuth(key='***')"
