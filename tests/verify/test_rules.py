"""The SDK's verification rules, one case each, on proofs built here from keys and vectors independent of the code
under test: known Keccak-256 and Ethereum address vectors, reports laid out by this file, signatures made with
coincurve and signer addresses computed from the private keys (never by recovery, the path under test)."""

from __future__ import annotations

import base64
import struct

import pytest
from coincurve import PrivateKey
from Crypto.Hash import keccak

from toolkit import spec
from toolkit.verify.crypto import keccak256, recover_address, workflow_owner_from_org_id
from toolkit.verify.rules import Policy, verify_event

# Keys 1..6 and the published addresses of keys 1 and 2 (the usual Ethereum examples).
KEYS = [PrivateKey(i.to_bytes(32, "big")) for i in range(1, 7)]
KNOWN_ADDRESSES = {
    1: "7e5f4552091a69125d5dfcb7b8c2659029395bdf",
    2: "2b5ad5c4795c026514f8317c7a215e218dccd6cf",
}
OWNER = bytes.fromhex("853d51d5d9935964267a5050ac53aa63eca39bc5")  # the SDK tests' workflow owner
CONTEXT = bytes(range(96))


def _keccak(data: bytes) -> bytes:
    return keccak.new(digest_bits=256, data=data).digest()


def _address(key: PrivateKey) -> bytes:
    return _keccak(key.public_key.format(compressed=False)[1:])[-20:]


TRUSTED = frozenset(_address(k) for k in KEYS[:5])  # keys 1-5 trusted, key 6 not
POLICY = Policy(owner=OWNER, signers=TRUSTED, min_signatures=4)


def _report(event_hash: bytes, owner: bytes = OWNER) -> bytes:
    head = b"\x01" + bytes(32) + struct.pack(">III", 1_700_000_000, 1, 7) + bytes(32) + b"crec-event"
    assert len(head) == 87
    return head + owner + b"\x00\x01" + event_hash


def _sign(report: bytes, keys: list[PrivateKey], v_offset: int = 27, context: bytes = CONTEXT) -> list[str]:
    digest = _keccak(_keccak(report) + context)
    out = []
    for key in keys:
        sig = bytearray(key.sign_recoverable(digest, hasher=None))
        sig[64] += v_offset
        out.append("0x" + sig.hex())
    return out


def _event(keys: list[PrivateKey] | None = None, *, owner: bytes = OWNER, v_offset: int = 27, blob: str | None = None):
    blob = blob or base64.b64encode(b'{"service":"_crec","name":"WatcherEvent","data":{"n":1}}').decode()
    local = _keccak(blob.encode())
    report = _report(local, owner)
    proof = {
        "alg": "ecdsa-secp256k1",
        "ocr_report": "0x" + report.hex(),
        "ocr_context": "0x" + CONTEXT.hex(),
        "signatures": _sign(report, KEYS[:4] if keys is None else keys, v_offset),
    }
    payload = {"watcher_id": "w", "event_hash": "0x" + local.hex(), "verifiable_event": blob}
    return payload, [proof]


def test_keccak_and_addresses_match_published_vectors() -> None:
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert keccak256(b"abc").hex() == "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"
    for i, address in KNOWN_ADDRESSES.items():
        assert _address(KEYS[i - 1]).hex() == address
        digest = _keccak(b"message %d" % i)
        sig = KEYS[i - 1].sign_recoverable(digest, hasher=None)
        assert recover_address(sig, digest).hex() == address


def test_workflow_owner_follows_the_documented_formula() -> None:
    # written out here from WIRE.md's words, byte by byte
    org = "550e8400-e29b-41d4-a716-446655440000"
    data = (
        b"\xff"
        + b"\x00" * 84
        + b"Chainlink Runtime Environment GenerateWorkflowOwnerAddress\x00"
        + (1).to_bytes(8, "big")
        + b"1"
        + len(org).to_bytes(8, "big")
        + org.encode()
    )
    assert workflow_owner_from_org_id(org) == _keccak(data)[:20]
    assert workflow_owner_from_org_id("org-alpha") != workflow_owner_from_org_id("org-beta")


def test_four_distinct_trusted_signers_verify() -> None:
    payload, proofs = _event()
    result = verify_event("watcher.event", payload, proofs, POLICY)
    assert (result.verdict, result.reason, result.valid_signers) == (spec.Verdict.VERIFIED, None, 4)
    assert result.event_hash_matches is True


@pytest.mark.parametrize("v_offset", [0, 27])
def test_v_as_recovery_id_or_27_28_both_verify(v_offset: int) -> None:
    payload, proofs = _event(v_offset=v_offset)
    vs = {bytes.fromhex(s[2:])[64] for s in proofs[0]["signatures"]}
    assert vs <= ({0, 1} if v_offset == 0 else {27, 28})
    assert verify_event("watcher.event", payload, proofs, POLICY).verdict == spec.Verdict.VERIFIED


def test_one_untrusted_signer_among_four_fails() -> None:
    payload, proofs = _event([*KEYS[:3], KEYS[5]])
    result = verify_event("watcher.event", payload, proofs, POLICY)
    assert result.verdict == spec.Verdict.INVALID and result.valid_signers == 3
    assert "3 distinct trusted signer(s) of 4" in result.reason


def test_the_same_signer_twice_counts_once() -> None:
    payload, proofs = _event([KEYS[0], KEYS[1], KEYS[2], KEYS[2]])
    result = verify_event("watcher.event", payload, proofs, POLICY)
    assert result.verdict == spec.Verdict.INVALID and result.valid_signers == 3


def test_a_lower_minimum_accepts_three() -> None:
    payload, proofs = _event(KEYS[:3])
    lenient = Policy(owner=OWNER, signers=TRUSTED, min_signatures=3)
    assert verify_event("watcher.event", payload, proofs, lenient).verdict == spec.Verdict.VERIFIED
    assert verify_event("watcher.event", payload, proofs, POLICY).verdict == spec.Verdict.INVALID


def test_a_wrong_owner_fails() -> None:
    payload, proofs = _event(owner=bytes(19) + b"\x01")
    result = verify_event("watcher.event", payload, proofs, POLICY)
    assert result.verdict == spec.Verdict.INVALID and "workflow owner" in result.reason


def test_an_event_altered_after_signing_fails() -> None:
    payload, proofs = _event()
    altered = base64.b64encode(b'{"service":"_crec","name":"WatcherEvent","data":{"n":2}}').decode()
    payload = {**payload, "verifiable_event": altered}
    result = verify_event("watcher.event", payload, proofs, POLICY)
    assert result.verdict == spec.Verdict.INVALID and "differs from the report" in result.reason


def test_a_payload_event_hash_other_than_the_reports_is_reported_not_judged() -> None:
    # the payload's event_hash is not signed and the SDK does not compare it: the verdict stands, the mismatch shows
    payload, proofs = _event()
    payload["event_hash"] = "0x" + "11" * 32
    result = verify_event("watcher.event", payload, proofs, POLICY)
    assert result.verdict == spec.Verdict.VERIFIED and result.event_hash_matches is False


def test_the_hash_is_of_the_base64_text_not_the_decoded_json() -> None:
    payload, proofs = _event()
    decoded = base64.b64decode(payload["verifiable_event"])
    report = _report(_keccak(decoded))
    proofs = [{**proofs[0], "ocr_report": "0x" + report.hex(), "signatures": _sign(report, KEYS[:4])}]
    assert verify_event("watcher.event", payload, proofs, POLICY).verdict == spec.Verdict.INVALID


def test_query_events_hash_the_verifiable_result() -> None:
    payload, proofs = _event()
    payload = {"query_id": "q", "verifiable_result": payload["verifiable_event"]}
    assert verify_event("query.status", payload, proofs, POLICY).verdict == spec.Verdict.VERIFIED
    assert "no verifiable_event" in verify_event("operation.status", payload, proofs, POLICY).reason


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda s: s[:-2], "is 64 bytes"),
        (lambda s: s + "00", "is 66 bytes"),
        (lambda s: s[:-2] + "1d", "v = 29"),
        (lambda s: s[:-2] + "02", "v = 2"),
        (lambda s: "0xzz" + s[4:], "not hex"),
    ],
)
def test_a_malformed_signature_fails_the_event(mangle, reason: str) -> None:
    payload, proofs = _event(KEYS[:5])  # a fifth good signature would be enough without the malformed one
    proofs[0]["signatures"][1] = mangle(proofs[0]["signatures"][1])
    result = verify_event("watcher.event", payload, proofs, POLICY)
    assert result.verdict == spec.Verdict.INVALID and "signature 2" in result.reason and reason in result.reason


def test_a_short_report_fails() -> None:
    payload, proofs = _event()
    report = bytes.fromhex(proofs[0]["ocr_report"][2:])[:140]
    proofs[0]["ocr_report"] = "0x" + report.hex()
    result = verify_event("watcher.event", payload, proofs, POLICY)
    assert result.verdict == spec.Verdict.INVALID and "140 bytes" in result.reason


def test_two_ocr_proofs_fail() -> None:
    payload, proofs = _event()
    result = verify_event("watcher.event", payload, proofs + proofs, POLICY)
    assert result.verdict == spec.Verdict.INVALID and "2 OCR proofs" in result.reason


def test_a_non_ocr_proof_item_beside_a_valid_ocr_one_is_skipped() -> None:
    payload, proofs = _event()
    other = {"alg": "rsa-pss", "signature": "0xabcd"}
    result = verify_event("watcher.event", payload, [other, *proofs], POLICY)
    assert result.verdict == spec.Verdict.VERIFIED
    only_other = verify_event("watcher.event", payload, [other], POLICY)
    assert only_other.verdict == spec.Verdict.INVALID and "no OCR proof" in only_other.reason


def test_an_empty_proof_list_is_a_missing_proof() -> None:
    payload, _ = _event()
    result = verify_event("watcher.event", payload, [], POLICY)
    assert (result.verdict, result.valid_signers) == (spec.Verdict.MISSING_PROOF, 0)


def test_a_raw_text_report_is_read_as_its_bytes() -> None:
    # without 0x the SDK takes the text's own bytes: a hex text without the prefix is then far too long a report
    # whose last 32 bytes are not the hash
    payload, proofs = _event()
    proofs[0]["ocr_report"] = proofs[0]["ocr_report"][2:]
    result = verify_event("watcher.event", payload, proofs, POLICY)
    assert result.verdict == spec.Verdict.INVALID and "differs from the report" in result.reason


def test_rows_whose_text_is_not_json_are_invalid_not_an_error() -> None:
    import json

    from toolkit.verify.run import verify_rows

    payload, proofs = _event()
    good = ("watcher.event", json.dumps(payload), json.dumps(proofs))
    results = verify_rows(
        [good, ("watcher.event", "{not json", "[]"), ("watcher.event", json.dumps(payload), None)], POLICY
    )
    assert [r.verdict for r in results] == [spec.Verdict.VERIFIED, spec.Verdict.INVALID, spec.Verdict.MISSING_PROOF]
    assert results[1].reason == "payload or proofs are not JSON"


def test_a_number_past_float_range_in_a_field_the_rules_do_not_read_decides_nothing() -> None:
    # valid JSON that orjson refuses: 249 genuine proofs were judged "not JSON" for an unrelated field
    import json

    from toolkit.verify.run import verify_rows

    payload, proofs = _event()
    text = json.dumps(payload)
    big_payload = '{"gas": 1e400, "nested": {"n": -2e999}, ' + text[1:]
    other = '{"alg": "rsa-pss", "weight": 1e400}'
    big_proofs = "[" + other + ", " + json.dumps(proofs)[1:]
    rows = [
        ("watcher.event", big_payload, json.dumps(proofs)),
        ("watcher.event", text, big_proofs),
        ("watcher.event", big_payload, big_proofs),
    ]
    assert [r.verdict for r in verify_rows(rows, POLICY)] == [spec.Verdict.VERIFIED] * 3
    # where the number is in a field the rules read, that rule fails and says so
    in_blob = '{"verifiable_event": 1e400, ' + text[1:].replace('"verifiable_event"', '"was"')
    in_report = json.dumps(proofs).replace(json.dumps(proofs[0]["ocr_report"]), "1e400")
    results = verify_rows([("watcher.event", in_blob, json.dumps(proofs)), ("watcher.event", text, in_report)], POLICY)
    assert [r.reason for r in results] == ["no verifiable_event in the payload", "ocr_report or ocr_context is not hex"]
    (cut,) = verify_rows([("watcher.event", big_payload[:-1], "[]")], POLICY)
    assert cut.reason == "payload or proofs are not JSON"


@pytest.mark.parametrize("where", ["signature", "ocr_report", "ocr_context"])
@pytest.mark.parametrize("blank", [" ", "\t", "\n"])
def test_hex_with_blanks_inside_is_not_hex(where: str, blank: str) -> None:
    # bytes.fromhex skips spaces and tabs; the proof's hex ('0x' and digits) has none
    payload, proofs = _event(KEYS[:5])
    proof = proofs[0]
    if where == "signature":
        sig = proof["signatures"][1]
        proof["signatures"][1] = sig[:10] + blank + sig[10:12] + blank + sig[12:]
    else:
        text = proof[where]
        proof[where] = text[:4] + blank * 2 + text[4:]
    result = verify_event("watcher.event", payload, proofs, POLICY)
    want = "signature 2 is not hex" if where == "signature" else "ocr_report or ocr_context is not hex"
    assert (result.verdict, result.reason) == (spec.Verdict.INVALID, want)


def test_a_proof_with_more_signatures_than_any_committee_is_invalid_before_any_recovery(monkeypatch) -> None:
    import toolkit.verify.rules as rules

    payload, proofs = _event()
    proofs[0]["signatures"] = proofs[0]["signatures"] * 5_000  # 20,000 copies of four: 0.87 s for one event

    def no_recovery(*args: object) -> bytes:
        raise AssertionError("a key was recovered")

    monkeypatch.setattr(rules, "recover_address", no_recovery)
    result = verify_event("watcher.event", payload, proofs, POLICY)
    assert (result.verdict, result.reason) == (spec.Verdict.INVALID, "20000 signatures (at most 32 are checked)")
    monkeypatch.undo()
    # up to the bound every signature is checked as before; a larger trusted set raises the bound to its size
    payload, proofs = _event()
    proofs[0]["signatures"] = proofs[0]["signatures"] * 8
    assert verify_event("watcher.event", payload, proofs, POLICY).verdict == spec.Verdict.VERIFIED
    proofs[0]["signatures"] = proofs[0]["signatures"] * 2  # 64
    assert "64 signatures (at most 32" in verify_event("watcher.event", payload, proofs, POLICY).reason
    many = Policy(owner=OWNER, signers=TRUSTED | {bytes([i]) * 20 for i in range(70)}, min_signatures=4)
    assert verify_event("watcher.event", payload, proofs, many).verdict == spec.Verdict.VERIFIED


def test_an_address_with_blanks_inside_is_not_an_address() -> None:
    from toolkit.verify.crypto import parse_address

    good = "0x" + KNOWN_ADDRESSES[1]
    assert parse_address(f"  {good}\n") == bytes.fromhex(KNOWN_ADDRESSES[1])  # around it: trimmed, as before
    with pytest.raises(ValueError, match="is not an address"):
        parse_address(good[:12] + " " + good[12:14] + " " + good[14:])
