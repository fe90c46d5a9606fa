"""What the metrics run their statements on: a :class:`~toolkit.warehouse.Warehouse`, or Spark over an export."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd


@runtime_checkable
class QueryEngine(Protocol):
    """Anything that answers the metrics' DuckDB statements: a :class:`~toolkit.warehouse.Warehouse`, or a
    :class:`toolkit.spark.SparkWarehouse` over a Parquet export."""

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Run one bound statement; returns a DataFrame with tz-aware UTC times."""


__all__ = ["QueryEngine"]
