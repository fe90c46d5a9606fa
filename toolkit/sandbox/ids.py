"""Deterministic identifiers drawn from a seeded RNG: UUIDs, addresses, hex blobs."""

from __future__ import annotations

import random
import uuid


def new_uuid(rng: random.Random) -> str:
    """A version-4 UUID string drawn from ``rng``."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def new_address(rng: random.Random) -> str:
    """A lower-case 20-byte hex address drawn from ``rng``."""
    return f"0x{rng.getrandbits(160):040x}"


def new_hex(rng: random.Random, nbytes: int) -> str:
    """``0x``-prefixed hex of ``nbytes`` random bytes."""
    return "0x" + rng.randbytes(nbytes).hex()


def stream(seed: int, *names: object) -> random.Random:
    """An independent RNG stream for ``seed`` and a name path (string seeds hash stably across runs)."""
    return random.Random(":".join(str(n) for n in (seed, *names)))
