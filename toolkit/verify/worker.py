"""A verifier process of ``chainops verify``'s pool (:mod:`toolkit.verify.pool`), and the check of a share of events.

It imports only what checking needs (the rules, the texts' readers, the cryptography: no DuckDB, Arrow or pandas),
so a worker holds about 25 MB at start (35 at work) where one forked from the verifier held 80. A share travels as
the events' types and the raw Arrow buffers of their payload and proofs texts (:data:`Share`), read here as UTF-8
bytes, and its verdicts come back as plain tuples.

A worker dies with the process that started it, however that ends (:func:`die_with_parent`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import signal
import sys
import threading
import traceback
from collections.abc import Iterable
from typing import Any

from .. import spec
from .messages import Texts, Verdict, read_message, write_message
from .rules import Policy, Result, verify_event
from .texts import Unreadable, read_payload, read_proofs

#: Linux's prctl option that has the kernel signal a process when its parent ends (<linux/prctl.h>).
_PR_SET_PDEATHSIG = 1


def main() -> None:
    """A worker's life: the policy and its parent's process id first, then each share's verdicts, in order, until
    its stdin closes. A share that fails is answered ``("error", traceback)``."""

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but the protocol is written to stdout
    (policy, parent), _ = read_message(stdin)
    die_with_parent(parent)
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
    threading.Thread(target=_read_all, args=(stdin, inbox), daemon=True).start()
    while True:
        share = inbox.get()
        try:
            (types, payload_nulls, proofs_nulls), (po, pd, qo, qd) = share
            rows = zip(types, texts((po, pd, payload_nulls)), texts((qo, qd, proofs_nulls)), strict=True)
            answer: Any = [as_tuple(r) for r in verify_rows(rows, policy)]
        except Exception:  # the parent says which worker failed and how
            answer = ("error", traceback.format_exc())
        write_message(stdout, answer)


def _read_all(stdin: Any, inbox: queue.SimpleQueue[Any]) -> None:
    """Put each message from the parent in ``inbox``; end the worker at once when stdin closes (the parent ended,
    or is done with it)."""
    try:
        while True:
            inbox.put(read_message(stdin))
    except (EOFError, OSError):
        pass
    finally:
        os._exit(0)


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this worker when its parent ``parent`` ends, on Linux (``prctl(PR_SET_PDEATHSIG,
    SIGKILL)``), and end now if it already has; on every system the worker also ends when its stdin closes (the
    parent's end closes it), which needs no Linux but a thread that runs."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before the line above took effect
        os._exit(1)


def texts(column: Texts) -> list[bytes | None]:
    """Each text of a column as sent (:data:`Texts`), as UTF-8 bytes (the JSON readers take them as they are)."""
    offsets, data, nulls = column
    if not offsets:
        return []
    bounds = memoryview(offsets).cast("i")
    base = bounds[0]
    out: list[bytes | None] = [data[bounds[i] - base : bounds[i + 1] - base] for i in range(len(bounds) - 1)]
    for i in nulls:
        out[i] = None
    return out


def as_tuple(result: Result) -> Verdict:
    """A verdict as it travels between processes."""
    return (str(result.verdict), result.reason, result.valid_signers, result.event_hash_matches)


def from_tuple(verdict: Verdict) -> Result:
    """A verdict back from its travelling form."""
    value, reason, valid, matches = verdict
    return Result(spec.Verdict(value), reason, valid, matches)


def verify_rows(rows: Iterable[tuple[str, str | bytes | None, str | bytes | None]], policy: Policy) -> list[Result]:
    """Verify events given as (type, payload JSON text, proofs JSON text); a text that is not JSON is invalid, a
    field the rules do not read never decides the verdict (:mod:`toolkit.verify.texts`)."""
    out = []
    for event_type, payload_text, proofs_text in rows:
        try:
            payload = read_payload(payload_text)
            proofs = read_proofs(proofs_text)
        except Unreadable:
            out.append(Result(spec.Verdict.INVALID, "payload or proofs are not JSON", 0))
            continue
        out.append(verify_event(event_type, payload, proofs, policy))
    return out
