"""The operations and queries that events named but the warehouse lacks (queued in ``sync_refetch`` by the
patch), fetched one by one; each is taken off the queue in the transaction that stores it."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from ..context import UNREADABLE, FetchContext
from ..unit_of_work import Write

log = logging.getLogger("toolkit.loader")
KINDS = ("operation", "query")


def fetch(ctx: FetchContext, channel_ids: Sequence[str], chunk: int = 200) -> Iterator[Write]:
    """Yield the queued records of ``channel_ids``, a write per channel and chunk; a record that answers 404 is
    rejected (and dropped from the queue), one that cannot be read stays queued for the next run."""
    queued = ctx.read(lambda wh: {kind: wh.refetch_queue(kind, channel_ids) for kind in KINDS})
    for kind in KINDS:
        rows = queued[kind]
        if rows:
            log.info("fetching %d queued %s records one by one", len(rows), kind)
        yield from one_by_one(ctx, kind, rows, vanished="is named by events but answers 404", queued=True, chunk=chunk)


def one_by_one(
    ctx: FetchContext,
    kind: str,
    keys: Sequence[tuple[str, str]],
    *,
    vanished: str,
    queued: bool,
    chunk: int = 200,
) -> Iterator[Write]:
    """GET each ``(channel_id, id)`` of ``kind`` (operation, query) and yield the records, a write per channel and
    chunk. A 404 is rejected as ``<kind> <id> <vanished>``; with ``queued``, each write takes what it stores (and
    what answered 404) off the refetch queue, and what cannot be read stays queued for the next run."""
    table, get = {"operation": ("operations", ctx.client.get_operation), "query": ("queries", ctx.client.get_query)}[
        kind
    ]
    for i in range(0, len(keys), chunk):
        part = keys[i : i + chunk]
        records = ctx.fetch_each(part, get)
        by_channel: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for (cid, rid), record in zip(part, records, strict=True):
            if record is None:
                ctx.result.rejected.append(f"{kind} {rid} {vanished}")
            elif isinstance(record, dict):
                by_channel[cid].append(record)
        unread = {key for key, record in zip(part, records, strict=True) if record is UNREADABLE}
        for cid in dict.fromkeys(c for c, _ in part):
            done = [rid for c, rid in part if c == cid and (c, rid) not in unread] if queued else None
            if not by_channel.get(cid) and not done:
                continue
            yield ctx.rows(
                table,
                by_channel.get(cid, []),
                defaults={"channel_id": cid},
                done_refetch=(kind, done) if done is not None else None,
            )
