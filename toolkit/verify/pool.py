"""verify's pool of verifier processes, as its parent sees it: started fresh, fed shares, read back in order.

Each worker is a new interpreter running :func:`toolkit.verify.worker.main` (``python -c``), which imports only what
checking needs: about 25 MB a worker at start (35 at work), where one forked from the verifier (DuckDB, Arrow and
pandas loaded) held 80. It is not started through :mod:`multiprocessing`'s ``spawn`` or ``forkserver``: both run the
parent's main script again in each worker, which a script calling :func:`~toolkit.verify.run.verify_warehouse`
without an ``if __name__ == "__main__"`` guard cannot survive (a fork never did that, and verify must not start
asking for it).

Messages are pickled and length-prefixed on the worker's stdin and stdout, each followed by the raw buffers it
points into: the policy first, then shares of events one way (the types as a list, the payload and proofs texts as
their Arrow buffers, written straight from Arrow's memory: no Python text is made for them in the parent) and their
verdicts (plain tuples) the other, in order. A thread per worker
writes what is sent, so the parent never blocks on a full pipe while a worker waits for it to read, and another
reads its answers as they come, so the parent can ask whether one is there without waiting (:meth:`Pool.ready`).
A worker dies with its parent: the kernel kills it on Linux (``PR_SET_PDEATHSIG``), and everywhere it ends when
its stdin closes.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .messages import Buffer, Verdict, read_message, write_message
from .rules import Policy

try:
    import fcntl
except ImportError:  # not on Windows, whose pipes keep their size
    fcntl = None  # type: ignore[assignment]

#: Where the ``toolkit`` package lives, put first on the worker's path (it imports the same code as its parent).
_ROOT = str(Path(__file__).resolve().parents[2])
_MAIN = "import sys; sys.path.insert(0, sys.argv[1]); from toolkit.verify.worker import main; main()"


class WorkerFailed(RuntimeError):
    """A verifier process failed (its error is in the message) or ended before answering."""


class Pool:
    """``processes`` verifiers holding ``policy``, started at once (they start while the warehouse opens)."""

    def __init__(self, processes: int, policy: Policy) -> None:
        self._procs: list[subprocess.Popen[bytes]] = []
        self._outbox: list[queue.SimpleQueue[Any]] = []
        self._senders: list[threading.Thread] = []
        self._inbox: list[queue.SimpleQueue[Any]] = []
        self._readers: list[threading.Thread] = []
        try:
            for _ in range(processes):
                proc = subprocess.Popen(
                    [sys.executable, "-c", _MAIN, _ROOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE
                )
                self._procs.append(proc)
                _widen(proc)
                outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
                sender = threading.Thread(target=_send_all, args=(proc, outbox), daemon=True)
                sender.start()
                self._outbox.append(outbox)
                self._senders.append(sender)
                inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
                reader = threading.Thread(target=_receive_all, args=(proc, inbox), daemon=True)
                reader.start()
                self._inbox.append(inbox)
                self._readers.append(reader)
                outbox.put(((policy, os.getpid()), ()))
        except BaseException:
            self.close()
            raise

    @property
    def size(self) -> int:
        """How many workers."""
        return len(self._procs)

    def send(self, worker: int, share: Any, buffers: Sequence[Buffer] = ()) -> None:
        """Give ``worker`` a share (:data:`toolkit.verify.worker.Share`) and the buffers it points into (written as
        they are: they must not change until the worker answers); its verdicts come from :meth:`receive`."""
        self._outbox[worker].put((share, buffers))

    def ready(self, worker: int) -> bool:
        """Whether ``worker`` has answered a share not received yet (or ended): :meth:`receive` would not wait."""
        return not self._inbox[worker].empty()

    def receive(self, worker: int) -> list[Verdict]:
        """The verdicts of the oldest share ``worker`` has not answered yet (waits for them)."""
        answer = self._inbox[worker].get()
        if answer is _ENDED:
            proc = self._procs[worker]
            raise WorkerFailed(f"a verify worker (process {proc.pid}) ended before answering ({proc.wait()})")
        if isinstance(answer, tuple) and answer[:1] == ("error",):
            raise WorkerFailed(f"a verify worker failed: {answer[1]}")
        return answer

    def close(self) -> None:
        """End every worker: its stdin closes (it ends on reading that), then it is waited for, killed if it lingers."""
        for outbox in self._outbox:
            outbox.put(None)
        for sender in self._senders:
            sender.join(timeout=5)
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for reader in self._readers:  # each reads to the end of its worker's stdout, which ended with the worker
            reader.join(timeout=5)
        for proc in self._procs:
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: The pipes' size asked for on Linux (its default ceiling for a process, /proc/sys/fs/pipe-max-size): a chunk's
#: message (about 500 KB) then crosses in one write and one read, where the default 64 KB took eight reads, each
#: waiting for the worker's interpreter lock while it checked (its queue ran dry: 0.1-0.2 s idle a run).
PIPE_BYTES = 1 << 20


def _widen(proc: subprocess.Popen[bytes]) -> None:
    """Ask for :data:`PIPE_BYTES` on the worker's pipes, where the system allows it (Linux; nothing otherwise)."""
    option = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if option is None:
        return
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                fcntl.fcntl(stream.fileno(), option, PIPE_BYTES)


#: What a worker's reader puts in its inbox once the worker's stdout ends (after its last answer).
_ENDED = object()


def _receive_all(proc: subprocess.Popen[bytes], inbox: queue.SimpleQueue[Any]) -> None:
    """Put each answer the worker writes in ``inbox``, then :data:`_ENDED` when its stdout ends (or cannot be read)."""
    assert proc.stdout is not None
    try:
        while True:
            inbox.put(read_message(proc.stdout)[0])
    except (EOFError, OSError, ValueError):
        pass
    finally:
        inbox.put(_ENDED)


def _send_all(proc: subprocess.Popen[bytes], outbox: queue.SimpleQueue[Any]) -> None:
    """Write what is put in ``outbox`` to the worker's stdin, until None (then close it) or the worker ends."""
    assert proc.stdin is not None
    try:
        while (message := outbox.get()) is not None:
            write_message(proc.stdin, *message)
    except (BrokenPipeError, OSError, ValueError):  # the worker ended: its reader is told so
        pass
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            proc.stdin.close()
