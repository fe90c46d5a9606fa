"""The client's error mapping, retries and request shape, driven by an httpx mock transport."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.conftest import TEST_KEY
from toolkit import errors
from toolkit.api import Client
from toolkit.api.retry import RetryPolicy

NO_WAIT = RetryPolicy(attempts=3, initial=0.0, maximum=0.0, floor=0.0)


def answering(status: int, body: object = None, *, headers: dict[str, str] | None = None) -> httpx.MockTransport:
    content = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    return httpx.MockTransport(lambda request: httpx.Response(status, content=content, headers=headers))


def client_for(transport: httpx.BaseTransport, **kwargs) -> Client:
    return Client("http://127.0.0.1:9/v1", TEST_KEY, transport=transport, retry=NO_WAIT, **kwargs)


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (400, {"type": "VALIDATION_ERROR", "message": "limit must be <= 100"}, errors.ValidationError),
        (401, {"type": "VALIDATION_ERROR", "message": "missing key"}, errors.AuthenticationError),
        (401, {"type": "ORGANIZATION_NOT_FOUND", "message": "not onboarded"}, errors.OrganizationNotFoundError),
        (404, {"type": "NOT_FOUND", "code": "CHANNEL_NOT_FOUND", "message": "no"}, errors.NotFoundError),
        (409, {"type": "CONFLICT", "code": "CHANNEL_ALREADY_EXISTS", "message": "taken"}, errors.ConflictError),
        (429, {"type": "VALIDATION_ERROR", "message": "slow down"}, errors.RateLimitError),
        (500, {"type": "INTERNAL_ERROR", "message": "boom"}, errors.ServerError),
        (503, b"<html>bad gateway</html>", errors.ServerError),
        (418, {"type": "SOMETHING_NEW", "code": "X", "message": "?"}, errors.ApiError),
    ],
)
def test_status_and_type_pick_the_error_class(status, body, cls) -> None:
    with client_for(answering(status, body)) as client, pytest.raises(cls) as info:
        client.get_channel("c1")
    err = info.value
    assert type(err) is cls
    assert err.status == status
    assert err.method == "GET" and err.path == "/channels/c1"
    if isinstance(body, dict):
        assert err.type == body["type"]
        assert err.code == body.get("code")
        assert body["message"] in str(err)
    assert TEST_KEY not in str(err) and TEST_KEY not in repr(err)


def test_application_error_code_is_kept() -> None:
    body = {"type": "CONFLICT", "code": "OPERATION_DEADLINE_ELAPSED", "message": "deadline elapsed"}
    with client_for(answering(409, body)) as client, pytest.raises(errors.ConflictError) as info:
        client.cancel_operation("c1", "o1")
    assert info.value.code == "OPERATION_DEADLINE_ELAPSED"
    assert info.value.method == "PATCH"


def test_transient_errors_are_retried_then_succeed() -> None:
    answers = iter([500, 429, 200])
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status = next(answers)
        body = {"data": [], "has_more": False} if status == 200 else {"type": "INTERNAL_ERROR", "message": "x"}
        return httpx.Response(status, json=body)

    with client_for(httpx.MockTransport(handler)) as client:
        assert client.list_networks() == []
        assert client.requests == 3 and client.retries == 2
    assert [r.headers["Authorization"] for r in seen] == [f"Apikey {TEST_KEY}"] * 3


def test_final_client_errors_are_not_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(404, json={"type": "NOT_FOUND", "code": "QUERY_NOT_FOUND", "message": "no"})

    with client_for(httpx.MockTransport(handler)) as client, pytest.raises(errors.NotFoundError):
        client.get_query("c", "q")
    assert len(calls) == 1


def test_last_attempt_error_names_attempts_and_request() -> None:
    client = client_for(answering(500, {"type": "INTERNAL_ERROR", "message": "down"}))
    with client, pytest.raises(errors.ServerError) as info:
        client.list_networks()
    assert info.value.attempts == 3
    text = str(info.value)
    assert "GET /networks" in text and "3 attempts" in text and "INTERNAL_ERROR" in text


def test_malformed_json_is_a_response_format_error() -> None:
    with client_for(answering(200, b'{"data": [1, 2')) as client, pytest.raises(errors.ResponseFormatError) as info:
        client.list_networks()
    assert "GET /networks" in str(info.value)


def test_wrong_envelope_is_reported() -> None:
    with client_for(answering(200, {"items": []})) as client, pytest.raises(errors.ResponseFormatError) as info:
        client.list_networks()
    assert "'data'" in str(info.value)


def test_connection_failure_is_a_transport_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with client_for(httpx.MockTransport(handler)) as client, pytest.raises(errors.TransportError) as info:
        client.health_check()
    assert "connection refused" in str(info.value)
    assert TEST_KEY not in str(info.value)


def test_retry_after_header_is_read() -> None:
    client = client_for(answering(429, {"type": "X", "message": "m"}, headers={"Retry-After": "0"}))
    with client, pytest.raises(errors.RateLimitError) as info:
        client.list_networks()
    assert info.value.retry_after == 0.0


def test_key_is_refused_over_plain_http_to_a_remote_host() -> None:
    with pytest.raises(errors.ConfigError) as info:
        Client("http://api.example.com/v1", TEST_KEY)
    assert "https" in str(info.value) and TEST_KEY not in str(info.value)
    assert Client("https://api.example.com/v1", TEST_KEY).base_url == "https://api.example.com/v1"


def test_clients_share_one_verifying_tls_context() -> None:
    """The roots are loaded once a process, and every https client still checks the certificate and host name."""
    import ssl

    from toolkit.api.client import tls_context

    contexts = []
    for _ in range(2):
        client = Client("https://api.example.com/v1", TEST_KEY)
        pool = client._http._transport._pool
        contexts.append(pool._ssl_context)
        client.close()
    assert contexts[0] is contexts[1] is tls_context()
    assert contexts[0].verify_mode == ssl.CERT_REQUIRED and contexts[0].check_hostname
    assert contexts[0].cert_store_stats()["x509_ca"] > 0


def test_client_repr_hides_the_key() -> None:
    client = client_for(answering(200, {}))
    assert TEST_KEY not in repr(client) and TEST_KEY not in repr(client.__dict__)
