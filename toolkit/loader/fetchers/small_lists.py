"""Networks, channels and wallets: small lists, read whole every run (at once, with several workers)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator

from ...api import Page
from ...api.client import is_segment
from ...api.concurrency import prefetch
from ...warehouse import Warehouse
from ..context import FetchContext
from ..unit_of_work import Write
from .paged import tolerant


def fetch(ctx: FetchContext) -> Generator[Write, None, list[str]]:
    """Yield the three lists' rows; return every channel id (those listed, and the stored ones when the channel
    list stopped at a bad page: the channels past it are not lost for this run) that can be sent in a path (one that
    cannot, ``..`` say, is a problem of the run)."""
    client, pool = ctx.client, ctx.pool
    streams: dict[str, Callable[[], Iterator[Page]]] = {
        "networks": lambda: tolerant(client.network_pages(pool=pool)),
        "channels": lambda: tolerant(client.channel_pages(pool=pool)),
        "wallets": lambda: tolerant(client.wallet_pages(pool=pool)),
    }
    channel_ids: list[str] = []
    listed_whole = True
    for table, page in prefetch(streams, workers=ctx.workers):
        ctx.note_page(page)
        if table == "channels":
            listed_whole = listed_whole and page.problem is None
            channel_ids += [c["channel_id"] for c in page.records if isinstance(c.get("channel_id"), str)]
        yield ctx.rows(table, page.records, page=page)
    if not listed_whole:
        channel_ids += ctx.read(Warehouse.channel_ids)
    usable = []
    for cid in dict.fromkeys(channel_ids):
        if is_segment(cid):
            usable.append(cid)
        else:  # stored with the channels, but nothing can be asked for it without leaving its own path
            ctx.problem(
                f"channel id {cid!r} cannot be sent as one path segment; its watchers, operations, queries and "
                "events are not synced (the other channels are)"
            )
    return usable
