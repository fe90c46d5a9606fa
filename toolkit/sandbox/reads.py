"""Handlers of the read endpoints: networks, wallets, channels, watchers, operations, queries."""

from __future__ import annotations

from toolkit.sandbox.backend import Backend
from toolkit.sandbox.messages import Request, Response, json_response, list_response
from toolkit.sandbox.networks import MODELS, network_records
from toolkit.sandbox.params import address, choice, lowered, many, one, page, paging, uuid
from toolkit.sandbox.resources import watcher_summary
from toolkit.spec import (
    CHANNEL_STATUSES,
    OPERATION_STATUSES,
    PAGE_LIMITS,
    QUERY_STATUSES,
    WALLET_STATUSES,
    WATCHER_STATUSES,
    ChainEnvironment,
    QueryKind,
    WalletType,
)

_ENVIRONMENTS = tuple(e.value for e in ChainEnvironment)


def _environment(query: dict[str, list[str]]) -> frozenset[str] | None:
    env = choice(query, "chain_environment", _ENVIRONMENTS)
    if env is None:
        return None
    return frozenset(sel for sel, m in MODELS.items() if m.known.type == env)


def _statuses(query: dict[str, list[str]], allowed: tuple[str, ...], hide_archived: bool) -> frozenset[str] | None:
    statuses = many(query, "status", allowed)
    if statuses is None and hide_archived:
        return frozenset(allowed) - {"archived"}
    return statuses


def get_networks(b: Backend, req: Request) -> Response:
    """GET /networks (no paging)."""
    return list_response(network_records(), False)


def list_wallets(b: Backend, req: Request) -> Response:
    """GET /wallets."""
    q = req.query
    limit, offset = paging(q, PAGE_LIMITS["wallets"])
    statuses = _statuses(q, WALLET_STATUSES, True)
    name = (one(q, "name") or "").lower()
    chain, owner, addr = one(q, "chain_selector"), address(q, "owner"), address(q, "address")
    wtype = choice(q, "type", tuple(t.value for t in WalletType))
    env = _environment(q)
    items = [
        w
        for w in b.org.wallets.values()
        if (statuses is None or w["status"] in statuses)
        and name in w["name"].lower()
        and (chain is None or w["chain_selector"] == chain)
        and (env is None or w["chain_selector"] in env)
        and (owner is None or w["wallet_owner_address"].lower() == owner)
        and (addr is None or w["address"].lower() == addr)
        and (wtype is None or w["wallet_type"] == wtype)
    ]
    return list_response(*page(items, limit, offset))


def get_wallet(b: Backend, req: Request, wallet_id: str) -> Response:
    """GET /wallets/{id}."""
    return json_response(b.wallet(wallet_id))


def list_channels(b: Backend, req: Request) -> Response:
    """GET /channels."""
    q = req.query
    limit, offset = paging(q, PAGE_LIMITS["channels"])
    statuses = _statuses(q, CHANNEL_STATUSES, True)
    name = (one(q, "name") or "").lower()
    items = [
        c
        for c in b.org.channels.values()
        if (statuses is None or c["status"] in statuses) and name in c["name"].lower()
    ]
    return list_response(*page(items, limit, offset))


def get_channel(b: Backend, req: Request, channel_id: str) -> Response:
    """GET /channels/{id}."""
    return json_response(b.channel(channel_id))


def list_watchers(b: Backend, req: Request, channel_id: str) -> Response:
    """GET /channels/{id}/watchers (WatcherSummary items)."""
    b.channel(channel_id)
    q = req.query
    limit, offset = paging(q, PAGE_LIMITS["watchers"])
    statuses = _statuses(q, WATCHER_STATUSES, True)
    name = (one(q, "name") or "").lower()
    chain, addr, event_name = one(q, "chain_selector"), lowered(q, "address"), one(q, "event_name")
    services, env = many(q, "service"), _environment(q)
    watchers = (b.org.watchers[w] for w in b.org.channel_watchers[channel_id])
    items = [
        watcher_summary(w)
        for w in watchers
        if (statuses is None or w["status"] in statuses)
        and name in (w.get("name") or "").lower()
        and (chain is None or w["chain_selector"] == chain)
        and (env is None or w["chain_selector"] in env)
        and (addr is None or w["address"].lower() == addr)
        and (services is None or w.get("service") in services)
        and (event_name is None or event_name in w["events"])
    ]
    return list_response(*page(items, limit, offset))


def get_watcher(b: Backend, req: Request, channel_id: str, watcher_id: str) -> Response:
    """GET /channels/{id}/watchers/{id} (full Watcher)."""
    return json_response(b.watcher(channel_id, watcher_id))


def list_operations(b: Backend, req: Request, channel_id: str) -> Response:
    """GET /channels/{id}/operations."""
    b.channel(channel_id)
    q = req.query
    limit, offset = paging(q, PAGE_LIMITS["operations"])
    statuses = many(q, "status", OPERATION_STATUSES)
    chain, addr, wallet_id, env = one(q, "chain_selector"), lowered(q, "address"), uuid(q, "wallet_id"), _environment(q)
    subjects = _subject_filters(q)
    ids = b.org.channel_operations[channel_id]
    if all(f is None for f in (statuses, chain, addr, wallet_id, env)) and not subjects:  # page the id list
        window, more = page(ids, limit, offset)
        return list_response([b.org.operations[o] for o in window], more)
    owner = b.org.operation_wallet
    ops = (b.org.operations[o] for o in ids)
    items = [
        o
        for o in ops
        if (statuses is None or o["status"] in statuses)
        and (chain is None or o["chain_selector"] == chain)
        and (env is None or o["chain_selector"] in env)
        and (addr is None or o["address"].lower() == addr)
        and (wallet_id is None or owner.get(o["operation_id"]) == wallet_id)
        and all(_subject_matches(o.get(role), key, value) for role, key, value in subjects)
    ]
    return list_response(*page(items, limit, offset))


_SUBJECT_ROLES = ("initiator", "signer", "canceller")


def _subject_filters(q: dict[str, list[str]]) -> list[tuple[str, str, str]]:
    """``(role, subject field, wanted value)`` of each ``<role>_subject_type``/``_id`` filter given (the type was
    checked against ``api_key``/``user`` before the handler)."""
    out = []
    for role in _SUBJECT_ROLES:
        for part in ("type", "id"):
            value = one(q, f"{role}_subject_{part}")
            if value is not None:
                out.append((role, f"subject_{part}", value))
    return out


def _subject_matches(subject: dict | None, key: str, value: str) -> bool:
    return subject is not None and subject.get(key) == value


def get_operation(b: Backend, req: Request, channel_id: str, operation_id: str) -> Response:
    """GET /channels/{id}/operations/{id}."""
    return json_response(b.operation(channel_id, operation_id))


def list_queries(b: Backend, req: Request, channel_id: str) -> Response:
    """GET /channels/{id}/queries."""
    b.channel(channel_id)
    q = req.query
    limit, offset = paging(q, PAGE_LIMITS["queries"])
    statuses = many(q, "status", QUERY_STATUSES)
    kinds = many(q, "query_kind", tuple(k.value for k in QueryKind))
    chain, env = one(q, "chain_selector"), _environment(q)
    ids = b.org.channel_queries[channel_id]
    if all(f is None for f in (statuses, kinds, chain, env)):
        window, more = page(ids, limit, offset)
        return list_response([b.org.queries[x] for x in window], more)
    queries = (b.org.queries[x] for x in ids)
    items = [
        x
        for x in queries
        if (statuses is None or x["status"] in statuses)
        and (kinds is None or x["query_kind"] in kinds)
        and (chain is None or x["chain_selector"] == chain)
        and (env is None or x["chain_selector"] in env)
    ]
    return list_response(*page(items, limit, offset))


def get_query(b: Backend, req: Request, channel_id: str, query_id: str) -> Response:
    """GET /channels/{id}/queries/{id}."""
    return json_response(b.query(channel_id, query_id))
