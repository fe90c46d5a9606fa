"""Stopping a parallel read is prompt: when one stream fails, the consumer stops early, or Ctrl-C interrupts it, the
error is raised without waiting for the pages in flight. A scripted server over real HTTP holds one channel's event
page until the test releases it (at most :data:`HOLD` seconds); events it sets say whether that slow answer was
sent before the stop returned. No clock is read."""

from __future__ import annotations

import _thread
import signal
import threading
from collections.abc import Iterator

import pytest

from tests.conftest import TEST_KEY
from tests.support.hostile import ScriptedServer
from toolkit import errors
from toolkit.api import Client
from toolkit.api.concurrency import RequestPool, Workers, prefetch
from toolkit.api.retry import RetryPolicy

ONCE = RetryPolicy(attempts=1)
#: The longest the server holds the slow answer, and the longest a test waits for the slow request to reach it: a
#: safety net only (every test releases the answer when it ends), under the client's 30 s read timeout so that a
#: lost interrupt fails as one.
HOLD = 20


class SlowServer:
    """``channels/slow/events`` is held until :attr:`release` (or :data:`HOLD` seconds); anything else answers 404
    at once."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.server = ScriptedServer(self.answer)

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, str], bytes]:
        if path.endswith("/channels/slow/events"):
            self.entered.set()
            self.release.wait(HOLD)
            self.finished.set()
            return 200, {}, b'{"events": [], "has_more": false}'
        return 404, {}, b'{"type": "NOT_FOUND", "message": "no such channel"}'


@pytest.fixture
def slow() -> Iterator[SlowServer]:
    slow = SlowServer()
    with slow.server:
        try:
            yield slow
        finally:
            slow.release.set()  # the held answer goes out, so the server can shut down


def test_an_error_in_one_stream_is_raised_without_waiting_for_a_page_in_flight(slow) -> None:
    pool = RequestPool(2)
    with Client(slow.server.base_url, TEST_KEY, retry=ONCE) as client:

        def failing() -> Iterator[object]:
            assert slow.entered.wait(HOLD), "the slow request never reached the server"
            yield client.get_channel("missing")  # 404

        streams = {"slow": lambda: client.event_wire_pages("slow", pool=pool, until=1000), "bad": failing}
        with pytest.raises(errors.NotFoundError):
            for _ in prefetch(streams, workers=2):
                pass
        assert not slow.finished.is_set(), "the error waited for the page in flight"
        pool.close()
        assert not slow.finished.is_set(), "closing the request pool waited for the request in flight"


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Python's own Ctrl-C handler while the test runs: a process that a shell starts in the background inherits
    SIGINT ignored, and then ``interrupt_main`` does nothing (as a real Ctrl-C would not reach it either)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_an_interrupt_while_waiting_stops_at_once(slow) -> None:
    with Client(slow.server.base_url, TEST_KEY, retry=ONCE) as client:

        def interrupt() -> None:
            if slow.entered.wait(HOLD):
                _thread.interrupt_main()  # what Ctrl-C does

        threading.Thread(target=interrupt, daemon=True).start()
        streams = {"slow": lambda: client.event_wire_pages("slow"), "other": lambda: iter(())}
        with pytest.raises(KeyboardInterrupt):
            for _ in prefetch(streams, workers=2):
                pass
        assert slow.entered.is_set() and not slow.finished.is_set()


def test_closing_the_consumer_early_does_not_wait_either(slow) -> None:
    with Client(slow.server.base_url, TEST_KEY, retry=ONCE) as client:

        def first_then_slow() -> Iterator[object]:
            yield "first"
            yield from client.event_wire_pages("slow")

        pages = prefetch({"a": first_then_slow, "b": lambda: iter(())}, workers=2)
        assert next(pages) == ("a", "first")
        assert slow.entered.wait(HOLD)
        pages.close()
        assert not slow.finished.is_set()


def test_workers_cancel_what_has_not_started_and_refuse_new_work() -> None:
    workers = Workers(1, "test")
    started, gate = threading.Event(), threading.Event()

    def hold() -> bool:
        started.set()
        return gate.wait(HOLD)

    running = workers.submit(hold)
    queued = workers.submit(lambda: "never")
    assert started.wait(HOLD)
    workers.close()
    assert queued.cancelled()
    gate.set()
    assert running.result(timeout=HOLD) is True
    with pytest.raises(RuntimeError, match="closed"):
        workers.submit(lambda: None)
