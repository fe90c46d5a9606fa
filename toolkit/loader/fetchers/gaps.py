"""Holes in a channel's stored event offsets, re-read once; the holes that survive are recorded in the run's gaps.

Message offsets are a per-channel sequence, so a missing offset between stored ones is an event not stored (a page
skipped, an event rejected, a service that served a page short). A service may serve one event id at two offsets;
the warehouse keeps one row per event id, so both offsets count as read.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Sequence

from ...api import WireEventPage
from ...api.pages import event_offset
from ..context import FetchContext
from ..unit_of_work import Write
from .events import EVENT_PAGE_LIMIT, event_batch
from .paged import tolerant

log = logging.getLogger("toolkit.loader")


def fetch(ctx: FetchContext, channel_ids: Sequence[str]) -> Iterator[Write]:
    """Re-read each channel's holes (see the module docstring)."""
    for cid in channel_ids:
        yield from fetch_channel(ctx, cid)


def fetch_channel(ctx: FetchContext, channel_id: str) -> Iterator[Write]:
    """Re-read once any hole in the channel's stored offsets; record the holes that survive."""
    holes = ctx.read(lambda wh: wh.event_holes(channel_id))
    if holes:
        log.info("channel %s: %d hole(s) in the stored event offsets %s, read again", channel_id, len(holes), holes)
    served_twice: set[int] = set()
    for lo, hi in holes:
        walk = ctx.client.event_wire_pages(channel_id, start=lo, limit=EVENT_PAGE_LIMIT, pool=ctx.pool, until=hi)
        for page in tolerant(walk):
            if page.problem is not None:  # the hole stays, and is recorded below
                ctx.note_page(page)
                break
            served_twice |= _served_twice(ctx, page, channel_id)
            yield Write("events", event_batch(ctx, page, channel_id))
            if page.next_offset is None or page.next_offset > hi:
                break
    left = ctx.read(lambda wh: wh.event_holes(channel_id, served_twice)) if holes else []
    for lo, hi in left:
        log.warning("channel %s: offsets %d-%d still missing after a re-read (recorded as a gap)", channel_id, lo, hi)
        ctx.gap(channel_id, lo, hi)


def _served_twice(ctx: FetchContext, page: WireEventPage, channel_id: str) -> set[int]:
    """Offsets of ``page`` whose event id is served at another offset too (in the page, or where the channel
    stores it)."""
    if page.decoded is not None:
        pairs = [(e.event_id, e.headers.offset) for e in page.decoded.events]
    else:
        pairs = [(r.get("event_id"), event_offset(r)) for r in page.records if isinstance(r, dict)]
    pairs = [(i, o) for i, o in pairs if isinstance(i, str) and o is not None]
    if not pairs:
        return set()
    stored = ctx.read(lambda wh: wh.event_offsets(channel_id, {i for i, _ in pairs}))
    seen: defaultdict[str, set[int]] = defaultdict(set)
    for event_id, offset in [*pairs, *((i, o) for i, o in stored if o is not None)]:
        seen[event_id].add(int(offset))
    return {o for offsets in seen.values() if len(offsets) > 1 for o in offsets}
