"""Every API and transport error is built complete: the method, the path (never the query, never the key), how many
attempts were made, ``Retry-After``, and the request id the service gave its answer, in attributes and in the
message. Driven by a scripted server over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable

import pytest

from tests.conftest import TEST_KEY
from tests.support.hostile import ScriptedServer
from toolkit import errors
from toolkit.api import Client
from toolkit.api.retry import RetryPolicy

NO_WAIT = RetryPolicy(attempts=2, initial=0.0, maximum=0.0, floor=0.0)
CHANNEL = "c-1"
#: A filter value that must never show in an error (only the method and path do).
FILTER = "0xfeedfacefeedfacefeedfacefeedfacefeedface"


def _error_body(kind: str, code: str | None, message: str, **more: str) -> bytes:
    return json.dumps({"type": kind, "code": code, "message": message, **more}).encode()


#: status, body, the error class, what the message must say of the service's answer, and the attempts made
CASES = [
    (400, _error_body("VALIDATION_ERROR", None, "limit too big"), errors.ValidationError, "(VALIDATION_ERROR)", 1),
    (
        404,
        _error_body("NOT_FOUND", "CHANNEL_NOT_FOUND", "no"),
        errors.NotFoundError,
        "(NOT_FOUND/CHANNEL_NOT_FOUND)",
        1,
    ),
    (429, _error_body("VALIDATION_ERROR", None, "slow down"), errors.RateLimitError, "(VALIDATION_ERROR)", 2),
    (500, b"<html>oops</html>", errors.ServerError, "(no ApplicationError body)", 2),
]


def _raised(status: int, body: bytes, headers: dict[str, str], call: Callable[[Client], object]) -> Exception:
    """The error ``call`` raises against a server answering every request with ``status``, ``headers``, ``body``."""
    server = ScriptedServer(lambda path, query: (status, headers, body))
    with server, Client(server.base_url, TEST_KEY, retry=NO_WAIT) as client, pytest.raises(Exception) as info:
        call(client)
    return info.value


@pytest.mark.parametrize(("status", "body", "cls", "said", "attempts"), CASES)
@pytest.mark.parametrize("request_id", ["req-7f3a9", None])
def test_an_api_error_names_method_path_attempts_and_request_id(status, body, cls, said, attempts, request_id) -> None:
    headers = {"X-Request-Id": request_id} if request_id else {}
    if status == 429:
        headers["Retry-After"] = "0"
    err = _raised(status, body, headers, lambda client: next(client.operation_pages(CHANNEL, address=FILTER)))
    assert type(err) is cls
    path = f"/channels/{CHANNEL}/operations"
    assert (err.status, err.method, err.path, err.attempts, err.request_id) == (
        status,
        "GET",
        path,
        attempts,
        request_id,
    )
    text = str(err)
    assert text.startswith(f"GET {path} answered {status} {said}")
    assert (f" after {attempts} attempts" in text) == (attempts > 1)
    assert (f"[request id {request_id}]" in text) if request_id else ("request id" not in text)
    assert err.retry_after == (0.0 if status == 429 else None)
    for shown in (text, repr(err)):
        assert TEST_KEY not in shown and FILTER not in shown


def test_the_request_id_may_come_in_the_error_body() -> None:
    body = _error_body("NOT_FOUND", "CHANNEL_NOT_FOUND", "no", request_id="body-id-1")
    err = _raised(404, body, {}, lambda client: client.get_channel(CHANNEL))
    assert isinstance(err, errors.NotFoundError)
    assert err.request_id == "body-id-1" and "[request id body-id-1]" in str(err)


def test_a_request_id_echoing_the_key_is_redacted() -> None:
    err = _raised(404, b"", {"X-Request-Id": f"id-{TEST_KEY}"}, lambda client: client.get_channel(CHANNEL))
    assert isinstance(err, errors.NotFoundError) and err.request_id == "id-***"
    assert TEST_KEY not in str(err) and TEST_KEY not in repr(err)


@pytest.mark.parametrize("request_id", ["req-json-1", None])
def test_a_body_that_is_not_json_names_the_request_and_its_id(request_id) -> None:
    headers = {"X-Request-Id": request_id} if request_id else {}
    err = _raised(200, b'{"channel_id": "c-1", ', headers, lambda client: client.get_channel(CHANNEL))
    assert type(err) is errors.ResponseFormatError
    assert (err.method, err.path, err.attempts, err.request_id) == ("GET", f"/channels/{CHANNEL}", 2, request_id)
    text = str(err)
    assert text.startswith(f"GET /channels/{CHANNEL}")
    assert "is not valid JSON" in text and "(after 2 attempts)" in text
    assert (f"[request id {request_id}]" in text) if request_id else ("request id" not in text)
    assert TEST_KEY not in text and TEST_KEY not in repr(err)


def test_an_unreadable_list_page_carries_the_request_id() -> None:
    err = _raised(200, b"{not json", {"X-Request-Id": "page-9"}, lambda client: next(client.operation_pages(CHANNEL)))
    assert isinstance(err, errors.BadPageError)
    assert err.request_id == "page-9" and "[request id page-9]" in str(err)
    assert err.attempts == 2 and err.page.unreadable
    assert TEST_KEY not in str(err)


def test_a_refused_connection_has_no_request_id() -> None:
    with ScriptedServer(lambda path, query: (200, {}, b"{}")) as server:
        url = server.base_url
    with Client(url, TEST_KEY, retry=NO_WAIT) as client, pytest.raises(errors.TransportError) as info:
        client.get_channel(CHANNEL)
    err = info.value
    assert err.request_id is None and err.attempts == 2 and err.path == f"/channels/{CHANNEL}"
    assert str(err).startswith(f"GET /channels/{CHANNEL}: ") and "request id" not in str(err)


def test_an_error_is_complete_from_its_constructor_and_survives_pickling() -> None:
    err = errors.RateLimitError(
        status=429, method="GET", path="/networks", attempts=3, retry_after=1.5, request_id="r-1", message="slow"
    )
    expected = "GET /networks answered 429 (no ApplicationError body) after 3 attempts [request id r-1]: slow."
    assert str(err).startswith(expected)
    again = pickle.loads(pickle.dumps(err))
    assert (again.attempts, again.retry_after, again.request_id, str(again)) == (3, 1.5, "r-1", str(err))
    transport = errors.TransportError("reset", method="GET", path="/networks", attempts=2, request_id="t-2")
    assert str(transport).startswith("GET /networks [request id t-2]: reset (after 2 attempts).")
    assert pickle.loads(pickle.dumps(transport)).request_id == "t-2"


#: Bodies that parse as JSON but are not a list's envelope, and what the error must say of each.
WRONG_ENVELOPES = [
    (b'["not", "an", "object"]', "got list"),
    (b'{"items": []}', "has no 'data' array"),
    (b'{"data": [], "has_more": "yes"}', "not a boolean"),
]


@pytest.mark.parametrize(("body", "said"), WRONG_ENVELOPES)
def test_a_list_page_of_the_wrong_shape_is_retried_and_names_its_request_id(body, said) -> None:
    """A 2xx answer that is not the documented envelope is a malformed answer like invalid JSON: retried, and when
    every attempt is wrong the error names the request, the attempts and the service's request id."""
    err = _raised(200, body, {"X-Request-Id": "shape-3"}, lambda client: next(client.operation_pages(CHANNEL)))
    assert isinstance(err, errors.BadPageError) and err.page.unreadable
    assert (err.method, err.path, err.attempts, err.request_id) == (
        "GET",
        f"/channels/{CHANNEL}/operations",
        2,
        "shape-3",
    )
    assert said in str(err) and "[request id shape-3]" in str(err) and TEST_KEY not in str(err)


@pytest.mark.parametrize(
    "call",
    [
        lambda client: client.list_networks(),
        lambda client: client.poll_events(CHANNEL),
        lambda client: client.search_events(CHANNEL, type="operation.status"),
        lambda client: next(client.event_wire_pages(CHANNEL)),
    ],
    ids=["networks", "poll", "search", "event walk"],
)
def test_every_list_read_names_the_request_id_of_a_wrong_envelope(call) -> None:
    err = _raised(200, b'{"items": []}', {"X-Request-Id": "shape-4"}, call)
    assert isinstance(err, errors.ResponseFormatError)
    assert err.request_id == "shape-4" and err.attempts == 2 and "[request id shape-4]" in str(err)


def test_a_wrong_envelope_once_is_read_again() -> None:
    """The retry reads the page when the service answers properly the second time: nothing is skipped."""
    answers = iter([b'{"items": []}'])
    good = json.dumps({"data": [{"operation_id": "op-1", "channel_id": CHANNEL}], "has_more": False}).encode()
    server = ScriptedServer(lambda path, query: (200, {}, next(answers, good)))
    with server, Client(server.base_url, TEST_KEY, retry=NO_WAIT) as client:
        pages = list(client.operation_pages(CHANNEL))
        assert client.retries == 1
    assert [r["operation_id"] for p in pages for r in p.records] == ["op-1"]
