"""The failure-reason taxonomy against real-world failure strings (geth, Erigon, Nethermind, Hardhat, Go's HTTP
client, Solidity require messages) and the service's own reasons: one row per string, expected category written
down by hand from what each error means, not from the rules."""

from __future__ import annotations

import pytest

from toolkit.metrics import FAILURE_CATEGORIES, classify_failure

CASES: list[tuple[str | None, str, str]] = [
    # reverts: the contract's own message wins over any word in it
    ("execution reverted", "failed", "revert"),
    ("execution reverted: UniswapV2Router: EXPIRED", "failed", "revert"),
    ("execution reverted: Transaction too old", "failed", "revert"),
    ("execution reverted: ERC20: transfer amount exceeds balance", "failed", "revert"),
    ("execution reverted: ERC20: insufficient allowance", "failed", "revert"),
    ("execution reverted: SafeERC20: low-level call failed", "failed", "revert"),
    ("execution reverted: Ownable: caller is not the owner", "failed", "revert"),
    ("execution reverted: Pausable: paused", "failed", "revert"),
    ("execution reverted: UniswapV2: INSUFFICIENT_OUTPUT_AMOUNT", "failed", "revert"),
    ("execution reverted: STF", "failed", "revert"),
    ("execution reverted: 0x08c379a0", "failed", "revert"),
    ("VM Exception while processing transaction: revert SafeMath: subtraction overflow", "failed", "revert"),
    ("Transaction reverted without a reason string", "failed", "revert"),
    ("deployment reverted: execution reverted", "failed", "revert"),
    # gas and fees (a replacement that is underpriced needs a higher fee, not another nonce)
    ("replacement transaction underpriced", "failed", "gas"),
    ("transaction underpriced", "failed", "gas"),
    ("insufficient funds for gas * price + value", "failed", "gas"),
    ("insufficient funds for gas * price + value: address 0xAbC have 1000 want 21000000", "failed", "gas"),
    ("intrinsic gas too low", "failed", "gas"),
    ("max fee per gas less than block base fee: address 0xAbC, maxFeePerGas: 1 baseFee: 7", "failed", "gas"),
    ("max priority fee per gas higher than max fee per gas", "failed", "gas"),
    ("out of gas", "failed", "gas"),
    ("gas required exceeds allowance (30000000)", "failed", "gas"),
    ("exceeds block gas limit", "failed", "gas"),
    ("tx fee (1.50 ether) exceeds the configured cap (1.00 ether)", "failed", "gas"),
    # nonces
    ("nonce too low", "failed", "nonce"),
    ("nonce too low: address 0xAbC, tx: 5 state: 7", "failed", "nonce"),
    ("nonce too high", "failed", "nonce"),
    ("already known", "failed", "nonce"),
    ("known transaction: 5f2e0c", "failed", "nonce"),
    ("Nonce has already been used", "failed", "nonce"),
    # the node or the link to it
    ("context deadline exceeded", "failed", "chain_unavailable"),
    ("dial tcp: i/o timeout", "failed", "chain_unavailable"),
    ('Post "https://rpc.example.org": dial tcp 10.0.0.1:443: i/o timeout', "failed", "chain_unavailable"),
    ("dial tcp 10.0.0.1:8545: connect: connection refused", "failed", "chain_unavailable"),
    ("chain unavailable: RPC endpoint timeout", "failed", "chain_unavailable"),
    ("502 Bad Gateway", "failed", "chain_unavailable"),
    ("429 Too Many Requests", "failed", "chain_unavailable"),
    ("unexpected EOF", "failed", "chain_unavailable"),
    # our own deadline and time-to-live
    ("deadline elapsed before the draft was signed", "expired", "deadline"),
    ("deadline elapsed before broadcast", "expired", "deadline"),
    ("deadline elapsed before the draft was signed", "failed", "deadline"),
    ("time-to-live elapsed", "failed", "deadline"),
    ("", "expired", "deadline"),
    # nothing the rules know
    ("invalid sender", "failed", "other"),
    ("transaction type not supported", "failed", "other"),
    ("something new", "failed", "other"),
    ("", "failed", "other"),
    (None, "failed", "other"),
]


@pytest.mark.parametrize(("reason", "status", "category"), CASES)
def test_real_failure_strings_fall_in_the_right_category(reason: str | None, status: str, category: str) -> None:
    assert classify_failure(reason, status) == category


def test_the_table_is_broad() -> None:
    assert len(CASES) >= 25
    assert {c for _, _, c in CASES} == set(FAILURE_CATEGORIES)
