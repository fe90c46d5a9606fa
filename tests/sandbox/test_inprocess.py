"""The in-process transport answers exactly as the served sandbox does: every request below is sent both ways to
one sandbox and the status, body and headers compared; a sandbox with fault injection refuses it."""

from __future__ import annotations

import httpx
import pytest

from toolkit.api import Client
from toolkit.sandbox import Sandbox
from toolkit.sandbox.inprocess import BASE_URL

KEY = "inprocess-key"
AUTH = {"Authorization": f"Apikey {KEY}"}
#: (method, path under the root, query, body, headers): reads, writes that fail validation, errors of every kind,
#: the public paths, the control API; nothing here changes the sandbox, so both ways see the same state.
REQUESTS = [
    ("GET", "/v1/health-check", {}, None, {}),
    ("HEAD", "/v1/health-check", {}, None, {}),
    ("GET", "/v1/openapi.json", {}, None, {}),
    ("GET", "/v1/networks", {}, None, AUTH),
    ("GET", "/v1/channels", {"limit": "2", "offset": "1"}, None, AUTH),
    ("GET", "/v1/channels", {"limit": "0"}, None, AUTH),
    ("GET", "/v1/channels", {"nonsense": "1"}, None, AUTH),
    ("GET", "/v1/wallets", {}, None, AUTH),
    ("GET", "/v1/channels", {}, None, {}),
    ("GET", "/v1/channels", {}, None, {"Authorization": "Bearer x"}),
    ("GET", "/v1/channels", {}, None, {"Authorization": "Apikey not-onboarded"}),
    ("GET", "/v1/channels", {}, None, {"Authorization": "Apikey unknown"}),
    ("GET", "/v1/no-such-thing", {}, None, AUTH),
    ("DELETE", "/v1/networks", {}, None, AUTH),
    ("POST", "/v1/channels", {}, b"{not json", {**AUTH, "Content-Type": "application/json"}),
    ("POST", "/v1/channels", {}, b"{}", {**AUTH, "Content-Type": "application/json"}),
    ("GET", "/sandbox/clock", {}, None, AUTH),
    ("GET", "/sandbox/signers", {}, None, AUTH),
    ("POST", "/sandbox/clock/advance", {}, b'{"seconds": -1}', AUTH),
    ("GET", "/sandbox/nothing", {}, None, AUTH),
]


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(orgs=(KEY,), not_onboarded=("not-onboarded",), seed=4, days=0.2, operations_per_day=200)


def _answer(client: httpx.Client, method: str, path: str, query: dict, body: bytes | None, headers: dict) -> tuple:
    r = client.request(method, path, params=query, content=body, headers=headers)
    kept = {k: v for k, v in r.headers.items() if k not in ("date", "server")}  # what uvicorn adds of its own
    return r.status_code, r.content, kept


def test_every_answer_is_the_served_answer(sandbox) -> None:
    with (
        sandbox.serve() as server,
        httpx.Client(base_url=server.base_url.removesuffix("/v1")) as served,
        httpx.Client(base_url=BASE_URL.removesuffix("/v1"), transport=sandbox.transport()) as in_process,
    ):
        for method, path, query, body, headers in REQUESTS:
            want = _answer(served, method, path, query, body, headers)
            got = _answer(in_process, method, path, query, body, headers)
            assert got == want, (method, path, query)
            assert want[0] != 500, (method, path)  # each request is answered, not a sandbox failure


def _records(client: Client) -> tuple[list, list, list]:
    channels = list(client.iter_channels())
    operations = [op for c in channels for op in client.iter_operations(c["channel_id"])]
    return channels, list(client.iter_wallets()), operations


def test_the_toolkit_client_reads_the_same_records_both_ways(sandbox) -> None:
    with sandbox.serve() as server, Client(server.base_url, KEY) as served:
        want = _records(served)
    with Client(BASE_URL, KEY, transport=sandbox.transport()) as in_process:
        got = _records(in_process)
    assert got == want and want[2], "the seeded operations, every page of them"


@pytest.mark.parametrize("fault", ["fail_rate", "slow_rate", "truncate_rate", "drop_rate", "malformed_rate"])
def test_a_sandbox_with_faults_refuses_the_transport(fault) -> None:
    with pytest.raises(ValueError, match="needs a socket"):
        Sandbox(orgs=(KEY,), empty=True, **{fault: 0.5}).transport()
    with pytest.raises(ValueError, match="needs a socket"):
        Sandbox(orgs=(KEY,), empty=True, rate_limit=5).transport()


def test_the_client_asks_the_in_process_app_in_its_own_thread_and_keeps_its_body_cap(sandbox) -> None:
    """No thread per request for an answer made in the caller's thread; the decoded-size cap still holds."""
    import threading

    transport = sandbox.transport()
    app, seen = transport.app, []

    class Recording:
        faults = app.faults

        def answer(self, request):
            seen.append(threading.get_ident())
            return app.answer(request)

    transport.app = Recording()
    with Client(BASE_URL, KEY, transport=transport) as client:
        assert client.get_channel(next(client.iter_channels())["channel_id"])
    assert seen and set(seen) == {threading.get_ident()}
    transport.app = app
    with Client(BASE_URL, KEY, transport=transport, max_body_bytes=100) as small, pytest.raises(Exception) as info:
        list(small.iter_channels())
    assert "100 bytes decoded" in str(info.value)
