"""Paged lists read concurrently and batched per stream: each stream's pages become writes of a few thousand rows,
each carrying the stream's cursor (shared by the list fetchers)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...api import Page
from ...api.concurrency import prefetch
from ...errors import BadPageError
from ..context import FetchContext
from ..unit_of_work import Write

PageT = TypeVar("PageT", bound=Page)

#: Rows of one stream written together (one INSERT with its cursor).
COMMIT_ROWS = {"events": 5000, "operations": 2000, "queries": 2000}
#: Parsed records waiting across all streams before the largest buffer is written early (memory ceiling).
MAX_BUFFERED_ROWS = 6000

#: A stream key ``(table, channel_id)`` and what makes its pages.
Streams = dict[tuple[str, str], Callable[[], Iterator[Page]]]


def tolerant(pages: Iterator[PageT]) -> Iterator[PageT]:
    """A stream of pages in which a page that cannot be read (after the retries) ends the stream as an empty page
    naming its request and problem, for the run to record, instead of an error that stops the run."""
    try:
        yield from pages
    except BadPageError as exc:
        yield exc.page


def tolerating(make: Callable[[], Iterator[PageT]]) -> Callable[[], Iterator[PageT]]:
    """A stream factory whose streams are :func:`tolerant`."""
    return lambda: tolerant(make())


def weight(records: Sequence[dict[str, Any]]) -> int:
    """What buffered records cost, in rows: one each, plus one per transaction an operation carries (an operation
    of 16 transactions holds 17 rows' worth of parsed objects, and becomes 17 rows)."""
    return sum(1 + (len(tx) if isinstance(tx := r.get("transactions"), list) else 0) for r in records)


@dataclass
class Buffer:
    """Pages of one stream waiting to be written together."""

    records: list[dict[str, Any]] = field(default_factory=list)
    last: Page | None = None
    #: The records' weight (see :func:`weight`).
    weight: int = 0


def consume(
    ctx: FetchContext,
    streams: Streams,
    cursor_of: Callable[[tuple[str, str], Buffer], tuple[str, Any] | None],
) -> Iterator[Write]:
    """Fetch streams concurrently; yield each stream's pages in batches, each with the stream's cursor."""
    buffers: dict[tuple[str, str], Buffer] = defaultdict(Buffer)

    def flush(key: tuple[str, str]) -> Write | None:
        buf = buffers.pop(key, None)
        if buf is None or buf.last is None:
            return None
        table, cid = key
        return ctx.rows(table, buf.records, page=buf.last, defaults={"channel_id": cid}, cursor=cursor_of(key, buf))

    buffered = 0
    for key, page in prefetch({k: tolerating(make) for k, make in streams.items()}, workers=ctx.workers):
        ctx.note_page(page)
        if page.problem is not None:  # unreadable, or repeating: the stream stops; its cursor stays at its last
            continue  # good page (a repeated page's rows must not move the offset past the end)
        buf = buffers[key]
        buf.records.extend(page.records)
        buf.last = page
        w = weight(page.records)
        buf.weight += w
        buffered += w
        ctx.progress.bar(key[0]).update(len(page.records))
        flushed = None
        if buf.weight >= COMMIT_ROWS[key[0]] or not page.has_more:
            buffered -= buf.weight
            flushed = flush(key)
        elif buffered > MAX_BUFFERED_ROWS:  # parsed records are bulky: keep few of them alive at once
            largest = max(buffers, key=lambda k: buffers[k].weight)
            buffered -= buffers[largest].weight
            flushed = flush(largest)
        if flushed is not None:
            yield flushed
    for key in list(buffers):
        if (flushed := flush(key)) is not None:
            yield flushed
