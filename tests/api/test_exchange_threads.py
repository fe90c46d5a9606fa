"""The threads exchanges run on are kept for the next exchange, and an abandoned exchange never holds one up."""

from __future__ import annotations

import os
import threading

import httpx
import pytest

from tests.conftest import TEST_KEY
from toolkit import errors
from toolkit.api import Client
from toolkit.api.exchange import IDLE_THREADS
from toolkit.api.retry import RetryPolicy

ONCE = RetryPolicy(attempts=1, initial=0.0, maximum=0.0, floor=0.0)


def test_one_request_after_another_reuses_the_threads() -> None:
    threads: list[threading.Thread] = []

    def handler(request: httpx.Request) -> httpx.Response:
        threads.append(threading.current_thread())  # the Thread objects are kept, so each stays distinct
        return httpx.Response(200, json={"ok": True})

    with Client("http://127.0.0.1:9/v1", TEST_KEY, transport=httpx.MockTransport(handler), retry=ONCE) as client:
        for _ in range(20):
            assert client.request("GET", "ping") == {"ok": True}
    assert len(threads) == 20
    assert threading.main_thread() not in threads  # still on threads of their own
    assert len({id(t) for t in threads}) <= IDLE_THREADS  # a thread per request made 20


def test_an_abandoned_exchange_does_not_hold_up_the_next() -> None:
    release, stuck = threading.Event(), threading.Event()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/stuck"):
            stuck.set()
            release.wait(30)
        return httpx.Response(200, json={"path": request.url.path})

    short = RetryPolicy(attempts=1, deadline=0.3, initial=0.0, maximum=0.0, floor=0.0)
    try:
        with Client("http://127.0.0.1:9/v1", TEST_KEY, transport=httpx.MockTransport(handler), retry=short) as client:
            with pytest.raises(errors.TransportError, match="no answer began"):
                client.request("GET", "stuck")
            assert stuck.is_set()
            # its thread is still in the handler: the next exchanges run elsewhere, at once
            for _ in range(3):
                assert client.request("GET", "next") == {"path": "/v1/next"}
    finally:
        release.set()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_starts_its_own_threads() -> None:
    # the parent's idle thread does not exist in a child: a child that handed it its request would wait in vain
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"ok": True}))
    short = RetryPolicy(attempts=1, deadline=5.0, initial=0.0, maximum=0.0, floor=0.0)
    with Client("http://127.0.0.1:9/v1", TEST_KEY, transport=transport, retry=short) as client:
        assert client.request("GET", "ping") == {"ok": True}  # leaves a thread waiting for the next exchange
        pid = os.fork()
        if pid == 0:  # the child: answered at once, or exit 1
            try:
                code = 0 if client.request("GET", "ping") == {"ok": True} else 1
            except BaseException:
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
