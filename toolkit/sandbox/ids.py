"""Deterministic identifiers drawn from a seeded RNG: UUIDs, addresses, hex blobs."""

from __future__ import annotations

import random


def new_uuid(rng: random.Random) -> str:
    """A version-4 UUID string drawn from ``rng`` (same value as ``uuid.UUID(int=..., version=4)``)."""
    h = f"{(rng.getrandbits(128) & _CLEAR) | _SET:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_SET = (0x4000 << 64) | (0x8000 << 48)


def new_address(rng: random.Random) -> str:
    """A lower-case 20-byte hex address drawn from ``rng``."""
    return f"0x{rng.getrandbits(160):040x}"


def new_hex(rng: random.Random, nbytes: int) -> str:
    """``0x``-prefixed hex of ``nbytes`` random bytes."""
    return "0x" + rng.randbytes(nbytes).hex()


def stream(seed: int, *names: object) -> random.Random:
    """An independent RNG stream for ``seed`` and a name path (string seeds hash stably across runs)."""
    return random.Random(":".join(str(n) for n in (seed, *names)))
