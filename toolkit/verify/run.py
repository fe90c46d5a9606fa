"""The warehouse's proof-bearing events verified in bulk, on every core, with the verdicts stored.

One streaming query reads the events still to verify (never verified, verified against another signer set, minimum
or owner, or re-synced since) in batches straight from DuckDB, so memory stays flat in the number of events; a pool
of processes verifies each batch (public-key recovery is the cost, tens of µs a signature, and it holds the GIL);
each batch's verdicts are written to ``event_verifications`` in a transaction of their own, on a second connection,
as the next batches are verified. A run stopped part-way keeps what it wrote and the next run goes on from there.

Readers are let in between batches, as a sync lets them in (:meth:`Warehouse.yield_to_readers`): when a reader in
another process waits for the file, the batches in flight are finished and committed, the stream is closed, the
reader gets in, and a new stream reads what is still to verify (what this run committed is no longer pending). The
worker processes die with the process that started them, however it ends (:func:`_init_worker`).

Events that owe no proof (:mod:`toolkit.warehouse.proofs_owed`) are never read. A proof-bearing event whose
row was synced before proofs were kept (``proof_count > 0`` and ``proofs`` NULL) cannot be verified: it is counted
as ``not_kept`` and left for ``chainops sync --full`` to re-read.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
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
from .rules import Policy, Result, verify_event
from .signers import fingerprint
from .texts import Unreadable, read_payload, read_proofs

log = logging.getLogger("toolkit.verify")

TABLE = "event_verifications"
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

    @property
    def invalid(self) -> int:
        """Proof-bearing events whose stored verdict, against this policy, is invalid."""
        return self.standing.get(spec.Verdict.INVALID, 0)

    def summary(self) -> str:
        """One line for people: what was checked now, and the standing."""
        counts = ", ".join(f"{self.standing.get(v, 0)} {v.replace('_', ' ')}" for v in spec.Verdict)
        line = f"checked {self.checked} event(s) now on {self.workers} process(es); proof-bearing events: {counts}"
        if self.not_kept:
            line += (
                f"; {self.not_kept} not verifiable (synced before proofs were kept: run `chainops sync --full` once)"
            )
        if self.hash_mismatches:
            line += f"; {self.hash_mismatches} with a payload event_hash other than the signed hash (not judged)"
        return line


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

    Given a path, the worker processes are forked before DuckDB opens the file (a fork never copies DuckDB's
    threads mid-work); given an open :class:`Warehouse`, they are spawned (safe, slower to start)."""
    wanted = workers if workers is not None else (os.cpu_count() or 1)
    path = warehouse.path if isinstance(warehouse, Warehouse) else warehouse
    try:
        return _verify_opened(warehouse, policy, all_events, wanted, batch_rows)
    except WRITE_FAILURES as exc:  # a full disk, as sync says it: what happened, what is kept, what to do
        raise write_failure(path, exc, command="`chainops verify`") from None


def _verify_opened(
    warehouse: str | os.PathLike[str] | Warehouse, policy: Policy, all_events: bool, wanted: int, batch_rows: int
) -> VerifyResult:
    with contextlib.ExitStack() as stack:
        pool = None
        if wanted > 1:
            fork = not isinstance(warehouse, Warehouse) and "fork" in multiprocessing.get_all_start_methods()
            pool = stack.enter_context(_pool(wanted, policy, "fork" if fork else "spawn"))
        if isinstance(warehouse, Warehouse):
            return _verify(warehouse, policy, all_events, pool, wanted, batch_rows)
        if not Path(warehouse).exists():  # verifying never makes a warehouse
            raise WarehouseError(
                f"No warehouse at {warehouse}. Run `chainops sync` (or `chainops demo`) first, "
                "or point CHAINOPS_WAREHOUSE / --warehouse at an existing file."
            )
        if not holds_sync_lock(warehouse):  # held under this name, a reader kept waiting is told who holds it
            stack.enter_context(sync_lock(warehouse, holder=HOLDER))
        wh = stack.enter_context(Warehouse(Path(warehouse)))
        return _verify(wh, policy, all_events, pool, wanted, batch_rows)


@contextlib.contextmanager
def _pool(processes: int, policy: Policy, method: str) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``processes`` verifiers holding ``policy``, started at once."""
    context = multiprocessing.get_context(method)
    pool = ProcessPoolExecutor(processes, mp_context=context, initializer=_init_worker, initargs=(policy, os.getpid()))
    try:
        for f in [pool.submit(_verify_part, []) for _ in range(processes)]:
            f.result()
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


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
    pool: ProcessPoolExecutor | None,
    wanted: int,
    batch_rows: int,
) -> VerifyResult:
    params: list[Any] = [datetime.now(UTC)] if all_events else _policy_params(policy)
    pending_sql = _pending_sql(all_events)
    ((todo,),) = wh.con.execute(f"SELECT count(*) {pending_sql}", params).fetchall()
    processes = wanted if pool is not None and todo >= POOL_THRESHOLD else 1
    out = VerifyResult(workers=processes)
    while True:  # one stream of what is still to verify, until it ends; a waiting reader closes it early
        stopped = _Stopped(wh.readers_waiting)
        _verify_stream(
            wh, policy, pool if processes > 1 else None, processes, batch_rows, pending_sql, params, out, stopped
        )
        if not stopped.asked:
            break
        if wh.yield_to_readers():  # between transactions, nothing streaming: a waiting reader gets in
            log.info("stepped aside for a reader of the warehouse, then reopened it")
    _standing(wh, policy, out)
    return out


def _verify_stream(
    wh: Warehouse,
    policy: Policy,
    pool: ProcessPoolExecutor | None,
    processes: int,
    batch_rows: int,
    pending_sql: str,
    params: list[Any],
    out: VerifyResult,
    stop: Callable[[], bool],
) -> None:
    """Verify and store what one stream of the pending events yields, until it ends or ``stop()`` says so. The
    stream (its cursor, its result, its Arrow reader) is gone when this returns, so the connection may be closed."""
    reader = wh.con.cursor()  # its own connection: it streams while the main one writes each batch's verdicts
    try:
        ((database,),) = wh.con.execute("SELECT current_database()").fetchall()
        reader.execute(f'USE "{database}"')
        result = reader.sql(f"SELECT e.event_id, e.type, e.payload, e.proofs, e.write_seq {pending_sql}", params=params)
        stream = _record_batches(result, batch_rows)
        try:
            batches = (b for b in stream if b.num_rows)
            for batch, results in _verified(batches, policy, pool, processes, stop):
                _store(wh, batch, results, policy)
                _tally(out, batch, results)
        finally:
            stream.close()
    finally:
        reader.close()


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


def _verified(
    batches: Iterator[pa.RecordBatch],
    policy: Policy,
    pool: ProcessPoolExecutor | None,
    processes: int,
    stop: Callable[[], bool] = lambda: False,
) -> Iterator[tuple[pa.RecordBatch, list[Result]]]:
    """Each batch with its verdicts, in order; with a pool, each batch split across the processes and up to three
    batches in flight (the parent reads and writes while the pool verifies). Once ``stop()`` says so (checked before
    each batch is read), no further batch is read and those in flight are finished."""
    if pool is None:
        while not stop():
            batch = next(batches, None)
            if batch is None:
                return
            yield batch, verify_rows(_rows(batch), policy)
        return
    in_flight: list[tuple[pa.RecordBatch, list[Future[list[tuple[str, str | None, int, bool | None]]]]]] = []
    while not stop():
        batch = next(batches, None)
        if batch is None:
            break
        rows = _rows(batch)
        step = -(-len(rows) // processes)  # one share of the batch per process
        parts = [pool.submit(_verify_part, rows[i : i + step]) for i in range(0, len(rows), step)]
        in_flight.append((batch, parts))
        if len(in_flight) > 2:
            done, parts = in_flight.pop(0)
            yield done, _results(parts)
    for done, parts in in_flight:
        yield done, _results(parts)


def _rows(batch: pa.RecordBatch) -> list[tuple[str, str | None, str | None]]:
    """(type, payload text, proofs text) of each event of a batch."""
    cols = batch.to_pydict()
    return list(zip(cols["type"], cols["payload"], cols["proofs"], strict=True))


_POLICY: Policy | None = None

#: Linux's prctl option that has the kernel signal a process when its parent ends (<linux/prctl.h>).
_PR_SET_PDEATHSIG = 1


def _init_worker(policy: Policy, parent: int) -> None:
    """A worker's start: keep ``policy``, and die with the process ``parent`` that started the pool.

    A pool's workers otherwise outlive a parent killed with SIGKILL (reparented to init, each holding its memory for
    good). On Linux the kernel kills the worker when the parent ends (``prctl(PR_SET_PDEATHSIG, SIGKILL)``); on
    every system a thread of the worker waits on the pipe to its parent, which closes when the parent ends, and
    ends the worker then (the kernel's signal needs no thread to run, the pipe needs no Linux)."""
    global _POLICY
    _POLICY = policy
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before the line above took effect
        os._exit(1)
    started_by = multiprocessing.parent_process()
    if started_by is not None and started_by.sentinel is not None:
        threading.Thread(target=_exit_with_parent, args=(started_by.sentinel,), daemon=True).start()


def _exit_with_parent(sentinel: int) -> None:
    """End this worker at once when the pipe ``sentinel`` to its parent closes (the parent ended)."""
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _verify_part(rows: Sequence[tuple[str, str | None, str | None]]) -> list[tuple[str, str | None, int, bool | None]]:
    """A worker's share of a batch; plain tuples travel back cheaper than dataclasses."""
    assert _POLICY is not None, "the pool's initializer sets the policy"
    return [(str(r.verdict), r.reason, r.valid_signers, r.event_hash_matches) for r in verify_rows(rows, _POLICY)]


def _results(parts: list[Future[list[tuple[str, str | None, int, bool | None]]]]) -> list[Result]:
    return [Result(spec.Verdict(v), reason, n, m) for part in parts for v, reason, n, m in part.result()]


def verify_rows(rows: Sequence[tuple[str, str | None, str | None]], policy: Policy) -> list[Result]:
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


def _store(wh: Warehouse, batch: pa.RecordBatch, results: list[Result], policy: Policy) -> None:
    signers, minimum, owner = _policy_params(policy)
    n = len(results)
    table = pa.table(
        {
            "event_id": batch.column("event_id"),
            "verdict": pa.array([str(r.verdict) for r in results], pa.string()),
            "reason": pa.array([r.reason for r in results], pa.string()),
            "valid_signers": pa.array([r.valid_signers for r in results], pa.int32()),
            "event_hash_matches": pa.array([r.event_hash_matches for r in results], pa.bool_()),
            "checked_at": pa.array([datetime.now(UTC)] * n, pa.timestamp("us", tz="UTC")),
            "signers": pa.array([signers] * n, pa.string()),
            "min_signatures": pa.array([minimum] * n, pa.int32()),
            "workflow_owner": pa.array([owner] * n, pa.string()),
            "event_write_seq": batch.column("write_seq"),
        }
    )
    con = wh.con
    con.register("_incoming_verifications", table)
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(f"DELETE FROM {TABLE} WHERE event_id IN (SELECT event_id FROM _incoming_verifications)")
            con.execute(f"INSERT INTO {TABLE} BY NAME SELECT * FROM _incoming_verifications")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    finally:
        con.unregister("_incoming_verifications")


def _tally(out: VerifyResult, batch: pa.RecordBatch, results: list[Result]) -> None:
    out.checked += len(results)
    ids = batch.column("event_id").to_pylist()
    for event_id, r in zip(ids, results, strict=True):
        out.checked_by_verdict[r.verdict] = out.checked_by_verdict.get(r.verdict, 0) + 1
        if r.verdict == spec.Verdict.INVALID and len(out.invalid_examples) < 20:
            out.invalid_examples.append((event_id, r.reason or ""))


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
