"""Fetching several page streams at once: bounded worker threads sharing one client, pages handed over in order.

Each stream (for example one channel's event log) is read by one worker at a time, so its pages arrive in order;
different streams overlap. Within a stream, :class:`ReadAhead` sends the requests a walk is predicted to make next
while it waits for the current one, and a :class:`RequestPool` bounds the requests in flight across every stream.

The queue between workers and the consumer is bounded, so memory stays flat however long
the history is, and the consumer's work (conversion, DuckDB writes) overlaps the network.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
P = TypeVar("P")
T = TypeVar("T")
A = TypeVar("A")

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


class RequestPool:
    """At most ``workers`` requests at once: the threads every walk of a sync sends its requests through, so however
    many streams run and however far each reads ahead, no more than ``workers`` requests are ever in flight.

    :meth:`call` and :meth:`map` wait for their answers: call them from outside the pool's threads only.
    """

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="chainops-request")

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue ``fn(*args, **kwargs)``; its future."""
        return self._executor.submit(fn, *args, **kwargs)

    def call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the pool and wait for it (its error is raised here)."""
        return self.submit(fn, *args, **kwargs).result()

    def map(self, fn: Callable[[A], T], items: Iterable[A]) -> list[T]:
        """``fn`` of each item, run concurrently on the pool, in the items' order."""
        return list(self._executor.map(fn, items))

    def close(self) -> None:
        """Drop what has not started and wait for the requests in flight."""
        self._executor.shutdown(wait=True, cancel_futures=True)


class ReadAhead(Generic[T]):
    """The requests of one offset walk sent ahead of it through a :class:`RequestPool`.

    A walk asks for ``offset``, reads the page, and asks next for what the page says: when pages are full that is
    ``offset + step`` (a row-skip list moves by the rows received; an event log, whose message offsets are a
    contiguous per-channel sequence, by the events received). So while the walk waits for one page, the following
    ones it is predicted to ask for are already on their way. The walk itself is unchanged: it asks :meth:`get` for
    each offset it decides on, in order, and sees the same answers in the same order as a walk one request at a time;
    a page that ends elsewhere (a short page, a hole in the offsets) only drops the predictions that are off its
    path, and the walk continues from where the page says. Only the waiting overlaps.

    With ``until`` (the highest offset known to exist: an event log's head) the walk reads ``depth`` requests ahead
    at once and never predicts past it; ``until`` may be a function telling it, asked once the first page comes
    back full (a log of one page costs no request to find its head). Without (a list has no total), it predicts
    nothing until a page comes back full, then reads ``depth`` ahead while pages stay full: a list of one page costs
    one request, and a long list wastes at most ``depth`` requests past its end.
    """

    def __init__(
        self,
        pool: RequestPool,
        send: Callable[[int], T],
        *,
        step: int,
        depth: int,
        until: int | Callable[[], int | None] | None = None,
    ) -> None:
        self.pool = pool
        self.send = send
        self.step = max(1, step)
        self.depth = max(0, depth)
        self._find_until = until if callable(until) else None
        self.until = until if isinstance(until, int) else None
        self.ahead = self.depth if self.until is not None else 0
        self._pending: dict[int, Future[T]] = {}
        self._expected: int | None = None

    def get(self, offset: int) -> T:
        """The answer for ``offset`` (sent now unless it is already on its way); sends the predicted next ones."""
        if self.until is None and self._expected is not None:
            if offset == self._expected and self._find_until is not None:
                self.until, self._find_until = self._find_until(), None
            self.ahead = self.depth if offset == self._expected or self.until is not None else 0
        path = [offset + k * self.step for k in range(self.ahead + 1)]
        path = [o for o in path if o == offset or self.until is None or o <= self.until]
        for stale in set(self._pending) - set(path):  # predictions off the walk's path
            self._pending.pop(stale).cancel()
        for o in path:
            if o not in self._pending:
                self._pending[o] = self.pool.submit(self.send, o)
        self._expected = offset + self.step
        return self._pending.pop(offset).result()

    def close(self) -> None:
        """Cancel the predictions not yet sent (those in flight finish; their answers are dropped)."""
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()
