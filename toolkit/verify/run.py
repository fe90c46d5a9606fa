"""The warehouse's proof-bearing events verified in bulk, on every core, with the verdicts stored.

One streaming query reads the events still to verify (never verified, verified against another signer set, minimum
or owner, or re-synced since) in Arrow batches straight from DuckDB, only the columns verification needs, so memory
stays flat in the number of events. With more than one process, a pool of small processes
(:mod:`toolkit.verify.pool`, started fresh first) checks a first batch read ahead while the warehouse opens for
writing (:mod:`toolkit.verify.ahead`), then this process and the pool share every batch chunk by chunk
(:mod:`toolkit.verify.split`), each chunk sent as the Arrow buffers of its texts (public-key recovery is the cost,
tens of µs a signature, and it holds the GIL); with one process, or few events, this process verifies them all.
Each batch's verdicts are written to ``event_verifications`` in a transaction of their own as the next chunks are
checked. A run stopped part-way keeps what it wrote and the next run goes on from there.

Readers are let in between batches, as a sync lets them in (:meth:`Warehouse.yield_to_readers`): when a reader in
another process waits for the file, the batches in flight are finished and committed, the stream is closed, the
reader gets in, and a new stream reads what is still to verify (what this run committed is no longer pending). The
worker processes die with the process that started them, however it ends (:mod:`toolkit.verify.pool`).

Events that owe no proof (:mod:`toolkit.warehouse.proofs_owed`) are never read. A proof-bearing event whose
row was synced before proofs were kept (``proof_count > 0`` and ``proofs`` NULL) cannot be verified: it is counted
as ``not_kept`` and left for ``chainops sync --full`` to re-read.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from .. import spec
from ..errors import WarehouseError
from ..warehouse import Warehouse, sync_lock
from ..warehouse.failures import WRITE_FAILURES, write_failure
from ..warehouse.proofs_owed import requires_proof_sql
from ..warehouse.store import holds_sync_lock
from . import columns
from .ahead import COLUMNS_SQL, read_ahead
from .pool import Pool
from .rules import Policy, Result
from .signers import fingerprint
from .split import Split, hand_out
from .split import columns as batch_columns
from .worker import verify_rows

__all__ = ["TABLE", "VerifyResult", "requires_proof_sql", "verify_rows", "verify_warehouse"]

log = logging.getLogger("toolkit.verify")

TABLE = "event_verifications"
#: A batch the pool got before the warehouse opened, all of it, and the rows of each worker's share (split.hand_out).
_Ahead = tuple[pa.RecordBatch, int]
#: What the writer lock file names while a verify holds the warehouse (a waiting reader's message quotes it).
HOLDER = "chainops verify"
#: Events read and verified per batch (a batch's rows, payloads and proofs are what a run holds in memory).
BATCH_ROWS = 2000
#: Below this many events to verify, one process does it (starting a pool costs more than it saves).
POOL_THRESHOLD = 4000


@dataclass
class VerifyResult:
    """What a verification run did, and the standing of every proof-bearing event against its policy."""

    checked: int = 0
    checked_by_verdict: dict[str, int] = field(default_factory=dict)
    #: every proof-bearing event verified against this policy, by verdict (those checked before included)
    standing: dict[str, int] = field(default_factory=dict)
    not_kept: int = 0
    hash_mismatches: int = 0
    workers: int = 1
    invalid_examples: list[tuple[str, str]] = field(default_factory=list)
    #: where this process's time went, by phase: (wall seconds, CPU seconds of the process, DuckDB's threads and the
    #: pool's threads writing to and reading from the workers included); the workers' own time is not in it
    #: (benchmarks/verify_bench.py)
    phases: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def invalid(self) -> int:
        """Proof-bearing events whose stored verdict, against this policy, is invalid."""
        return self.standing.get(spec.Verdict.INVALID, 0)

    def summary(self) -> str:
        """One line for people: what was checked now, and the standing."""
        # counts with thousands separators, as every table of the toolkit shows them
        counts = ", ".join(f"{self.standing.get(v, 0):,} {v.replace('_', ' ')}" for v in spec.Verdict)
        line = f"checked {self.checked:,} event(s) now on {self.workers} process(es); proof-bearing events: {counts}"
        if self.not_kept:
            line += (
                f"; {self.not_kept:,} not verifiable (synced before proofs were kept: run `chainops sync --full` once)"
            )
        if self.hash_mismatches:
            line += f"; {self.hash_mismatches:,} with a payload event_hash other than the signed hash (not judged)"
        return line


#: The memory limit of verify's connection (its joins and counts spill to ``<warehouse>.tmp`` past it): under DuckDB's
#: default (80% of the machine) it kept every block it read, 1.2 GB on a warehouse of ten million events.
VERIFY_MEMORY_LIMIT = "128MB"


def verify_warehouse(
    warehouse: str | os.PathLike[str] | Warehouse,
    policy: Policy,
    *,
    all_events: bool = False,
    workers: int | None = None,
    batch_rows: int = BATCH_ROWS,
) -> VerifyResult:
    """Verify the proof-bearing events not verified yet against ``policy`` (``all_events``: every one) and store
    the verdicts in ``event_verifications``; returns the counts. ``workers`` processes (default: every core).

    The worker processes are started fresh (interpreters importing only :mod:`toolkit.verify.worker`) before the
    warehouse opens, and given a first batch read ahead, so they start, and check it, while it does."""
    wanted = workers if workers is not None else (os.cpu_count() or 1)
    path = warehouse.path if isinstance(warehouse, Warehouse) else warehouse
    clock = _Clock()
    try:
        with clock("close"):  # what is left when the ExitStack ends: the pool's end, the warehouse's checkpoint
            out = _verify_opened(warehouse, policy, all_events, wanted, batch_rows, clock)
    except WRITE_FAILURES as exc:  # a full disk, as sync says it: what happened, what is kept, what to do
        raise write_failure(path, exc, command="`chainops verify`") from None
    out.phases = clock.phases()
    return out


class _Clock:
    """Wall and CPU seconds by phase, counted at the batch's grain (a few clock reads a batch)."""

    def __init__(self) -> None:
        self._spent: dict[str, list[float]] = {}
        self._open: list[str] = []

    @contextlib.contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        self._open.append(phase)
        try:
            yield
        finally:
            self._open.pop()
            spent = (time.perf_counter() - wall, time.process_time() - cpu)
            self._add(phase, spent, 1)
            if self._open:  # an enclosing phase does not count what its inner phases did
                self._add(self._open[-1], spent, -1)

    def _add(self, phase: str, spent: tuple[float, float], sign: int) -> None:
        mine = self._spent.setdefault(phase, [0.0, 0.0])
        mine[0] += sign * spent[0]
        mine[1] += sign * spent[1]

    def phases(self) -> dict[str, tuple[float, float]]:
        """Each phase's (wall, CPU) seconds."""
        return {k: (max(w, 0.0), max(c, 0.0)) for k, (w, c) in self._spent.items()}


@dataclass
class _Start:
    """How a run starts: the query parameters of what is pending, and, when it was read ahead before the warehouse
    opened for writing (:mod:`toolkit.verify.ahead`), how many events are pending (exact below the pool's threshold,
    a lower bound above it) and the batch the pool got, with its shares."""

    params: list[Any]
    todo: int | None = None
    ahead: _Ahead | None = None


def _verify_opened(
    warehouse: str | os.PathLike[str] | Warehouse,
    policy: Policy,
    all_events: bool,
    wanted: int,
    batch_rows: int,
    clock: _Clock,
) -> VerifyResult:
    start = _Start([datetime.now(UTC)] if all_events else _policy_params(policy))
    with contextlib.ExitStack() as stack:
        pool = None
        if wanted > 1:
            with clock("start the pool"):
                pool = stack.enter_context(Pool(wanted - 1, policy))  # this process is the other
        if isinstance(warehouse, Warehouse):
            return _verify(warehouse, policy, all_events, pool, wanted, batch_rows, clock, start)
        if not Path(warehouse).exists():  # verifying never makes a warehouse
            raise WarehouseError(
                f"No warehouse at {warehouse}. Run `chainops sync` (or `chainops demo`) first, "
                "or point CHAINOPS_WAREHOUSE / --warehouse at an existing file."
            )
        with clock("open the warehouse"):
            if not holds_sync_lock(warehouse):  # held under this name, a reader kept waiting is told who holds it
                stack.enter_context(sync_lock(warehouse, holder=HOLDER))
        if pool is not None:
            with clock("read ahead for the pool"):
                _read_ahead(Path(warehouse), all_events, pool, batch_rows, start)
        with clock("open the warehouse"):
            wh = stack.enter_context(Warehouse(Path(warehouse), memory_limit=VERIFY_MEMORY_LIMIT))
            # verify writes only its verdicts: merging the events' partial row groups a first sync leaves (most of
            # its checkpoint otherwise) is left to the next sync, as that sync leaves it (loader.tuning)
            wh.configure(max_vacuum_tasks=0)
        return _verify(wh, policy, all_events, pool, wanted, batch_rows, clock, start)


def _read_ahead(path: Path, all_events: bool, pool: Pool, batch_rows: int, start: _Start) -> None:
    """See whether enough is pending for the pool and hand its first events, a batch a worker, to the pool before the
    warehouse opens for writing (the workers check them meanwhile; :mod:`toolkit.verify.ahead`), recording both in
    ``start``."""
    # a batch for each worker: about what one checks while the warehouse opens (a quarter of a second at 2,000)
    rows = batch_rows * pool.size
    ahead = read_ahead(path, _pending_sql(all_events), start.params, rows, POOL_THRESHOLD, VERIFY_MEMORY_LIMIT)
    if ahead is None:
        return
    start.todo = ahead.todo
    if ahead.batch is not None and ahead.batch.num_rows:
        start.ahead = (ahead.batch, hand_out(pool, ahead.batch))


def _policy_params(policy: Policy) -> list[Any]:
    return [fingerprint(policy.signers), policy.min_signatures, policy.stored_owner()]


def _pending_sql(all_events: bool) -> str:
    """The events still to verify. With ``all_events``, every one this run has not checked yet (the first
    parameter is the run's start): a stream opened again after letting a reader in goes on where it stopped."""
    stale = (
        "v.event_id IS NULL OR v.checked_at < ?"
        if all_events
        else (
            "v.event_id IS NULL OR v.signers <> ? OR v.min_signatures <> ? OR v.workflow_owner <> ? "
            "OR v.event_write_seq IS DISTINCT FROM e.write_seq"
        )
    )
    return (
        f"FROM events e LEFT JOIN {TABLE} v ON v.event_id = e.event_id "
        f"WHERE {requires_proof_sql('e')} AND (e.proofs IS NOT NULL OR coalesce(e.proof_count, 0) = 0) AND ({stale})"
    )


def _verify(
    wh: Warehouse,
    policy: Policy,
    all_events: bool,
    pool: Pool | None,
    wanted: int,
    batch_rows: int,
    clock: _Clock,
    start: _Start,
) -> VerifyResult:
    params = start.params
    pending_sql = _pending_sql(all_events)
    todo = start.todo
    if todo is None:
        with clock("count what to verify"):
            ((todo,),) = wh.con.execute(f"SELECT count(*) {pending_sql}", params).fetchall()
    processes = wanted if pool is not None and todo >= POOL_THRESHOLD else 1
    out = VerifyResult(workers=processes)
    ahead = start.ahead if processes > 1 else None
    while True:  # one stream of what is still to verify, until it ends; a waiting reader closes it early
        stopped = _Stopped(wh.readers_waiting)
        _verify_stream(
            wh,
            policy,
            pool if processes > 1 else None,
            batch_rows,
            pending_sql,
            params,
            out,
            stopped,
            clock,
            ahead,
        )
        ahead = None  # the first stream stores the batch read ahead, however it ends
        if not stopped.asked:
            break
        with clock("let readers in"):
            if wh.yield_to_readers():  # between transactions, nothing streaming: a waiting reader gets in
                log.info("stepped aside for a reader of the warehouse, then reopened it")
    with clock("standing"):
        _standing(wh, policy, out)
    return out


def _verify_stream(
    wh: Warehouse,
    policy: Policy,
    pool: Pool | None,
    batch_rows: int,
    pending_sql: str,
    params: list[Any],
    out: VerifyResult,
    stop: Callable[[], bool],
    clock: _Clock,
    ahead: _Ahead | None = None,
) -> None:
    """Verify and store what one stream of the pending events yields, until it ends or ``stop()`` says so; with
    ``ahead`` (a batch the pool has already), that batch first, and the stream without its events. The stream (its
    cursor, its result, its Arrow reader) is gone when this returns, so the connection may be closed."""
    reader = wh.con.cursor()  # its own connection: it streams while the main one writes each batch's verdicts
    try:
        ((database,),) = wh.con.execute("SELECT current_database()").fetchall()
        reader.execute(f'USE "{database}"')
        sql = f"{COLUMNS_SQL} {pending_sql}"
        if ahead is not None:
            # read before this stream's snapshot, its verdicts are written after it began: the stream leaves it out
            reader.register(_AHEAD_VIEW, pa.table({"event_id": ahead[0].column("event_id")}))
            sql += f" AND e.event_id NOT IN (SELECT event_id FROM {_AHEAD_VIEW})"
        result = reader.sql(sql, params=params)
        stream = _record_batches(result, batch_rows)
        try:
            batches = _read(stream, clock)
            for batch, results in _verified(batches, policy, pool, stop, clock, ahead):
                with clock("write verdicts"):
                    _store(wh, batch, results, policy)
                    _tally(out, batch, results)
        finally:
            stream.close()
    finally:
        reader.close()


#: The view of the events read ahead, on the stream's connection (:func:`_verify_stream`).
_AHEAD_VIEW = "_verify_read_ahead"


class _Stopped:
    """Whether to stop reading new batches: asked once ``wanted()`` says so (a reader waits for the file)."""

    def __init__(self, wanted: Callable[[], bool]) -> None:
        self._wanted = wanted
        self.asked = False

    def __call__(self) -> bool:
        self.asked = self.asked or self._wanted()
        return self.asked


def _record_batches(result: Any, rows: int) -> pa.RecordBatchReader:
    """A streaming reader of a query's result (the method's name moved across DuckDB 1.4 and 2.0)."""
    method = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
    return method(rows)


def _read(stream: pa.RecordBatchReader, clock: _Clock) -> Iterator[pa.RecordBatch]:
    """The stream's batches that hold rows, each read in the phase that counts reading."""
    while True:
        with clock("read events"):
            try:
                batch = stream.read_next_batch()
            except StopIteration:
                return
        if batch.num_rows:
            yield batch


def _verified(
    batches: Iterator[pa.RecordBatch],
    policy: Policy,
    pool: Pool | None,
    stop: Callable[[], bool],
    clock: _Clock,
    ahead: _Ahead | None = None,
) -> Iterator[tuple[pa.RecordBatch, list[Result]]]:
    """Each batch with its verdicts, in order: checked here, or, with a pool, here and by the workers together
    (:mod:`toolkit.verify.split`), a batch the pool had ``ahead`` first. Once ``stop()`` says so (checked before
    each batch is read), no further batch is read and those in flight are finished."""
    if pool is not None:
        yield from Split(batches, pool, policy, stop, clock).verified(ahead)
        return
    while not stop():
        batch = next(batches, None)
        if batch is None:
            return
        with clock("verify in this process"):
            results = verify_rows(list(zip(*batch_columns(batch), strict=True)), policy)
        yield batch, results


def _store(wh: Warehouse, batch: pa.RecordBatch, results: list[Result], policy: Policy) -> None:
    """A batch's verdicts written in a transaction of their own: one Arrow table of what differs by event, what is
    the same for the batch (the policy, the time) bound as parameters."""
    table = pa.table(
        {
            "event_id": batch.column("event_id"),
            "verdict": columns.texts([str(r.verdict) for r in results]),
            "reason": columns.texts([r.reason for r in results]),
            "valid_signers": columns.int32s([r.valid_signers for r in results]),
            "event_hash_matches": columns.bools([r.event_hash_matches for r in results]),
            "event_write_seq": batch.column("write_seq"),
        }
    )
    con = wh.con
    con.register("_incoming_verifications", table)
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(f"DELETE FROM {TABLE} WHERE event_id IN (SELECT event_id FROM _incoming_verifications)")
            con.execute(
                f"INSERT INTO {TABLE} BY NAME SELECT *, CAST(? AS TIMESTAMPTZ) AS checked_at, ? AS signers, "
                "CAST(? AS INTEGER) AS min_signatures, ? AS workflow_owner FROM _incoming_verifications",
                [datetime.now(UTC), *_policy_params(policy)],
            )
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    finally:
        con.unregister("_incoming_verifications")


def _tally(out: VerifyResult, batch: pa.RecordBatch, results: list[Result]) -> None:
    out.checked += len(results)
    ids = batch.column("event_id")
    for i, r in enumerate(results):
        out.checked_by_verdict[r.verdict] = out.checked_by_verdict.get(r.verdict, 0) + 1
        if r.verdict == spec.Verdict.INVALID and len(out.invalid_examples) < 20:
            out.invalid_examples.append((ids[i].as_py(), r.reason or ""))


def _standing(wh: Warehouse, policy: Policy, out: VerifyResult) -> None:
    """Every proof-bearing event's stored verdict against this policy, the unverifiable ones, the mismatches."""
    rows = wh.con.execute(
        f"SELECT v.verdict, count(*), count(*) FILTER (WHERE NOT v.event_hash_matches) "
        f"FROM events e JOIN {TABLE} v ON v.event_id = e.event_id "
        f"WHERE {requires_proof_sql('e')} AND v.signers = ? AND v.min_signatures = ? AND v.workflow_owner = ? "
        "GROUP BY v.verdict",
        _policy_params(policy),
    ).fetchall()
    out.standing = {verdict: int(n) for verdict, n, _ in rows}
    out.hash_mismatches = sum(int(m) for _, _, m in rows)
    ((out.not_kept,),) = wh.con.execute(
        f"SELECT count(*) FROM events e WHERE {requires_proof_sql('e')} AND e.proofs IS NULL "
        "AND coalesce(e.proof_count, 0) > 0"
    ).fetchall()
    if not out.invalid_examples and out.invalid:
        out.invalid_examples = [
            (str(i), str(r))
            for i, r in wh.con.execute(
                f"SELECT event_id, reason FROM {TABLE} WHERE verdict = ? AND signers = ? AND min_signatures = ? "
                "AND workflow_owner = ? ORDER BY event_id LIMIT 20",
                [str(spec.Verdict.INVALID), *_policy_params(policy)],
            ).fetchall()
        ]
