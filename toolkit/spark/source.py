"""The Parquet export as a warehouse on Spark: the same ``query(sql, params)`` the metrics call on DuckDB.

:class:`SparkWarehouse` registers the export's raw tables in a Spark session, rebuilds the modelled views on top
of them from the warehouse's own definitions (:func:`toolkit.warehouse.views.plain_view_selects`: the export has
the raw tables but not the ``model_*`` tables), and answers each metric's DuckDB statement through
:func:`~.transpile.to_spark`. Results come back through Arrow as the DuckDB ones do: times as tz-aware UTC,
whatever the session's time zone, and decimals as floats.

Each table is read from its directory with every file under it (``recursiveFileLookup``): the Hive partition
folders (``network=…/day=…``) are not read as columns, so a chain selector in a folder name is never turned into a
number, and each table keeps exactly the columns its files hold. The relations are registered under names with a
prefix of their own (``chainops<N>_events``), so a session's own temporary views are never replaced.
"""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from ..errors import ChainopsError
from ..warehouse.views import plain_view_selects
from .session import spark_session
from .transpile import to_spark

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The raw tables of the export the metrics read (the views are rebuilt from these).
RAW_TABLES = (
    "networks",
    "channels",
    "wallets",
    "watchers",
    "operations",
    "operation_transactions",
    "queries",
    "events",
    "sync_state",
    "sync_runs",
    "event_verifications",
)
#: The rebuilt views kept once computed (every metric reads one of them).
CACHED_VIEWS = ("operation_transitions", "operation_lifecycle", "query_lifecycle")
#: Tables without which no metric can run.
REQUIRED_TABLES = ("networks", "operations", "events")

_instances = itertools.count(1)


class ExportNotFound(ChainopsError):
    """The directory is not a Parquet export of the warehouse (or lacks a table the metrics need)."""


class SparkWarehouse:
    """A Parquet export (``chainops export``) read by Spark, answering the metrics' DuckDB SQL.

    Arguments: ``parquet`` the export's directory (a local path or any URI the session reads, such as
    ``s3a://bucket/export``); ``session`` a SparkSession (default: the active one, else a local one); ``cache``
    keeps the rebuilt views (:data:`CACHED_VIEWS`) in the executors' memory and disk once computed, so a series of
    metrics derives the transitions once (:meth:`close` releases them). On a local session each kept view is a
    local checkpoint, a leaf of every plan that reads it; on a cluster it is persisted (see :func:`_keep`).
    """

    def __init__(
        self, parquet: str | os.PathLike[str], session: SparkSession | None = None, *, cache: bool = True
    ) -> None:
        self.parquet = str(parquet).rstrip("/")
        self.session = session if session is not None else spark_session()
        self._prefix = f"chainops{next(_instances)}_"
        self._names: dict[str, str] = {}
        self._cached: list[DataFrame] = []
        self._functions: frozenset[str] | None = None
        self._register(cache)

    def __repr__(self) -> str:
        return f"SparkWarehouse({self.parquet!r}, master={self.session.sparkContext.master!r})"

    # -- registration ---------------------------------------------------------------------------------------------

    def _read(self, table: str) -> DataFrame | None:
        from pyspark.errors import AnalysisException

        path = f"{self.parquet}/{table}"
        if "://" not in path and not os.path.isdir(path):
            return None
        try:
            return self.session.read.option("recursiveFileLookup", "true").parquet(path)
        except AnalysisException as exc:
            if "PATH_NOT_FOUND" in str(exc) or "UNABLE_TO_INFER_SCHEMA" in str(exc):
                return None
            raise

    def _register(self, cache: bool) -> None:
        if "://" not in self.parquet and not os.path.isdir(self.parquet):
            raise ExportNotFound(f"no Parquet export at {self.parquet}: write one with `chainops export --out DIR`")
        for table in RAW_TABLES:
            frame = self._read(table)
            if frame is not None:
                self._names[table] = self._prefix + table
                frame.createOrReplaceTempView(self._names[table])
        missing = [t for t in REQUIRED_TABLES if t not in self._names]
        if missing:
            raise ExportNotFound(
                f"{self.parquet} is not a complete export of the warehouse (no {', '.join(missing)}): "
                "write one with `chainops export --out DIR`"
            )
        for view, select in plain_view_selects().items():
            self._names[view] = self._prefix + view
            frame = self.session.sql(self._spark_sql(select))
            if cache and view in CACHED_VIEWS:
                frame = _keep(frame, self.session)
                self._cached.append(frame)
            frame.createOrReplaceTempView(self._names[view])

    # -- queries --------------------------------------------------------------------------------------------------

    def _spark_sql(self, sql: str) -> str:
        if self._functions is None:
            # SHOW FUNCTIONS lists the names catalog.listFunctions() does, in one statement instead of a call per
            # function (0.1 against 2.6 JVM CPU-s); a persistent function comes qualified (catalog.db.name)
            rows = self.session.sql("SHOW FUNCTIONS").collect()
            self._functions = frozenset(row[0].rsplit(".", 1)[-1].lower() for row in rows)
        return to_spark(sql, tables=self._names, spark_functions=self._functions)

    def tables(self) -> list[str]:
        """The warehouse names of the tables and views this export provides."""
        return sorted(self._names)

    def frame(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> DataFrame:
        """The Spark DataFrame of one DuckDB statement (``$name`` parameters bound from ``params``), not collected."""
        if params is not None and not isinstance(params, Mapping):
            raise TypeError("Spark binds named parameters only: pass a mapping")
        args = {name: _spark_value(value) for name, value in (params or {}).items()}
        return self.session.sql(self._spark_sql(sql), args=args or None)

    def arrow(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> pa.Table:
        """Run one DuckDB statement on Spark; returns an Arrow table with UTC times and decimals as doubles."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            table = self.frame(sql, params).toArrow()
        return _portable(table)

    def query(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> pd.DataFrame:
        """Run one DuckDB statement on Spark; returns a DataFrame as :meth:`toolkit.warehouse.Warehouse.query` does."""
        return self.arrow(sql, params).to_pandas()

    def close(self) -> None:
        """Drop the temporary views this export registered and release their cache (the session stays up)."""
        for frame in self._cached:
            frame.unpersist()
        self._cached.clear()
        for name in self._names.values():
            self.session.catalog.dropTempView(name)
        self._names.clear()

    def __enter__(self) -> SparkWarehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _is_local(session: SparkSession) -> bool:
    """Whether ``session`` runs in local mode (its driver is its only executor)."""
    try:
        return str(session.conf.get("spark.master", "")).startswith("local")
    except Exception:  # a session that does not say (Spark Connect may not): treat it as a cluster
        return False


def _keep(frame: DataFrame, session: SparkSession) -> DataFrame:
    """``frame`` computed once, at its first use, and kept for every later statement.

    Spark 4 does not substitute a persisted view that a statement reads inside a WITH clause (every metric's
    statement does): each reference recomputed the view from the raw Parquet tables and planned its whole
    definition again (on the demo export the in-flight statements planned and ran the transitions a dozen times).
    A local checkpoint is a leaf instead: every plan reads the kept rows. Its blocks live on the executors and are
    not recomputed if one is lost, which cannot happen in local mode (the driver is the executor); on a cluster the
    view is persisted (memory and disk, recomputed when lost) and plain references still use it.
    """
    if _is_local(session):
        return frame.localCheckpoint(eager=False)
    return frame.persist()


def _spark_value(value: Any) -> Any:
    """A bound parameter as Spark takes it: lists as array constructors,
    times as UTC instants."""
    from pyspark.sql import functions as F

    if isinstance(value, pd.Timestamp):
        value = value.to_pydatetime()
    if isinstance(value, datetime) and value.tzinfo is None:
        raise ValueError("naive datetime bound as a parameter: give times in UTC with a time zone")
    if isinstance(value, (list, tuple)):
        if not value:
            return F.array()  # Spark takes a constructor, not a cast, as an argument; the SQL casts it
        return F.array(*[F.lit(v) for v in value])
    return value


def _portable(table: pa.Table) -> pa.Table:
    """Times as UTC instants (Spark labels them with the session's zone) and decimals as doubles."""
    fields = []
    for field in table.schema:
        if pa.types.is_timestamp(field.type):
            fields.append(field.with_type(pa.timestamp("us", tz="UTC")))
        elif pa.types.is_decimal(field.type):
            fields.append(field.with_type(pa.float64()))
        else:
            fields.append(field)
    schema = pa.schema(fields)
    return table if schema.equals(table.schema) else table.cast(schema)


__all__ = ["CACHED_VIEWS", "RAW_TABLES", "REQUIRED_TABLES", "ExportNotFound", "SparkWarehouse"]
