"""On incremental runs, the operations not yet on chain and the queries not yet answered, re-listed with a status
filter: a few pages at most, and a safety net for any move whose event was missed.

A row the warehouse holds in a re-listed status that the re-list no longer returns has moved on (its new status is
outside the filter), so it is fetched by id. Where a channel's event window leaves out ``operation.status`` (or
``query.status``), no event moves its rows at all: its operations are then re-listed in every status that is not
final, on chain included, and what moved is fetched the same way."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence

from ... import spec
from ...warehouse import RAW_TABLES, Warehouse
from ..context import FetchContext
from ..unit_of_work import Write
from .paged import Streams, consume
from .refetch import one_by_one

log = logging.getLogger("toolkit.loader")

#: Statuses the incremental re-list asks for: operations not yet on chain. Once included (confirmed_latest and
#: after) their remaining moves come as events; and on test networks confirmed_latest is the last status ever, so
#: re-listing it would cost a request per hundred of them on every run, forever.
_ON_CHAIN_RANK = spec.OPERATION_STAGE_ORDER["confirmed_latest"]
NON_TERMINAL_OPERATION_STATUSES = [
    s for s, rank in spec.OPERATION_STAGE_ORDER.items() if s not in spec.OPERATION_TERMINAL and rank < _ON_CHAIN_RANK
]
#: Statuses re-listed for a channel whose ``operation.status`` events are not synced: every one not final.
UNSETTLED_OPERATION_STATUSES = [s for s in spec.OPERATION_STAGE_ORDER if s not in spec.OPERATION_TERMINAL]
NON_TERMINAL_QUERY_STATUSES = [s for s in spec.QUERY_STATUSES if s not in spec.QUERY_TERMINAL]
#: The refetch kind of each re-listed table.
_KIND = {"operations": "operation", "queries": "query"}


def fetch(
    ctx: FetchContext,
    channel_ids: Sequence[str],
    reports_moves: Callable[[str, str], bool] = lambda channel_id, event_type: True,
) -> Iterator[Write]:
    """Yield the in-flight operations and queries of ``channel_ids`` (no cursor: the full pass keeps its own), then
    the rows that moved out of the re-listed statuses, fetched by id. ``reports_moves(channel_id, event_type)``
    says whether the warehouse holds that channel's events of that type."""
    client, pool = ctx.client, ctx.pool
    asked: dict[tuple[str, str], list[str]] = {}
    for cid in channel_ids:
        asked[("operations", cid)] = (
            NON_TERMINAL_OPERATION_STATUSES if reports_moves(cid, "operation.status") else UNSETTLED_OPERATION_STATUSES
        )
        asked[("queries", cid)] = NON_TERMINAL_QUERY_STATUSES
    held = ctx.read(lambda wh: _held(wh, asked))
    streams: Streams = {}
    for (table, cid), statuses in asked.items():
        pages_of = client.operation_pages if table == "operations" else client.query_pages
        streams[(table, cid)] = lambda c=cid, p=pages_of, s=statuses: p(c, status=s, pool=pool)
    problems = len(ctx.result.problems)
    returned: dict[str, set[str]] = {table: set() for table in _KIND}
    for write in consume(ctx, streams, lambda key, buf: None):
        (key,) = RAW_TABLES[write.table].key
        returned[write.table].update(str(v) for v in write.batch.column(key).to_pylist())
        yield write
    if len(ctx.result.problems) != problems:  # a re-list that stopped early says nothing of what moved
        return
    for table, kind in _KIND.items():
        moved = [(cid, rid) for cid, rid in held[table] if rid not in returned[table]]
        if moved:
            log.info("fetching %d %s records that moved out of the re-listed statuses", len(moved), kind)
        yield from one_by_one(ctx, kind, moved, vanished="was in flight and now answers 404", queued=False)


def _held(wh: Warehouse, asked: dict[tuple[str, str], list[str]]) -> dict[str, list[tuple[str, str]]]:
    """What the warehouse holds in the statuses each stream asks for, per table."""
    held: dict[str, list[tuple[str, str]]] = {table: [] for table in _KIND}
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (table, cid), statuses in asked.items():
        groups.setdefault((table, tuple(statuses)), []).append(cid)
    for (table, statuses), cids in groups.items():
        held[table].extend(wh.ids_in_statuses(table, cids, statuses))
    return held
