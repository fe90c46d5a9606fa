"""The pass over operations and queries (``limit``/``offset`` lists): from the start until it has completed once
(resuming mid-list after a crash), then only the tail past the saved offset.

Lists come in creation order on the sandbox and the SDK's mock, so the tail holds the new rows, a page per hundred;
if a service orders them otherwise the tail is merely re-read rows, and new ones still arrive through their events
and the refetch. The offset is saved with every written batch, so a killed run resumes the pass where it stopped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from ...warehouse import Warehouse
from ..context import FetchContext
from ..unit_of_work import Write
from .paged import Buffer, Streams, consume

#: The tables listed whole per channel (limit/offset pages), each with its saved offset per channel.
LISTED_TABLES = ("operations", "queries")


def fetch(ctx: FetchContext, channel_ids: Sequence[str]) -> Iterator[Write]:
    """Yield each channel's operations and queries past the saved offsets, each batch with its cursor."""
    got = ctx.read(lambda wh: wh.get_cursors(f"{t}:{c}" for t in LISTED_TABLES for c in channel_ids))
    saved: dict[tuple[str, str], Any] = {(t, c): got[f"{t}:{c}"] or {} for t in LISTED_TABLES for c in channel_ids}
    streams: Streams = {}
    starts: dict[tuple[str, str], tuple[int, bool]] = {}
    for table in LISTED_TABLES:
        pages_of = ctx.client.operation_pages if table == "operations" else ctx.client.query_pages
        for cid in channel_ids:
            cursor = saved[(table, cid)]
            start = int(cursor.get("offset", 0))
            starts[(table, cid)] = (start, bool(cursor.get("complete")))
            streams[(table, cid)] = lambda p=pages_of, c=cid, s=start: p(c, start=s, pool=ctx.pool)
    seen: Counter[tuple[str, str]] = Counter()

    def cursor_of(key: tuple[str, str], buf: Buffer) -> tuple[str, Any]:
        seen[key] += len(buf.records)
        assert buf.last is not None
        start, was_complete = starts[key]
        complete = was_complete or not (buf.last.has_more or buf.last.problem)
        return f"{key[0]}:{key[1]}", {"offset": start + seen[key], "complete": complete}

    yield from consume(ctx, streams, cursor_of)


def listed_channels(wh: Warehouse, channel_ids: Sequence[str]) -> list[str]:
    """The channels whose operations and queries were listed whole before this run: only their in-flight rows are
    re-listed (one channel whose list stopped at a bad page does not turn that off for the others)."""
    got = wh.get_cursors(f"{t}:{c}" for t in LISTED_TABLES for c in channel_ids)
    return [c for c in channel_ids if all((got[f"{t}:{c}"] or {}).get("complete") for t in LISTED_TABLES)]


def restart(wh: Warehouse, channel_ids: Sequence[str]) -> None:
    """``--full``: every list and event log of ``channel_ids`` read from the start again (committed at once, so a
    killed ``--full`` run is continued by the next run)."""
    with wh.transaction():
        for cid in channel_ids:
            wh.set_cursor(f"operations:{cid}", {"offset": 0, "complete": False})
            wh.set_cursor(f"queries:{cid}", {"offset": 0, "complete": False})
            wh.set_cursor(f"events:{cid}", {"next_offset": 0})
