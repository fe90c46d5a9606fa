"""Fetching several page streams at once: bounded worker threads sharing one client, pages handed over in order.

Each stream (for example one channel's event log) is read by one worker at a time, so its pages arrive in order;
different streams overlap. The queue between workers and the consumer is bounded, so memory stays flat however long
the history is, and the consumer's work (conversion, DuckDB writes) overlaps the network.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
P = TypeVar("P")

_DONE = object()


class _Failure(Generic[K]):
    def __init__(self, key: K, error: BaseException) -> None:
        self.key = key
        self.error = error


def prefetch(
    streams: Mapping[K, Callable[[], Iterator[P]]], *, workers: int = 4, depth: int = 8
) -> Iterator[tuple[K, P]]:
    """Run each stream's page iterator in a worker thread; yield ``(key, page)`` as pages arrive.

    At most ``workers`` streams are read at once and at most ``depth`` pages wait for the consumer. The first error
    of any stream is raised in the consumer (after the other workers are told to stop). Closing the generator early
    stops the workers too. With ``workers=1`` the streams are read one after another in the calling thread: no
    thread, no handoff (the fastest way when the service answers at once, as on loopback).
    """
    if not streams:
        return
    if workers <= 1:
        for key, make in streams.items():
            for page in make():
                yield key, page
        return
    handoff: queue.Queue[object] = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run(key: K, make: Callable[[], Iterator[P]]) -> None:
        try:
            for page in make():
                if not put((key, page)):
                    return
        except BaseException as exc:  # handed to the consumer, which re-raises it
            put(_Failure(key, exc))
        finally:
            put(_DONE)

    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(streams))), thread_name_prefix="chainops-fetch")
    for key, make in streams.items():
        pool.submit(run, key, make)
    remaining = len(streams)
    try:
        while remaining:
            item = handoff.get()
            if item is _DONE:
                remaining -= 1
            elif isinstance(item, _Failure):
                raise item.error
            else:
                yield item  # type: ignore[misc]
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
