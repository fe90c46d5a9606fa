"""Each channel's watchers: the list of summaries, then the detail (events, ABI, config) of each watcher that is new
or whose name or status changed since the warehouse saw it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from ...api.concurrency import prefetch
from ...warehouse import Warehouse
from ..context import FetchContext
from ..unit_of_work import Write
from .paged import tolerant


def fetch(ctx: FetchContext, channel_ids: Sequence[str]) -> Iterator[Write]:
    """Yield the watchers that changed, a write per channel."""
    client, pool = ctx.client, ctx.pool
    streams = {cid: (lambda cid=cid: tolerant(client.watcher_pages(cid, pool=pool))) for cid in channel_ids}
    summaries: list[tuple[str, dict[str, Any]]] = []
    for cid, page in prefetch(streams, workers=ctx.workers):
        ctx.note_page(page)
        summaries += [(cid, w) for w in page.records if isinstance(w.get("watcher_id"), str)]
    known = ctx.read(Warehouse.watcher_states)
    changed = [(cid, w) for cid, w in summaries if known.get(w["watcher_id"]) != (w.get("name"), w.get("status"))]
    details = ctx.fetch_each([(cid, w["watcher_id"]) for cid, w in changed], client.get_watcher)
    by_channel: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (cid, summary), detail in zip(changed, details, strict=True):
        by_channel[cid].append(detail if isinstance(detail, dict) else summary)
    for cid, records in by_channel.items():
        yield ctx.rows("watchers", records, defaults={"channel_id": cid})
