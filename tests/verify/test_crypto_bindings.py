"""verify's Keccak-256 and key recovery go through the libraries' C bindings (issue 40): they must answer exactly
what the libraries' public APIs answer, for every input, and be the ones in use on this machine.

The expected values come from pycryptodome's ``keccak.new`` and coincurve's ``PublicKey``, never from
``toolkit.verify.crypto``."""

from __future__ import annotations

import random
import threading

import pytest
from coincurve import PrivateKey, PublicKey
from Crypto.Hash import keccak

from toolkit.verify import crypto


def _keccak(data: bytes) -> bytes:
    return keccak.new(digest_bits=256, data=data).digest()


def _recovered(signature: bytes, digest: bytes) -> bytes | None:
    """The address coincurve's public API recovers, None when it recovers none."""
    try:
        point = PublicKey.from_signature_and_message(signature, digest, hasher=None).format(compressed=False)[1:]
    except Exception:  # coincurve raises ValueError or its own types by version
        return None
    return _keccak(point)[-20:]


def test_the_bindings_are_in_use_here() -> None:
    assert crypto._keccak256 is not crypto._keccak256_public
    assert crypto._recover_point is not crypto._recover_point_public


def test_keccak_matches_pycryptodome_at_every_length_around_the_rate() -> None:
    rng = random.Random(40)
    lengths = [0, 1, 31, 32, 33, 64, 135, 136, 137, 271, 272, 273, 1000, 4096]
    for n in lengths + [rng.randrange(0, 3000) for _ in range(200)]:
        data = rng.randbytes(n)
        assert crypto.keccak256(data) == _keccak(data), n
    # the Keccak of nothing, as Ethereum knows it (not SHA3-256's a7ffc6f8...)
    assert crypto.keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"


@pytest.mark.parametrize("seed", range(3))
def test_recovery_matches_coincurve_for_good_and_broken_signatures(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        key = PrivateKey(rng.randbytes(32))
        digest = rng.randbytes(32)
        good = key.sign_recoverable(digest, hasher=None)
        address = _keccak(key.public_key.format(compressed=False)[1:])[-20:]
        assert crypto.recover_address(good, digest) == address
        broken = [
            good[:64] + bytes((good[64] ^ 1,)),  # the other recovery id: another key, or none
            rng.randbytes(64) + bytes((rng.randrange(2),)),  # random r and s: often no key at all
            bytes(64) + b"\x00",  # r = s = 0
            b"\xff" * 64 + b"\x01",  # r and s past the group order
            good[:64] + b"\x02",
            good[:64] + b"\x03",
        ]
        for sig in broken:
            expected = _recovered(sig, digest)
            if expected is None:
                with pytest.raises(ValueError):
                    crypto.recover_address(sig, digest)
            else:
                assert crypto.recover_address(sig, digest) == expected


def test_a_malformed_signature_or_digest_recovers_nothing() -> None:
    digest = bytes(range(32))
    good = PrivateKey(bytes(31) + b"\x07").sign_recoverable(digest, hasher=None)
    for sig, dig in [(good[:64], digest), (good + b"\x00", digest), (good[:64] + b"\x04", digest), (good, digest[:31])]:
        with pytest.raises(ValueError):
            crypto.recover_address(sig, dig)


def test_threads_at_once_each_get_their_own_answers() -> None:
    """The bindings keep their C buffers per thread: threads hashing and recovering at once (cffi lets go of the GIL
    in each C call) never read another's result."""
    rng = random.Random(7)
    keys = [PrivateKey(rng.randbytes(32)) for _ in range(8)]
    cases = []
    for i in range(800):
        key, digest, data = keys[i % 8], rng.randbytes(32), rng.randbytes(rng.randrange(0, 600))
        cases.append((key.sign_recoverable(digest, hasher=None), digest, data))
    expected = [(_recovered(sig, digest), _keccak(data)) for sig, digest, data in cases]
    wrong: list[int] = []

    def check(part: int) -> None:
        for _ in range(3):
            for i in range(part, len(cases), 4):
                sig, digest, data = cases[i]
                crypto._ADDRESSES.clear()  # each recovery serializes its key, as for a key not seen yet
                if (crypto.recover_address(sig, digest), crypto.keccak256(data)) != expected[i]:
                    wrong.append(i)

    threads = [threading.Thread(target=check, args=(part,)) for part in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong
