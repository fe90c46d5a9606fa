"""A sync run: the organisation's resources -> Arrow batches -> the DuckDB warehouse, incrementally and resumably.

A run, in order (each phase a fetcher of :mod:`toolkit.loader.fetchers`):

1. networks, channels (archived too) and wallets (archived too): small lists, read whole every run;
2. per channel whose lists run (see below), watchers (list, then each watcher's detail);
3. per channel whose lists run, the **full pass** over operations and queries (``limit``/``offset`` lists) until it
   has completed once (or again with ``full=True``), then only the tail past the saved offset; the offset is saved
   with every committed batch, so a killed run resumes the pass where it stopped;
4. per channel, the **event log** forward from the saved message offset, then its holes re-read once; then the
   events stored since the last patch move the ``operations`` and ``queries`` rows they report on forward
   (:mod:`toolkit.warehouse.patch`) and queue ids the warehouse does not know in ``sync_refetch``; with event
   windows (``since``, ``event_types``), the channels' windows are first read through event search
   (:mod:`toolkit.loader.fetchers.event_windows`), and only channels read whole, or windows of all types already
   walked, are polled and checked for holes;
5. the watchers new ``watcher.status`` events moved, fetched again by id;
6. the queued ids, fetched one by one;
7. on incremental runs whose lists run, the operations not yet on chain and the queries not yet answered, re-listed
   with a status filter;

then the model tables are refreshed and the file checkpointed. So a run costs requests in proportion to what
changed, not to history; one run misses nothing that existed when it started, and the next catches what changed
during it.

A channel's lists (2, 3 and 7) run on its first runs, with ``full``, when its safety net is due, and for what its
event window leaves out (:mod:`toolkit.loader.safety_net`); otherwise an incremental run costs one poll per channel
plus the organisation-wide lists and what the new events need (a GET per new operation, query or moved watcher).

Every write and read goes through the run's :class:`~toolkit.loader.unit_of_work.UnitOfWork`, which owns the
connection and commits each cursor with its rows: a run killed at any point leaves the warehouse as it was after
the last committed transaction, and the next run continues from there. Against a remote service requests run
concurrently (a bounded pool shared by all walks); on loopback one thread fetches and converts (see
:func:`default_workers`). Either way DuckDB's writes overlap the fetching.

This module holds the run itself: the phase order (:class:`Run`) and the run's lifecycle (:class:`SyncRun`: open,
load with its out-of-memory retry, build models, record outcome). How it ends when several things fail is the rule
of :mod:`toolkit.loader.outcome` (the run's own error wins over a failed last commit or audit row); the values it is
tuned with are a :class:`~toolkit.loader.tuning.Tuning` passed in.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import duckdb
import pyarrow as pa

from ..api import Client
from ..config import Settings, is_loopback_host
from ..errors import ChainopsError
from ..signals import check_stop
from ..warehouse import Warehouse, sync_lock
from ..warehouse.failures import WRITE_FAILURES, write_failure
from ..warehouse.memory import is_out_of_memory, memory_ceiling
from ..warehouse.model_tables import refresh_models
from . import audit, clashes, safety_net
from .context import FetchContext
from .event_window import Ask, requested
from .fetchers import changed_watchers, events, full_lists, gaps, non_terminal, refetch, small_lists, watchers
from .fetchers.event_windows import EventWindows
from .outcome import error_to_raise, loaded_outcome, recorded_outcome
from .progress import Progress, interactive
from .result import SyncResult
from .tuning import DEFAULT_TUNING, Tuning, models_memory_limit, resident_mib
from .unit_of_work import UnitOfWork, Write

log = logging.getLogger("toolkit.loader")
R = TypeVar("R")

#: Concurrent fetches from a remote service (:attr:`Tuning.workers` of :data:`DEFAULT_TUNING`).
WORKERS = DEFAULT_TUNING.workers


def default_workers(base_url: str, tuning: Tuning = DEFAULT_TUNING) -> int:
    """Concurrent fetches for a service: ``tuning.workers`` over a network, 1 on loopback.

    A service on this machine answers at once and shares its CPU; there, more threads only contend for the GIL
    (measured by benchmarks/sync_bench.py: one thread fetching, decoding and converting in turn beats four).
    """
    return 1 if is_loopback_host(urlsplit(base_url).hostname) else tuning.workers


def drive(fetcher: Iterator[Write], uow: UnitOfWork) -> object:
    """Hand every write ``fetcher`` yields to ``uow``, in order; return what the fetcher returns. A stop asked for
    by SIGTERM or Ctrl-C is taken here, between two writes, cleanly."""
    while True:
        try:
            item = next(fetcher)
        except StopIteration as stop:
            return stop.value
        check_stop()
        uow.write(item)


class Run:
    """One try at every phase of a run (a new one continues after an out-of-memory error)."""

    def __init__(self, ctx: FetchContext, uow: UnitOfWork, window: Ask | None = None) -> None:
        self.ctx = ctx
        self.uow = uow
        #: The channels read through event search, and what the poll of the others asks (see :mod:`.event_window`).
        self.windows = EventWindows(ctx, window)
        #: The last write number taken before this run's first attempt (see :func:`.clashes.carry`).
        self.write_seq_before: int | None = None

    def timed(self, name: str, work: Callable[[], R]) -> R:
        """``work()``, its wall seconds recorded as phase ``name`` once what it wrote is committed."""
        started = time.perf_counter()
        out = work()
        self.uow.commit()
        self.ctx.result.phases[name] = round(time.perf_counter() - started, 3)
        return out

    def run(self, only_channels: Sequence[str] | None) -> None:
        """Every phase, in dependency order."""
        if self.write_seq_before is None:
            self.write_seq_before = self.uow.call(clashes.write_seq_before)
        channel_ids: list[str] = self.timed("small lists", lambda: drive(small_lists.fetch(self.ctx), self.uow))  # type: ignore[arg-type]
        if only_channels:
            unknown = set(only_channels) - set(channel_ids)
            if unknown:
                raise ChainopsError(
                    f"No channel with id {', '.join(sorted(unknown))} in this organisation; "
                    'run `chainops sql "select channel_id, name from channels"` to list them.'
                )
            channel_ids = [c for c in channel_ids if c in set(only_channels)]
        if self.ctx.full:
            self.uow.call(lambda wh: full_lists.restart(wh, channel_ids))
        listed = self.uow.call(lambda wh: full_lists.listed_channels(wh, channel_ids))
        self.windows.plan(channel_ids)  # saved before anything is read: a killed run resumes the same walks
        now = datetime.now(UTC)
        due = self.uow.call(lambda wh: safety_net.due(wh, channel_ids, now, full=self.ctx.full))
        due |= set(channel_ids) - set(listed)

        def lists(*types: str) -> list[str]:
            # the channels whose lists run: safety net due, or an event window without one of ``types``
            return [c for c in channel_ids if c in due or not all(self.windows.holds_type(c, t) for t in types)]

        moves = ("operation.status", "query.status")
        phases: list[tuple[str, Callable[[], object]]] = [
            ("watchers", lambda: drive(watchers.fetch(self.ctx, lists("watcher.status")), self.uow)),
            ("full lists", lambda: drive(full_lists.fetch(self.ctx, lists(*moves)), self.uow)),
            ("event windows", lambda: drive(self.windows.fetch(channel_ids), self.uow)),
            ("events", lambda: self.events(channel_ids)),
            ("changed watchers", lambda: drive(changed_watchers.fetch(self.ctx), self.uow)),
            ("refetch", lambda: drive(refetch.fetch(self.ctx, channel_ids), self.uow)),
        ]
        if listed:
            relisted = lambda: [c for c in lists(*moves) if c in set(listed)]  # noqa: E731
            phases.append(
                (
                    "non-terminal",
                    lambda: drive(non_terminal.fetch(self.ctx, relisted(), self.windows.holds_type), self.uow),
                )
            )
        problems = len(self.ctx.result.problems)
        for name, phase in phases:
            check_stop()
            self.timed(name, phase)
        # holes the service confirmed empty are gaps of this run, but nothing is missing there for a list to catch:
        # they alone do not make the next run walk every channel's lists again
        if len(self.ctx.result.problems) == problems and not self.ctx.open_gaps:
            self.uow.call(lambda wh: safety_net.mark(wh, sorted(due), now))
        else:
            self.uow.call(lambda wh: safety_net.forget(wh, channel_ids))

    def events(self, channel_ids: Sequence[str]) -> None:
        """The event logs, their holes, and the patch of operations and queries from the new events. Only the
        channels read whole, and windows of all types whose walks are done, are polled (each from after what its
        window walked) and checked for holes."""
        polled = self.windows.polled(channel_ids)
        start = self.windows.poll_start
        self.timed("events: pages", lambda: drive(events.fetch(self.ctx, polled, start=start), self.uow))
        self.timed("events: gaps", lambda: drive(gaps.fetch(self.ctx, polled), self.uow))
        self.timed("events: patch", self.patch)

    def patch(self) -> None:
        """Apply the new events to operations and queries (a problem, not a failure, when it cannot fit)."""
        try:
            self.uow.call(Warehouse.apply_new_events)
        except duckdb.Error as exc:
            if not is_out_of_memory(exc):
                raise
            # rolled back whole, its watermark unmoved: the next run applies these events again
            self.ctx.problem(
                _out_of_memory(
                    "the events were stored but not yet applied to the operations and queries",
                    exc,
                    "the next sync applies them",
                )
            )


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
    tuning: Tuning = DEFAULT_TUNING,
) -> SyncResult:
    """Sync the organisation into the warehouse and return what the run did.

    ``settings`` (default: from the environment) names the service, key and warehouse; pass ``client`` to reuse
    one. ``channels`` limits the per-channel streams; ``full`` reads every list and event log from the start again.
    ``workers`` sets how many requests run at once (default: :func:`default_workers`).
    ``since`` (an age such as ``"30d"``, an ISO time, a datetime, or ``"all"``) and ``event_types`` (event types of
    :data:`toolkit.spec.EVENT_TYPES`) read the channels' event logs through event search, only the events of those
    types created since then; later runs continue that window, and a wider one fills in what it lacks
    (:mod:`toolkit.loader.event_window`). ``full`` reads a window again from its start. ``tuning`` sets DuckDB's
    memory and threads and the fetches' concurrency (:class:`~toolkit.loader.tuning.Tuning`; default: measured).
    Raises a :class:`~toolkit.errors.ChainopsError` that says what failed and what to do; the run is recorded in
    ``sync_runs`` either way, and the next run resumes from the last committed batch.
    """
    window = requested(since, event_types)  # a bad value fails before anything runs
    settings = settings or Settings.load(warehouse=warehouse)
    path = warehouse or settings.warehouse
    own_client = client is None
    client = client or Client.from_settings(settings)
    result = SyncResult(run_id=str(uuid.uuid4()), started_at=datetime.now(UTC), full=full)
    lifecycle = SyncRun(
        client,
        result,
        path,
        window=window,
        full=full,
        workers=max(1, workers or default_workers(client.base_url, tuning)),
        show_progress=not quiet and interactive(),
        tuning=tuning,
    )
    try:
        with lifecycle.open() as uow:
            run_error: BaseException | None = None
            try:
                lifecycle.load(uow, channels)
                lifecycle.build_models(uow)
            except BaseException as exc:  # recorded first, then raised (it wins over what fails after it)
                run_error = exc
            error = lifecycle.record_outcome(uow, run_error)
            if error is not None:
                raise error
    except WRITE_FAILURES as exc:
        raise write_failure(path, exc) from exc
    finally:
        if own_client:
            client.close()
    return result


class SyncRun:
    """The lifecycle of one sync run: :meth:`open` the warehouse (lock, settings, audit row), :meth:`load` every
    phase (again after an out-of-memory error), :meth:`build_models`, and :meth:`record_outcome` (the last commit
    and the audit row, with the precedence of :mod:`.outcome` when several things fail)."""

    def __init__(
        self,
        client: Client,
        result: SyncResult,
        path: str | os.PathLike[str],
        *,
        window: Ask | None,
        full: bool,
        workers: int,
        show_progress: bool,
        tuning: Tuning,
    ) -> None:
        self.client = client
        self.result = result
        self.path = path
        self.window = window
        self.full = full
        self.workers = workers
        self.show_progress = show_progress
        self.tuning = tuning
        self.requests0, self.retries0 = client.requests, client.retries
        #: The current attempt at the phases, and its progress display (set by :meth:`open`, renewed by :meth:`load`).
        self.run: Run
        self.progress: Progress

    def _attempt(self, uow: UnitOfWork, *, full: bool) -> None:
        self.progress = Progress(show=self.show_progress)
        ctx = FetchContext(self.client, self.result, self.progress, uow.call, workers=self.workers, full=full)
        self.run = Run(ctx, uow, self.window)

    def _open_warehouse(self) -> Warehouse:
        wh = Warehouse(self.path, memory_limit=self.tuning.sync_memory_limit)
        wh.configure(checkpoint_threshold=self.tuning.checkpoint_threshold, threads=self.tuning.sync_threads)
        if not self.tuning.first_sync_merges_row_groups and not wh.holds_events():
            wh.configure(max_vacuum_tasks=0)  # see Tuning.first_sync_merges_row_groups
        return wh

    def _committed(self, new: Counter[str], updated: Counter[str]) -> None:
        self.result.rows.update(new)
        self.result.updated.update(updated)

    @contextlib.contextmanager
    def open(self) -> Iterator[UnitOfWork]:
        """Hold the warehouse's lock, open it with the tuning's settings (on the unit of work's thread), mark runs
        killed before as such, write this run's audit row, and make the first attempt at the phases."""
        with (
            sync_lock(self.path),
            self.client.channel_refusals_as_bad_pages(),  # one channel refused stops that channel, not the run
            _arrow_pool(self.tuning.arrow_pool()),
            _gc_frozen(),
            UnitOfWork(self._open_warehouse, on_commit=self._committed) as uow,
        ):
            uow.call(audit.mark_killed_runs)  # holding the lock: a run still "running" is not running
            uow.call(lambda wh: audit.write_run(wh, self.result, self.client.base_url))
            self._attempt(uow, full=self.full)
            yield uow

    def load(self, uow: UnitOfWork, channels: Sequence[str] | None) -> None:
        """Every phase; should DuckDB run out of memory while loading, again under a doubled limit (up to the
        ceiling), continuing from the committed cursors (never from the start, even with ``full``)."""
        while True:
            try:
                self.run.run(channels)
                return
            except duckdb.Error as exc:
                if not is_out_of_memory(exc) or not uow.call(Warehouse.more_memory):
                    raise
                log.info("DuckDB ran out of memory while loading: retrying under %s", _limit(uow))
            # the open transaction was rolled back; a new attempt continues from the committed cursors
            self.run.ctx.close()
            uow.commit()
            self.progress.close()
            self._attempt(uow, full=False)

    def build_models(self, uow: UnitOfWork) -> None:
        """Note ids that came in two channels, refresh the model tables, checkpoint, and set the outcome of a run
        that got this far (ok or partial)."""
        found = uow.call(Warehouse.take_channel_clashes)
        before = self.run.write_seq_before or 0
        known = uow.call(lambda wh: clashes.carry(wh, found, full=self.run.ctx.full, before=before))
        for text in clashes.problems(known):
            self.run.ctx.problem(text)
        started = time.perf_counter()
        uow.call(lambda wh: _build_models(wh, self.result, self.tuning))
        self.result.phases["models"] = round(time.perf_counter() - started, 3)
        started = time.perf_counter()
        uow.call(Warehouse.checkpoint)
        self.result.phases["checkpoint"] = round(time.perf_counter() - started, 3)
        self.result.outcome = loaded_outcome(self.result)

    def record_outcome(self, uow: UnitOfWork, run_error: BaseException | None) -> BaseException | None:
        """Commit what is pending, complete the result and write the audit row, whatever happened before; returns
        the error the run raises (:func:`.outcome.error_to_raise`), None when all went well."""
        result = self.result
        if run_error is not None:
            result.outcome, result.message = recorded_outcome(None, None, run_error=run_error, commit_error=None)
        commit_error: Exception | None = None
        self.run.ctx.close()
        try:
            uow.commit()
        except Exception as exc:  # recorded and raised unless the run's own error is already on its way
            if run_error is None:
                commit_error = exc
                result.outcome, result.message = recorded_outcome(
                    result.outcome, result.message, run_error=None, commit_error=exc
                )
        self.progress.close()
        result.event_window = self.run.windows.record()
        result.window_line = self.run.windows.summary_line()
        _finish(result, self.client, self.requests0, self.retries0)
        audit_error: duckdb.Error | None = None
        try:
            uow.call(lambda wh: audit.write_run(wh, result, self.client.base_url))
        except duckdb.Error as exc:
            audit_error = exc
        return error_to_raise(run_error=run_error, commit_error=commit_error, audit_error=audit_error)


def _finish(result: SyncResult, client: Client, requests0: int, retries0: int) -> None:
    """Complete the result of an ending run: counts, end time, each problem once, and a message without the key."""
    result.requests = client.requests - requests0
    result.retries = client.retries - retries0
    result.finished_at = datetime.now(UTC)
    result.rejected = list(dict.fromkeys(result.rejected))  # a retried load may name a record again
    result.problems = list(dict.fromkeys(result.problems))
    if (result.problems or result.rejected) and not result.message:
        result.message = "; ".join([*result.problems, *result.rejected][:20])
    if result.message:  # a service may echo the key anywhere: never store it
        result.message = client.redact(result.message)


def _limit(uow: UnitOfWork) -> str:
    return uow.call(Warehouse.memory_limit_setting)


def _build_models(wh: Warehouse, result: SyncResult, tuning: Tuning) -> None:
    """(On the unit of work's thread.) Refresh the model tables after the load, letting readers in between pieces.
    Should DuckDB run out of memory even at the highest limit a retry may set, the run is ``partial`` (a problem),
    not failed: everything fetched is committed and the views are exact without the models (only slower); the next
    sync tries again."""
    wh.reopen()  # the models get the whole limit, not what the load left in DuckDB's buffers (see reopen)
    loading_limit = wh.memory_limit_setting()
    wh.configure(memory_limit=models_memory_limit(tuning, resident_mib()))
    try:
        done = refresh_models(wh, threads=tuning.models_threads, between=lambda: check_stop() or wh.yield_to_readers())
        result.models = dataclasses.asdict(done)
        if done.retries:
            log.info("the model refresh ran out of memory %d time(s) and was retried smaller", done.retries)
    except duckdb.Error as exc:
        if not is_out_of_memory(exc):
            raise
        wh.configure(memory_limit=loading_limit)  # what the rest of the run needs (its audit row, a checkpoint)
        problem = _out_of_memory(
            "the model tables were not refreshed",
            exc,
            "every row is stored and the views are exact, only slower; the next sync tries again",
        )
        log.warning("%s", problem)
        result.problems.append(problem)


def _out_of_memory(what: str, exc: BaseException, then: str) -> str:
    """The problem to record when work ran out of memory even at the highest limit a retry may set."""
    return (
        f"{what}: DuckDB ran out of memory even at {memory_ceiling() / 2**20:.0f} MiB "
        f"({str(exc).splitlines()[0]}); {then}"
    )


@contextlib.contextmanager
def _arrow_pool(pool: pa.MemoryPool) -> Iterator[None]:
    """Make ``pool`` Arrow's default memory pool while the block runs, then restore the one before."""
    before = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        yield
    finally:
        pa.set_memory_pool(before)


@contextlib.contextmanager
def _gc_frozen() -> Iterator[None]:
    """Leave the objects that exist before the block out of the cyclic garbage collector's passes while it runs.

    A sync allocates millions of short-lived objects (parsed list records), so the collector runs thousands of times,
    and each full pass also walks every object the process already held (pandas, pyarrow and DuckDB's modules; a
    notebook's whole heap): measured at 1M events, 1.9 of about 30 CPU-seconds, a third of that with the older
    objects frozen. They are unfrozen after, as they were. The youngest generation is also collected less often
    (every :data:`_YOUNG_COLLECTED_EVERY` new objects instead of 700), and so the older ones far less often: a page's
    decode makes a few thousand objects, all alive until the page is written, so a pass every 700 found nothing to
    free and walked them again and again.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(_YOUNG_COLLECTED_EVERY, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


#: New container objects between two passes of the cyclic collector over the youngest generation during a sync.
_YOUNG_COLLECTED_EVERY = 50_000
