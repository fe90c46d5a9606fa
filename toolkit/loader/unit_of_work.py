"""The unit of work of a sync run: the one owner of the warehouse connection.

Everything a run does to the warehouse goes through one :class:`UnitOfWork`, on its own thread, in submission
order: the writes the fetchers yield (:class:`Write`, queued so that DuckDB's work overlaps the fetching; DuckDB
releases the GIL while it executes) and every read and maintenance step (:meth:`UnitOfWork.call`, which waits and
returns the result). No other code of the run touches the connection, so no convention is needed about who may use
it when, and the connection may be closed and reopened (to let a reader in, or to hand the models the whole memory
limit) on the thread that owns it.

It holds the commit policy:

- rows are written in a transaction that is committed once it holds :data:`TRANSACTION_ROWS` rows, before any
  read (:meth:`UnitOfWork.call`), and early when a reader in another process waits for the file (then the reader is
  let in before the next transaction opens);
- each stream's cursor is written in the same transaction as the rows it covers, just before the commit, so a run
  killed at any point resumes from a cursor whose rows are stored;
- events are appended, and the stored copies of the events a transaction appended are deleted once, at its commit
  (a superseded copy is one that another transaction wrote);
- a failed write or commit rolls the whole transaction back (its cursors with it) and its error is raised in the
  caller at the next :meth:`UnitOfWork.write` or :meth:`UnitOfWork.call`.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from ..warehouse import Warehouse
from ..warehouse.writer import Writer

log = logging.getLogger("toolkit.loader")
T = TypeVar("T")

#: Rows written before the open transaction is committed: a few large commits cost less than many small ones
#: (each writes and syncs the WAL). A crash loses at most this much work, never data, since every cursor is
#: committed with the rows it covers. DuckDB holds a transaction's rows in memory until its commit, so this bounds
#: the sync's peak too: 30,000 events (about 1.4 KB each) peak at about 370 MB where 50,000 reached 410 MB, at the
#: same CPU-seconds (benchmarks/cpu_bench.py, 200,000 events); 20,000 cost more CPU in the same runs.
TRANSACTION_ROWS = 30_000


@dataclass(frozen=True)
class Write:
    """Rows a fetcher hands to the unit of work: a converted batch of ``table``, with the bookkeeping committed in
    the same transaction.

    ``cursor`` is ``(stream, value)`` saved in ``sync_state`` with these rows; ``transactions`` the
    ``operation_transactions`` rows of an ``operations`` batch; ``done_refetch`` ``(kind, ids)`` taken off the
    refetch queue."""

    table: str
    batch: pa.RecordBatch | pa.Table
    cursor: tuple[str, Any] | None = None
    transactions: pa.RecordBatch | None = None
    done_refetch: tuple[str, Sequence[str]] | None = None


class UnitOfWork:
    """Owns the warehouse of one sync run (opened and closed on its own thread); see the module docstring.

    ``open_warehouse`` opens it; ``on_commit(new, updated)`` is told, per table, the rows of every transaction that
    committed. Use as a context manager: on exit the open transaction is dropped (commit first with
    :meth:`commit`) and the warehouse closed.
    """

    def __init__(
        self,
        open_warehouse: Callable[[], Warehouse],
        on_commit: Callable[[Counter[str], Counter[str]], None] | None = None,
    ) -> None:
        self._on_commit = on_commit
        self._wh: Warehouse | None = None
        self._writer = Writer(depth=1)  # one batch queued while one is written: little memory, still overlapped
        # the open transaction (touched only on the writer thread): rows written in it, and its counts
        self._open = False
        self._open_rows = 0
        self._pending_rows: Counter[str] = Counter()
        self._pending_updated: Counter[str] = Counter()
        self._pending_cursors: dict[str, Any] = {}  # written once per transaction, just before it commits
        self._appended_events: dict[str | None, list[pa.Array]] = {}  # per channel, event ids written in it

        def open_it() -> None:
            self._wh = open_warehouse()

        try:
            self._writer.submit(open_it)
            self._writer.drain()
        except BaseException:
            self._writer.close()
            raise

    def __enter__(self) -> UnitOfWork:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _warehouse(self) -> Warehouse:
        assert self._wh is not None, "the warehouse is open from construction until close()"
        return self._wh

    # ---- the caller's side ---------------------------------------------------------------------------------

    def write(self, item: Write) -> None:
        """Queue ``item`` for the open transaction (blocks while one item waits); raises an earlier error first."""
        self._writer.submit(lambda: self._in_transaction(lambda: self._store(item)))

    def call(self, fn: Callable[[Warehouse], T]) -> T:
        """Commit what has been written, then run ``fn(warehouse)`` on the unit of work's thread and return its
        result (or raise its error, or an earlier write's)."""
        out: list[T] = []

        def work() -> None:
            self._commit()
            out.append(fn(self._warehouse))

        self._writer.submit(work)
        self._writer.drain()
        return out[0]

    def commit(self) -> None:
        """Commit what has been written and wait for it; raises an earlier write's error, if any."""
        self.call(lambda _: None)

    def close(self) -> None:
        """Drop the open transaction (a caller that wants it kept commits first), close the warehouse and stop the
        thread. Errors of queued work are not raised here: the caller has had them, or has its own on its way."""
        with contextlib.suppress(BaseException):
            self._writer.drain()
        self._writer.submit(self._close_warehouse)
        self._writer.close()

    # ---- the thread's side ---------------------------------------------------------------------------------

    def _close_warehouse(self) -> None:
        self._rollback()
        if self._wh is not None:
            self._wh.close()
            self._wh = None

    def _store(self, item: Write) -> int:
        """Upsert one item's rows in the open transaction and note its bookkeeping; returns its rows."""
        wh = self._warehouse
        if item.table == "events":
            new, updated = self._append_events(item.batch)
        else:
            new, updated = wh.upsert(item.table, item.batch)
        self._pending_rows[item.table] += new
        self._pending_updated[item.table] += updated
        if item.transactions is not None:
            tx_new, tx_updated = wh.upsert("operation_transactions", item.transactions)
            self._pending_rows["operation_transactions"] += tx_new
            self._pending_updated["operation_transactions"] += tx_updated
        if item.cursor is not None:
            self._pending_cursors[item.cursor[0]] = item.cursor[1]
        if item.done_refetch is not None:
            wh.drop_refetched(*item.done_refetch)
        return item.batch.num_rows

    def _append_events(self, batch: pa.RecordBatch | pa.Table) -> tuple[int, int]:
        """Store a batch of one channel's events, returning ``(new, updated)`` as an upsert does.

        Replacing the stored copies of a batch's events costs a scan of the channel's stored ids, so doing it per
        batch made a long first sync quadratic (at 3.5M events, a quarter of the events phase). The batch is
        appended, and the copies written before this transaction are deleted once, when it commits
        (:meth:`_delete_superseded_events`). A batch holding an event already appended in this transaction, or
        spanning channels, is upserted at once, which replaces that copy too.
        """
        wh = self._warehouse
        channels = pc.unique(batch.column("channel_id"))
        channel = channels[0].as_py() if len(channels) == 1 else None
        ids = batch.column("event_id")
        ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
        earlier = [*self._appended_events.get(channel, []), *self._appended_events.get(None, [])]
        at_once = channel is None or bool(
            earlier and pc.any(pc.is_in(ids, value_set=pa.concat_arrays(earlier))).as_py()
        )
        # noted either way: a later batch repeating one of these events must replace this transaction's copy
        self._appended_events.setdefault(channel, []).append(ids)
        if at_once:
            return wh.upsert("events", batch)
        return wh.insert("events", batch), 0

    def _delete_superseded_events(self) -> None:
        """(Before a commit.) Delete the stored copies, written before this transaction, of the events it appended,
        and count them as updated rather than new."""
        for channel, ids in self._appended_events.items():
            if channel is None:  # batches spanning channels were upserted at once
                continue
            replaced = self._warehouse.delete_superseded("events", channel, pa.concat_arrays(ids))
            self._pending_rows["events"] -= replaced
            self._pending_updated["events"] += replaced
        self._appended_events = {}

    def _in_transaction(self, work: Callable[[], int]) -> None:
        """Run ``work`` in the open transaction, opening one first (after letting any waiting reader in) and
        committing it once it holds :data:`TRANSACTION_ROWS` rows. A reader waiting in another process gets the
        open transaction committed early, so it waits for one batch at most. A failure rolls the transaction back."""
        wh = self._warehouse
        if self._open and wh.readers_waiting():
            log.info("a reader waits for the warehouse: committing early to let it in")
            self._commit()
        if not self._open:
            if wh.yield_to_readers():  # between transactions: a waiting reader gets in, then we carry on
                log.info("stepped aside for a reader of the warehouse, then reopened it")
            wh.begin()
            self._open = True
        try:
            self._open_rows += work()
        except BaseException:
            self._rollback()
            raise
        if self._open_rows >= TRANSACTION_ROWS:
            self._commit()

    def _commit(self) -> None:
        """Commit the open transaction, if any, with its streams' cursors, and report its rows as written. If the
        commit fails, nothing of the transaction is kept (DuckDB drops it) and the error is raised."""
        if self._open:
            wh = self._warehouse
            try:
                self._delete_superseded_events()
                wh.set_cursors(self._pending_cursors)
                wh.commit()
            except BaseException:
                self._rollback()
                raise
            log.debug(
                "committed %d rows (%s) with %d cursors",
                self._open_rows,
                ", ".join(f"{t} +{n}" for t, n in sorted(self._pending_rows.items())) or "none new",
                len(self._pending_cursors),
            )
            if self._on_commit is not None:
                self._on_commit(self._pending_rows, self._pending_updated)
        self._forget_transaction()

    def _rollback(self) -> None:
        if self._open and self._wh is not None:
            self._wh.rollback()
        self._forget_transaction()

    def _forget_transaction(self) -> None:
        self._open, self._open_rows = False, 0
        self._appended_events = {}
        self._pending_rows, self._pending_updated, self._pending_cursors = Counter(), Counter(), {}
