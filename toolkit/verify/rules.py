"""One event's DON proof checked by the official SDK's rules (WIRE.md, "SDK verification"), rule by rule.

:func:`verify_event` takes an event's type, payload and ``headers.proofs`` and answers a :class:`Result`: the
verdict, the first rule that failed (``reason``), and how many distinct trusted signers it recovered. The rules, in
the order they are checked:

1. exactly one OCR proof among the proofs: an item with the OCR fields (``ocr_report``, ``ocr_context``,
   ``signatures``); other proof objects are skipped. No proof at all is ``missing_proof``; proofs but no OCR proof,
   or two, are ``invalid``;
2. the local event hash, Keccak-256 of the base64 text of ``verifiable_event`` (``verifiable_result`` for
   ``query.status``), not of the decoded JSON;
3. the report (hex with ``0x``, else the text's bytes) at least 141 bytes, and its payload's last 32 bytes equal to
   the local hash;
4. the report's workflow owner (bytes 87-106) equal to the expected owner; with :attr:`Policy.check_workflow` (not
   an SDK rule: ``chainops verify --check-workflow``), also the report's workflow execution id (bytes 1-32) equal to
   the event's (:data:`EXECUTION_ID_FIELDS`);
5. at most :data:`MAX_SIGNATURES` signatures (or as many as there are trusted signers, if more), every one 65 bytes
   of hex without spaces, with v in {0, 1, 27, 28} (a malformed one fails the event, as in the SDK); each over
   Keccak-256(Keccak-256(report) ‖ context), its key recovered, and the distinct trusted signers counted against
   the minimum.

The payload's own ``event_hash`` is not signed and the SDK does not compare it; neither does the verdict. Whether
it equals the local hash is reported beside the verdict (:attr:`Result.event_hash_matches`), so a payload whose
``event_hash`` was changed is visible without failing a proof the SDK accepts.
"""

from __future__ import annotations

import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import spec
from .crypto import keccak256, recover_address

#: The smallest report the SDK accepts: the 109-byte header and a 32-byte payload (the event hash).
MIN_REPORT_BYTES = 141
#: The most signatures a proof may carry before any key is recovered (unless more signers are trusted): a DON's
#: reports carry F+1 of them (4 for the default committee of 10), and a committee has a few dozen nodes at most.
#: Each signature costs a public-key recovery (about 40 µs), so without a bound one proof of 20,000 copies of a
#: signature held verify for most of a second.
MAX_SIGNATURES = 32
_OWNER = slice(87, 107)
_EXECUTION_ID = slice(1, 33)
#: The payload fields that name the workflow execution whose report an event carries, by event type. Which of an
#: operation's two workflows signs its finality stages is not documented: either execution id is accepted.
EXECUTION_ID_FIELDS: dict[str, tuple[str, ...]] = {
    spec.EventType.WATCHER_EVENT: ("workflow_execution_id",),
    spec.EventType.QUERY_STATUS: ("workflow_execution_id",),
    spec.EventType.OPERATION_STATUS: (
        "operation_status_workflow_execution_id",
        "operation_writer_workflow_execution_id",
    ),
}
#: Appended to the stored ``workflow_owner`` of verdicts checked with :attr:`Policy.check_workflow`, so a run with
#: the check re-verifies events verified without it, and the other way round.
WORKFLOW_CHECKED = "+workflow_execution_id"
#: The fields of a proof item the rules read; an item with all three is an OCR proof.
OCR_FIELDS = ("ocr_report", "ocr_context", "signatures")
_OCR_KEYS = frozenset(OCR_FIELDS)
#: The payload fields the rules read (:func:`blob_field`'s two, the stated hash, the execution ids): no other field
#: of a payload decides a verdict.
PAYLOAD_FIELDS = (
    "verifiable_event",
    "verifiable_result",
    "event_hash",
    *dict.fromkeys(name for names in EXECUTION_ID_FIELDS.values() for name in names),
)


@dataclass(frozen=True)
class Policy:
    """What a proof is checked against: the expected workflow owner, the trusted signers, the minimum, and whether
    the report's workflow execution id must be the event's (``check_workflow``)."""

    owner: bytes
    signers: frozenset[bytes]
    min_signatures: int = spec.PROOF_MIN_SIGNATURES
    check_workflow: bool = False

    def stored_owner(self) -> str:
        """The owner as ``event_verifications.workflow_owner`` stores it: ``0x`` hex, and :data:`WORKFLOW_CHECKED`
        after it when the workflow execution id is checked too."""
        return "0x" + self.owner.hex() + (WORKFLOW_CHECKED if self.check_workflow else "")


@dataclass(frozen=True)
class Result:
    """One event's verdict; ``reason`` is None when verified, else the rule that failed, short and specific."""

    verdict: spec.Verdict
    reason: str | None
    valid_signers: int
    event_hash_matches: bool | None = None


def _invalid(reason: str, valid: int = 0, matches: bool | None = None) -> Result:
    return Result(spec.Verdict.INVALID, reason, valid, matches)


def is_ocr_proof(item: Any) -> bool:
    """Whether a proof item is an OCR proof (carries the OCR fields); other proof objects are skipped."""
    return isinstance(item, dict) and item.keys() >= _OCR_KEYS


def decode_bytes(value: Any) -> bytes | None:
    """A report, context or signature as bytes: hex after ``0x``, else the text's own bytes (as the SDK reads them);
    None when it is not text or its hex is not hex."""
    if not isinstance(value, str):
        return None
    if value[:2] in ("0x", "0X"):
        try:
            # binascii, not bytes.fromhex: fromhex skips spaces and tabs, which the proof's hex never holds
            return binascii.a2b_hex(value[2:])
        except ValueError:  # binascii.Error is one; so is a text that is not ASCII
            return None
    return value.encode()


def blob_field(event_type: str) -> str:
    """The payload field whose base64 text is hashed: ``verifiable_result`` for queries, else ``verifiable_event``."""
    return "verifiable_result" if event_type == spec.EventType.QUERY_STATUS else "verifiable_event"


def verify_event(event_type: str, payload: Any, proofs: Any, policy: Policy) -> Result:
    """Verify one event's DON proof by the SDK's rules (module docstring); never raises on bad input."""
    items = proofs if isinstance(proofs, list) else []
    if not items:
        return Result(spec.Verdict.MISSING_PROOF, "no proof", 0)
    ocr = [p for p in items if is_ocr_proof(p)]
    if not ocr:
        return _invalid(f"no OCR proof among {len(items)} proof item(s)")
    if len(ocr) > 1:
        return _invalid(f"{len(ocr)} OCR proofs (exactly one expected)")
    proof = ocr[0]
    field = blob_field(event_type)
    blob = payload.get(field) if isinstance(payload, dict) else None
    if not isinstance(blob, str) or not blob:
        return _invalid(f"no {field} in the payload")
    local = keccak256(blob.encode())
    stated = payload.get("event_hash")
    matches = None if not isinstance(stated, str) else decode_bytes(stated) == local
    report = decode_bytes(proof["ocr_report"])
    context = decode_bytes(proof["ocr_context"])
    if report is None or context is None:
        return _invalid("ocr_report or ocr_context is not hex", matches=matches)
    if len(report) < MIN_REPORT_BYTES:
        return _invalid(f"report is {len(report)} bytes (at least {MIN_REPORT_BYTES})", matches=matches)
    if report[-32:] != local:
        return _invalid(f"{field} hash differs from the report's (altered after signing?)", matches=matches)
    if report[_OWNER] != policy.owner:
        return _invalid(f"workflow owner 0x{report[_OWNER].hex()} is not the expected one", matches=matches)
    if policy.check_workflow:
        mismatch = workflow_mismatch(event_type, payload, report)
        if mismatch is not None:
            return _invalid(mismatch, matches=matches)
    return _check_signatures(proof["signatures"], keccak256(keccak256(report) + context), policy, matches)


def workflow_mismatch(event_type: str, payload: dict, report: bytes) -> str | None:
    """Why the report's workflow execution id (bytes 1-32) is not the event's (:data:`EXECUTION_ID_FIELDS`), or
    None when it is."""
    fields = EXECUTION_ID_FIELDS.get(event_type, ("workflow_execution_id",))
    stated = [payload.get(f) for f in fields if isinstance(payload.get(f), str)]
    signed = report[_EXECUTION_ID]
    if not stated:
        return f"workflow execution id not checkable: no {' or '.join(fields)} in the payload"
    if any(decode_bytes(s) == signed for s in stated):
        return None
    return f"workflow execution id mismatch: the report's 0x{signed.hex()} is not the event's {stated[0][:80]}"


def _check_signatures(signatures: Any, digest: bytes, policy: Policy, matches: bool | None) -> Result:
    if not isinstance(signatures, list):
        return _invalid("signatures is not a list", matches=matches)
    most = max(MAX_SIGNATURES, len(policy.signers))
    if len(signatures) > most:
        return _invalid(f"{len(signatures)} signatures (at most {most} are checked)", matches=matches)
    raws = normalised_signatures(signatures)
    if isinstance(raws, str):
        return _invalid(raws, matches=matches)
    found: set[bytes] = set()
    for i, sig in enumerate(raws, 1):
        try:
            signer = recover_address(sig, digest)
        except ValueError:
            return _invalid(f"signature {i}: no key recovers", len(found), matches)
        if signer in policy.signers:
            found.add(signer)
    if len(found) < policy.min_signatures:
        untrusted_or_repeated = len(raws) - len(found)
        return _invalid(
            f"{len(found)} distinct trusted signer(s) of {policy.min_signatures} required "
            f"({len(raws)} signature(s), {untrusted_or_repeated} untrusted or repeated)",
            len(found),
            matches,
        )
    return Result(spec.Verdict.VERIFIED, None, len(found), matches)


def normalised_signatures(signatures: Sequence[Any]) -> list[bytes] | str:
    """Each signature as 65 bytes with v as a recovery id 0/1 (27/28 normalised), or the reason the first malformed
    one fails the event."""
    out = []
    for i, text in enumerate(signatures, 1):
        sig = decode_bytes(text)
        if sig is None:
            return f"signature {i} is not hex"
        if len(sig) != 65:
            return f"signature {i} is {len(sig)} bytes (65 expected)"
        v = sig[64]
        if v not in (0, 1, 27, 28):
            return f"signature {i} has v = {v} (0, 1, 27 or 28 expected)"
        out.append(sig if v < 27 else sig[:64] + bytes((v - 27,)))
    return out
