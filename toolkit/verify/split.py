"""How verify shares the checking of its batches between its own process and the pool's workers.

Each batch is cut into chunks of :data:`CHUNK_ROWS` events. Every worker is kept :data:`DEPTH` chunks ahead: whenever
its queue runs low, the next chunks go to it, and this process checks the next chunk itself, reading a new batch when
none is left. So the share of each process follows how fast it goes, chunk by chunk, whatever else this process does
meanwhile (reading, writing verdicts): a worker never waits for it while its queue lasts, and it never waits for a
worker while chunks are left. Once the last batch is read, a worker gets a chunk only while it has fewer queued than
are left, so the two finish together. A batch's verdicts come out, in order, as soon as all its chunks are
answered; no more than :data:`MOST_OPEN` batches are held at once (a worker that lags holds back the reading, not
the memory).

A batch the pool got before the warehouse opened (:mod:`toolkit.verify.ahead`) goes first, in one share a worker.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import pyarrow as pa

from .messages import Share
from .pool import Pool
from .rules import Policy, Result
from .worker import from_tuple, verify_rows

#: Events in a chunk: the unit a worker or this process takes (about 30 ms of checking).
CHUNK_ROWS = 200
#: Chunks each worker has queued (sent, not answered yet): enough to cover what this process does between two
#: hand-outs (a chunk of its own, a batch's verdicts written, the next batch read).
DEPTH = 3
#: Batches held at most (read, their verdicts not yet written): a worker slow on an early batch holds back the
#: reading of further ones, so memory stays bounded whatever the workers do.
MOST_OPEN = 3


@dataclass
class _Batch:
    """A batch whose parts are being checked: each part's verdicts, in the batch's order, once they are known."""

    batch: pa.RecordBatch
    parts: list[list[Result] | None]
    missing: int = field(init=False)

    def __post_init__(self) -> None:
        self.missing = len(self.parts)

    def done(self, part: int, results: list[Result]) -> None:
        self.parts[part] = results
        self.missing -= 1

    def results(self) -> list[Result]:
        return [r for part in self.parts for r in part or ()]


@dataclass(frozen=True)
class _Part:
    """Rows ``start`` to ``start + rows`` of a batch, the ``index``-th part of it."""

    of: _Batch
    index: int
    start: int
    rows: int


class Split:
    """The batches of ``batches`` checked by this process and the ``pool`` together (see the module's text); ``clock``
    counts each phase, ``stop()`` (asked before each batch is read) ends reading."""

    def __init__(
        self,
        batches: Iterator[pa.RecordBatch],
        pool: Pool,
        policy: Policy,
        stop: Callable[[], bool],
        clock: Callable[[str], AbstractContextManager[None]],
    ) -> None:
        self._batches = batches
        self._pool = pool
        self._policy = policy
        self._stop = stop
        self._clock = clock
        self._todo: deque[_Part] = deque()  # parts nobody checks yet, in order
        self._open: deque[_Batch] = deque()  # batches not given out whole yet, in order
        self._sent: list[deque[_Part]] = [deque() for _ in range(pool.size)]  # each worker's parts, in order
        self._read_all = False

    def verified(
        self, ahead: tuple[pa.RecordBatch, int] | None = None
    ) -> Iterator[tuple[pa.RecordBatch, list[Result]]]:
        """Each batch with its verdicts, in order; ``ahead``: a batch already sent, in shares of ``step`` rows, to
        the first workers (:func:`hand_out`), which comes first."""
        if ahead is not None:
            batch, step = ahead
            starts = range(0, batch.num_rows, step)
            whole = _Batch(batch, [None] * len(starts))
            self._open.append(whole)
            for worker, start in enumerate(starts):
                self._sent[worker].append(_Part(whole, worker, start, min(step, batch.num_rows - start)))
        while True:
            self._hand_out()
            with self._clock("wait for the pool"):  # only what is there already: no wait
                self._collect()
            while self._open and not self._open[0].missing:
                done = self._open.popleft()
                yield done.batch, done.results()
                self._hand_out()  # the workers' queues ran down while the verdicts were written
            if self._todo or self._read():
                part = self._todo.popleft()
                with self._clock("verify in this process"):
                    rows = list(zip(*columns(part.of.batch.slice(part.start, part.rows)), strict=True))
                    part.of.done(part.index, verify_rows(rows, self._policy))
            elif any(self._sent):
                with self._clock("wait for the pool"):
                    self._collect(wait=True)
            else:  # nothing left to check or answer: every batch was given out above
                return

    def _read(self) -> bool:
        """Cut the next batch into parts to check, unless it is all read, ``stop()`` says so, or :data:`MOST_OPEN`
        batches are held already."""
        if len(self._open) >= MOST_OPEN:
            return False
        if self._read_all or self._stop():
            self._read_all = True
            return False
        batch = next(self._batches, None)
        if batch is None:
            self._read_all = True
            return False
        starts = range(0, batch.num_rows, CHUNK_ROWS)
        whole = _Batch(batch, [None] * len(starts))
        self._open.append(whole)
        self._todo.extend(_Part(whole, i, s, min(CHUNK_ROWS, batch.num_rows - s)) for i, s in enumerate(starts))
        return True

    def _hand_out(self) -> None:
        """Top up each worker's queue to :data:`DEPTH` parts; once everything is read, only while it has fewer
        queued than are left (then this process takes the rest, and both finish about together)."""
        for worker, sent in enumerate(self._sent):
            while len(sent) < DEPTH and (self._todo or self._read()):
                if self._read_all and len(sent) >= len(self._todo):
                    break
                part = self._todo.popleft()
                with self._clock("hand to the pool"):
                    self._pool.send(worker, *share(part.of.batch.slice(part.start, part.rows)))
                sent.append(part)

    def _collect(self, *, wait: bool = False) -> None:
        """Take every answer the workers have given; with ``wait``, wait for one at least (the oldest part's)."""
        if wait:
            oldest = min((s for s in self._sent if s), key=lambda s: _order(self._open, s[0]))
            worker = self._sent.index(oldest)
            self._take(worker)
        for worker, sent in enumerate(self._sent):
            while sent and self._pool.ready(worker):
                self._take(worker)

    def _take(self, worker: int) -> None:
        part = self._sent[worker].popleft()
        part.of.done(part.index, [from_tuple(v) for v in self._pool.receive(worker)])


def _order(open_batches: deque[_Batch], part: _Part) -> tuple[int, int]:
    """Where a part stands: its batch's place among those still open, then its place in the batch."""
    for place, batch in enumerate(open_batches):
        if batch is part.of:
            return place, part.index
    return len(open_batches), part.index


def hand_out(pool: Pool, batch: pa.RecordBatch) -> int:
    """Send all of ``batch`` to the workers, in as even shares as may be, one a worker from the first; returns the
    rows of a share (the last may have fewer)."""
    step = max(1, -(-batch.num_rows // pool.size))
    for worker, start in enumerate(range(0, batch.num_rows, step)):
        pool.send(worker, *share(batch.slice(start, step)))
    return step


def share(batch: pa.RecordBatch) -> tuple[Share, list[memoryview]]:
    """A share of a batch as it travels to a worker (:data:`toolkit.verify.worker.Share`): the types as a list, the
    payload and proofs texts as views of their Arrow buffers (no Python text is made here for each event)."""
    payload_nulls, payload = _text_buffers(batch.column("payload"))
    proofs_nulls, proofs = _text_buffers(batch.column("proofs"))
    return (batch.column("type").to_pylist(), payload_nulls, proofs_nulls), [*payload, *proofs]


def _text_buffers(column: pa.Array) -> tuple[list[int], list[memoryview]]:
    """A string column's NULL rows, and views of its offsets (int32, this machine's order) and of the bytes they
    point into, from the first offset to the last."""
    if column.type != pa.string():
        column = column.cast(pa.string())
    n, first = len(column), column.offset
    _, offsets, data = column.buffers()
    bounds = memoryview(offsets).cast("B")[4 * first : 4 * (first + n + 1)] if offsets is not None else memoryview(b"")
    texts = memoryview(data).cast("B") if data is not None else memoryview(b"")
    if bounds.nbytes:
        ints = bounds.cast("i")
        texts = texts[ints[0] : ints[n]]
    nulls = [i for i, v in enumerate(column.is_null().to_pylist()) if v] if column.null_count else []
    return nulls, [bounds, texts]


def columns(batch: pa.RecordBatch) -> tuple[list[str], list[str | None], list[str | None]]:
    """The types, payload texts and proofs texts of a batch's events, as plain lists."""
    return (
        batch.column("type").to_pylist(),
        batch.column("payload").to_pylist(),
        batch.column("proofs").to_pylist(),
    )


__all__ = ["CHUNK_ROWS", "DEPTH", "MOST_OPEN", "Split", "columns", "hand_out", "share"]
