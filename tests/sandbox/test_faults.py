"""Fault injection: every mode observed over real HTTP; never on the health check nor the control API."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from toolkit.sandbox import Sandbox
from toolkit.sandbox.faults import FaultInjector
from toolkit.sandbox.serve import ServerHandle

KEY = "fault-key"
AUTH = {"Authorization": f"Apikey {KEY}"}


class Wall:
    """The rate limiter's clock, standing still until a test moves it: what the token bucket holds depends on the
    requests made and the seconds the test adds, never on how fast the machine sends them."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def wall() -> Wall:
    return Wall()


@pytest.fixture
def faulty(request, wall: Wall) -> Iterator[ServerHandle]:
    sb = Sandbox(orgs=(KEY,), seed=1, days=0.1, operations_per_day=200, start=1_750_000_000, **request.param)
    sb.app.faults = FaultInjector(sb.app.faults.config, sb.seed, wall=wall)
    with sb.serve() as server:
        yield server


def _assert_spared(server: ServerHandle) -> None:
    assert httpx.get(f"{server.base_url}/health-check").json() == {"status": "ok"}
    root = server.base_url.removesuffix("/v1")
    assert httpx.get(f"{root}/sandbox/clock", headers=AUTH).status_code == 200


@pytest.mark.parametrize("faulty", [{"fail_rate": 1.0}], indirect=True)
def test_fail_rate_answers_500_application_error(faulty) -> None:
    r = httpx.get(f"{faulty.base_url}/channels", headers=AUTH)
    assert r.status_code == 500 and r.json()["type"] == "INTERNAL_ERROR" and "message" in r.json()
    _assert_spared(faulty)


@pytest.mark.parametrize(
    ("faulty", "header"),
    [({"rate_limit": 5}, None), ({"rate_limit": 5, "rate_limit_retry_after": 1}, "1")],
    indirect=["faulty"],
)
def test_rate_limit_answers_429_with_retry_after_only_when_asked(faulty, wall, header) -> None:
    """WIRE.md: the service's 429 carries no Retry-After; ``rate_limit_retry_after`` adds one. At 5 requests per
    second the bucket holds 5: with the clock standing, the first 5 requests pass and every later one is limited;
    one second later 5 more pass."""
    with httpx.Client(base_url=faulty.base_url, headers=AUTH) as c:
        codes = [c.get("/networks") for _ in range(30)]
        assert [r.status_code for r in codes] == [200] * 5 + [429] * 25
        limited = codes[5:]
        assert all(r.headers.get("retry-after") == header and r.json()["type"] for r in limited)
        wall.now += 1.0
        assert [c.get("/networks").status_code for _ in range(6)] == [200] * 5 + [429]
    _assert_spared(faulty)


@pytest.mark.parametrize("faulty", [{"slow_rate": 1.0, "slow_seconds": 0.4}], indirect=True)
def test_slow_answers_are_delayed(faulty, monkeypatch) -> None:
    import asyncio

    slept: list[float] = []  # the waits the server's event loop was asked for (not how long they took)
    sleep = asyncio.sleep

    async def recorded_sleep(delay: float, *args: object) -> object:
        slept.append(delay)
        return await sleep(delay, *args)

    monkeypatch.setattr(asyncio, "sleep", recorded_sleep)
    r = httpx.get(f"{faulty.base_url}/networks", headers=AUTH)
    assert r.status_code == 200 and 0.4 in slept  # the answer waited the configured slow_seconds
    monkeypatch.undo()
    with pytest.raises(httpx.ReadTimeout):  # over HTTP: held longer than the client waits
        httpx.get(f"{faulty.base_url}/networks", headers=AUTH, timeout=0.1)


@pytest.mark.parametrize("faulty", [{"truncate_rate": 1.0}], indirect=True)
def test_truncated_answers_close_mid_body(faulty) -> None:
    with pytest.raises(httpx.RemoteProtocolError, match=r"complete message body"):
        httpx.get(f"{faulty.base_url}/networks", headers=AUTH)
    _assert_spared(faulty)


@pytest.mark.parametrize("faulty", [{"drop_rate": 1.0}], indirect=True)
def test_dropped_connections_send_nothing(faulty) -> None:
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        httpx.get(f"{faulty.base_url}/networks", headers=AUTH)
    _assert_spared(faulty)


@pytest.mark.parametrize("faulty", [{"malformed_rate": 1.0}], indirect=True)
def test_malformed_answers_are_invalid_json(faulty) -> None:
    r = httpx.get(f"{faulty.base_url}/networks", headers=AUTH)
    assert r.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.content)
    _assert_spared(faulty)


@pytest.mark.parametrize("faulty", [{"fail_rate": 0.3, "malformed_rate": 0.1}], indirect=True)
def test_partial_rates_mix_faults_and_answers(faulty) -> None:
    with httpx.Client(base_url=faulty.base_url, headers=AUTH) as c:
        codes = [c.get("/networks").status_code for _ in range(100)]
    assert 10 < codes.count(500) < 50 and codes.count(200) > 50


def test_faults_are_seeded() -> None:
    def run() -> list[int]:
        sb = Sandbox(orgs=(KEY,), seed=4, empty=True, fail_rate=0.5)
        with sb.serve() as server, httpx.Client(base_url=server.base_url, headers=AUTH) as c:
            return [c.get("/networks").status_code for _ in range(20)]

    assert run() == run()
