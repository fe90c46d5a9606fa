"""Walks over a channel's event search (``GET /channels/{id}/events/search``) as the loaders read them.

The search's ``offset`` is a message offset, as the poll's is (WIRE.md: "described identically"): a page holds
matching events from that offset on, and the walk continues after the highest offset it holds. The order of the
events within a page is not specified anywhere, so nothing here relies on it: the next offset is the page's
highest, whatever its position. Events are deduplicated by ``event_id`` where they are stored.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .. import spec
from .client import Client, segment
from .pages import WireEventPage, WireEventPaginator

#: The largest page event search serves.
SEARCH_PAGE_LIMIT = spec.PAGE_LIMITS["events_search"].maximum


def search_wire_pages(
    client: Client,
    channel_id: str,
    filters: Mapping[str, Any],
    *,
    start: int = 0,
    limit: int = SEARCH_PAGE_LIMIT,
) -> Iterator[WireEventPage]:
    """Every page of a channel's event search with ``filters`` (``type`` a list, ``created.gte``/``.lt`` unix
    seconds; ``None`` values are left out), from message offset ``start``, in the shape the poll walk gives
    (:meth:`Client.event_wire_pages`): decoded straight from the bytes when the page has the documented shape
    (:class:`~.pages.WireEventPaginator` through :meth:`Client.paginate`, without read-ahead: the search's offsets
    skip what does not match, so the next page's offset is known only once a page is read).

    A walk that stops early says why in the last page's :attr:`~.pages.Page.problem` (offsets going backwards, more
    claimed with nothing on the page); a page that cannot be read raises :class:`~toolkit.errors.BadPageError`.
    """
    path = f"channels/{segment(channel_id)}/events/search"
    params = {k: v for k, v in filters.items() if v is not None}
    return client.paginate(WireEventPaginator(path, params, limit=limit, start=start))
