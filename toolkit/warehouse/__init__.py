"""The DuckDB store: schema and views, Arrow conversion, upserts and sync cursors."""

from .arrow import RejectedRecord, transaction_records
from .batches import to_batch
from .schema import RAW_TABLES
from .store import Warehouse, sync_lock

#: The raw tables' declarations by name: the name this package gave :data:`RAW_TABLES` before (kept for callers).
TABLES = RAW_TABLES

__all__ = ["RAW_TABLES", "TABLES", "RejectedRecord", "Warehouse", "sync_lock", "to_batch", "transaction_records"]
