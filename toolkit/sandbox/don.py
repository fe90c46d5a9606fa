"""The sandbox's DON: a committee of secp256k1 keys derived from the seed that signs OCR reports as the service's does.

Ten nodes, F = 3, F + 1 = 4 signatures per report (the DON transmits once it has them). Hashes are Keccak-256
(pycryptodome), signatures come from libsecp256k1 (coincurve); nothing here is hand-written cryptography. The
verifier lives in ``toolkit.verify``; this module is the sandbox's own signing code and imports nothing of it.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

from coincurve import PrivateKey
from Crypto.Hash import keccak

NODES = 10
F = 3
#: The DON's id and its configuration version, as every report carries them (one configuration, one config digest).
DON_ID = 1
CONFIG_VERSION = 7
SIGNATURES_PER_REPORT = F + 1
#: secp256k1's group order: a private key must be in [1, N).
_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
#: What a forged proof can be wrong about (``Sandbox(forge_share=...)``); each names the rule a verifier catches.
FORGERIES = ("wrong_signer", "wrong_owner", "tampered_event", "too_few_signatures")
_OWNER_PREFIX = b"\xff" + bytes(84) + b"Chainlink Runtime Environment GenerateWorkflowOwnerAddress\x00"


def keccak256(data: bytes) -> bytes:
    """Keccak-256 (Ethereum's, not NIST SHA3-256) of ``data``."""
    return keccak.new(digest_bits=256, data=data).digest()


def workflow_owner(org_id: str, tenant: str = "1") -> bytes:
    """The 20-byte workflow owner of an organisation, by the formula WIRE.md gives (SDK verification, rule 4)."""
    t, o = tenant.encode(), org_id.encode()
    return keccak256(_OWNER_PREFIX + struct.pack(">Q", len(t)) + t + struct.pack(">Q", len(o)) + o)[:20]


def address_of(key: PrivateKey) -> str:
    """The Ethereum address (lower-case hex) of a key: the last 20 bytes of Keccak-256 of its uncompressed point."""
    return "0x" + keccak256(key.public_key.format(compressed=False)[1:])[-20:].hex()


def _key(seed: int, label: bytes, index: int) -> PrivateKey:
    material = keccak256(b"chainops-sandbox-don:" + label + b":" + str(seed).encode() + b":" + str(index).encode())
    return PrivateKey((int.from_bytes(material, "big") % (_ORDER - 1) + 1).to_bytes(32, "big"))


#: The JSON text of a signature not made yet: ``0x`` and 130 hex digits, the length of the real one.
PLACEHOLDER = "0x" + "00" * 65


class ReportDigest:
    """Keccak-256(Keccak-256(report) ‖ context), what the nodes sign, computed on first use and then kept: the
    signatures of one report share it, and a report never read is never hashed."""

    __slots__ = ("_context", "_report", "_value")

    def __init__(self, report: bytes, context: bytes) -> None:
        self._report, self._context = report, context
        self._value: bytes | None = None

    def value(self) -> bytes:
        """The 32-byte digest."""
        if self._value is None:
            self._value = keccak256(keccak256(self._report) + self._context)
        return self._value


class PendingSignature(str):
    """A signature made on first read: its text is :data:`PLACEHOLDER` (the final length) until the event log that
    holds it writes the real one in place (:meth:`make`). Signing costs ~50 µs; a sandbox's history holds tens of
    thousands of signatures, most never served, so the backfill only records what to sign (not even the digest)."""

    key: PrivateKey
    digest: ReportDigest

    def __new__(cls, key: PrivateKey, digest: ReportDigest) -> PendingSignature:
        made = super().__new__(cls, PLACEHOLDER)
        made.key, made.digest = key, digest
        return made

    def make(self) -> str:
        """The signature's ``0x`` hex text (r ‖ s ‖ v, v = 27/28)."""
        sig = bytearray(self.key.sign_recoverable(self.digest.value(), hasher=None))
        sig[64] += 27
        return "0x" + sig.hex()


@dataclass(frozen=True)
class Committee:
    """The DON's node keys, and one key outside it (the signer a forged proof uses)."""

    keys: tuple[PrivateKey, ...]
    outsider: PrivateKey

    @property
    def addresses(self) -> list[str]:
        """The trusted signer addresses, in node order."""
        return [address_of(k) for k in self.keys]

    @functools.cached_property
    def config_digest(self) -> bytes:
        """The 32-byte OCR config digest of this DON's configuration (:data:`DON_ID`, :data:`CONFIG_VERSION`, its
        nodes): the same in every report context made under that configuration version."""
        nodes = b"".join(bytes.fromhex(a[2:]) for a in self.addresses)
        return keccak256(b"chainops-sandbox-ocr-config" + struct.pack(">II", DON_ID, CONFIG_VERSION) + nodes)

    def sign(
        self, report: bytes, context: bytes, nodes: list[int], *, outsider: bool = False, lazy: bool = False
    ) -> list[str]:
        """``0x`` hex signatures (r ‖ s ‖ v, v = 27/28) of Keccak-256(Keccak-256(report) ‖ context) by ``nodes``;
        with ``outsider`` the last one is made by a key outside the committee. ``lazy`` answers
        :class:`PendingSignature` values, for an event log to make when the event is first read."""
        digest = ReportDigest(report, context)
        keys = [self.keys[i] for i in nodes]
        if outsider:
            keys[-1] = self.outsider
        pending = [PendingSignature(key, digest) for key in keys]
        return pending if lazy else [p.make() for p in pending]


@functools.cache
def committee(seed: int) -> Committee:
    """The committee of a sandbox seed (the same for every organisation of that sandbox)."""
    return Committee(tuple(_key(seed, b"node", i) for i in range(NODES)), _key(seed, b"outsider", 0))


def signer_info(org_id: str, owner: bytes, signers: list[str]) -> dict:
    """The answer of ``GET /sandbox/signers``: what a verifier of this organisation's proofs needs."""
    return {
        "signers": signers,
        "min_signatures": SIGNATURES_PER_REPORT,
        "f": F,
        "org_id": org_id,
        "workflow_owner": "0x" + owner.hex(),
    }
