"""The cryptography a verifier needs, through well-kept libraries: Keccak-256 (pycryptodome) and secp256k1 public-key
recovery (coincurve, over libsecp256k1). Nothing here is hand-written elliptic-curve or hash code."""

from __future__ import annotations

import binascii
import struct

from coincurve import PublicKey
from Crypto.Hash import keccak

_OWNER_PREFIX = b"\xff" + bytes(84) + b"Chainlink Runtime Environment GenerateWorkflowOwnerAddress\x00"
#: The tenant the SDK derives workflow owners with by default.
DEFAULT_TENANT = "1"


def keccak256(data: bytes) -> bytes:
    """Keccak-256 (Ethereum's, not NIST SHA3-256) of ``data``."""
    return keccak.new(digest_bits=256, data=data).digest()


def workflow_owner_from_org_id(org_id: str, tenant: str = DEFAULT_TENANT) -> bytes:
    """The 20-byte workflow owner an organisation's reports are bound to (WIRE.md, SDK verification, rule 4): the
    first 20 bytes of Keccak-256(0xff ‖ 84 zero bytes ‖ the label and a NUL ‖ u64-BE length ‖ tenant ‖ u64-BE length
    ‖ org id)."""
    t, o = tenant.encode(), org_id.encode()
    return keccak256(_OWNER_PREFIX + struct.pack(">Q", len(t)) + t + struct.pack(">Q", len(o)) + o)[:20]


#: Addresses of the public keys recovered so far: a DON has a handful of keys, and each signature of each event
#: recovers one of them again (a hash saved per signature).
_ADDRESSES: dict[bytes, bytes] = {}
_ADDRESSES_MAX = 4096


def address_of_public_key(key: PublicKey) -> bytes:
    """The 20-byte Ethereum address of a public key: the last 20 bytes of Keccak-256 of its uncompressed point."""
    point = key.format(compressed=False)[1:]
    address = _ADDRESSES.get(point)
    if address is None:
        if len(_ADDRESSES) >= _ADDRESSES_MAX:  # forged or random signatures recover many keys: stay bounded
            _ADDRESSES.clear()
        address = _ADDRESSES[point] = keccak256(point)[-20:]
    return address


def recover_address(signature: bytes, digest: bytes) -> bytes:
    """The address whose key made ``signature`` (r ‖ s ‖ recovery id 0/1, 65 bytes) over the 32-byte ``digest``.

    Raises ``ValueError`` when no key recovers (coincurve raises its own errors; they are mapped here)."""
    try:
        key = PublicKey.from_signature_and_message(signature, digest, hasher=None)
    except Exception as exc:  # coincurve raises ValueError or its own exception types by version
        raise ValueError(f"no public key recovers from the signature ({exc})") from None
    return address_of_public_key(key)


def parse_address(text: str) -> bytes:
    """A ``0x`` hex address as 20 bytes; ``ValueError`` naming the value otherwise."""
    body = text.strip()
    if body[:2].lower() == "0x":
        body = body[2:]
    try:
        raw = binascii.a2b_hex(body)  # no spaces inside, as bytes.fromhex would allow
    except ValueError:
        raw = b""
    if len(raw) != 20:
        raise ValueError(f"{text.strip()!r} is not an address (0x and 40 hex digits)")
    return raw
