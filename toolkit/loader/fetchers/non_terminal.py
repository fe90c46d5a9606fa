"""On incremental runs, the operations not yet on chain and the queries not yet answered, re-listed with a status
filter: a few pages at most, and a safety net for any move whose event was missed."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ... import spec
from ..context import FetchContext
from ..unit_of_work import Write
from .paged import Streams, consume

#: Statuses the incremental re-list asks for: operations not yet on chain. Once included (confirmed_latest and
#: after) their remaining moves come as events; and on test networks confirmed_latest is the last status ever, so
#: re-listing it would cost a request per hundred of them on every run, forever.
_ON_CHAIN_RANK = spec.OPERATION_STAGE_ORDER["confirmed_latest"]
NON_TERMINAL_OPERATION_STATUSES = [
    s for s, rank in spec.OPERATION_STAGE_ORDER.items() if s not in spec.OPERATION_TERMINAL and rank < _ON_CHAIN_RANK
]
NON_TERMINAL_QUERY_STATUSES = [s for s in spec.QUERY_STATUSES if s not in spec.QUERY_TERMINAL]


def fetch(ctx: FetchContext, channel_ids: Sequence[str]) -> Iterator[Write]:
    """Yield the in-flight operations and queries of ``channel_ids`` (no cursor: the full pass keeps its own)."""
    client, pool = ctx.client, ctx.pool
    streams: Streams = {}
    for cid in channel_ids:
        streams[("operations", cid)] = lambda c=cid: client.operation_pages(
            c, status=NON_TERMINAL_OPERATION_STATUSES, pool=pool
        )
        streams[("queries", cid)] = lambda c=cid: client.query_pages(c, status=NON_TERMINAL_QUERY_STATUSES, pool=pool)
    yield from consume(ctx, streams, lambda key, buf: None)
