"""The event-window phase of a sync: channels' events read through event search, as
:mod:`toolkit.loader.event_window` plans it (``chainops sync --since``, ``--event-type``).

The run calls, in order: :meth:`EventWindows.plan` (each channel's walks, saved before any is read, so a killed
run resumes them), :meth:`EventWindows.fetch` (the walks, a fetcher: each page yielded as a :class:`Write` with
the channel's window state as its cursor, so it is committed with the events it covers), then the poll phase
(:mod:`.events`) and the gap pass (:mod:`.gaps`) over :meth:`EventWindows.polled` channels only, each polled from
:meth:`EventWindows.poll_start`. Channels that hold a type subset, or whose walks have not finished, are neither
polled nor checked for gaps. Every read and cursor goes through the unit of work (``ctx.read``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...api import WireEventPage
from ...api.concurrency import prefetch
from ...api.pages import event_offset
from ...api.search import search_wire_pages
from ...errors import BadPageError, ChainopsError
from ..context import FetchContext
from ..event_window import (
    STREAM,
    Ask,
    ChannelWindow,
    Window,
    advance,
    describe_channels,
    needs_floor,
    plan,
    stream_of,
    summary_json,
)
from ..unit_of_work import Write
from .events import event_batch


class EventWindows:
    """One run's event windows: what was asked for, and each windowed channel's state as the run moves it."""

    def __init__(self, ctx: FetchContext, asked: Ask | None) -> None:
        self.ctx = ctx
        self.asked = asked
        #: Windowed channels of this run (channels read whole through poll are absent).
        self.states: dict[str, ChannelWindow] = {}
        self._planned = False

    # ---- before the walks ----------------------------------------------------------------------------------------

    def plan(self, channel_ids: Sequence[str]) -> None:
        """Plan each channel's walks and save the plans (with the warehouse's default window) in one transaction."""
        got = self.ctx.read(
            lambda wh: wh.get_cursors([STREAM, *(s for c in channel_ids for s in (stream_of(c), f"events:{c}"))])
        )
        saved = (
            got[STREAM],
            {cid: (got[stream_of(cid)], got[f"events:{cid}"] is not None) for cid in channel_ids},
        )
        default = Window.from_json(saved[0])
        cursors: dict[str, Any] = {}
        wanted = self.asked.apply(default) if self.asked is not None else default
        if wanted is not None and wanted != default and (default is not None or not wanted.whole):
            cursors[STREAM] = wanted.to_json()  # the window channels that appear later take
        for cid in channel_ids:
            window_cursor, polled = saved[1][cid]
            held = ChannelWindow.from_json(window_cursor)
            state = plan(held, polled=polled, asked=self.asked, default=default, reread=self.ctx.full)
            if state is None:
                continue
            self.states[cid] = state
            if held is None or state.to_json() != held.to_json():
                cursors[stream_of(cid)] = state.to_json()
        if cursors:
            self.ctx.read(lambda wh: wh.save_cursors(cursors))
        self._planned = True

    def holds_type(self, channel_id: str, event_type: str) -> bool:
        """Whether the warehouse holds ``channel_id``'s events of ``event_type`` as they come (a channel read whole,
        or a window of that type; a type still being read in counts once its walk has ended)."""
        state = self.states.get(channel_id)
        if state is None:
            return True
        return state.held is not None and (state.held.types is None or event_type in state.held.types)

    # ---- the walks -----------------------------------------------------------------------------------------------

    def fetch(self, channel_ids: Sequence[str]) -> Iterator[Write]:
        """Run every planned walk: channels at once (up to the run's workers), each channel's walks in turn; yield
        each page's events with the channel's window state after it as their cursor."""
        if not self._planned:
            self.plan(channel_ids)
        busy = [cid for cid in channel_ids if cid in self.states and self.states[cid].busy]
        ready = [cid for cid in busy if self._floor(cid)]
        streams: dict[str, Callable[[], Iterator[WireEventPage]]] = {
            cid: (lambda c=cid, walks=list(self.states[cid].walks): self._pages(c, walks)) for cid in ready
        }
        bar = self.ctx.progress.bar("events (search)")
        for cid, page in prefetch(streams, workers=self.ctx.workers):
            self.ctx.note_rejected(page.rejected, page)
            state = self.states[cid]
            if page.problem is not None:  # the walk stops; it resumes from the page asked for next run
                self.ctx.problem(
                    f"{page.describe()}: {page.problem}; the event window of channel {cid} is read again from "
                    "there next run"
                )
                continue
            batch = _distinct(event_batch(self.ctx, page, cid))
            max_offset, max_ts = _highest(batch)
            state = advance(
                state,
                0,
                next_offset=int(page.next_offset or 0),
                max_offset=max_offset,
                max_ts=max_ts,
                done=not page.has_more,
            )
            self.states[cid] = state
            yield Write("events", batch, cursor=(stream_of(cid), state.to_json()))
            bar.update(batch.num_rows)

    def _floor(self, channel_id: str) -> bool:
        """Ask the channel's newest offset before walks that lead to a window of all types (saved with the plan);
        whether the walks may start (an error is a problem: the channel waits for the next run)."""
        state = self.states[channel_id]
        if not needs_floor(state):
            return True
        try:
            page = self.ctx.call(self.ctx.client.poll_events, channel_id, limit=1)
        except ChainopsError as exc:
            self.ctx.problem(
                f"channel {channel_id}: its newest event offset could not be read ({exc}); its event window is "
                "read next run"
            )
            return False
        offsets = [o for o in map(event_offset, page.records) if o is not None]
        state.floor = max(offsets) if offsets else -1
        cursor = {stream_of(channel_id): state.to_json()}
        self.ctx.read(lambda wh: wh.save_cursors(cursor))
        return True

    def _pages(self, channel_id: str, walks: Sequence[Any]) -> Iterator[WireEventPage]:
        """The pages of a channel's walks in turn; a page with a problem ends them all (the next walk must not be
        taken for the one that stopped)."""
        for walk in walks:
            try:
                for page in search_wire_pages(self.ctx.client, channel_id, walk.params(), start=walk.offset):
                    yield page
                    if page.problem is not None:
                        return
            except BadPageError as exc:
                yield exc.page
                return

    # ---- what the poll phase asks -------------------------------------------------------------------------------

    def polled(self, channel_ids: Sequence[str]) -> list[str]:
        """The channels the poll reads (and whose offsets are checked for holes): those read whole, and windows of
        all types whose walks are done."""
        return [cid for cid in channel_ids if cid not in self.states or self._polls(self.states[cid])]

    @staticmethod
    def _polls(state: ChannelWindow) -> bool:
        return not state.busy and not state.subset and state.poll_from is not None

    def poll_start(self, channel_id: str, saved: int) -> int:
        """Where the poll continues a channel: its saved cursor, or after its window's walked part."""
        state = self.states.get(channel_id)
        if state is None or state.poll_from is None:
            return saved
        return max(saved, state.poll_from)

    # ---- what the run records ------------------------------------------------------------------------------------

    def summary_line(self) -> str | None:
        """The run summary's line about the windows (``None`` when every channel is read whole)."""
        return describe_channels(self.states)

    def record(self) -> dict[str, Any] | None:
        """What ``sync_runs.event_window`` holds for this run."""
        return summary_json(self.states, self.asked)


def _distinct(batch: pa.RecordBatch) -> pa.RecordBatch | pa.Table:
    """A page's events with one row per event id (the last copy), as the poll path keeps them."""
    ids = batch.column("event_id")
    if batch.num_rows < 2 or pc.count_distinct(ids).as_py() + ids.null_count == batch.num_rows:
        return batch
    last = {key: i for i, key in enumerate(ids.to_pylist())}
    return batch.take(pa.array(sorted(last.values()), pa.int64()))


def _highest(batch: pa.RecordBatch | pa.Table) -> tuple[int | None, int | None]:
    """The highest offset and the newest payload time (unix seconds) of a batch of events."""
    if batch.num_rows == 0:
        return None, None
    offset = pc.max(batch.column("offset")).as_py()
    ts = pc.max(batch.column("ts")).as_py()
    return (None if offset is None else int(offset)), (None if ts is None else int(ts.timestamp()))
