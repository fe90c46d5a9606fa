"""What the seed says of failed queries and what WIRE.md says of a DON report, checked on every shape's history
(``test_don_answers.py`` checks the same on the sandbox tests' own, in the fast tier).

- A query fails "by DON callback or dispatch" and "carries a proof when from the DON" (API.md, Query status): in
  every scenario shape some queries fail in dispatch (their events never reach ``sent``) and carry no result and no
  proof, while every failure after ``sent`` carries the DON's signed result.
- A report's header (WIRE.md, SDK verification 3): version @0, workflow_execution_id 32 @1, timestamp 4 @33, don_id 4
  @37, don_config_version 4 @41, workflow_cid 32 @45. The sandbox's reports name the execution and the workflow the
  event's payload names, and the OCR context's config digest (its first 32 bytes) is one per configuration version.

Expected values come from the events as served and those offsets, written out here.
"""

from __future__ import annotations

import base64
import json
import struct

import pytest

from tests.sandbox.test_don_answers import WORKFLOW_FIELDS
from toolkit.sandbox import Sandbox
from toolkit.sandbox.scenarios import SHAPES

KEY = "dispatch-key"
START = 1_780_000_000
#: Every shape's sandbox (eight in all, one of ten times the queries): the slow tier (docs/testing.md).
pytestmark = pytest.mark.slow


def _history(sandbox: Sandbox) -> list[dict]:
    truth = sandbox.truth(KEY)
    return [e for c in truth.channels for e in truth.events(c["channel_id"])]


@pytest.fixture(scope="module")
def shapes() -> dict[str, Sandbox]:
    """One sandbox of every shape (query-heavy over a shorter history: it has ten times the queries)."""
    return {
        name: Sandbox(orgs=(KEY,), seed=7, start=START, days=1 if name == "query-heavy" else 3, shape=name)
        for name in SHAPES
    }


def _failed_queries(events: list[dict]) -> tuple[dict[str, dict], set[str]]:
    """Each failed query's failed event, and the queries whose events reached ``sent``."""
    queries = [e for e in events if e["headers"]["type"] == "query.status"]
    failed = {e["payload"]["query_id"]: e for e in queries if e["payload"]["status"] == "failed"}
    sent = {e["payload"]["query_id"] for e in queries if e["payload"]["status"] == "sent"}
    return failed, sent


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_shape_has_dispatch_failures_without_proof(shapes, shape) -> None:
    sandbox = shapes[shape]
    failed, sent = _failed_queries(_history(sandbox))
    in_dispatch = {q: e for q, e in failed.items() if q not in sent}
    from_don = {q: e for q, e in failed.items() if q in sent}
    assert in_dispatch and from_don, shape
    for event in in_dispatch.values():  # no DON answer: no result, no hash, no workflow, no proof
        assert event["headers"]["proofs"] == []
        assert not {"verifiable_result", "event_hash", "workflow_execution_id"} & set(event["payload"])
    for event in from_don.values():  # the DON's answer: its signed result, whose error is a DON's
        (proof,) = event["headers"]["proofs"]
        result = json.loads(base64.b64decode(event["payload"]["verifiable_result"]))
        assert result["data"]["error"]["code"] != "CRE_GATEWAY_REJECTED"
        assert proof["ocr_report"].endswith(event["payload"]["event_hash"][2:])
    records = {q["query_id"]: q for q in sandbox.truth(KEY).queries}
    for query_id in in_dispatch:  # the query record agrees: failed, never sent, no proof
        record = records[query_id]
        assert record["status"] == "failed" and "sent_at" not in record and "proof" not in record
    planned = sandbox.truth(KEY).dispatch_failed
    assert set(in_dispatch) == {q for q in planned if records[q]["status"] == "failed"}
    assert set(planned.values()) == {"CRE_GATEWAY_REJECTED"}


def test_dispatch_failures_are_a_realistic_share(shapes) -> None:
    """About 2% of queries fail in dispatch (a third of all failures): counted over every shape's history."""
    queries = dispatch = failures = 0
    for sandbox in shapes.values():
        events = _history(sandbox)
        failed, sent = _failed_queries(events)
        queries += len({e["payload"]["query_id"] for e in events if e["headers"]["type"] == "query.status"})
        dispatch += sum(1 for q in failed if q not in sent)
        failures += len(failed)
    assert 0.01 < dispatch / queries < 0.03, (dispatch, queries)
    assert 0.2 < dispatch / failures < 0.5, (dispatch, failures)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_reports_name_the_payloads_workflow_and_one_config_digest(shapes, shape) -> None:
    digests, checked = set(), 0
    for event in _history(shapes[shape]):
        etype, payload, proofs = event["headers"]["type"], event["payload"], event["headers"]["proofs"]
        for proof in proofs:
            report = bytes.fromhex(proof["ocr_report"][2:])
            execution, workflow = WORKFLOW_FIELDS[etype]
            assert (report[1:33].hex(), report[45:77].hex()) == (payload[execution][2:], payload[workflow][2:])
            assert struct.unpack(">I", report[41:45]) == (7,)
            digests.add(proof["ocr_context"][2:66])
            checked += 1
    assert checked > 1000 and len(digests) == 1


def test_the_same_seed_makes_the_same_reports_and_failures(shapes) -> None:
    again = Sandbox(orgs=(KEY,), seed=7, start=START, days=3)
    assert _history(again) == _history(shapes["default"])
    assert again.truth(KEY).dispatch_failed == shapes["default"].truth(KEY).dispatch_failed
