"""A page of records of any raw table as an Arrow batch: ``events`` through :mod:`.event_batches` (the
high-volume table has its own converter), every other table through :func:`.arrow.table_batch`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .arrow import Record, RejectedRecord, table_batch
from .event_batches import events_batch


def to_batch(
    table: str, records: Sequence[Record], *, defaults: dict[str, Any] | None = None
) -> tuple[pa.RecordBatch, list[RejectedRecord]]:
    """Convert one page of records into a record batch of ``table``'s schema, plus the records it had to reject.

    ``defaults`` fills columns the records do not carry (for example ``channel_id`` from the request path).
    Records with the same key keep the last one seen (DuckDB cannot upsert a key twice in one statement).
    """
    if table == "events":
        return events_batch(records, channel_id=(defaults or {}).get("channel_id"))
    return table_batch(table, records, defaults=defaults)


__all__ = ["to_batch"]
