"""DON proof material: verifiable blobs (base64 JSON), event hashes and OCR proofs laid out as the SDK reads them.

The sandbox is not a DON: signatures are random 65-byte strings, and the event hash is SHA3-256 of the base64 text
(the service uses Keccak-256, which the standard library lacks). Layout and sizes are real: the report is 141 bytes
with the workflow owner at bytes 87-106 and the event hash as the last 32 payload bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import struct
from datetime import UTC, datetime

OCR_ALG = "ecdsa-secp256k1"
SIGNATURES_PER_REPORT = 4
_dumps = json.JSONEncoder(separators=(",", ":")).encode


def workflow_owner(org_id: str) -> bytes:
    """The 20-byte workflow owner the sandbox binds an organisation's reports to."""
    return hashlib.sha3_256(b"chainops-sandbox-workflow-owner:" + org_id.encode()).digest()[:20]


def rfc3339(ts: int) -> str:
    """Unix seconds as an RFC 3339 UTC string (the form decoded verifiable blobs use)."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode_blob(obj: dict) -> str:
    """A verifiable event/result: compact JSON, base64 encoded."""
    return base64.b64encode(_dumps(obj).encode()).decode()


def event_hash(blob: str) -> str:
    """``0x`` hex hash of the base64 text of a verifiable blob."""
    return "0x" + hashlib.sha3_256(blob.encode()).hexdigest()


def ocr_proof(rng: random.Random, owner: bytes, hash_hex: str, ts: int, workflow_name: bytes = b"crec-event") -> dict:
    """One OCRProof whose report carries ``owner`` and ends with the 32-byte event hash."""
    report = b"".join(
        (
            b"\x01",  # version
            rng.randbytes(32),  # workflow execution id
            struct.pack(">I", ts & 0xFFFFFFFF),  # timestamp
            struct.pack(">I", 1),  # don id
            struct.pack(">I", 7),  # don config version
            rng.randbytes(32),  # workflow cid
            workflow_name.ljust(10, b"\x00")[:10],  # workflow name
            owner,  # workflow owner (20 bytes, @87)
            b"\x00\x01",  # report id
            bytes.fromhex(hash_hex[2:]),  # payload: the event hash (@109..140)
        )
    )
    sigs = rng.randbytes(65 * SIGNATURES_PER_REPORT)
    signatures = []
    for i in range(SIGNATURES_PER_REPORT):
        sig = bytearray(sigs[i * 65 : (i + 1) * 65])
        sig[64] = 27 + (sig[64] & 1)
        signatures.append("0x" + sig.hex())
    return {
        "alg": OCR_ALG,
        "ocr_report": "0x" + report.hex(),
        "ocr_context": "0x" + rng.randbytes(32).hex(),
        "signatures": signatures,
    }
