"""Hand-made tiny warehouses: events in the wire format, loaded through the real conversion and upsert."""

from __future__ import annotations

import itertools
from pathlib import Path

from toolkit.warehouse import Warehouse, to_batch

T0 = 1_700_000_000
_ids = itertools.count()
SEPOLIA = "16015286601757825753"
ETHEREUM = "5009297550715157269"


def op_event(
    op: str,
    status: str,
    ts: int,
    *,
    chain: str = ETHEREUM,
    reason: str = "",
    event_id: str | None = None,
    offset: int | None = None,
) -> dict:
    """An ``operation.status`` event as the service sends it."""
    n = next(_ids)
    return {
        "event_id": event_id or f"00000000-0000-4000-8000-{n:012d}",
        "headers": {"type": "operation.status", "offset": n if offset is None else offset, "proofs": []},
        "payload": {
            "operation_id": op,
            "status": status,
            "status_reason": reason,
            "wallet_operation_id": "1",
            "address": "0x" + "ab" * 20,
            "chain_selector": chain,
            "timestamp": ts,
        },
    }


def load(
    path: Path,
    *,
    events: list[dict] = (),
    operations: list[dict] = (),
    networks: list[dict] = (),
    channel: str = "ch-1",
) -> Warehouse:
    """A warehouse file holding exactly these records."""
    wh = Warehouse(path)
    with wh.transaction():
        for table, records in (("events", events), ("operations", operations), ("networks", networks)):
            if records:
                batch, rejected = to_batch(table, list(records), defaults={"channel_id": channel})
                assert not rejected, rejected
                wh.upsert(table, batch)
    return wh
