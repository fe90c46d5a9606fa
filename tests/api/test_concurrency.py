"""Fetching several page streams: bounded threads over a network, the calling thread alone on loopback."""

from __future__ import annotations

import threading

import pytest

from toolkit.api.concurrency import prefetch
from toolkit.loader import WORKERS, default_workers


def streams_recording_threads(seen: list[tuple[str, int, str]]):
    def stream(key: str):
        def pages():
            for i in range(3):
                seen.append((key, i, threading.current_thread().name))
                yield f"{key}-{i}"

        return pages

    return {key: stream(key) for key in ("a", "b", "c")}


def test_one_worker_reads_streams_in_turn_in_the_calling_thread() -> None:
    seen: list[tuple[str, int, str]] = []
    got = list(prefetch(streams_recording_threads(seen), workers=1))
    assert got == [(k, f"{k}-{i}") for k in ("a", "b", "c") for i in range(3)]
    assert {name for _, _, name in seen} == {threading.current_thread().name}


def test_several_workers_keep_each_streams_pages_in_order() -> None:
    seen: list[tuple[str, int, str]] = []
    got = list(prefetch(streams_recording_threads(seen), workers=3))
    for key in ("a", "b", "c"):
        assert [page for k, page in got if k == key] == [f"{key}-{i}" for i in range(3)]
    assert all(name.startswith("chainops-fetch") for _, _, name in seen)


def test_an_error_in_a_stream_reaches_the_consumer_in_either_mode() -> None:
    def broken():
        yield "first"
        raise RuntimeError("the service went away")

    for workers in (1, 4):
        with pytest.raises(RuntimeError, match="went away"):
            list(prefetch({"x": broken}, workers=workers))


@pytest.mark.parametrize(
    ("url", "workers"),
    [
        ("http://127.0.0.1:8080/v1", 1),
        ("http://localhost:8080/v1", 1),
        ("http://[::1]:8080/v1", 1),
        ("https://api.example.com/v1", WORKERS),
    ],
)
def test_concurrency_defaults_to_one_thread_on_loopback(url: str, workers: int) -> None:
    assert default_workers(url) == workers
