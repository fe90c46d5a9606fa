"""Fixtures for the sandbox tests: one seeded sandbox per module, served on 127.0.0.1, and httpx clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from toolkit.sandbox import Sandbox
from toolkit.sandbox.serve import ServerHandle

SEEDED = "sbx_seeded_SECRET-51d0"
EMPTY = "sbx_empty_SECRET-9c2e"
NOT_ONBOARDED = "sbx_nope_SECRET-77aa"
START = 1_750_000_020 // 60 * 60


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    """A seeded sandbox: one day of history in ``SEEDED``, an empty onboarded ``EMPTY``, a not-onboarded key."""
    return Sandbox(
        orgs=(SEEDED, EMPTY), not_onboarded=(NOT_ONBOARDED,), seed=5, days=1, operations_per_day=300, start=START
    )


@pytest.fixture(scope="module")
def srv(sb: Sandbox) -> Iterator[ServerHandle]:
    """The module's sandbox served over real HTTP."""
    with sb.serve() as running:
        yield running


def _client(srv: ServerHandle, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Apikey {key}"} if key else {}
    return httpx.Client(base_url=srv.base_url, headers=headers, timeout=10)


@pytest.fixture
def api(srv: ServerHandle) -> Iterator[httpx.Client]:
    """A client of the seeded organisation."""
    with _client(srv, SEEDED) as client:
        yield client


@pytest.fixture
def mine(srv: ServerHandle) -> Iterator[httpx.Client]:
    """A client of the empty organisation (for writes)."""
    with _client(srv, EMPTY) as client:
        yield client


@pytest.fixture
def advance(srv: ServerHandle) -> Callable[[int], int]:
    """Advance the simulated clock through the control API; answers the new ``now``."""
    root = srv.base_url.removesuffix("/v1")

    def go(seconds: int) -> int:
        r = httpx.post(
            f"{root}/sandbox/clock/advance", json={"seconds": seconds}, headers={"Authorization": f"Apikey {EMPTY}"}
        )
        assert r.status_code == 200, r.text
        return r.json()["now"]

    return go


def make_client(srv: ServerHandle, key: str | None) -> httpx.Client:
    """A client for any key (or none)."""
    return _client(srv, key)
