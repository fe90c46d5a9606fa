"""Handlers of the write endpoints: validate the body, call the backend, answer with the right status."""

from __future__ import annotations

from toolkit.sandbox import validate
from toolkit.sandbox.backend import Backend
from toolkit.sandbox.messages import Request, Response, json_response


def create_wallet(b: Backend, req: Request) -> Response:
    """POST /wallets -> 201 Wallet (``pending``)."""
    return json_response(b.create_wallet(validate.create_wallet(validate.parse_json(req.body))), 201)


def update_wallet(b: Backend, req: Request, wallet_id: str) -> Response:
    """PATCH /wallets/{id} -> 200 Wallet."""
    return json_response(b.update_wallet(wallet_id, validate.update_wallet(validate.parse_json(req.body))))


def create_channel(b: Backend, req: Request) -> Response:
    """POST /channels -> 201 Channel."""
    return json_response(b.create_channel(validate.create_channel(validate.parse_json(req.body))), 201)


def update_channel(b: Backend, req: Request, channel_id: str) -> Response:
    """PATCH /channels/{id} -> 200 Channel."""
    return json_response(b.update_channel(channel_id, validate.patch_channel(validate.parse_json(req.body))))


def create_watcher(b: Backend, req: Request, channel_id: str) -> Response:
    """POST /channels/{id}/watchers -> 201 Watcher (``pending``)."""
    body = validate.create_watcher(validate.parse_json(req.body))
    return json_response(b.create_watcher(channel_id, body), 201)


def update_watcher(b: Backend, req: Request, channel_id: str, watcher_id: str) -> Response:
    """PATCH a watcher -> 200 (rename) or 202 (archive, ``archiving``)."""
    body = validate.update_watcher(validate.parse_json(req.body))
    watcher, archiving = b.update_watcher(channel_id, watcher_id, body)
    return json_response(watcher, 202 if archiving else 200)


def create_operation(b: Backend, req: Request, channel_id: str) -> Response:
    """POST /channels/{id}/operations -> 201 ``{"operation_id"}``."""
    op = b.create_operation(channel_id, validate.create_operation(validate.parse_json(req.body)))
    return json_response({"operation_id": op["operation_id"]}, 201)


def patch_operation(b: Backend, req: Request, channel_id: str, operation_id: str) -> Response:
    """PATCH an operation: finalize or cancel a draft -> 200 Operation."""
    body = validate.patch_operation(validate.parse_json(req.body))
    if body["status"] == "accepted":
        op = b.finalize_operation(channel_id, operation_id, body["signature"], body["digest"])
    else:
        op = b.cancel_operation(channel_id, operation_id)
    return json_response(op)


def create_query(b: Backend, req: Request, channel_id: str) -> Response:
    """POST /channels/{id}/queries -> 202 ``{"query_id", "status"}`` (idempotent by key)."""
    query, _ = b.create_query(channel_id, validate.create_query(validate.parse_json(req.body)))
    return json_response({"query_id": query["query_id"], "status": query["status"]}, 202)
