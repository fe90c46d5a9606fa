"""Hand-made tiny warehouses for the metrics: every record in the wire format, through the real conversion."""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from tests.warehouse.helpers import ETHEREUM, SEPOLIA, T0, op_event
from toolkit.warehouse import Warehouse, to_batch
from toolkit.warehouse.model_tables import refresh_models

__all__ = [
    "ETHEREUM",
    "NETWORKS",
    "SEPOLIA",
    "T0",
    "build",
    "empty_warehouse",
    "ladder",
    "op_event",
    "op_record",
    "proofs",
    "query_event",
    "refresh",
    "watcher_event",
    "watcher_record",
    "watcher_status",
]

_ids = itertools.count(1)
BASE = "15971525489660198786"

NETWORKS = [
    {
        "id": "n-eth",
        "name": "Ethereum Mainnet",
        "chain_selector": ETHEREUM,
        "chain_id": "1",
        "chain_family": "evm",
        "type": "mainnet",
        "created_at": T0,
        "updated_at": T0,
    },
    {
        "id": "n-sep",
        "name": "Ethereum Sepolia",
        "chain_selector": SEPOLIA,
        "chain_id": "11155111",
        "chain_family": "evm",
        "type": "testnet",
        "created_at": T0,
        "updated_at": T0,
    },
]

RELAY = ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed")


def _event_id() -> str:
    return f"00000000-0000-4000-9000-{next(_ids):012d}"


def proofs(signatures: int | None = 4) -> list[dict]:
    """The ``headers.proofs`` of an event: one OCR proof with ``signatures`` signatures, or none."""
    if signatures is None:
        return []
    sigs = ["0x" + "11" * 65] * signatures
    return [{"alg": "ecdsa", "ocr_report": "0x00", "ocr_context": "0x00", "signatures": sigs}]


def ladder(
    op: str,
    statuses: Sequence[str],
    times: Sequence[int],
    *,
    chain: str = ETHEREUM,
    channel: str = "ch-1",
    reason: str = "",
    signatures: int | None = 4,
) -> list[dict]:
    """``operation.status`` events of one operation moving through ``statuses`` at ``T0 + times``."""
    out = []
    for status, t in zip(statuses, times, strict=True):
        ev = op_event(op, status, T0 + t, chain=chain, reason=reason if status in ("failed", "expired") else "")
        ev["channel_id"] = channel
        if status.startswith("confirmed"):
            ev["headers"]["proofs"] = proofs(signatures)
        out.append(ev)
    return out


def op_record(
    op: str,
    status: str,
    *,
    chain: str = ETHEREUM,
    created: int = 0,
    updated: int = 0,
    channel: str = "ch-1",
    address: str = "0x" + "ab" * 20,
) -> dict:
    """An operation record as GET serves it (times relative to ``T0``)."""
    return {
        "operation_id": op,
        "channel_id": channel,
        "status": status,
        "chain_selector": chain,
        "address": address,
        "wallet_operation_id": "1",
        "deadline": 0,
        "transactions": [{"to": "0x" + "cd" * 20, "value": "0", "data": "0x"}],
        "created_at": T0 + created,
        "updated_at": T0 + updated,
    }


def query_event(
    query: str, status: str, t: int, *, chain: str = ETHEREUM, channel: str = "ch-1", signatures: int | None = 4
) -> dict:
    """A ``query.status`` event (with a proof at completed and failed)."""
    headers = {"type": "query.status", "offset": next(_ids)}
    if status in ("completed", "failed"):
        headers["proofs"] = proofs(signatures)
    return {
        "event_id": _event_id(),
        "channel_id": channel,
        "headers": headers,
        "payload": {"query_id": query, "status": status, "chain_selector": chain, "timestamp": T0 + t},
    }


def watcher_event(
    watcher: str, t: int, *, chain: str = ETHEREUM, channel: str = "ch-1", signatures: int | None = 4
) -> dict:
    """A ``watcher.event`` event (observed contract event, with a proof)."""
    return {
        "event_id": _event_id(),
        "channel_id": channel,
        "headers": {"type": "watcher.event", "offset": next(_ids), "proofs": proofs(signatures)},
        "payload": {"watcher_id": watcher, "chain_selector": chain, "timestamp": T0 + t, "event_hash": "0x01"},
    }


def watcher_status(watcher: str, status: str, t: int, *, chain: str = ETHEREUM, channel: str = "ch-1") -> dict:
    """A ``watcher.status`` event."""
    return {
        "event_id": _event_id(),
        "channel_id": channel,
        "headers": {"type": "watcher.status", "offset": next(_ids)},
        "payload": {
            "watcher_id": watcher,
            "status": status,
            "chain_selector": chain,
            "timestamp": T0 + t,
            "status_reason": f"now {status}",
        },
    }


def watcher_record(watcher: str, name: str, status: str, *, chain: str = ETHEREUM, channel: str = "ch-1") -> dict:
    """A watcher record."""
    return {
        "watcher_id": watcher,
        "channel_id": channel,
        "name": name,
        "status": status,
        "chain_selector": chain,
        "address": "0x" + "ef" * 20,
        "service": "erc20",
        "events": ["Transfer"],
        "created_at": T0,
    }


_templates: list[Path] = []


def empty_warehouse(path: Path) -> Warehouse:
    """A new warehouse at ``path``, opened for writing: a copy of an empty one made once per process (creating the
    tables, views and comments costs more than copying the file they end up in). An existing file is opened. The
    one difference from a new file: the marker table's migration times are those of the template."""
    path = Path(path)
    if path.exists():
        return Warehouse(path)
    if not _templates:
        folder = Path(tempfile.mkdtemp(prefix="chainops-empty-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        Warehouse(folder / "empty.duckdb").close()
        _templates.append(folder / "empty.duckdb")
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_templates[0], path)
    return Warehouse(path)


def build(
    path: Path,
    *,
    events: Iterable[dict] = (),
    operations: Iterable[dict] = (),
    networks: Iterable[dict] = NETWORKS,
    watchers: Iterable[dict] = (),
    queries: Iterable[dict] = (),
    wh: Warehouse | None = None,
) -> Warehouse:
    """A warehouse file holding these records (added to ``wh`` when given), in one transaction per call."""
    wh = wh or empty_warehouse(path)
    with wh.transaction():
        for table, records in (
            ("networks", networks),
            ("operations", operations),
            ("watchers", watchers),
            ("queries", queries),
            ("events", events),
        ):
            records = list(records)
            if records:
                batch, rejected = to_batch(table, records, defaults={"channel_id": "ch-1"})
                assert not rejected, rejected
                wh.upsert(table, batch)
    return wh


def refresh(wh: Warehouse) -> Warehouse:
    """Run the sync-time model refresh and return the warehouse."""
    refresh_models(wh)
    return wh
