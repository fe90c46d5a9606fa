"""Each channel's event log, read forward from its saved message offset through poll (the event source of a
normal sync), and the writing of event pages that any event source shares (:func:`event_writes`).

Event pages come in columns (:class:`~toolkit.event_wire.EventColumns`), decoded as they are fetched; a channel's
pages in the documented shape are converted to Arrow together and written a few thousand rows at a time (one
conversion per flush costs half as much as one per page); any other page is converted alone, so that what it
rejected or changed is reported with its request.

Another event source (event search over a window, say) builds its own per-channel page streams and cursor, and
hands them to :func:`event_writes`: batching, conversion, rejected events, the progress bar and stopped walks are
the same. The holes a source leaves are re-read by :mod:`.gaps`.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ... import spec
from ...api import WireEventPage
from ...api.concurrency import prefetch
from ...api.pages import event_offset
from ...errors import ChainopsError
from ...event_wire import EventColumns
from ...warehouse.event_batches import columns_batch
from ..context import FetchContext
from ..unit_of_work import Write
from .paged import COMMIT_ROWS, tolerant

EVENT_PAGE_LIMIT = spec.PAGE_LIMITS["events"].maximum
#: Payload bytes of one channel's pending events that are written together even before COMMIT_ROWS events: events
#: can be large (an operation of 16 transactions reports them all in each of its statuses), and memory must not grow
#: with their size.
COMMIT_EVENT_BYTES = 8 * 2**20

#: Per channel, what makes its event pages.
EventStreams = dict[str, Callable[[], Iterator[WireEventPage]]]
#: The cursor to save with a channel's events up to (and including) a page: ``(stream, value)``.
EventCursor = Callable[[str, WireEventPage], tuple[str, Any]]


def fetch(
    ctx: FetchContext, channel_ids: Sequence[str], *, start: Callable[[str, int], int] | None = None
) -> Iterator[Write]:
    """Yield each channel's events forward from its saved ``events:<channel>`` cursor (poll by offset); ``start``,
    given a channel and its saved offset, may move where it begins (past what an event window walked)."""
    got = ctx.read(lambda wh: wh.get_cursors(f"events:{c}" for c in channel_ids))
    saved = {c: int((got[f"events:{c}"] or {}).get("next_offset", 0)) for c in channel_ids}
    starts = {c: start(c, offset) for c, offset in saved.items()} if start is not None else saved
    # Where each log ends (a newest-first poll per channel): a parallel walk reads ahead up to it. With a bar on
    # screen every channel's is asked first, all at once, for the bar's total; otherwise only a walk whose first
    # page comes back full asks (a channel with one page of new events costs no extra request).
    heads: dict[str, int | Callable[[], int | None] | None] = {
        cid: (lambda c=cid: head_offset(ctx, c)) for cid in channel_ids
    }
    if ctx.progress.show:
        heads = dict(zip(channel_ids, ctx.map(lambda c: newest_offset(ctx, c), channel_ids), strict=True))
    known = {c: head for c, head in heads.items() if isinstance(head, int)}
    if known:
        bar = ctx.progress.bar("events")
        bar.total = sum(max(0, head + 1 - starts[c]) for c, head in known.items())
        bar.refresh()
    streams: EventStreams = {cid: (lambda c=cid: poll_stream(ctx, c, starts[c], heads[c])) for cid in channel_ids}
    yield from event_writes(ctx, streams, lambda cid, page: (f"events:{cid}", {"next_offset": page.next_offset}))


def event_writes(ctx: FetchContext, streams: EventStreams, cursor_of: EventCursor) -> Iterator[Write]:
    """Fetch channels' event pages concurrently; yield them converted, a few thousand rows (or
    :data:`COMMIT_EVENT_BYTES`) of one channel at a time, each with ``cursor_of(channel, last page)``. A page with a
    problem stops its channel: nothing of it is stored, and the offsets not read are recorded as a gap."""
    # per channel: clean columns (converted together when flushed) or converted batches
    pending: dict[str, list[EventColumns | pa.RecordBatch]] = defaultdict(list)
    pending_rows: Counter[str] = Counter()
    pending_bytes: Counter[str] = Counter()
    bar = ctx.progress.bar("events")

    def flush(cid: str, page: WireEventPage) -> Write | None:
        batches = convert_events(ctx, pending.pop(cid, []), cid)
        pending_rows.pop(cid, None)
        pending_bytes.pop(cid, None)
        if not batches:
            return None
        return Write("events", distinct_events(batches), cursor=cursor_of(cid, page))

    last: dict[str, WireEventPage] = {}
    for cid, page in prefetch(streams, workers=ctx.workers):
        ctx.note_rejected(page.rejected, page)
        if page.problem is not None:  # the walk stopped early: nothing of this page is stored, the gap recorded
            note_stopped(ctx, cid, page)
            if (flushed := flush(cid, page)) is not None:
                yield flushed
            continue
        columns = page.columns
        if columns is not None and columns.clean:
            pending[cid].append(columns)  # converted on flush, with the channel's other pages
            rows = len(columns)
            pending_bytes[cid] += columns.payload_bytes
        else:  # another shape, or a page with an event to reject (reported with this page's request)
            batch = event_batch(ctx, page, cid)
            pending[cid].append(batch)
            rows = batch.num_rows
            pending_bytes[cid] += batch.nbytes
        pending_rows[cid] += rows
        last[cid] = page
        bar.update(rows)
        full = pending_rows[cid] >= COMMIT_ROWS["events"] or pending_bytes[cid] >= COMMIT_EVENT_BYTES
        if (full or not page.has_more) and (flushed := flush(cid, page)) is not None:
            yield flushed
    for cid in list(pending):  # defensive: every stream's last page flushes it
        if (flushed := flush(cid, last[cid])) is not None:
            yield flushed


def poll_stream(
    ctx: FetchContext, channel_id: str, start: int, head: int | Callable[[], int | None] | None = None
) -> Iterator[WireEventPage]:
    """A channel's event pages from message offset ``start``, read ahead with a pool up to ``head`` (the newest
    offset, or a function telling it: see :class:`~toolkit.api.concurrency.ReadAhead`). A page that cannot be
    read even after the retries is skipped when the channel has events past it (the newest-first poll says how
    far it goes): the walk goes on after it, the problem is noted, and its offsets stay a hole that the gap pass
    re-reads (this run, and every run until it reads). A bad last page, or any other problem page, ends the walk
    as before."""
    while True:
        walk = ctx.client.event_wire_pages(channel_id, start=start, limit=EVENT_PAGE_LIMIT, pool=ctx.pool, until=head)
        for page in tolerant(walk):
            if page.unreadable:
                asked = int(page.params.get("offset") or 0)
                after = asked + int(page.params.get("limit") or EVENT_PAGE_LIMIT)
                head = head_offset(ctx, channel_id)
                if head is not None and after <= head:
                    ctx.problem(
                        f"{page.describe()}: {page.problem}; offsets {asked}-{after - 1} skipped and the rest of "
                        "the channel read (the gap pass asks for them again)"
                    )
                    start = after
                    break
            yield page
        else:
            return


def head_offset(ctx: FetchContext, channel_id: str) -> int | None:
    """The channel's newest message offset (one newest-first poll), or ``None`` when it cannot be told."""
    return ctx.call(newest_offset, ctx, channel_id)


def newest_offset(ctx: FetchContext, channel_id: str) -> int | None:
    """(Sends its request itself: on a pool thread, or when there is no pool.) See :func:`head_offset`."""
    try:
        offsets = [o for o in map(event_offset, ctx.client.poll_events(channel_id, limit=1).records) if o is not None]
    except ChainopsError:
        return None
    return max(offsets) if offsets else None


def note_stopped(ctx: FetchContext, channel_id: str, page: WireEventPage) -> None:
    """A channel's event walk stopped early at ``page``: record the offsets it did not read (from the page asked
    for to the channel's newest event) as a gap; the cursor stays at that page, so the next run asks again."""
    start = int(page.params.get("offset") or 0)
    end = head_offset(ctx, channel_id)
    if end is None and page.unreadable:
        end = start + int(page.params.get("limit") or EVENT_PAGE_LIMIT) - 1  # at least the page asked for
    left = (
        f"; offsets {start}-{end} not read, the cursor stays at {start}"
        if end is not None and end >= start
        else "; nothing past it is known to be missing"
    )
    if end is not None and end >= start:
        ctx.gap(channel_id, start, end)
    ctx.problem(f"{page.describe()}: {page.problem}{left}")


def convert_events(
    ctx: FetchContext, parts: Sequence[EventColumns | pa.RecordBatch], channel_id: str
) -> list[pa.RecordBatch]:
    """A channel's pending event pages as record batches: each run of clean columns converted at once."""
    batches: list[pa.RecordBatch] = []
    for clean, run in itertools.groupby(parts, key=lambda part: isinstance(part, EventColumns)):
        if clean:
            batch, _ = columns_batch(EventColumns.concat(list(run)), channel_id=channel_id, stream_channel=True)
            ctx.note_invalid("events", batch, None)  # a payload that repeats a name (its event is named)
            batches.append(batch)  # clean columns reject nothing and hold no value of another type
        else:
            batches.extend(run)
    return batches


def event_batch(ctx: FetchContext, page: WireEventPage, channel_id: str) -> pa.RecordBatch:
    """One event page as a record batch of the events table (rejected events noted with the page's request)."""
    columns = page.columns if page.columns is not None else EventColumns.empty()
    batch, rejected = columns_batch(columns, channel_id=channel_id, stream_channel=True)
    ctx.note_rejected(rejected, page)
    ctx.note_invalid("events", batch, page)
    return batch


def distinct_events(batches: Sequence[pa.RecordBatch]) -> pa.Table:
    """Batches of one stream as one table, keeping the last copy of an event seen on two pages."""
    table = pa.Table.from_batches(batches)
    if len(batches) > 1:
        ids = table.column("event_id")
        if pc.count_distinct(ids).as_py() + ids.null_count < len(ids):
            last = {key: i for i, key in enumerate(ids.to_pylist())}
            table = table.take(pa.array(sorted(last.values()), pa.int64()))
    return table
