"""Loaders: the organisation's resources -> Arrow batches -> the DuckDB warehouse, incrementally and resumably.

A run, in order:

1. networks, channels (archived too) and wallets (archived too): small lists, read whole every run;
2. per channel, watchers (list, then each watcher's detail);
3. per channel, the **full pass** over operations and queries (``limit``/``offset`` lists) until it has completed
   once (or again with ``full=True``), then only the tail past the saved offset; the offset is saved with every
   committed batch, so a killed run resumes the pass where it stopped;
4. per channel, the **event log** forward from the saved message offset; then the events stored since the last
   patch move the ``operations`` and ``queries`` rows they report on forward (:mod:`toolkit.warehouse.patch`) and
   queue ids the warehouse does not know in ``sync_refetch``;
5. the queued ids, fetched one by one;
6. on incremental runs, the operations not yet on chain and the queries not yet answered, re-listed with a status
   filter (cheap, and a safety net for any move whose event was missed).

So a run costs requests in proportion to what changed, not to history; one run misses nothing that existed when it
started, and the next catches what changed during it. Batches are upserted by key on a writer thread, in
transactions of up to :data:`TRANSACTION_ROWS` rows that also hold the cursors of their streams: a run killed at any
point leaves the warehouse as it was after the last committed transaction, and the next run continues from there.
Against a remote service channels are fetched concurrently (bounded threads sharing one client); on loopback one
thread fetches and converts (see :func:`default_workers`). Either way DuckDB's writes overlap the fetching.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from tqdm.auto import tqdm

from . import spec
from .api import Client, Page, WireEventPage
from .api.concurrency import RequestPool, prefetch
from .api.pages import event_offset
from .api.wire import DecodedEvents, merge_decoded
from .config import Settings, is_loopback_host
from .errors import BadPageError, ChainopsError, NotFoundError, ResponseFormatError
from .event_window import Ask, requested
from .signals import check_stop, is_interruption, sigterm_received
from .warehouse import RejectedRecord, Warehouse, sync_lock, to_batch, transaction_records
from .warehouse.event_batches import events_batch, wire_events_batch
from .warehouse.failures import WRITE_FAILURES, write_failure
from .warehouse.memory import is_out_of_memory, memory_ceiling, raise_memory_limit, with_more_memory
from .warehouse.models import refresh_models
from .warehouse.patch import apply_new_events
from .warehouse.writer import Writer
from .window_sync import EventWindows

EVENT_PAGE_LIMIT = spec.PAGE_LIMITS["events"].maximum
PageT = TypeVar("PageT", bound=Page)
T = TypeVar("T")
A = TypeVar("A")
#: Rows of one stream written together (one INSERT with its cursor).
COMMIT_ROWS = {"events": 5000, "operations": 2000, "queries": 2000}
#: Rows written before the open transaction is committed: a few large commits cost less than many small ones
#: (each writes and syncs the WAL). A crash loses at most this much work, never data, since every cursor is
#: committed with the rows it covers.
TRANSACTION_ROWS = 50_000
#: Parsed records waiting across all streams before the largest buffer is written early (memory ceiling).
MAX_BUFFERED_ROWS = 6000
#: Payload bytes of one channel's pending events that are written together even before COMMIT_ROWS events: events
#: can be large (an operation of 16 transactions reports them all in each of its statuses), and memory must not grow
#: with their size.
COMMIT_EVENT_BYTES = 8 * 2**20
#: DuckDB settings while a sync writes. A low checkpoint threshold: a commit larger than it (a full transaction of
#: rows) is checkpointed straight into the file, compressed, instead of being written to the WAL first and copied
#: again later (DuckDB skips the WAL for such commits); measured at 1M events, commits cost a third less than with
#: 128 MB. A memory ceiling so a long history never grows the process (raised for the models, whose first build
#: needs more). One thread: appends gain nothing from a second, which only takes CPU from the fetching thread; the
#: models, built once fetching is over, use two.
SYNC_MEMORY_LIMIT = "96MB"
MODELS_MEMORY_LIMIT = "128MB"
MODELS_THREADS = 2
SYNC_THREADS = 1
SYNC_CHECKPOINT_THRESHOLD = "16MB"
#: Concurrent fetches (threads sharing one client) from a remote service, where they hide network latency.
WORKERS = 4
#: Arrow's memory pool while a sync runs (the process default is restored after). pyarrow's default, mimalloc,
#: keeps the pages it has used for the many short-lived batches a sync converts: with the system allocator, which
#: hands them back, a 1M-event sync peaks about 30 MB lower (355 against 387 MB, four alternating runs), no slower.
SYNC_ARROW_POOL: Callable[[], pa.MemoryPool] = pa.system_memory_pool

#: Statuses the incremental re-list asks for: operations not yet on chain. Once included (confirmed_latest and
#: after) their remaining moves come as events; and on test networks confirmed_latest is the last status ever, so
#: re-listing it would cost a request per hundred of them on every run, forever.
_ON_CHAIN_RANK = spec.OPERATION_STAGE_ORDER["confirmed_latest"]
NON_TERMINAL_OPERATION_STATUSES = [
    s for s, rank in spec.OPERATION_STAGE_ORDER.items() if s not in spec.OPERATION_TERMINAL and rank < _ON_CHAIN_RANK
]
NON_TERMINAL_QUERY_STATUSES = [s for s in spec.QUERY_STATUSES if s not in spec.QUERY_TERMINAL]


def default_workers(base_url: str) -> int:
    """Concurrent fetches for a service: :data:`WORKERS` over a network, 1 on loopback.

    A service on this machine answers at once and shares its CPU; there, more threads only contend for the GIL
    (measured by benchmarks/sync_bench.py: one thread fetching, decoding and converting in turn beats four).
    """
    return 1 if is_loopback_host(urlsplit(base_url).hostname) else WORKERS


@dataclass
class SyncResult:
    """What one sync run did: the audit row of ``sync_runs``."""

    run_id: str
    started_at: datetime
    full: bool = False
    finished_at: datetime | None = None
    outcome: str = "running"
    requests: int = 0
    retries: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    updated: Counter[str] = field(default_factory=Counter)
    rejected: list[str] = field(default_factory=list)
    gaps: dict[str, list[list[int]]] = field(default_factory=dict)
    #: Pages the service answered wrongly (offsets going backwards, has_more with nothing new, unreadable), each
    #: naming its request and what the run did about it, and work left undone (models not refreshed); any makes the
    #: outcome ``partial``.
    problems: list[str] = field(default_factory=list)
    message: str | None = None
    #: Wall seconds per phase of the run (small lists, watchers, full lists, events, refetch, ...).
    phases: dict[str, float] = field(default_factory=dict)
    # -- event windows (toolkit.window_sync) --
    #: The window asked for and each windowed channel's (``sync_runs.event_window``); None when all read whole.
    event_window: dict[str, Any] | None = None
    #: The summary's line about the windows.
    window_line: str | None = None

    @property
    def seconds(self) -> float:
        """Wall time of the run."""
        end = self.finished_at or datetime.now(UTC)
        return (end - self.started_at).total_seconds()

    def summary(self) -> str:
        """A few human lines: rows new/updated per table, requests, retries, time."""
        tables = sorted(set(self.rows) | set(self.updated))
        rows = ", ".join(f"{t} +{self.rows[t]:,}/~{self.updated[t]:,}" for t in tables) or "nothing changed"
        lines = [
            f"sync {self.outcome} in {self.seconds:.1f}s: {self.requests:,} requests, {self.retries:,} retries",
            f"rows new/updated: {rows}",
        ]
        if self.problems:
            lines.append(f"{len(self.problems)} problems (see sync_runs.message); first: {self.problems[0]}")
        if self.rejected:
            lines.append(f"{len(self.rejected)} records rejected (see sync_runs.message); first: {self.rejected[0]}")
        if self.gaps:
            lines.append(f"event offset gaps still open after a re-read: {self.gaps}")
        if self.window_line:  # event windows (toolkit.window_sync)
            lines.append(self.window_line)
        return "\n".join(lines)

    def _repr_html_(self) -> str:  # notebooks
        import html

        return "<pre>" + html.escape(self.summary()) + "</pre>"


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


@dataclass
class _Buffer:
    """Pages of one stream waiting to be committed together."""

    records: list[dict[str, Any]] = field(default_factory=list)
    last: Page | None = None
    #: The records' weight: one per record, plus one per transaction an operation carries (see :func:`_weight`).
    weight: int = 0


class Loader:
    """One sync run against one warehouse (use :func:`sync`)."""

    def __init__(
        self,
        client: Client,
        warehouse: Warehouse,
        result: SyncResult,
        *,
        full: bool,
        quiet: bool,
        workers: int | None = None,
        window: Ask | None = None,
    ) -> None:
        self.client = client
        self.workers = max(1, workers or default_workers(client.base_url))
        #: With more than one worker, every request of the run goes through this pool: at most ``workers`` in flight,
        #: and each walk reads ahead (see :class:`~toolkit.api.concurrency.ReadAhead`).
        self.pool = RequestPool(self.workers) if self.workers > 1 else None
        self.wh = warehouse
        self.result = result
        self.full = full
        self.show_progress = not quiet and _interactive()
        self.bars: dict[str, tqdm] = {}
        self._rejected_seen: set[str] = set()
        self.writer = Writer(depth=1)  # one batch queued while one is written: little memory, still overlapped
        # the open transaction (touched only on the writer thread): rows written in it, and its counts
        self._open = False
        self._open_rows = 0
        self._pending_rows: Counter[str] = Counter()
        self._pending_updated: Counter[str] = Counter()
        self._pending_cursors: dict[str, Any] = {}  # written once per transaction, just before it commits
        self._appended_events: dict[str | None, list[pa.Array]] = {}  # per channel, event ids written in it
        # -- event windows hook: channels read through event search (toolkit.window_sync) --
        self.windows = EventWindows(self, window, full=full)

    # ---- progress -------------------------------------------------------------------------------------------

    def bar(self, name: str) -> tqdm:
        """The progress bar of one stream kind (created on first use; silent when not interactive)."""
        if name not in self.bars:
            self.bars[name] = tqdm(
                desc=name, unit=" rows", disable=not self.show_progress, leave=False, dynamic_ncols=True
            )
        return self.bars[name]

    def close_bars(self) -> None:
        """Close every progress bar."""
        for bar in self.bars.values():
            bar.close()

    # ---- writing --------------------------------------------------------------------------------------------

    def store(
        self,
        table: str,
        records: Sequence[dict[str, Any]],
        *,
        page: Page | None = None,
        defaults: dict[str, Any] | None = None,
        cursor: tuple[str, Any] | None = None,
        done_refetch: tuple[str, Sequence[str]] | None = None,
    ) -> None:
        """Convert records here, then upsert them (with their cursor and refetch bookkeeping) on the writer
        thread, in the open transaction."""
        batch, rejected = to_batch(table, records, defaults=defaults)
        tx_batch = None
        if table == "operations":
            tx_batch, tx_rejected = to_batch("operation_transactions", transaction_records(records))
            rejected += tx_rejected
        self._note_rejected(rejected, page)
        self._note_invalid(table, batch, page)
        self.write(table, batch, tx_batch=tx_batch, cursor=cursor, done_refetch=done_refetch)

    def write(
        self,
        table: str,
        batch: pa.RecordBatch | pa.Table,
        *,
        tx_batch: pa.RecordBatch | None = None,
        cursor: tuple[str, Any] | None = None,
        done_refetch: tuple[str, Sequence[str]] | None = None,
    ) -> None:
        """Queue an upsert of converted rows, with their cursor and refetch bookkeeping, for the writer thread."""
        check_stop()  # between two batches: a stop asked for by SIGTERM or Ctrl-C is taken here, cleanly

        def work() -> int:
            new, updated = self._append_events(batch) if table == "events" else self.wh.upsert(table, batch)
            self._pending_rows[table] += new
            self._pending_updated[table] += updated
            if tx_batch is not None:
                tx_new, tx_updated = self.wh.upsert("operation_transactions", tx_batch)
                self._pending_rows["operation_transactions"] += tx_new
                self._pending_updated["operation_transactions"] += tx_updated
            if cursor is not None:
                self._pending_cursors[cursor[0]] = cursor[1]
            if done_refetch is not None:
                kind, ids = done_refetch
                self.wh.con.execute("DELETE FROM sync_refetch WHERE kind = ? AND list_contains(?, id)", [kind, ids])
            return batch.num_rows

        self.writer.submit(lambda: self._in_transaction(work))

    def _append_events(self, batch: pa.RecordBatch | pa.Table) -> tuple[int, int]:
        """(Writer thread.) Store a batch of one channel's events, returning ``(new, updated)`` as an upsert does.

        Replacing the stored copies of a batch's events costs a scan of the channel's stored ids, so doing it per
        batch made a long first sync quadratic (at 3.5M events, a quarter of the events phase). The batch is
        appended, and the copies written before this transaction are deleted once, when it commits
        (:meth:`_delete_superseded_events`). A batch holding an event already appended in this transaction, or
        spanning channels, is upserted at once, which replaces that copy too.
        """
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
            return self.wh.upsert("events", batch)
        return self.wh.insert("events", batch), 0

    def _delete_superseded_events(self) -> None:
        """(Writer thread, before a commit.) Delete the stored copies, written before this transaction, of the events
        it appended, and count them as updated rather than new."""
        for channel, ids in self._appended_events.items():
            if channel is None:  # batches spanning channels were upserted at once
                continue
            replaced = self.wh.delete_superseded("events", channel, pa.concat_arrays(ids))
            self._pending_rows["events"] -= replaced
            self._pending_updated["events"] += replaced
        self._appended_events = {}

    def _in_transaction(self, work: Callable[[], int]) -> None:
        """(Writer thread.) Run ``work`` in the open transaction, opening one first (after letting any waiting
        reader in) and committing it once it holds :data:`TRANSACTION_ROWS` rows. A reader waiting in another
        process gets the open transaction committed early, so it waits for one batch at most. A failure rolls the
        transaction back."""
        if self._open and self.wh.readers_waiting():
            self._commit()
        if not self._open:
            self.wh.yield_to_readers()  # between transactions: a waiting reader gets in, then we carry on
            self.wh.con.execute("BEGIN TRANSACTION")
            self._open = True
        try:
            self._open_rows += work()
        except BaseException:
            self._rollback()
            raise
        if self._open_rows >= TRANSACTION_ROWS:
            self._commit()

    def _commit(self) -> None:
        """(Writer thread.) Commit the open transaction, if any, with its streams' cursors, and count its rows as
        written. If the commit fails, nothing of the transaction is kept (DuckDB drops it) and the error is raised."""
        if self._open:
            try:
                self._delete_superseded_events()
                self.wh.set_cursors(self._pending_cursors)
                self.wh.con.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
            self.result.rows.update(self._pending_rows)
            self.result.updated.update(self._pending_updated)
        self._forget_transaction()

    def _rollback(self) -> None:
        if self._open:
            with contextlib.suppress(duckdb.Error):  # DuckDB drops a transaction whose COMMIT failed
                self.wh.con.execute("ROLLBACK")
        self._forget_transaction()

    def _forget_transaction(self) -> None:
        self._open, self._open_rows = False, 0
        self._appended_events = {}
        self._pending_rows, self._pending_updated, self._pending_cursors = Counter(), Counter(), {}

    def settle(self) -> None:
        """Commit what has been written and wait for the writer: after this the caller may use the connection."""
        self.writer.submit(self._commit)
        self.writer.drain()

    def finish(self) -> None:
        """Stop the writer and commit the open transaction, whose rows and cursors are consistent. A write or commit
        that failed has rolled its transaction back already, so nothing of it is committed here."""
        if self.pool is not None:
            self.pool.close()
        self.writer.close()
        self._commit()

    def _note_rejected(self, rejected: Sequence[RejectedRecord | str], page: Page | None) -> None:
        where = f" (from {page.describe()})" if page is not None else ""
        for text in (f"{r}{where}" for r in rejected):
            if text not in self._rejected_seen:  # the gap pass re-reads the hole a rejected event leaves
                self._rejected_seen.add(text)
                self.result.rejected.append(text)

    def _note_invalid(self, table: str, batch: pa.RecordBatch, page: Page | None) -> None:
        """Values not of the documented type are kept verbatim under ``extra._invalid`` (a number where text belongs
        stored as its exact digits, a fraction rounded down, a value no column can hold as NULL): stored changed,
        so the run is ``partial`` and says which request brought them."""
        if "extra" not in batch.schema.names:
            return
        extra = batch.column("extra")
        marked = pc.fill_null(pc.match_substring(extra, '"_invalid"'), False)
        count = pc.sum(marked).as_py() or 0
        if not count:
            return
        first = json.loads(extra.filter(marked)[0].as_py()).get("_invalid", {})
        fields = ", ".join(sorted(first)) if isinstance(first, dict) else "?"
        where = f" (from {page.describe()})" if page is not None else ""
        self.result.problems.append(
            f"{count} {table} record(s) held values of another type than documented, stored converted and kept "
            f"verbatim under extra._invalid (first: {fields}){where}"
        )

    def _note_page(self, page: Page) -> None:
        """Record what a page reports: items left out (rejected, with the request) and why a walk stopped early."""
        self._note_rejected(page.rejected, page)
        if page.problem is not None:
            self.result.problems.append(f"{page.describe()}: {page.problem}")

    def _note_stopped_events(self, channel_id: str, page: WireEventPage) -> None:
        """A channel's event walk stopped early at ``page``: record the offsets it did not read (from the page asked
        for to the channel's newest event) as a gap; the cursor stays at that page, so the next run asks again."""
        start = int(page.params.get("offset") or 0)
        end = self._head_offset(channel_id)
        if end is None and page.unreadable:
            end = start + int(page.params.get("limit") or EVENT_PAGE_LIMIT) - 1  # at least the page asked for
        left = (
            f"; offsets {start}-{end} not read, the cursor stays at {start}"
            if end is not None and end >= start
            else "; nothing past it is known to be missing"
        )
        if end is not None and end >= start:
            self.result.gaps.setdefault(channel_id, []).append([start, end])
        self.result.problems.append(f"{page.describe()}: {page.problem}{left}")

    # ---- whole-list resources -------------------------------------------------------------------------------

    def sync_small_lists(self) -> list[str]:
        """Networks, channels and wallets, read whole (at once, with several workers); returns every channel id."""
        streams: dict[str, Callable[[], Iterator[Page]]] = {
            "networks": lambda: _tolerant(self.client.network_pages(pool=self.pool)),
            "channels": lambda: _tolerant(self.client.channel_pages(pool=self.pool)),
            "wallets": lambda: _tolerant(self.client.wallet_pages(pool=self.pool)),
        }
        channel_ids: list[str] = []
        listed_whole = True
        for table, page in prefetch(streams, workers=self.workers):
            self._note_page(page)
            if table == "channels":
                listed_whole = listed_whole and page.problem is None
                channel_ids += [c["channel_id"] for c in page.records if isinstance(c.get("channel_id"), str)]
            self.store(table, page.records, page=page)
        if not listed_whole:  # the channels past a bad page are not lost for this run: those already known are synced
            self.settle()
            channel_ids += [
                c
                for (c,) in self.wh.con.execute("SELECT channel_id FROM channels ORDER BY created_at").fetchall()
                if c is not None
            ]
        return list(dict.fromkeys(channel_ids))

    def sync_watchers(self, channel_ids: Sequence[str]) -> None:
        """Each channel's watchers: the list of summaries, then the detail (events, ABI, config) of each watcher
        that is new or whose name or status changed since the warehouse saw it."""
        streams = {
            cid: (lambda cid=cid: _tolerant(self.client.watcher_pages(cid, pool=self.pool))) for cid in channel_ids
        }
        summaries: list[tuple[str, dict[str, Any]]] = []
        for cid, page in prefetch(streams, workers=self.workers):
            self._note_page(page)
            summaries += [(cid, w) for w in page.records if isinstance(w.get("watcher_id"), str)]
        self.settle()
        known = {
            wid: (name, status)
            for wid, name, status in self.wh.con.execute("SELECT watcher_id, name, status FROM watchers").fetchall()
        }
        changed = [(cid, w) for cid, w in summaries if known.get(w["watcher_id"]) != (w.get("name"), w.get("status"))]
        details = self._fetch_each([(cid, w["watcher_id"]) for cid, w in changed], self.client.get_watcher)
        by_channel: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for (cid, summary), detail in zip(changed, details, strict=True):
            by_channel[cid].append(detail if isinstance(detail, dict) else summary)
        for cid, records in by_channel.items():
            self.store("watchers", records, defaults={"channel_id": cid})

    def _call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``: on the request pool when there is one (so it counts among the requests in
        flight), else here."""
        return self.pool.call(fn, *args, **kwargs) if self.pool is not None else fn(*args, **kwargs)

    def _map(self, fn: Callable[[A], T], items: Sequence[A]) -> list[T]:
        """``fn`` of each item, concurrently on the request pool when there is one."""
        return self.pool.map(fn, items) if self.pool is not None else [fn(item) for item in items]

    def _fetch_each(
        self, keys: Sequence[tuple[str, str]], get: Callable[[str, str], dict[str, Any]]
    ) -> list[dict[str, Any] | _Unreadable | None]:
        """GET each ``(channel_id, id)`` concurrently; a 404 gives ``None`` (the record vanished), an answer that
        cannot be read even after the retries gives :data:`UNREADABLE` and a problem naming the request (the run is
        ``partial``; the caller asks again next run)."""

        def one(key: tuple[str, str]) -> dict[str, Any] | _Unreadable | None:
            try:
                return get(*key)
            except NotFoundError:
                return None
            except ResponseFormatError as exc:
                self.result.problems.append(f"{exc} (asked again next run)")
                return UNREADABLE

        if not keys:
            return []
        if self.pool is None:
            return [one(key) for key in keys]
        return self.pool.map(one, keys)

    # ---- paged streams --------------------------------------------------------------------------------------

    def consume(
        self,
        streams: dict[tuple[str, str], Callable[[], Iterator[Page]]],
        cursor_of: Callable[[tuple[str, str], _Buffer], tuple[str, Any] | None],
    ) -> None:
        """Fetch streams concurrently; commit each stream's pages in batches, each with the stream's cursor."""
        buffers: dict[tuple[str, str], _Buffer] = defaultdict(_Buffer)

        def flush(key: tuple[str, str]) -> None:
            buf = buffers.pop(key, None)
            if buf is None or buf.last is None:
                return
            table, cid = key
            self.store(table, buf.records, page=buf.last, defaults={"channel_id": cid}, cursor=cursor_of(key, buf))

        buffered = 0
        for key, page in prefetch({k: _tolerating(make) for k, make in streams.items()}, workers=self.workers):
            self._note_page(page)
            if page.problem is not None:  # unreadable, or repeating: the stream stops; its cursor stays at its last
                continue  # good page (a repeated page's rows must not move the offset past the end)
            buf = buffers[key]
            buf.records.extend(page.records)
            buf.last = page
            weight = _weight(page.records)
            buf.weight += weight
            buffered += weight
            self.bar(key[0]).update(len(page.records))
            if buf.weight >= COMMIT_ROWS[key[0]] or not page.has_more:
                buffered -= buf.weight
                flush(key)
            elif buffered > MAX_BUFFERED_ROWS:  # parsed records are bulky: keep few of them alive at once
                largest = max(buffers, key=lambda k: buffers[k].weight)
                buffered -= buffers[largest].weight
                flush(largest)
        for key in list(buffers):
            flush(key)

    def sync_full_lists(self, channel_ids: Sequence[str]) -> None:
        """The pass over operations and queries: from the start until it has completed once (resuming mid-list
        after a crash), then only the tail past the saved offset. Lists come in creation order on the sandbox and
        the SDK's mock, so the tail holds the new rows, a page per hundred; if a service orders them otherwise the
        tail is merely re-read rows, and new ones still arrive through their events and the refetch."""
        streams: dict[tuple[str, str], Callable[[], Iterator[Page]]] = {}
        starts: dict[tuple[str, str], tuple[int, bool]] = {}
        self.settle()
        for table in ("operations", "queries"):
            pages_of = self.client.operation_pages if table == "operations" else self.client.query_pages
            for cid in channel_ids:
                saved = self.wh.get_cursor(f"{table}:{cid}") or {}
                start = int(saved.get("offset", 0))
                starts[(table, cid)] = (start, bool(saved.get("complete")))
                streams[(table, cid)] = lambda p=pages_of, c=cid, s=start: p(c, start=s, pool=self.pool)
        seen: Counter[tuple[str, str]] = Counter()

        def cursor_of(key: tuple[str, str], buf: _Buffer) -> tuple[str, Any]:
            seen[key] += len(buf.records)
            assert buf.last is not None
            start, was_complete = starts[key]
            complete = was_complete or not (buf.last.has_more or buf.last.problem)
            return f"{key[0]}:{key[1]}", {"offset": start + seen[key], "complete": complete}

        self.consume(streams, cursor_of)

    def sync_events(self, channel_ids: Sequence[str]) -> None:
        """Each channel's event log forward from its saved message offset.

        Event pages take the fast path: decoded straight from the bytes as they are fetched into small structs that
        keep each payload as the raw text of the page, then converted to Arrow and written a few thousand rows at a
        time (one conversion per flush costs half as much as one per page).
        """
        streams: dict[str, Callable[[], Iterator[WireEventPage]]] = {}
        started = time.perf_counter()
        self.settle()
        # -- event windows hook: only channels read whole, or windows of all types already walked, are polled --
        channel_ids = self.windows.polled(channel_ids)
        starts = {
            cid: self.windows.poll_start(cid, int((self.wh.get_cursor(f"events:{cid}") or {}).get("next_offset", 0)))
            for cid in channel_ids
        }
        # Where each log ends (a newest-first poll per channel): a parallel walk reads ahead up to it. With a bar on
        # screen every channel's is asked first, all at once, for the bar's total; otherwise only a walk whose first
        # page comes back full asks (a channel with one page of new events costs no extra request).
        heads: dict[str, int | Callable[[], int | None] | None] = {
            cid: (lambda c=cid: self._head_offset(c)) for cid in channel_ids
        }
        if self.show_progress:
            heads = dict(zip(channel_ids, self._map(self._newest_offset, channel_ids), strict=True))
        for cid in channel_ids:
            streams[cid] = lambda c=cid: self._event_stream(c, starts[c], heads[c])
        # per channel: pages decoded in the documented shape (converted together when flushed) or converted batches
        pending: dict[str, list[DecodedEvents | pa.RecordBatch]] = defaultdict(list)
        pending_rows: Counter[str] = Counter()
        pending_bytes: Counter[str] = Counter()
        bar = self.bar("events")
        known = {c: head for c, head in heads.items() if isinstance(head, int)}
        if known:
            bar.total = sum(max(0, head + 1 - starts[c]) for c, head in known.items())
            bar.refresh()

        def flush(cid: str, next_offset: int | None) -> None:
            batches = self.convert_events(pending.pop(cid, []), cid)
            pending_rows.pop(cid, None)
            pending_bytes.pop(cid, None)
            if batches:
                self.write("events", _distinct_events(batches), cursor=(f"events:{cid}", {"next_offset": next_offset}))

        next_offsets: dict[str, int | None] = {}
        for cid, page in prefetch(streams, workers=self.workers):
            self._note_rejected(page.rejected, page)
            if page.problem is not None:  # the walk stopped early: nothing of this page is stored, the gap recorded
                self._note_stopped_events(cid, page)
                flush(cid, page.next_offset)
                continue
            decoded = page.decoded
            if decoded is not None and all(e.event_id.strip() for e in decoded.events):
                pending[cid].append(decoded)  # converted on flush, with the channel's other pages
                rows = len(decoded)
                pending_bytes[cid] += sum(len(e.payload) for e in decoded.events)
            else:  # the careful path, or a page with an event to reject (reported with this page's request)
                batch = self.event_batch(page, cid)
                pending[cid].append(batch)
                rows = batch.num_rows
                pending_bytes[cid] += batch.nbytes
            pending_rows[cid] += rows
            next_offsets[cid] = page.next_offset
            bar.update(rows)
            if (
                pending_rows[cid] >= COMMIT_ROWS["events"]
                or pending_bytes[cid] >= COMMIT_EVENT_BYTES
                or not page.has_more
            ):
                flush(cid, page.next_offset)
        for cid in list(pending):  # defensive: every stream's last page flushes it
            flush(cid, next_offsets[cid])
        self.settle()
        self.result.phases["events: pages"] = round(time.perf_counter() - started, 3)
        started = time.perf_counter()
        for cid in channel_ids:
            self.check_gaps(cid)
        self.result.phases["events: gaps"] = round(time.perf_counter() - started, 3)
        started = time.perf_counter()
        try:
            apply_new_events(self.wh.con)
        except duckdb.Error as exc:
            if not is_out_of_memory(exc):
                raise
            # rolled back whole, its watermark unmoved: the next run applies these events again
            self.result.problems.append(
                _out_of_memory(
                    "the events were stored but not yet applied to the operations and queries",
                    exc,
                    "the next sync applies them",
                )
            )
        self.result.phases["events: patch"] = round(time.perf_counter() - started, 3)

    def _event_stream(
        self, channel_id: str, start: int, head: int | Callable[[], int | None] | None = None
    ) -> Iterator[WireEventPage]:
        """A channel's event pages from message offset ``start``, read ahead with a pool up to ``head`` (the newest
        offset, or a function telling it: see :class:`~toolkit.api.concurrency.ReadAhead`). A page that cannot be
        read even after the retries is skipped when the channel has events past it (the newest-first poll says how
        far it goes): the walk goes on after it, the problem is noted, and its offsets stay a hole that the gap pass
        re-reads (this run, and every run until it reads). A bad last page, or any other problem page, ends the walk
        as before."""
        while True:
            walk = self.client.event_wire_pages(
                channel_id, start=start, limit=EVENT_PAGE_LIMIT, pool=self.pool, until=head
            )
            for page in _tolerant(walk):
                if page.unreadable:
                    asked = int(page.params.get("offset") or 0)
                    after = asked + int(page.params.get("limit") or EVENT_PAGE_LIMIT)
                    head = self._head_offset(channel_id)
                    if head is not None and after <= head:
                        self.result.problems.append(
                            f"{page.describe()}: {page.problem}; offsets {asked}-{after - 1} skipped and the rest of "
                            "the channel read (the gap pass asks for them again)"
                        )
                        start = after
                        break
                yield page
            else:
                return

    def _head_offset(self, channel_id: str) -> int | None:
        """The channel's newest message offset (one newest-first poll), or ``None`` when it cannot be told."""
        return self._call(self._newest_offset, channel_id)

    def _newest_offset(self, channel_id: str) -> int | None:
        """(Sends its request itself: on a pool thread, or when there is no pool.) See :meth:`_head_offset`."""
        try:
            offsets = [
                o for o in map(event_offset, self.client.poll_events(channel_id, limit=1).records) if o is not None
            ]
        except ChainopsError:
            return None
        return max(offsets) if offsets else None

    def convert_events(self, parts: Sequence[DecodedEvents | pa.RecordBatch], channel_id: str) -> list[pa.RecordBatch]:
        """A channel's pending event pages as record batches: each run of decoded pages converted at once."""
        batches: list[pa.RecordBatch] = []
        for decoded, run in itertools.groupby(parts, key=lambda part: isinstance(part, DecodedEvents)):
            if decoded:
                batch, rejected = wire_events_batch(merge_decoded(list(run)), channel_id=channel_id)
                self._note_rejected(rejected, None)  # none: pages with an event to reject are converted alone
                batches.append(batch)
            else:
                batches.extend(run)
        return batches

    def event_batch(self, page: WireEventPage, channel_id: str) -> pa.RecordBatch:
        """One event page as a record batch of the events table (rejected events noted with the page's request)."""
        if page.decoded is not None:
            batch, rejected = wire_events_batch(page.decoded, channel_id=channel_id)
        else:
            batch, rejected = events_batch(
                page.records, channel_id=channel_id, payload_texts=page.payload_texts, stream_channel=True
            )
        self._note_rejected(rejected, page)
        self._note_invalid("events", batch, page)
        return batch

    def check_gaps(self, channel_id: str) -> None:
        """Re-read once any hole in the channel's stored offsets; record the holes that survive."""
        self.settle()
        holes = self._holes(channel_id)
        served_twice: set[int] = set()
        for lo, hi in holes:
            walk = self.client.event_wire_pages(channel_id, start=lo, limit=EVENT_PAGE_LIMIT, pool=self.pool, until=hi)
            for page in _tolerant(walk):
                if page.problem is not None:  # the hole stays, and is recorded below
                    self._note_page(page)
                    break
                self.settle()
                served_twice |= self._served_twice(page, channel_id)
                self.write("events", self.event_batch(page, channel_id))
                if page.next_offset is None or page.next_offset > hi:
                    break
        self.settle()
        left = self._holes(channel_id, served_twice) if holes else []
        if left:
            self.result.gaps.setdefault(channel_id, []).extend([list(h) for h in left])

    def _served_twice(self, page: WireEventPage, channel_id: str) -> set[int]:
        """Offsets of ``page`` whose event id is served at another offset too (in the page, or where the channel
        stores it). A service may serve one event id at two offsets; the warehouse keeps one row per event id, so
        the other offset would look like a hole. Both offsets count as read."""
        if page.decoded is not None:
            pairs = [(e.event_id, e.headers.offset) for e in page.decoded.events]
        else:
            pairs = [(r.get("event_id"), event_offset(r)) for r in page.records if isinstance(r, dict)]
        pairs = [(i, o) for i, o in pairs if isinstance(i, str) and o is not None]
        if not pairs:
            return set()
        stored = self.wh.con.execute(
            'SELECT event_id, "offset" FROM events WHERE channel_id = ? AND list_contains(?, event_id)',
            [channel_id, sorted({i for i, _ in pairs})],
        ).fetchall()
        seen: defaultdict[str, set[int]] = defaultdict(set)
        for event_id, offset in [*pairs, *((i, o) for i, o in stored if o is not None)]:
            seen[event_id].add(int(offset))
        return {o for offsets in seen.values() if len(offsets) > 1 for o in offsets}

    def _holes(self, channel_id: str, served_twice: set[int] | None = None) -> list[tuple[int, int]]:
        """Runs of offsets missing between the channel's stored ones (and the offsets ``served_twice``)."""
        rows = self.wh.con.execute(
            """
            SELECT prev + 1 AS lo, "offset" - 1 AS hi FROM (
                SELECT "offset", lag("offset") OVER (ORDER BY "offset") AS prev FROM (
                    SELECT "offset" FROM events WHERE channel_id = ? AND "offset" IS NOT NULL
                    UNION SELECT unnest(?::BIGINT[])
                )
            ) WHERE "offset" - prev > 1 ORDER BY lo
            """,
            [channel_id, sorted(served_twice or ())],
        ).fetchall()
        return [(int(lo), int(hi)) for lo, hi in rows]

    def refetch(self, channel_ids: Sequence[str], chunk: int = 200) -> None:
        """Fetch one by one the operations and queries that events named but the warehouse lacks."""
        getters = {"operation": ("operations", self.client.get_operation), "query": ("queries", self.client.get_query)}
        self.settle()
        queued = {
            kind: self.wh.con.execute(
                "SELECT channel_id, id FROM sync_refetch WHERE kind = ? AND list_contains(?, channel_id) ORDER BY id",
                [kind, list(channel_ids)],
            ).fetchall()
            for kind in getters
        }
        for kind, (table, get) in getters.items():
            rows = queued[kind]
            for i in range(0, len(rows), chunk):
                keys = [(str(c), str(x)) for c, x in rows[i : i + chunk]]
                records = self._fetch_each(keys, get)
                by_channel: dict[str, list[dict[str, Any]]] = defaultdict(list)
                for (cid, rid), record in zip(keys, records, strict=True):
                    if record is None:
                        self.result.rejected.append(f"{kind} {rid} is named by events but answers 404")
                    elif isinstance(record, dict):
                        by_channel[cid].append(record)
                unread = {key for key, record in zip(keys, records, strict=True) if record is UNREADABLE}
                for cid in {c for c, _ in keys}:
                    ids = [rid for c, rid in keys if c == cid and (c, rid) not in unread]  # the rest stay queued
                    self.store(table, by_channel.get(cid, []), defaults={"channel_id": cid}, done_refetch=(kind, ids))

    def sync_non_terminal(self, channel_ids: Sequence[str]) -> None:
        """Re-list operations and queries still in a non-terminal status (status filter: a few pages at most)."""
        streams: dict[tuple[str, str], Callable[[], Iterator[Page]]] = {}
        for cid in channel_ids:
            streams[("operations", cid)] = lambda c=cid: self.client.operation_pages(
                c, status=NON_TERMINAL_OPERATION_STATUSES, pool=self.pool
            )
            streams[("queries", cid)] = lambda c=cid: self.client.query_pages(
                c, status=NON_TERMINAL_QUERY_STATUSES, pool=self.pool
            )
        self.consume(streams, lambda key, buf: None)

    # ---- the run --------------------------------------------------------------------------------------------

    def run(self, only_channels: Sequence[str] | None) -> None:
        """Every stream, in dependency order."""
        started = time.perf_counter()
        channel_ids = self.sync_small_lists()
        self.result.phases["small lists"] = round(time.perf_counter() - started, 3)
        if only_channels:
            unknown = set(only_channels) - set(channel_ids)
            if unknown:
                raise ChainopsError(
                    f"No channel with id {', '.join(sorted(unknown))} in this organisation; "
                    'run `chainops sql "select channel_id, name from channels"` to list them.'
                )
            channel_ids = [c for c in channel_ids if c in set(only_channels)]
        self.settle()
        if self.full:
            with self.wh.transaction():  # a killed --full run is continued by the next run
                for cid in channel_ids:
                    self.wh.set_cursor(f"operations:{cid}", {"offset": 0, "complete": False})
                    self.wh.set_cursor(f"queries:{cid}", {"offset": 0, "complete": False})
                    self.wh.set_cursor(f"events:{cid}", {"next_offset": 0})
        # channels whose operations and queries were listed whole before this run: only their in-flight rows are
        # re-listed (one channel whose list stopped at a bad page does not turn that off for the others)
        listed = [
            c
            for c in channel_ids
            if all((self.wh.get_cursor(f"{t}:{c}") or {}).get("complete") for t in ("operations", "queries"))
        ]
        self.windows.plan(channel_ids)  # -- event windows hook: saved before anything is read --
        phases: list[tuple[str, Callable[[Sequence[str]], None]]] = [
            ("watchers", self.sync_watchers),
            ("full lists", self.sync_full_lists),
            ("event windows", self.windows.run),  # -- event windows hook --
            ("events", self.sync_events),
            ("refetch", self.refetch),
        ]
        if listed:
            phases.append(("non-terminal", lambda _: self.sync_non_terminal(listed)))
        for name, phase in phases:
            check_stop()
            started = time.perf_counter()
            phase(channel_ids)
            self.settle()
            self.result.phases[name] = round(time.perf_counter() - started, 3)


def sync(
    settings: Settings | None = None,
    *,
    client: Client | None = None,
    warehouse: str | None = None,
    channels: Sequence[str] | None = None,
    full: bool = False,
    quiet: bool = False,
    workers: int | None = None,
    since: Any = None,
    event_types: Sequence[str] | None = None,
) -> SyncResult:
    """Sync the organisation into the warehouse and return what the run did.

    ``settings`` (default: from the environment) names the service, key and warehouse; pass ``client`` to reuse
    one. ``channels`` limits the per-channel streams; ``full`` reads every list and event log from the start again.
    ``workers`` sets how many requests run at once (default: :func:`default_workers`).
    ``since`` (an age such as ``"30d"``, an ISO time, a datetime, or ``"all"``) and ``event_types`` (event types of
    :data:`toolkit.spec.EVENT_TYPES`) read the channels' event logs through event search, only the events of those
    types created since then; later runs continue that window, and a wider one fills in what it lacks
    (:mod:`toolkit.event_window`). ``full`` reads a window again from its start.
    Raises a :class:`~toolkit.errors.ChainopsError` that says what failed and what to do; the run is recorded in
    ``sync_runs`` either way, and the next run resumes from the last committed batch.
    """
    window = requested(since, event_types)  # -- event windows hook: a bad value fails before anything runs --
    settings = settings or Settings.load(warehouse=warehouse)
    path = warehouse or settings.warehouse
    own_client = client is None
    client = client or Client.from_settings(settings)
    result = SyncResult(run_id=str(uuid.uuid4()), started_at=datetime.now(UTC), full=full)
    requests0, retries0 = client.requests, client.retries
    try:
        with sync_lock(path), _arrow_pool(SYNC_ARROW_POOL()), Warehouse(path, memory_limit=SYNC_MEMORY_LIMIT) as wh:
            wh.configure(checkpoint_threshold=SYNC_CHECKPOINT_THRESHOLD, threads=SYNC_THREADS)
            _write_run(wh, result, client.base_url)
            loader = Loader(client, wh, result, full=full, quiet=quiet, workers=workers, window=window)
            try:
                while True:
                    try:
                        loader.run(channels)
                        break
                    except duckdb.Error as exc:
                        if not is_out_of_memory(exc) or not _more_memory(wh):
                            raise
                    # out of memory while loading: the open transaction was rolled back; a new loader continues
                    # from the committed cursors (never from the start, even with --full) under the doubled limit
                    loader.finish()
                    loader.close_bars()
                    loader = Loader(client, wh, result, full=False, quiet=quiet, workers=workers, window=window)
                started = time.perf_counter()
                _build_models(wh, result)
                result.phases["models"] = round(time.perf_counter() - started, 3)
                started = time.perf_counter()
                with_more_memory(lambda: wh.con, lambda: wh.con.execute("CHECKPOINT"))
                result.phases["checkpoint"] = round(time.perf_counter() - started, 3)
                result.outcome = "partial" if result.rejected or result.gaps or result.problems else "ok"
            except BaseException as exc:
                result.outcome, result.message = _outcome_of(exc)
                raise
            finally:
                commit_error: Exception | None = None
                try:
                    loader.finish()
                except Exception as exc:  # raised below unless the run's own error is already on its way
                    if result.outcome not in ("failed", "interrupted"):
                        commit_error = exc
                        result.outcome = "failed"
                        result.message = f"the last commit failed: {type(exc).__name__}: {exc}"
                loader.close_bars()
                result.event_window = loader.windows.record()  # -- event windows hook --
                result.window_line = loader.windows.summary_line()
                result.requests = client.requests - requests0
                result.retries = client.retries - retries0
                result.finished_at = datetime.now(UTC)
                result.rejected = list(dict.fromkeys(result.rejected))  # a retried load may name a record again
                result.problems = list(dict.fromkeys(result.problems))
                if (result.problems or result.rejected) and not result.message:
                    result.message = "; ".join([*result.problems, *result.rejected][:20])
                if result.message:  # a service may echo the key anywhere: never store it
                    result.message = client.redact(result.message)
                try:
                    _write_run(wh, result, client.base_url)
                except duckdb.Error:
                    if result.outcome not in ("failed", "interrupted"):
                        raise  # otherwise the run's own error, on its way, says more than the audit row's
                if commit_error is not None:
                    raise commit_error
    except WRITE_FAILURES as exc:
        raise write_failure(path, exc) from exc
    finally:
        if own_client:
            client.close()
    return result


def _more_memory(wh: Warehouse) -> bool:
    """Double the sync connection's memory limit (kept across reopens), up to the ceiling; whether it went up."""
    if not raise_memory_limit(wh.con):
        return False
    wh.configure(memory_limit=wh.con.execute("SELECT current_setting('memory_limit')").fetchone()[0])
    return True


def _build_models(wh: Warehouse, result: SyncResult) -> None:
    """Refresh the model tables after the load, letting readers in between pieces. Should DuckDB run out of memory
    even at the highest limit a retry may set, the run is ``partial`` (a problem), not failed: everything fetched is
    committed and the views are exact without the models (only slower); the next sync tries again."""
    wh.reopen()  # the models get the whole limit, not what the load left in DuckDB's buffers (see reopen)
    loading_limit = wh.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    wh.configure(memory_limit=MODELS_MEMORY_LIMIT)
    try:
        refresh_models(wh, threads=MODELS_THREADS, between=lambda: check_stop() or wh.yield_to_readers())
    except duckdb.Error as exc:
        if not is_out_of_memory(exc):
            raise
        wh.configure(memory_limit=loading_limit)  # what the rest of the run needs (its audit row, a checkpoint)
        result.problems.append(
            _out_of_memory(
                "the model tables were not refreshed",
                exc,
                "every row is stored and the views are exact, only slower; the next sync tries again",
            )
        )


def _out_of_memory(what: str, exc: BaseException, then: str) -> str:
    """The problem to record when work ran out of memory even at the highest limit a retry may set."""
    return (
        f"{what}: DuckDB ran out of memory even at {memory_ceiling() / 2**20:.0f} MiB "
        f"({str(exc).splitlines()[0]}); {then}"
    )


def _outcome_of(exc: BaseException) -> tuple[str, str]:
    """The ``sync_runs`` outcome and message of a run that ``exc`` ended: Ctrl-C and SIGTERM (a KeyboardInterrupt,
    see :mod:`toolkit.signals`) are ``interrupted``, anything else ``failed``."""
    if is_interruption(exc):
        why = "SIGTERM" if sigterm_received() else "Ctrl-C"
        return "interrupted", f"interrupted ({why}); the next run continues from the last commit"
    return "failed", str(exc) if isinstance(exc, ChainopsError) else f"{type(exc).__name__}: {exc}"


@contextlib.contextmanager
def _arrow_pool(pool: pa.MemoryPool) -> Iterator[None]:
    """Make ``pool`` Arrow's default memory pool while the block runs, then restore the one before."""
    before = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        yield
    finally:
        pa.set_memory_pool(before)


def _weight(records: Sequence[dict[str, Any]]) -> int:
    """What buffered records cost, in rows: one each, plus one per transaction an operation carries (an operation
    of 16 transactions holds 17 rows' worth of parsed objects, and becomes 17 rows)."""
    return sum(1 + (len(tx) if isinstance(tx := r.get("transactions"), list) else 0) for r in records)


class _Unreadable:
    """The type of :data:`UNREADABLE`."""


#: What :meth:`Loader._fetch_each` gives for a record whose answer cannot be read.
UNREADABLE = _Unreadable()


def _tolerant(pages: Iterator[PageT]) -> Iterator[PageT]:
    """A stream of pages in which a page that cannot be read (after the retries) ends the stream as an empty page
    naming its request and problem, for the loader to record, instead of an error that stops the run."""
    try:
        yield from pages
    except BadPageError as exc:
        yield exc.page


def _tolerating(make: Callable[[], Iterator[PageT]]) -> Callable[[], Iterator[PageT]]:
    """A stream factory whose streams are :func:`_tolerant`."""
    return lambda: _tolerant(make())


def _distinct_events(batches: Sequence[pa.RecordBatch]) -> pa.Table:
    """Batches of one stream as one table, keeping the last copy of an event seen on two pages."""
    table = pa.Table.from_batches(batches)
    if len(batches) > 1:
        ids = table.column("event_id")
        if pc.count_distinct(ids).as_py() + ids.null_count < len(ids):
            last = {key: i for i, key in enumerate(ids.to_pylist())}
            table = table.take(pa.array(sorted(last.values()), pa.int64()))
    return table


def _write_run(wh: Warehouse, result: SyncResult, base_url: str) -> None:
    rows = {t: {"new": result.rows[t], "updated": result.updated[t]} for t in set(result.rows) | set(result.updated)}
    wh.con.execute(
        """
        INSERT OR REPLACE INTO sync_runs
        (run_id, started_at, finished_at, outcome, base_url, full_sync, requests, retries, rows_written, rejected,
         gaps, message, event_window)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        [
            result.run_id,
            result.started_at,
            result.finished_at,
            result.outcome,
            base_url,
            result.full,
            result.requests,
            result.retries,
            json.dumps(rows),
            len(result.rejected),
            json.dumps(result.gaps),
            result.message,
            None if result.event_window is None else json.dumps(result.event_window),
        ],
    )
