"""Schemathesis against a live sandbox on 127.0.0.1 with the description it serves at ``/v1/openapi.json``.

Every operation of the description is exercised with a bounded number of generated requests (valid and invalid),
with a fixed seed, and each answer goes through all of schemathesis's checks: no server error, a declared status,
content type and headers, the response schema, invalid data rejected, valid data accepted, 401 without the key,
405 (with ``Allow``) for an undeclared method. Channel-scoped operations run against a seeded channel, so lists,
filters and event search meet real data; other path ids are generated (and answer 404).

The one check left out is where the description itself says it cannot apply: event search's valid filter
combinations depend on ``type`` (``x-parameter-combinations``), which OpenAPI cannot express, so a generated request
that pairs a filter with a type it does not apply to is rightly refused with a 400; for that operation
``positive_data_acceptance`` is off. Every other check still runs on it.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from toolkit.sandbox import Sandbox
from toolkit.sandbox.openapi import build
from toolkit.sandbox.serve import ServerHandle

#: Every case is a request to the sandbox on 127.0.0.1; schemathesis also builds its coverage cases at collection.
pytestmark = pytest.mark.slow

KEY = "sbx_fuzz_SECRET-4b1e"
START = 1_760_000_000 // 60 * 60
EXAMPLES = 12
SEED = 20250101


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[ServerHandle, str]]:
    """A small seeded sandbox served on 127.0.0.1, and the id of one of its channels."""
    sb = Sandbox(orgs=(KEY,), seed=3, days=0.2, operations_per_day=200, start=START)
    with sb.serve() as server:
        channels = httpx.get(f"{server.base_url}/channels", headers={"Authorization": f"Apikey {KEY}"}).json()
        yield server, channels["data"][0]["channel_id"]


def _combination_operations(doc: dict) -> list[str]:
    """Operations whose valid filter combinations the description gives in ``x-parameter-combinations``."""
    return [
        op["operationId"]
        for methods in doc["paths"].values()
        for op in methods.values()
        if "x-parameter-combinations" in op
    ]


DOC = build()
schema = schemathesis.openapi.from_dict(
    DOC,
    config=SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "headers": {"Authorization": f"Apikey {KEY}"},
            "generation": {"max-examples": EXAMPLES, "deterministic": True},
            "checks": {"enabled": True},
            "operations": [
                {"include-operation-id": op_id, "checks": {"positive_data_acceptance": {"enabled": False}}}
                for op_id in _combination_operations(DOC)
            ],
        }
    ),
)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_sandbox_conforms_to_its_description(case, live) -> None:
    server, channel_id = live
    if case.path_parameters and "channel_id" in case.path_parameters and _path_is_valid(case):
        case.path_parameters["channel_id"] = channel_id
    case.call_and_validate(base_url=server.base_url)


def _path_is_valid(case) -> bool:
    """Whether the case's path parameters were generated valid (an invalid one is kept: it must be refused)."""
    meta = case.meta
    if meta is None:
        return True
    info = next((i for loc, i in meta.components.items() if getattr(loc, "value", loc) == "path"), None)
    return info is None or info.mode.is_positive


def test_the_served_description_is_the_built_one(live) -> None:
    server, _ = live
    served = httpx.get(f"{server.base_url}/openapi.json")
    assert served.status_code == 200 and served.headers["content-type"] == "application/json"
    assert served.json() == build()
    doc = served.json()
    operations = [(m.upper(), p) for p, methods in doc["paths"].items() for m in methods]
    assert len(operations) == 24 and doc["info"]["version"] == "0.8.0"
