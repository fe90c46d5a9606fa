"""Fetching several page streams at once: bounded worker threads sharing one client, pages handed over in order.

Each stream (for example one channel's event log) is read by one worker at a time, so its pages arrive in order;
different streams overlap. Within a stream, :class:`ReadAhead` sends the requests a walk is predicted to make next
while it waits for the current one, and a :class:`RequestPool` bounds the requests in flight across every stream.

The queue between workers and the consumer is bounded, so memory stays flat however long
the history is, and the consumer's work (conversion, DuckDB writes) overlaps the network.

Stopping is prompt: when a stream fails, the consumer stops early, or Ctrl-C interrupts it, what has not started is
cancelled and the requests in flight are abandoned, not waited for (a request may take up to its deadline). Their
threads are daemon threads of :class:`Workers`, so an abandoned request never holds up the error, the caller's
cleanup or the end of the process; its answer, when it comes, is dropped.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from ..signals import check_stop

K = TypeVar("K", bound=Hashable)
P = TypeVar("P")
T = TypeVar("T")
A = TypeVar("A")

_DONE = object()
#: Seconds the consumer waits for a page before it looks for a stop request again.
_POLL = 0.1
_names = itertools.count(1)
_Task = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class Workers:
    """A fixed set of daemon threads running submitted calls, each returning a :class:`~concurrent.futures.Future`.

    Unlike :class:`~concurrent.futures.ThreadPoolExecutor`, :meth:`close` never waits for a call in flight and the
    interpreter does not join the threads at exit: a call blocked on the network is abandoned, not awaited.
    """

    def __init__(self, workers: int, name: str) -> None:
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}_{next(_names)}", daemon=True)
            for _ in range(max(1, workers))
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue ``fn(*args, **kwargs)``; its future (cancelled if the pool closes before it starts)."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker threads are closed")
            self._tasks.put((future, fn, args, kwargs))
        return future

    def _work(self) -> None:
        while (task := self._tasks.get()) is not None:
            future, fn, args, kwargs = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)
            else:
                future.set_result(result)

    def close(self) -> None:
        """Cancel every call not started and let the threads end once their call in flight returns (not waited
        for)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                task[0].cancel()
        for _ in self._threads:
            self._tasks.put(None)


class _Failure(Generic[K]):
    def __init__(self, key: K, error: BaseException) -> None:
        self.key = key
        self.error = error


def prefetch(
    streams: Mapping[K, Callable[[], Iterator[P]]], *, workers: int = 4, depth: int = 8
) -> Iterator[tuple[K, P]]:
    """Run each stream's page iterator in a worker thread; yield ``(key, page)`` as pages arrive.

    At most ``workers`` streams are read at once and at most ``depth`` pages wait for the consumer. The first error
    of any stream is raised in the consumer at once: the other workers are told to stop, streams not started are
    dropped, and a page in flight is not waited for (its worker ends when its request returns, and drops it).
    Closing the generator early, or an interrupt while it waits, stops the workers the same way. With ``workers=1``
    the streams are read one after another in the calling thread: no thread, no handoff (the fastest way when the
    service answers at once, as on loopback).
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
        if stop.is_set():
            return
        pages = make()
        try:
            for page in pages:
                if not put((key, page)):
                    return
        except BaseException as exc:  # handed to the consumer, which re-raises it
            put(_Failure(key, exc))
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()  # in this thread: a walk's read-ahead cancels what it has not sent
            put(_DONE)

    pool = Workers(min(workers, len(streams)), "chainops-fetch")
    for key, make in streams.items():
        pool.submit(run, key, make)
    remaining = len(streams)
    try:
        while remaining:
            item = _take(handoff)
            if item is _DONE:
                remaining -= 1
            elif isinstance(item, _Failure):
                raise item.error
            else:
                yield item  # type: ignore[misc]
    finally:
        stop.set()
        pool.close()


def _take(handoff: queue.Queue[object]) -> object:
    """The next item, waiting in short steps: between them a Ctrl-C is seen at once (a wait without a timeout would
    see it only when a page arrives), and so is a deferred stop (:func:`~toolkit.signals.check_stop`)."""
    while True:
        try:
            return handoff.get(timeout=_POLL)
        except queue.Empty:
            check_stop()


class RequestPool:
    """At most ``workers`` requests at once: the threads every walk of a sync sends its requests through, so however
    many streams run and however far each reads ahead, no more than ``workers`` requests are ever in flight.

    :meth:`call` and :meth:`map` wait for their answers: call them from outside the pool's threads only.
    :meth:`close` does not wait for the requests in flight (see the module's notes on stopping).
    """

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._executor = Workers(self.workers, "chainops-request")

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue ``fn(*args, **kwargs)``; its future."""
        return self._executor.submit(fn, *args, **kwargs)

    def call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the pool and wait for it (its error is raised here)."""
        return self.submit(fn, *args, **kwargs).result()

    def map(self, fn: Callable[[A], T], items: Iterable[A]) -> list[T]:
        """``fn`` of each item, run concurrently on the pool, in the items' order."""
        futures = [self._executor.submit(fn, item) for item in items]
        try:
            return [future.result() for future in futures]
        finally:
            for future in futures:
                future.cancel()  # after an error: those not started never are

    def close(self) -> None:
        """Drop what has not started and abandon the requests in flight (their answers are dropped)."""
        self._executor.close()


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
