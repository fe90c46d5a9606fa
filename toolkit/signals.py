"""SIGTERM handled like Ctrl-C: the running command winds down (a sync commits what it has and records the run as
``interrupted``) instead of dying mid-way with no word.

An exception raised by a signal handler lands wherever the main thread happens to be, possibly inside a library
holding a lock (httpx's connection pool was caught that way: the sync carried on and its next request waited for
that lock forever). So a sync asks for *deferred* stops: the first SIGTERM or Ctrl-C only sets a flag, and the work
stops at its next safe point (before a request, between pages, between two pieces of the models' build), within a
moment; the waits a sync does (retry backoff, a 429 pause) end as soon as the flag is set. A second signal stops at
once. Other commands stop at once on the first.

Used by the command line; in Python (a notebook, a script) the caller's own signal handling stays in charge, and
:func:`check_stop` never raises there.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType


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
    # DuckDB is not imported for it: an error of DuckDB's means DuckDB is loaded (`chainops --help` loads none)
    duckdb = sys.modules.get("duckdb")
    kinds = (RuntimeError, duckdb.Error) if duckdb is not None else (RuntimeError,)
    return isinstance(exc, kinds) and str(exc).strip().lower().startswith("query interrupted")


class _Flag:
    """A flag to wait on that a signal handler may set. ``threading.Event`` guards itself with a plain lock: a handler
    runs in the main thread between two bytecodes, possibly while that thread, waiting on the event, holds the
    lock, and its ``set()`` would then wait for itself forever. This lock is re-entrant."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.RLock())
        self._set = False

    def set(self) -> None:
        """Raise the flag and wake every wait."""
        with self._changed:
            self._set = True
            self._changed.notify_all()

    def clear(self) -> None:
        """Lower the flag."""
        with self._changed:
            self._set = False

    def is_set(self) -> bool:
        """Whether the flag is raised."""
        return self._set

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the flag; returns whether it is raised."""
        with self._changed:
            if not self._set:
                self._changed.wait(timeout)
            return self._set


class _State:
    """The signal this process received while :func:`sigterm_interrupts` was in force, and the flag of a deferred
    stop (a :class:`_Flag`, so that waits end the moment it is set)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.stop = _Flag()


_STATE = _State()


def sigterm_received() -> bool:
    """Whether a SIGTERM arrived while :func:`sigterm_interrupts` was in force (in this process)."""
    return _STATE.received == signal.SIGTERM


def check_stop() -> None:
    """At a safe point: raise :class:`Terminated` (SIGTERM) or :class:`KeyboardInterrupt` (Ctrl-C) if a deferred
    stop was asked for; otherwise return at once."""
    if _STATE.stop.is_set():
        if _STATE.received == signal.SIGTERM:
            raise Terminated(signal.SIGTERM)
        raise KeyboardInterrupt("Ctrl-C")


def pause(seconds: float) -> None:
    """Sleep ``seconds``, or less if a deferred stop is asked for meanwhile (then raise it, see :func:`check_stop`)."""
    deadline = time.monotonic() + seconds
    # in slices: should a signal not wake the wait, the flag is still seen within a second
    while not _STATE.stop.is_set() and (left := deadline - time.monotonic()) > 0:
        _STATE.stop.wait(min(left, 1.0))
    check_stop()


@contextlib.contextmanager
def sigterm_interrupts(*, deferred: bool = False) -> Iterator[None]:
    """While the block runs, SIGTERM ends the work like Ctrl-C. With ``deferred``, the first SIGTERM or Ctrl-C only
    asks for a stop (see :func:`check_stop`) and a second one raises at once; without, the first SIGTERM raises
    :class:`Terminated` at once. After the first raise, further SIGTERMs are ignored so the clean-up it started (a
    sync's last commit) is not cut short. Outside the main thread this does nothing (Python delivers signals to
    the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _STATE.received, raised = None, False
    _STATE.stop.clear()

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if raised:
            return
        if _STATE.received is None:
            _STATE.received = signum
        if deferred and not _STATE.stop.is_set():
            _STATE.stop.set()
            return
        raised = True
        raise Terminated(signum) if signum == signal.SIGTERM else KeyboardInterrupt("Ctrl-C")

    caught = (signal.SIGTERM, signal.SIGINT) if deferred else (signal.SIGTERM,)
    previous = {signum: signal.signal(signum, handler) for signum in caught}
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
        _STATE.stop.clear()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A short critical section that Ctrl-C and SIGTERM do not cut in two (swapping an export's tables into place,
    say, which must leave the old set or the new one, never a mix): a signal arriving while the block runs is
    delivered when it ends, to whatever handler was in force before. Outside the main thread this does nothing
    more than run the block (Python runs signal handlers in the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    caught = (signal.SIGTERM, signal.SIGINT)
    previous = {signum: signal.signal(signum, lambda signum, frame: pending.append(signum)) for signum in caught}
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before if before is not None else signal.SIG_DFL)  # None: set outside Python
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)  # now, to the handler of before: it raises or asks for a stop, as it would


#: The exit code of a command ended by SIGTERM (128 + 15, as shells report it).
EXIT_TERMINATED = 128 + signal.SIGTERM
#: The exit code of a command ended by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 128 + signal.SIGINT

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "Terminated",
    "check_stop",
    "held",
    "is_interruption",
    "pause",
    "sigterm_interrupts",
    "sigterm_received",
]
