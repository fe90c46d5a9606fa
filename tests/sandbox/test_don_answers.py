"""The DON's answers in the sandbox tests' seeded history: what a report names, and which failed query has none.

- A report's header (WIRE.md, SDK verification 3): version @0, workflow_execution_id 32 @1, timestamp 4 @33, don_id 4
  @37, don_config_version 4 @41, workflow_cid 32 @45. Each names the execution and the workflow its event's payload
  names, and the OCR context's config digest (its first 32 bytes) is one per DON configuration version.
- A query that fails in dispatch (its events never reach ``sent``) has no DON answer: no result, no proof (API.md,
  Query status: "carries a proof when from the DON").

Expected values come from the events as served and the offsets above, written out here
(``test_dispatch_and_reports.py`` checks every scenario shape in the slow tier).
"""

from __future__ import annotations

import struct

from tests.sandbox.conftest import SEEDED

#: The payload fields naming the workflow execution and the workflow of a proof-bearing event, by type.
WORKFLOW_FIELDS = {
    "watcher.event": ("workflow_execution_id", "workflow_id"),
    "query.status": ("workflow_execution_id", "workflow_id"),
    "operation.status": ("operation_status_workflow_execution_id", "operation_status_workflow_id"),
}


def _events(sb) -> list[dict]:
    truth = sb.truth(SEEDED)
    return [e for c in truth.channels for e in truth.events(c["channel_id"])]


def test_reports_name_the_payloads_workflow_and_one_config_digest(sb) -> None:
    digests, versions, checked = set(), set(), 0
    for event in _events(sb):
        etype, payload, proofs = event["headers"]["type"], event["payload"], event["headers"]["proofs"]
        for proof in proofs:
            report, context = bytes.fromhex(proof["ocr_report"][2:]), bytes.fromhex(proof["ocr_context"][2:])
            execution, workflow = WORKFLOW_FIELDS[etype]
            assert report[1:33].hex() == payload[execution][2:], etype
            assert report[45:77].hex() == payload[workflow][2:], etype
            versions.add(struct.unpack(">I", report[41:45])[0])
            digests.add(context[:32])
            checked += 1
    assert checked > 1000
    assert versions == {7} and len(digests) == 1  # one configuration version, one config digest
    served = 0
    for query in sb.truth(SEEDED).queries:  # the proof served with a query record names its execution too
        if "proof" in query:
            report = bytes.fromhex(query["proof"]["ocr_report"][2:])
            assert report[1:33].hex() == query["workflow_execution_id"][2:]
            assert report[45:77].hex() == query["workflow_id"][2:]
            served += 1
    assert served > 10


def test_a_query_failed_in_dispatch_carries_no_answer(sb) -> None:
    queries = [e for e in _events(sb) if e["headers"]["type"] == "query.status"]
    sent = {e["payload"]["query_id"] for e in queries if e["payload"]["status"] == "sent"}
    in_dispatch = [e for e in queries if e["payload"]["status"] == "failed" and e["payload"]["query_id"] not in sent]
    assert in_dispatch  # the history holds some
    for event in in_dispatch:
        assert event["headers"]["proofs"] == []
        assert not {"verifiable_result", "event_hash", "workflow_execution_id"} & set(event["payload"])
    records = {q["query_id"]: q for q in sb.truth(SEEDED).queries}
    assert all("proof" not in records[e["payload"]["query_id"]] for e in in_dispatch)
    assert {e["payload"]["query_id"] for e in in_dispatch} <= set(sb.truth(SEEDED).dispatch_failed)
