"""Holes in a channel's stored event offsets, re-read once; the holes that survive are recorded in the run's gaps.

Message offsets are a per-channel sequence, so a missing offset between stored ones is an event not stored (a page
skipped, an event rejected, a service that served a page short). A service may serve one event id at two offsets;
the warehouse keeps one row per event id, so both offsets count as read.

A hole the re-read confirms empty (the service answered a page from before it to past it, without it: a log whose
offsets step by two, say) is recorded as a gap in that run and saved as confirmed empty in ``sync_state``; later
runs do not read it again, nor count it as a gap, until :data:`RECHECK_SECONDS` have passed or ``--full`` is asked.
One page read for a hole also answers every later hole it spans, so holes cost a request per page, not one each.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence

from ...api import WireEventPage
from ..context import FetchContext
from ..unit_of_work import Write
from .events import EVENT_PAGE_LIMIT, event_batch
from .paged import tolerant

log = logging.getLogger("toolkit.loader")

#: The ``sync_state`` stream (``<this>:<channel_id>``) of a channel's holes confirmed empty: ``{"holes": [[lo, hi,
#: unix seconds confirmed], ...]}``.
CONFIRMED = "holes_confirmed_empty"
#: A hole confirmed empty (a re-read page served offsets past it, without it) is read again after this long, or by
#: ``--full``; until then it costs no request and is no gap.
RECHECK_SECONDS = 7 * 24 * 3600


def fetch(ctx: FetchContext, channel_ids: Sequence[str]) -> Iterator[Write]:
    """Re-read each channel's holes (see the module docstring). Every channel's holes and confirmed-empty state are
    read in two statements first: a channel's re-read writes only its own events and state."""
    holes = ctx.read(lambda wh: wh.event_holes_of(channel_ids))
    states = {} if ctx.full else ctx.read(lambda wh: wh.get_cursors(f"{CONFIRMED}:{c}" for c in channel_ids))
    for cid in channel_ids:
        yield from fetch_channel(ctx, cid, holes.get(cid, []), states.get(f"{CONFIRMED}:{cid}"))


def fetch_channel(ctx: FetchContext, channel_id: str, holes: list[tuple[int, int]], state: object) -> Iterator[Write]:
    """Re-read once any of ``holes`` (the gaps in the channel's stored offsets), but a hole confirmed empty within
    :data:`RECHECK_SECONDS` (``state``: the channel's saved confirmed-empty cursor; not on ``--full``); record the
    holes that survive, as gaps, and those the service confirmed empty (see the module docstring)."""
    stream = f"{CONFIRMED}:{channel_id}"
    known = {} if ctx.full else _confirmed(state)
    now = int(time.time())
    skipped = {h: at for h in holes if (at := known.get(h)) is not None and now - at < RECHECK_SECONDS}
    to_read = [h for h in holes if h not in skipped]
    if skipped:
        log.info("channel %s: %d hole(s) confirmed empty earlier, not read again yet", channel_id, len(skipped))
    if to_read:
        log.info("channel %s: %d hole(s) in the stored event offsets, read again", channel_id, len(to_read))
    served_twice: set[int] = set()
    answered: list[tuple[int, int]] = []  # (offset asked, highest offset served) of each page read without problem
    for lo, hi in to_read:
        if any(a <= lo and hi <= top for a, top in answered):
            continue  # a page read for an earlier hole already answered this range
        walk = ctx.client.event_wire_pages(channel_id, start=lo, limit=EVENT_PAGE_LIMIT, pool=ctx.pool, until=hi)
        for page in tolerant(walk):
            if page.problem is not None:  # the hole stays, and is recorded below
                ctx.note_page(page)
                break
            served_twice |= _served_twice(ctx, page, channel_id)
            batch = event_batch(ctx, page, channel_id)
            offsets = _offsets(page)
            # a page that served something it could not store (an item that is not an event) confirms nothing
            if offsets and not page.rejected and batch.num_rows == len(offsets):
                answered.append((int(page.params.get("offset") or lo), max(offsets)))
            yield Write("events", batch)
            if page.next_offset is None or page.next_offset > hi:
                break
    left = ctx.read(lambda wh: wh.event_holes(channel_id, served_twice)) if to_read else []
    confirmed = dict(skipped)
    for lo, hi in left:
        if (lo, hi) in skipped:
            continue
        log.warning("channel %s: offsets %d-%d still missing after a re-read (recorded as a gap)", channel_id, lo, hi)
        empty = any(a <= lo and hi <= top for a, top in answered)  # the service served past it, without it
        ctx.gap(channel_id, lo, hi, confirmed_empty=empty)
        if empty:
            confirmed[(lo, hi)] = now
    if confirmed != known:
        value = {"holes": [[lo, hi, at] for (lo, hi), at in sorted(confirmed.items())]}
        ctx.read(lambda wh: wh.set_cursor(stream, value))


def _confirmed(state: object) -> dict[tuple[int, int], int]:
    """The holes saved as confirmed empty, with when (unix seconds)."""
    holes = state.get("holes") if isinstance(state, dict) else None
    if not isinstance(holes, list):
        return {}
    return {(int(h[0]), int(h[1])): int(h[2]) for h in holes if isinstance(h, list) and len(h) == 3}


def _offsets(page: WireEventPage) -> list[int]:
    """The offsets a page served."""
    return page.columns.served_offsets() if page.columns is not None else []


def _served_twice(ctx: FetchContext, page: WireEventPage, channel_id: str) -> set[int]:
    """Offsets of ``page`` whose event id is served at another offset too (in the page, or where the channel
    stores it)."""
    pairs = page.columns.served_ids() if page.columns is not None else []
    if not pairs:
        return set()
    stored = ctx.read(lambda wh: wh.event_offsets(channel_id, {i for i, _ in pairs}))
    seen: defaultdict[str, set[int]] = defaultdict(set)
    for event_id, offset in [*pairs, *((i, o) for i, o in stored if o is not None)]:
        seen[event_id].add(int(offset))
    return {o for offsets in seen.values() if len(offsets) > 1 for o in offsets}
