"""The watchers that new ``watcher.status`` events name, fetched again by id: on a run that does not list a channel's
watchers (see :mod:`toolkit.loader.safety_net`), this is how their moves, and new watchers, reach the warehouse.

Which events are new is told by ``write_seq`` (the transaction that stored them), from a watermark saved with the
fetched rows: a run killed before this phase leaves the events to the next one. A watcher is fetched only when its
newest new event reports a status other than the one the warehouse holds (or the warehouse lacks it), so the
watchers a run has just listed cost nothing more."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from ..context import UNREADABLE, FetchContext
from ..unit_of_work import Write

log = logging.getLogger("toolkit.loader")
#: The ``sync_state`` stream of the watermark: ``{"write_seq": n}``, the newest event considered.
STREAM = "watchers:events"


def fetch(ctx: FetchContext) -> Iterator[Write]:
    """Yield the watchers new events moved, a write per channel; the last write carries the new watermark (none when
    a watcher could not be read: the next run tries again)."""
    since = int((ctx.read(lambda wh: wh.get_cursor(STREAM)) or {}).get("write_seq", -1))
    named, top = ctx.read(lambda wh: wh.watchers_moved_since(since))
    if top is None:
        return
    if named:
        log.info("fetching %d watchers that new watcher.status events moved", len(named))
    details = ctx.fetch_each(named, ctx.client.get_watcher)
    by_channel: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (cid, wid), detail in zip(named, details, strict=True):
        if detail is None:
            ctx.result.rejected.append(f"watcher {wid} is named by events but answers 404")
        elif isinstance(detail, dict):
            by_channel[cid].append(detail)
    cursor = None if any(d is UNREADABLE for d in details) else (STREAM, {"write_seq": top})
    channels = list(by_channel)
    for cid in channels[:-1]:
        yield ctx.rows("watchers", by_channel[cid], defaults={"channel_id": cid})
    last = channels[-1] if channels else None
    if last is not None:
        yield ctx.rows("watchers", by_channel[last], defaults={"channel_id": last}, cursor=cursor)
    elif cursor is not None:
        yield ctx.rows("watchers", [], cursor=cursor)
