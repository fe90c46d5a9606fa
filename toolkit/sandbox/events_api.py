"""Handlers of the event endpoints: poll, search and fetch-one, served from pre-serialised bytes."""

from __future__ import annotations

from toolkit.sandbox.apierror import ApiError, validation
from toolkit.sandbox.backend import Backend
from toolkit.sandbox.eventlog import TimeRange
from toolkit.sandbox.messages import Request, Response, events_response
from toolkit.sandbox.networks import MODELS
from toolkit.sandbox.params import choice, integer, many, one
from toolkit.spec import EVENT_SEARCH_FILTERS, EVENT_TYPES, PAGE_LIMITS, ChainEnvironment, ErrorType

ALL_FILTERS: frozenset[str] = frozenset().union(*EVENT_SEARCH_FILTERS.values())
_SUBJECTS = ("operation_id", "query_id", "watcher_id", "wallet_id")
_TIME_PARAMS = (("created.gt", "gt"), ("created.gte", "gte"), ("created.lt", "lt"), ("created.lte", "lte"))


def poll_events(b: Backend, req: Request, channel_id: str) -> Response:
    """GET /channels/{id}/events: newest first without ``offset``; from message offset ``offset`` ascending."""
    b.channel(channel_id)
    q, log = req.query, b.org.logs[channel_id]
    limits = PAGE_LIMITS["events"]
    limit = integer(q, "limit", 1, limits.maximum) or limits.default
    offset = integer(q, "offset", 0)
    types = many(q, "type", EVENT_TYPES)
    if offset is None:
        offsets, more = log.select(0, limit, types=types, descending=True)
    else:
        offsets, more = log.select(offset, limit, types=types)
    return events_response(log.render(offsets), more)


def _effective_types(q: dict[str, list[str]], present: list[str]) -> frozenset[str]:
    types = many(q, "type", EVENT_TYPES)
    if types is not None:
        for name in present:
            wrong = sorted(t for t in types if name not in EVENT_SEARCH_FILTERS[t])
            if wrong:
                raise validation(f"filter {name!r} does not apply to event type {wrong[0]!r}")
        return types
    effective = frozenset(t for t in EVENT_TYPES if all(name in EVENT_SEARCH_FILTERS[t] for name in present))
    if not effective:
        raise validation(f"filters {', '.join(sorted(present))} do not apply together to any event type")
    return effective


def search_events(b: Backend, req: Request, channel_id: str) -> Response:
    """GET /channels/{id}/events/search: ascending from message offset ``offset``, with filters."""
    b.channel(channel_id)
    q, log = req.query, b.org.logs[channel_id]
    limits = PAGE_LIMITS["events_search"]
    limit = integer(q, "limit", 1, limits.maximum) or limits.default
    offset = integer(q, "offset", 0) or 0
    present = sorted(name for name in ALL_FILTERS if name in q or name + "[]" in q)
    types = _effective_types(q, present)
    bounds = {attr: integer(q, name, -(2**63)) for name, attr in _TIME_PARAMS}
    times = TimeRange(**bounds) if any(v is not None for v in bounds.values()) else None
    chains = many(q, "chain_selector")
    env = choice(q, "chain_environment", tuple(e.value for e in ChainEnvironment))
    if env is not None:
        in_env = frozenset(sel for sel, m in MODELS.items() if m.known.type == env)
        chains = in_env if chains is None else chains & in_env
    subject = next((one(q, name) for name in _SUBJECTS if name in present), None)
    addresses = many(q, "address")
    extra = one(q, "wallet_operation_id") if "wallet_operation_id" in present else one(q, "event_name")
    match = log.matcher(
        status=many(q, "status"),
        chains=chains,
        addresses=frozenset(a.lower() for a in addresses) if addresses else None,
        extra=extra,
        services=many(q, "service"),
    )
    all_types = len(types) == len(EVENT_TYPES)
    offsets, more = log.select(
        offset, limit, types=None if all_types else types, times=times, match=match, subject=subject
    )
    return events_response(log.render(offsets), more)


def get_event(b: Backend, req: Request, channel_id: str, event_id: str) -> Response:
    """GET /channels/{id}/events/search/{event_id}."""
    b.channel(channel_id)
    log = b.org.logs[channel_id]
    offset = log.offset_of(event_id)
    if offset is None:
        raise ApiError(404, ErrorType.NOT_FOUND, "event not found")
    return Response(200, log.event_bytes(offset))
