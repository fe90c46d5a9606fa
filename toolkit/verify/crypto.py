"""The cryptography a verifier needs, through well-kept libraries: Keccak-256 (pycryptodome) and secp256k1 public-key
recovery (coincurve, over libsecp256k1). Nothing here is hand-written elliptic-curve or hash code.

Both are called through the libraries' own C bindings where these are present (pycryptodome's one-shot Keccak,
libsecp256k1's parse, recover and serialize as coincurve binds them): the public wrappers cost as much in Python as
the hashing does for short inputs (about 5 µs a Keccak against 2.7), and verify hashes three times and recovers four
keys an event. The bindings are checked against the public API when this module loads; where one is missing or
answers differently (another version), the public API is used.
"""

from __future__ import annotations

import binascii
import struct
import threading
from collections.abc import Callable
from typing import Any

from coincurve import PublicKey
from Crypto.Hash import keccak

_OWNER_PREFIX = b"\xff" + bytes(84) + b"Chainlink Runtime Environment GenerateWorkflowOwnerAddress\x00"
#: The tenant the SDK derives workflow owners with by default.
DEFAULT_TENANT = "1"
_KECCAK_CAPACITY = 64  # bytes: twice the digest's, as keccak.new(digest_bits=256) sets it
_KECCAK_ROUNDS = 24
_KECCAK_PADDING = 0x01  # Keccak's, not SHA-3's 0x06


def _keccak256_public(data: bytes) -> bytes:
    return keccak.new(digest_bits=256, data=data).digest()


def _keccak256_oneshot() -> Callable[[bytes], bytes] | None:
    """pycryptodome's one-shot Keccak (one C call, no hash object), or None where this pycryptodome lacks it."""
    try:
        from Crypto.Hash.keccak import _raw_keccak_lib as lib
        from Crypto.Util._raw_api import ffi

        oneshot = lib.keccak_oneshot
    except (ImportError, AttributeError):
        return None

    scratch = threading.local()  # the output buffer, made once a thread (made per call, it cost 0.4 of 1.3 µs)

    def digest(data: bytes) -> bytes:
        try:
            out, view = scratch.out
        except AttributeError:
            out = ffi.new("uint8_t[32]")
            view = ffi.buffer(out)
            scratch.out = (out, view)
        if oneshot(data, len(data), out, 32, _KECCAK_CAPACITY, _KECCAK_ROUNDS, _KECCAK_PADDING):
            return _keccak256_public(data)
        return view[:]

    return digest


def _chosen_keccak() -> Callable[[bytes], bytes]:
    fast = _keccak256_oneshot()
    probes = (b"", b"abc", bytes(range(256)) * 3)
    try:
        if fast is not None and all(fast(p) == _keccak256_public(p) for p in probes):
            return fast
    except Exception:  # an unexpected binding: the public API answers instead
        pass
    return _keccak256_public


_keccak256 = _chosen_keccak()


def keccak256(data: bytes) -> bytes:
    """Keccak-256 (Ethereum's, not NIST SHA3-256) of ``data``."""
    return _keccak256(data)


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


def _address_of_point(point: bytes) -> bytes:
    address = _ADDRESSES.get(point)
    if address is None:
        if len(_ADDRESSES) >= _ADDRESSES_MAX:  # forged or random signatures recover many keys: stay bounded
            _ADDRESSES.clear()
        address = _ADDRESSES[point] = keccak256(point)[-20:]
    return address


def address_of_public_key(key: PublicKey) -> bytes:
    """The 20-byte Ethereum address of a public key: the last 20 bytes of Keccak-256 of its uncompressed point."""
    return _address_of_point(key.format(compressed=False)[1:])


def _recover_point_public(signature: bytes, digest: bytes) -> bytes:
    try:
        key = PublicKey.from_signature_and_message(signature, digest, hasher=None)
    except Exception as exc:  # coincurve raises ValueError or its own exception types by version
        raise ValueError(f"no public key recovers from the signature ({exc})") from None
    return key.format(compressed=False)[1:]


def _recover_point_bound() -> Callable[[bytes, bytes], bytes] | None:
    """libsecp256k1's parse, recover and serialize as coincurve binds them (what ``from_signature_and_message`` and
    ``format`` call, without their objects), or None where this coincurve binds them otherwise."""
    try:
        from coincurve._libsecp256k1 import ffi, lib
        from coincurve.context import GLOBAL_CONTEXT

        ctx = GLOBAL_CONTEXT.ctx
        parse = lib.secp256k1_ecdsa_recoverable_signature_parse_compact
        recover = lib.secp256k1_ecdsa_recover
        serialize = lib.secp256k1_ec_pubkey_serialize
        uncompressed = lib.SECP256K1_EC_UNCOMPRESSED
    except (ImportError, AttributeError):
        return None

    scratch = threading.local()  # the C structures, made once a thread (per call they cost ~0.7 µs a signature)

    def structures() -> tuple[Any, Any, Any, Any, Any]:
        try:
            return scratch.made
        except AttributeError:
            out = ffi.new("unsigned char[65]")
            scratch.made = (
                ffi.new("secp256k1_ecdsa_recoverable_signature *"),
                ffi.new("secp256k1_pubkey *"),
                out,
                ffi.new("size_t *", 65),
                ffi.buffer(out, 65),
            )
            return scratch.made

    def point(signature: bytes, digest: bytes) -> bytes:
        if len(signature) != 65 or signature[64] > 3 or len(digest) != 32:
            raise ValueError("no public key recovers from the signature (malformed signature or digest)")
        parsed, key, out, size, view = structures()
        if not parse(ctx, parsed, signature[:64], signature[64]):
            raise ValueError("no public key recovers from the signature (failed to parse it)")
        if not recover(ctx, key, parsed, digest):
            raise ValueError("no public key recovers from the signature (failed to recover the key)")
        size[0] = 65
        serialize(ctx, out, size, key, uncompressed)
        return view[1:]

    return point


def _chosen_recovery() -> Callable[[bytes, bytes], bytes]:
    bound = _recover_point_bound()
    # a known signature (private key 1, digest 32 x 0x01) and a corrupted one: both answers must agree
    digest = bytes([1]) * 32
    probes = [_probe_signature(digest)]
    probes.append(probes[0][:64] + bytes((probes[0][64] ^ 1,)))
    try:
        if bound is not None and all(bound(s, digest) == _recover_point_public(s, digest) for s in probes):
            return bound
    except Exception:  # an unexpected binding: the public API answers instead
        pass
    return _recover_point_public


def _probe_signature(digest: bytes) -> bytes:
    from coincurve import PrivateKey

    return PrivateKey(bytes(31) + b"\x01").sign_recoverable(digest, hasher=None)


_recover_point = _chosen_recovery()


def recover_address(signature: bytes, digest: bytes) -> bytes:
    """The address whose key made ``signature`` (r ‖ s ‖ recovery id 0/1, 65 bytes) over the 32-byte ``digest``.

    Raises ``ValueError`` when no key recovers (coincurve raises its own errors; they are mapped here)."""
    return _address_of_point(_recover_point(signature, digest))


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
