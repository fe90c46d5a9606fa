"""``chainops verify --check-workflow``: the report's workflow execution id (bytes 1-32, WIRE.md) must be the event's.

Reports are laid out here byte by byte and signed with coincurve (as in ``test_rules.py``); the end-to-end case syncs
a sandbox, whose reports name their execution, and tampers one event's payload after the fact.
"""

from __future__ import annotations

import base64
import json
import struct

import pytest
from coincurve import PrivateKey
from Crypto.Hash import keccak

from tests.support.cli import run_in_process
from toolkit import spec
from toolkit.api import Client
from toolkit.loader import sync
from toolkit.sandbox import Sandbox
from toolkit.sandbox.inprocess import BASE_URL
from toolkit.verify import resolve_policy
from toolkit.verify.rules import Policy, verify_event
from toolkit.verify.run import verify_rows, verify_warehouse
from toolkit.warehouse import Warehouse

KEYS = [PrivateKey(i.to_bytes(32, "big")) for i in range(1, 5)]
OWNER = bytes.fromhex("853d51d5d9935964267a5050ac53aa63eca39bc5")
EXECUTION = bytes.fromhex("5e" * 32)
OTHER = "0x" + "77" * 32


def _keccak(data: bytes) -> bytes:
    return keccak.new(digest_bits=256, data=data).digest()


def _address(key: PrivateKey) -> bytes:
    return _keccak(key.public_key.format(compressed=False)[1:])[-20:]


STRICT = Policy(owner=OWNER, signers=frozenset(_address(k) for k in KEYS), min_signatures=4, check_workflow=True)
LENIENT = Policy(owner=OWNER, signers=STRICT.signers, min_signatures=4)


def _proof(blob: str) -> list[dict]:
    """A proof of the event ``blob`` whose report names execution :data:`EXECUTION` (version @0, execution @1,
    timestamp, don id, config version, workflow cid @45, name, owner @87, report id, the event hash @109)."""
    report = (
        b"\x01"
        + EXECUTION
        + struct.pack(">III", 1_700_000_000, 1, 7)
        + bytes(32)
        + b"crec-event"
        + OWNER
        + b"\x00\x01"
        + _keccak(blob.encode())
    )
    context = bytes(96)
    digest = _keccak(_keccak(report) + context)
    sigs = []
    for key in KEYS:
        sig = bytearray(key.sign_recoverable(digest, hasher=None))
        sig[64] += 27
        sigs.append("0x" + sig.hex())
    return [
        {"alg": "ecdsa", "ocr_report": "0x" + report.hex(), "ocr_context": "0x" + context.hex(), "signatures": sigs}
    ]


BLOB = base64.b64encode(b'{"service":"_crec","name":"WatcherEvent","data":{"n":1}}').decode()


@pytest.mark.parametrize(
    ("event_type", "fields"),
    [
        ("watcher.event", {"workflow_execution_id": "0x" + EXECUTION.hex()}),
        ("query.status", {"workflow_execution_id": "0x" + EXECUTION.hex()}),
        ("operation.status", {"operation_status_workflow_execution_id": "0x" + EXECUTION.hex()}),
        ("operation.status", {"operation_writer_workflow_execution_id": "0x" + EXECUTION.hex()}),
    ],
)
def test_the_events_own_execution_passes(event_type: str, fields: dict) -> None:
    blob_field = "verifiable_result" if event_type == "query.status" else "verifiable_event"
    payload = {blob_field: BLOB, **fields}
    assert verify_event(event_type, payload, _proof(BLOB), STRICT).verdict == spec.Verdict.VERIFIED


def test_another_execution_is_invalid_only_when_checked() -> None:
    payload = {"verifiable_event": BLOB, "workflow_execution_id": OTHER}
    strict = verify_event("watcher.event", payload, _proof(BLOB), STRICT)
    assert strict.verdict == spec.Verdict.INVALID
    assert (
        strict.reason == f"workflow execution id mismatch: the report's 0x{EXECUTION.hex()} is not the event's {OTHER}"
    )
    # the SDK's rules alone do not read it
    assert verify_event("watcher.event", payload, _proof(BLOB), LENIENT).verdict == spec.Verdict.VERIFIED


def test_an_event_naming_no_execution_cannot_pass_the_check() -> None:
    result = verify_event("watcher.event", {"verifiable_event": BLOB}, _proof(BLOB), STRICT)
    assert (result.verdict, result.reason) == (
        spec.Verdict.INVALID,
        "workflow execution id not checkable: no workflow_execution_id in the payload",
    )


def test_a_payload_only_msgspec_reads_keeps_its_execution_id() -> None:
    """A payload with a number past a double's range elsewhere is read field by field: the id is among them."""
    text = json.dumps({"verifiable_event": BLOB, "workflow_execution_id": OTHER, "n": 0})
    text = text.replace('"n": 0', '"n": 1e400')
    (result,) = verify_rows([("watcher.event", text, json.dumps(_proof(BLOB)))], STRICT)
    assert result.reason is not None and result.reason.startswith("workflow execution id mismatch")


def test_the_stored_owner_tells_a_checked_verdict_from_an_unchecked_one() -> None:
    assert LENIENT.stored_owner() == "0x" + OWNER.hex()
    assert STRICT.stored_owner() != LENIENT.stored_owner() and STRICT.stored_owner().startswith(LENIENT.stored_owner())


KEY = "workflow-key"


@pytest.fixture(scope="module")
def synced(tmp_path_factory):
    """A sandbox's history synced in-process, and what verify needs to check it."""
    sandbox = Sandbox(orgs=(KEY,), seed=31, days=0.5, operations_per_day=300, start=1_780_000_000)
    path = tmp_path_factory.mktemp("workflow") / "w.duckdb"
    with Client(BASE_URL, KEY, transport=sandbox.transport()) as client:
        assert sync(client=client, warehouse=str(path), quiet=True).outcome == "ok"
    info = sandbox.backend_for(KEY)
    return path, info.org.org_id, ",".join(sandbox.signers)


@pytest.mark.slow  # a sandbox synced and verified three times: about 10 s
def test_a_tampered_execution_id_is_caught_end_to_end(synced, tmp_path) -> None:
    path, org_id, signers = synced
    copy = tmp_path / "w.duckdb"
    copy.write_bytes(path.read_bytes())
    with Warehouse(copy) as wh:
        ((event_id, payload),) = wh.con.execute(
            "SELECT event_id, payload FROM events WHERE type = 'watcher.event' ORDER BY event_id LIMIT 1"
        ).fetchall()
        tampered = json.loads(payload)
        tampered["workflow_execution_id"] = OTHER
        wh.con.execute("UPDATE events SET payload = ? WHERE event_id = ?", [json.dumps(tampered), event_id])
    plain = resolve_policy(org_id=org_id, signers=signers, env={})
    lenient = verify_warehouse(copy, plain, workers=1)
    assert lenient.invalid == 0 and lenient.standing[spec.Verdict.VERIFIED] > 300  # the SDK's rules pass it
    strict_policy = resolve_policy(org_id=org_id, signers=signers, check_workflow=True, env={})
    strict = verify_warehouse(copy, strict_policy, workers=1)
    assert strict.checked == lenient.checked  # checked with the workflow: every event is verified again
    assert strict.standing == {
        spec.Verdict.VERIFIED: lenient.standing[spec.Verdict.VERIFIED] - 1,
        spec.Verdict.INVALID: 1,
    }
    assert strict.invalid_examples == [
        (
            event_id,
            f"workflow execution id mismatch: the report's {json.loads(payload)['workflow_execution_id']} "
            f"is not the event's {OTHER}",
        )
    ]
    # through the command line: the option is named, and exits 3 on the mismatch, 0 without it
    args = ["verify", "--warehouse", str(copy), "--org-id", org_id, "--signers", signers]
    assert run_in_process(*args).returncode == 0
    strict_run = run_in_process(*args, "--check-workflow")
    assert strict_run.returncode == 3 and "workflow execution id mismatch" in strict_run.stdout
