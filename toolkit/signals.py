"""SIGTERM handled like Ctrl-C: the running command winds down (a sync commits what it has and records the run as
``interrupted``) instead of dying mid-way with no word.

Used by the command line; in Python (a notebook, a script) the caller's own signal handling stays in charge.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

import duckdb


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived. A :class:`KeyboardInterrupt`, so everything that cleans up after Ctrl-C does after it too."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        self.signum = signum
        super().__init__(f"{signal.Signals(signum).name} received")


def is_interruption(exc: BaseException) -> bool:
    """Whether ``exc`` ended the work because of Ctrl-C or SIGTERM: a :class:`KeyboardInterrupt` (so
    :class:`Terminated` too), or the ``Query interrupted`` error DuckDB raises in its place when the signal arrives
    while one of its statements runs (it interrupts the statement and drops the handler's exception)."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    return isinstance(exc, RuntimeError | duckdb.Error) and str(exc).strip().lower().startswith("query interrupted")


def sigterm_received() -> bool:
    """Whether a SIGTERM arrived while :func:`sigterm_interrupts` was in force (in this process)."""
    return _state["received"]


_state = {"received": False}

#: The exit code of a command ended by SIGTERM (128 + 15, as shells report it).
EXIT_TERMINATED = 128 + signal.SIGTERM
#: The exit code of a command ended by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 128 + signal.SIGINT


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While the block runs, the first SIGTERM raises :class:`Terminated` in the main thread; later ones are
    ignored so that the clean-up it started (a sync's last commit) is not cut short. Outside the main thread this
    does nothing (Python delivers signals to the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = _state["received"] = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal received
        if received:
            return
        received = _state["received"] = True
        raise Terminated(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["EXIT_INTERRUPTED", "EXIT_TERMINATED", "Terminated", "is_interruption", "sigterm_interrupts",
           "sigterm_received"]
