"""The served description is valid OpenAPI 3.1 (checked by openapi-spec-validator) and says what WIRE.md says: page
sizes and their defaults, the offset of each list, the enums, the error envelope. The expected values are copied from
WIRE.md sections 1-3, not read from the code that builds the description."""

from __future__ import annotations

import re

import httpx
import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator

#: WIRE.md section 1: (path, limit maximum, limit default, offset default or None when it has none).
PAGING = [
    ("/wallets", 100, 50, 0),
    ("/channels", 50, 20, 0),
    ("/channels/{channel_id}/watchers", 50, 20, 0),
    ("/channels/{channel_id}/operations", 100, 20, 0),
    ("/channels/{channel_id}/queries", 100, 20, 0),
    ("/channels/{channel_id}/events", 200, 200, None),
    ("/channels/{channel_id}/events/search", 200, 50, None),
]
OPERATION_STATUSES = {
    "accepted",
    "pending_signature",
    "sending",
    "sent",
    "broadcasting",
    "confirmed_latest",
    "confirmed_safe",
    "confirmed",
    "cancelled",
    "expired",
    "failed",
}
#: WIRE.md section 3 (watchers: the sandbox also keeps archive_failed, as its description says).
ENUMS = {
    ("/wallets", "status"): {"pending", "deploying", "deployed", "archived", "failed"},
    ("/wallets", "type"): {"ecdsa", "rsa", "protected_ecdsa", "protected_rsa"},
    ("/wallets", "chain_environment"): {"mainnet", "testnet"},
    ("/channels", "status"): {"active", "archived"},
    ("/channels/{channel_id}/watchers", "status"): {"pending", "active", "failed", "archiving", "archived"},
    ("/channels/{channel_id}/operations", "status"): OPERATION_STATUSES,
    ("/channels/{channel_id}/operations", "initiator_subject_type"): {"api_key", "user"},
    ("/channels/{channel_id}/operations", "signer_subject_type"): {"api_key", "user"},
    ("/channels/{channel_id}/operations", "canceller_subject_type"): {"api_key", "user"},
    ("/channels/{channel_id}/queries", "status"): {"accepted", "sending", "sent", "completed", "failed", "expired"},
    ("/channels/{channel_id}/queries", "query_kind"): {"evm_call"},
    ("/channels/{channel_id}/events/search", "type"): {
        "operation.status",
        "query.status",
        "watcher.status",
        "watcher.event",
        "wallet.status",
    },
}
UUID_PARAMS = [
    ("/channels/{channel_id}/operations", "wallet_id"),
    ("/channels/{channel_id}/events/search", "watcher_id"),
    ("/channels/{channel_id}/events/search", "wallet_id"),
]


@pytest.fixture(scope="module")
def doc(srv) -> dict:
    """The description the sandbox serves."""
    r = httpx.get(f"{srv.base_url}/openapi.json")
    assert r.status_code == 200
    return r.json()


def _param(doc: dict, path: str, name: str) -> dict:
    return next(p for p in doc["paths"][path]["get"]["parameters"] if p["name"] == name and p["in"] == "query")


def _values(param: dict) -> set[str]:
    schema = param["schema"]
    return set(schema.get("items", schema)["enum"])


def test_the_description_is_valid_openapi_3_1(doc) -> None:
    assert doc["openapi"].startswith("3.1")
    errors = [e.message for e in OpenAPIV31SpecValidator(doc).iter_errors()]
    assert errors == []


@pytest.mark.parametrize(("path", "maximum", "default", "offset_default"), PAGING)
def test_paging_parameters_are_as_documented(doc, path, maximum, default, offset_default) -> None:
    limit, offset = _param(doc, path, "limit")["schema"], _param(doc, path, "offset")["schema"]
    assert (limit["type"], limit["minimum"], limit["maximum"], limit["default"]) == ("integer", 1, maximum, default)
    assert (offset["type"], offset["minimum"], offset.get("default")) == ("integer", 0, offset_default)


@pytest.mark.parametrize(("where", "values"), list(ENUMS.items()), ids=[f"{p}:{n}" for p, n in ENUMS])
def test_filter_enums_are_as_documented(doc, where, values) -> None:
    got = _values(_param(doc, *where))
    assert got - {"archive_failed"} == values


@pytest.mark.parametrize(("path", "name"), UUID_PARAMS)
def test_id_filters_are_uuids(doc, path, name) -> None:
    pattern = _param(doc, path, name)["schema"]["pattern"]
    assert re.search(pattern, "0f8fad5b-d9cb-469f-a165-70867728950e") and not re.search(pattern, "abc")


def test_every_error_answer_is_the_application_error_envelope(doc) -> None:
    error = doc["components"]["schemas"]["ApplicationError"]
    assert set(error["properties"]) == {"type", "code", "message"} and set(error["required"]) == {"type", "message"}
    assert set(error["properties"]["type"]["enum"]) == {
        "NOT_FOUND",
        "VALIDATION_ERROR",
        "CONFLICT",
        "INTERNAL_ERROR",
        "ORGANIZATION_NOT_FOUND",
    }
    answers = [
        (status, answer)
        for methods in doc["paths"].values()
        for op in methods.values()
        for status, answer in op["responses"].items()
        if int(status) >= 400
    ]
    assert answers and all(
        a["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ApplicationError"}
        for _, a in answers
    )
    statuses = {int(s) for s, _ in answers}
    assert {400, 401, 404, 409, 429, 500} <= statuses
