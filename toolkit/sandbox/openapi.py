"""The OpenAPI 3.1 description of the API the sandbox emulates, served at ``/v1/openapi.json``.

It is generated from what the sandbox itself uses: the route table (:mod:`toolkit.sandbox.router`), the request and
response schemas and the query parameters (:mod:`toolkit.sandbox.schemas`, which the validators check requests
against), and :mod:`toolkit.spec`. Where the sandbox is stricter or looser than the service, the description says
so (``info.description`` lists every such place; the schema concerned says "Sandbox: ..." in its description).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from toolkit.sandbox import router, schemas
from toolkit.spec import API_VERSION, EVENT_SEARCH_FILTERS, EVENT_SEARCH_UNIVERSAL

_ERRORS = {
    400: "VALIDATION_ERROR: a body or parameter failed validation (the message names the field).",
    401: "The Authorization header is missing or invalid, or the organisation is not onboarded "
    "(ORGANIZATION_NOT_FOUND).",
    404: "NOT_FOUND: the resource does not exist or belongs to another organisation.",
    409: "CONFLICT: a unique name, an idempotency key or a state transition guard.",
    429: "Rate limit exceeded. The service sends no Retry-After; the sandbox adds one only with "
    "--rate-limit-retry-after.",
    500: "INTERNAL_ERROR: safe to retry.",
}
_SUCCESS = {200: "OK", 201: "Created", 202: "Accepted"}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(name: str) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": _ref(name)}}}


def _error(status: int) -> dict[str, Any]:
    out: dict[str, Any] = {"description": _ERRORS[status], **_json("ApplicationError")}
    if status == 429:
        out["headers"] = {
            "Retry-After": {"description": "Seconds to wait (sandbox only).", "schema": {"type": "integer"}}
        }
    return out


def _path_params(pattern: tuple[str, ...]) -> list[dict[str, Any]]:
    names = [router.PATH_PARAMS[prev] for prev, seg in zip(("", *pattern), pattern, strict=False) if seg == "{}"]
    return [{"name": n, "in": "path", "required": True, "schema": schemas.UUID} for n in names]


def _query_param(param: schemas.Param) -> dict[str, Any]:
    out: dict[str, Any] = {"name": param.name, "in": "query", "required": False, "schema": param.schema}
    if param.is_array:
        out.update(style="form", explode=True)
    text = " ".join(t for t in (param.description, param.schema.get("description", "")) if t)
    if text:
        out["description"] = text
    return out


def _operation(op: schemas.Operation) -> dict[str, Any]:
    responses: dict[str, Any] = {str(op.status): {"description": _SUCCESS[op.status]}}
    if op.response is not None:
        responses[str(op.status)].update(_json(op.response))
    for status, name in op.also.items():
        responses[str(status)] = {"description": _SUCCESS[status], **_json(name)}
    # every /v1 request may meet the rate limit and a server error, whatever the service declares for it
    for status in sorted({*op.errors, 429, 500}):
        responses[str(status)] = _error(status)
    for status in op.undeclared:
        responses[str(status)]["description"] += (
            " Sandbox: the 0.8 description declares no such answer here; the sandbox keeps it."
        )
    out: dict[str, Any] = {
        "operationId": _operation_id(op),
        "summary": op.summary,
        "parameters": [*_path_params(op.pattern), *(_query_param(p) for p in op.params)],
        "responses": responses,
    }
    if op.description:
        out["description"] = op.description
    if op.body is not None:
        out["requestBody"] = {"required": True, **_json(op.body)}
    if any(p.name == "type" for p in op.params) and op.pattern[-1] == "search":
        # OpenAPI cannot say which filters go together; the rule, for readers and for tests
        out["x-parameter-combinations"] = {
            t: sorted(f | EVENT_SEARCH_UNIVERSAL) for t, f in EVENT_SEARCH_FILTERS.items()
        }
    return out


def _operation_id(op: schemas.Operation) -> str:
    words = [seg for seg in op.pattern if seg != "{}"]
    one = op.pattern[-1] == "{}"
    return "_".join([op.method.lower(), *words, *(["one"] if one else [])])


def build() -> dict[str, Any]:
    """The OpenAPI document."""
    paths: dict[str, dict[str, Any]] = {
        "/health-check": {
            "get": {
                "operationId": "health_check",
                "summary": "Liveness (no key needed)",
                "description": "Sandbox: answers without a key, as the docs say it is anonymous; the 0.8 "
                "description applies ApiKeyAuth here too (a key, when sent, is accepted).",
                "security": [],
                "responses": {"200": {"description": "OK", **_json("HealthCheck")}},
            }
        }
    }
    for op in schemas.OPERATIONS:
        handlers = router.ROUTES.get(op.pattern, {})
        if op.method not in handlers:
            raise AssertionError(f"{op.method} {router.template(op.pattern)} is described but not routed")
        paths.setdefault(router.template(op.pattern), {})[op.method.lower()] = _operation(op)
    deviations = "\n".join(f"- {d.where}: {d.what}" for d in schemas.DEVIATIONS)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Channel-Based Chain Operations Service (chainops sandbox)",
            "version": API_VERSION,
            "description": "The API the chainops sandbox emulates, written from the documented facts (API.md, "
            "WIRE.md). Where the sandbox deliberately differs from the service:\n" + deviations,
        },
        "servers": [{"url": "/v1"}],
        "security": [{"ApiKeyAuth": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "ApiKeyAuth": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "Authorization: Apikey <API_KEY>",
                }
            },
            "schemas": {**schemas.BODIES, **schemas.RESPONSES},
        },
    }


@cache
def document_bytes() -> bytes:
    """The document as JSON bytes (built once)."""
    return json.dumps(build(), separators=(",", ":")).encode()
