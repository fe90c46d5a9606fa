"""Request bodies the tests and benchmarks send to the sandbox through the service's API."""

from __future__ import annotations


def query_body(key: str, chain_selector: str, n: int) -> dict:
    """A ``CreateQuery`` body: an ``evm_call`` of ``balanceOf`` on the contract numbered ``n`` (0 to 254)."""
    return {
        "idempotency_key": key,
        "query_kind": "evm_call",
        "chain_selector": chain_selector,
        "params": {
            "contract_address": "0x" + f"{n + 1:02x}" * 20,
            "call_data": "0x70a08231",
            "block_selection": {"type": "latest"},
        },
    }
