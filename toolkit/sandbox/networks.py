"""Per-network timing and failure models, and the network records ``GET /networks`` serves.

Numbers follow the real chains: Ethereum's 12 s slots with ``safe`` one epoch (~6.4 min) and ``finalized`` two
epochs (~12.8 min) after inclusion; Arbitrum and Base with sub-second/2 s blocks, ``safe`` once the batch is posted to
L1 and ``finalized`` once that L1 block is (~15-20 min); Polygon finalized at 500-block depth; Avalanche safe and
final within seconds. On test networks only the latest stage is active.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

from toolkit.spec import KNOWN_NETWORKS, KnownNetwork

#: ``created_at``/``updated_at`` of every network record (the service listed them long before any scenario).
NETWORKS_CREATED_AT = 1_700_000_000
_NETWORK_NS = uuid.UUID("6f0c7f0e-1d2a-4c55-9a43-5b8f2f6e0c11")

PRE_BROADCAST_FAILURES: tuple[str, ...] = (
    "nonce too low",
    "intrinsic gas too low",
    "insufficient funds for gas * price + value",
    "replacement transaction underpriced",
    "max fee per gas less than block base fee",
    "chain unavailable: RPC endpoint timeout",
)
ON_CHAIN_FAILURES: tuple[str, ...] = (
    "execution reverted: ERC20: transfer amount exceeds balance",
    "execution reverted: ERC20: insufficient allowance",
    "execution reverted: SafeERC20: low-level call failed",
    "execution reverted: Ownable: caller is not the owner",
    "execution reverted: Pausable: paused",
    "out of gas",
)


@dataclass(frozen=True)
class NetworkModel:
    """How one network behaves: block time, stage delays (seconds, uniform ranges), failures."""

    known: KnownNetwork
    block_seconds: float
    inclusion: tuple[float, float]
    safe_after: tuple[float, float] | None
    final_after: tuple[float, float] | None
    fail_rate: float
    pre_broadcast_weights: tuple[int, ...]
    on_chain_weights: tuple[int, ...]
    genesis_block: int = 0
    genesis_ts: int = 1_600_000_000
    record: dict = field(default_factory=dict, compare=False)

    @property
    def chain_selector(self) -> str:
        """The network's chain selector (decimal string)."""
        return self.known.chain_selector

    @property
    def is_testnet(self) -> bool:
        """Whether only the latest finality stage is active."""
        return self.final_after is None

    def block_at(self, ts: int) -> int:
        """The (approximate) head block number at unix time ``ts``."""
        return self.genesis_block + int((ts - self.genesis_ts) / self.block_seconds)

    def failure_reason(self, rng: random.Random, on_chain: bool) -> str:
        """A realistic ``status_reason`` for a failed operation on this network."""
        if on_chain:
            return rng.choices(ON_CHAIN_FAILURES, self.on_chain_weights)[0]
        return rng.choices(PRE_BROADCAST_FAILURES, self.pre_broadcast_weights)[0]


def _record(known: KnownNetwork) -> dict:
    return {
        "id": str(uuid.uuid5(_NETWORK_NS, known.chain_selector)),
        "name": known.name,
        "chain_selector": known.chain_selector,
        "chain_id": known.chain_id,
        "chain_family": "evm",
        "created_at": NETWORKS_CREATED_AT,
        "updated_at": NETWORKS_CREATED_AT,
        "type": known.type,
    }


# name: block s, inclusion s, safe after inclusion, final after inclusion, fail rate, pre weights, on-chain weights,
# (block, ts) anchor
_PARAMS: dict[str, tuple] = {
    "Ethereum Mainnet": (
        12.0,
        (6, 30),
        (370, 430),
        (750, 840),
        0.030,
        (3, 2, 2, 2, 3, 1),
        (5, 3, 2, 1, 1, 1),
        (21_000_000, 1_729_339_000),
    ),
    "Arbitrum One": (
        0.25,
        (1, 3),
        (150, 600),
        (900, 1200),
        0.020,
        (2, 3, 1, 1, 1, 1),
        (4, 3, 2, 1, 1, 2),
        (265_000_000, 1_729_339_000),
    ),
    "Avalanche": (
        2.0,
        (1, 4),
        (0, 2),
        (0, 2),
        0.015,
        (2, 2, 2, 1, 2, 1),
        (4, 2, 2, 1, 1, 1),
        (52_000_000, 1_729_339_000),
    ),
    "Polygon": (
        2.1,
        (2, 8),
        (30, 90),
        (1000, 1150),
        0.040,
        (2, 2, 1, 3, 4, 2),
        (4, 3, 2, 1, 1, 2),
        (63_000_000, 1_729_339_000),
    ),
    "Base": (
        2.0,
        (2, 6),
        (60, 240),
        (900, 1200),
        0.025,
        (3, 2, 2, 1, 2, 1),
        (5, 3, 1, 1, 1, 1),
        (21_200_000, 1_729_339_000),
    ),
    "Ethereum Sepolia": (
        12.0,
        (6, 40),
        None,
        None,
        0.050,
        (2, 2, 2, 1, 1, 4),
        (4, 3, 2, 1, 1, 1),
        (6_900_000, 1_729_339_000),
    ),
    "Arbitrum Sepolia": (
        0.25,
        (1, 3),
        None,
        None,
        0.045,
        (2, 2, 2, 1, 1, 4),
        (4, 3, 2, 1, 1, 1),
        (90_000_000, 1_729_339_000),
    ),
    "Avalanche Fuji": (
        2.0,
        (1, 4),
        None,
        None,
        0.040,
        (2, 2, 2, 1, 1, 4),
        (4, 3, 2, 1, 1, 1),
        (36_000_000, 1_729_339_000),
    ),
    "Polygon Amoy": (
        2.0,
        (2, 8),
        None,
        None,
        0.060,
        (2, 2, 1, 2, 3, 4),
        (4, 3, 2, 1, 1, 1),
        (13_500_000, 1_729_339_000),
    ),
    "Base Sepolia": (
        2.0,
        (2, 6),
        None,
        None,
        0.045,
        (2, 2, 2, 1, 1, 4),
        (4, 3, 2, 1, 1, 1),
        (16_500_000, 1_729_339_000),
    ),
}


def _build() -> dict[str, NetworkModel]:
    models: dict[str, NetworkModel] = {}
    for known in KNOWN_NETWORKS:
        block, inc, safe, final, fail, pre, onchain, (gblock, gts) = _PARAMS[known.name]
        models[known.chain_selector] = NetworkModel(
            known=known,
            block_seconds=block,
            inclusion=inc,
            safe_after=safe,
            final_after=final,
            fail_rate=fail,
            pre_broadcast_weights=pre,
            on_chain_weights=onchain,
            genesis_block=gblock,
            genesis_ts=gts,
            record=_record(known),
        )
    return models


#: Every network the sandbox lists, by chain selector, in the published order.
MODELS: dict[str, NetworkModel] = _build()


def network_records() -> list[dict]:
    """The Network records of ``GET /networks``."""
    return [m.record for m in MODELS.values()]


def model_for(chain_selector: str) -> NetworkModel | None:
    """The model of a chain selector, or ``None`` for an unknown one."""
    return MODELS.get(chain_selector)
