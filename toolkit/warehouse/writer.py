"""A single writer thread for the warehouse, so DuckDB's work overlaps the caller's conversion.

DuckDB releases the GIL while it executes, so inserting one batch while the next page is converted uses both cores.
Work is done strictly in submission order, one item at a time, on the warehouse's own connection; the queue is
short, so memory stays bounded. The first error stops the writer and is raised in the caller at the next
:meth:`Writer.submit` or :meth:`Writer.drain`. Anything else that touches the connection must call
:meth:`Writer.drain` first.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

_STOP = object()


class Writer:
    """Runs submitted callables one at a time on a background thread."""

    def __init__(self, depth: int = 2) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="chainops-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                if self._error is None:
                    item()
            except BaseException as exc:  # handed to the caller
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def submit(self, work: Callable[[], None]) -> None:
        """Queue ``work`` (blocks while the queue is full); raises an earlier item's error first."""
        self._raise()
        self._queue.put(work)

    def drain(self) -> None:
        """Wait until every queued item has run; raise the first error, if any."""
        self._queue.join()
        self._raise()

    def close(self) -> None:
        """Finish queued work (errors are not raised here) and stop the thread."""
        self._queue.put(_STOP)
        self._thread.join()
