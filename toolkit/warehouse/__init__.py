"""The DuckDB store: schema and views, Arrow conversion, upserts and sync cursors."""

from .arrow import TABLES, RejectedRecord, to_batch, transaction_records
from .store import Warehouse, sync_lock

__all__ = ["TABLES", "RejectedRecord", "Warehouse", "sync_lock", "to_batch", "transaction_records"]
