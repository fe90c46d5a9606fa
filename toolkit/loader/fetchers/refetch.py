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
    getters = {"operation": ("operations", ctx.client.get_operation), "query": ("queries", ctx.client.get_query)}
    queued = ctx.read(lambda wh: {kind: wh.refetch_queue(kind, channel_ids) for kind in KINDS})
    for kind, (table, get) in getters.items():
        rows = queued[kind]
        if rows:
            log.info("fetching %d queued %s records one by one", len(rows), kind)
        for i in range(0, len(rows), chunk):
            keys = rows[i : i + chunk]
            records = ctx.fetch_each(keys, get)
            by_channel: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for (cid, rid), record in zip(keys, records, strict=True):
                if record is None:
                    ctx.result.rejected.append(f"{kind} {rid} is named by events but answers 404")
                elif isinstance(record, dict):
                    by_channel[cid].append(record)
            unread = {key for key, record in zip(keys, records, strict=True) if record is UNREADABLE}
            for cid in {c for c, _ in keys}:
                ids = [rid for c, rid in keys if c == cid and (c, rid) not in unread]  # the rest stay queued
                yield ctx.rows(table, by_channel.get(cid, []), defaults={"channel_id": cid}, done_refetch=(kind, ids))
