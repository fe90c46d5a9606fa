"""DON proof material: verifiable blobs (base64 JSON), event hashes and OCR proofs laid out as the SDK reads them.

Signed as a DON signs (see :mod:`toolkit.sandbox.don`): the event hash is Keccak-256 of the base64 text, the report
(141 bytes) names the workflow execution and workflow that made it (the payload's ``workflow_execution_id`` at bytes
1-32, its ``workflow_id`` as the workflow cid at bytes 45-76), carries the organisation's workflow owner at bytes
87-106 and the event hash as its last 32 payload bytes, its context starts with the DON configuration's digest (the
same for every report of one configuration version), and F + 1 = 4 nodes of the seed's committee sign
Keccak-256(Keccak-256(report) ‖ context). A forged proof (``forgery``, one of :data:`~toolkit.sandbox.don.FORGERIES`)
breaks exactly one rule.
"""

from __future__ import annotations

import base64
import json
import random
import struct
from datetime import UTC, datetime

from toolkit.sandbox.don import CONFIG_VERSION, DON_ID, NODES, SIGNATURES_PER_REPORT, Committee, keccak256
from toolkit.sandbox.don import workflow_owner as workflow_owner

OCR_ALG = "ecdsa-secp256k1"
_dumps = json.JSONEncoder(separators=(",", ":")).encode


def rfc3339(ts: int) -> str:
    """Unix seconds as an RFC 3339 UTC string (the form decoded verifiable blobs use)."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode_blob(obj: dict) -> str:
    """A verifiable event/result: compact JSON, base64 encoded."""
    return base64.b64encode(_dumps(obj).encode()).decode()


def event_hash(blob: str) -> str:
    """``0x`` hex hash of the base64 text of a verifiable blob."""
    return "0x" + keccak256(blob.encode()).hex()


def ocr_proof(
    rng: random.Random,
    committee: Committee,
    owner: bytes,
    hash_hex: str,
    ts: int,
    *,
    execution_id: str | None = None,
    workflow_id: str | None = None,
    forgery: str | None = None,
    lazy: bool = False,
    workflow_name: bytes = b"crec-event",
) -> dict:
    """One OCRProof whose report carries ``owner``, the workflow ``execution_id`` and ``workflow_id`` (``0x`` hex of
    32 bytes, as the event's payload names them; drawn from ``rng`` when not given) and ends with the 32-byte event
    hash, signed by F + 1 nodes (``lazy``: signatures an event log makes when first read, see
    :class:`~toolkit.sandbox.don.PendingSignature`)."""
    signed_hash = bytes.fromhex(hash_hex[2:])
    if forgery == "tampered_event":  # the DON signed another event than the one the payload carries
        signed_hash = keccak256(b"tampered:" + signed_hash)
    if forgery == "wrong_owner":
        owner = rng.randbytes(20)
    report = b"".join(
        (
            b"\x01",  # version
            rng.randbytes(32) if execution_id is None else bytes.fromhex(execution_id[2:]),  # workflow execution id
            struct.pack(">I", ts & 0xFFFFFFFF),  # timestamp
            struct.pack(">I", DON_ID),  # don id
            struct.pack(">I", CONFIG_VERSION),  # don config version
            rng.randbytes(32) if workflow_id is None else bytes.fromhex(workflow_id[2:]),  # workflow cid: its id
            workflow_name.ljust(10, b"\x00")[:10],  # workflow name
            owner,  # workflow owner (20 bytes, @87)
            b"\x00\x01",  # report id
            signed_hash,  # payload: the event hash (@109..140)
        )
    )
    # OCR's report context: the config digest, then epoch and round, then the extra hash
    context = committee.config_digest + rng.randbytes(64)
    count = SIGNATURES_PER_REPORT - (forgery == "too_few_signatures")
    nodes = rng.sample(range(NODES), count)
    return {
        "alg": OCR_ALG,
        "ocr_report": "0x" + report.hex(),
        "ocr_context": "0x" + context.hex(),
        "signatures": committee.sign(report, context, nodes, outsider=forgery == "wrong_signer", lazy=lazy),
    }
