"""Export the warehouse as Parquet for other engines (Spark, Trino, BigQuery, DuckDB, pandas).

One directory per table and view. The large ones (those that grow with the operations: events, operations,
operation_transactions, queries and the views operation_transitions, operation_lifecycle, query_lifecycle) are
partitioned Hive style by network and UTC day::

    OUT/events/network=Ethereum%20Mainnet/day=2026-11-20/part-0.parquet

The small ones (networks, channels, wallets, watchers, sync_state, sync_runs: tens to thousands of rows, growing with
the organisation's configuration or one row per sync) are one file in their directory, ``OUT/networks/part-0.parquet``
(a table whose partitions would each hold a handful of rows costs a reader more in file opens than it saves). Every
table keeps its directory, so ``spark.read.parquet("OUT/networks")`` and DuckDB's
``read_parquet('OUT/networks/**/*.parquet', hive_partitioning = true)`` read each the same way.

``network`` is the network's name (its chain selector when the networks table does not know it), ``day`` the UTC
date (``YYYY-MM-DD``) of the table's time column; a row without one goes to ``__HIVE_DEFAULT_PARTITION__``, the
Hive convention for NULL. The partition columns live in the paths, not in the files. Timestamps are written as
UTC microsecond timestamps (``TIMESTAMP(MICROS, isAdjustedToUTC=true)``); engine-specific types become portable
ones: ``UBIGINT``/``HUGEINT``/``UUID``/``JSON``/``ENUM`` as strings, other unsigned integers as the next signed
type, nested values as JSON text.

Which tables, and how each is partitioned, is a fixed list (:data:`EXPORTS`); column names come from the
warehouse's own catalog, never from a user. The whole export is written into a staging directory and each table's
directory swapped in once every table is complete, so a re-run replaces an export instead of mixing two, and a
failed one leaves the previous export (or nothing) and no partial files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .atomic import atomic_dir
from .warehouse import Warehouse

#: The name of a NULL partition value, as Hive, Spark and Trino write it.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
PARTITION_COLUMNS = ("network", "day")

_NETWORK_OF_SELECTOR = (
    "coalesce((SELECT n.name FROM networks n WHERE n.chain_selector = t.chain_selector), t.chain_selector)"
)
_NETWORK_OF_OPERATION = (
    "(SELECT coalesce(n.name, o.chain_selector) FROM operations o "
    "LEFT JOIN networks n ON n.chain_selector = o.chain_selector "
    "WHERE o.operation_id = t.operation_id)"
)
_CREATED_OF_OPERATION = "(SELECT o.created_at FROM operations o WHERE o.operation_id = t.operation_id)"


@dataclass(frozen=True)
class ExportSpec:
    """How one table or view is exported: SQL for its network and its time (None: no such partition level)."""

    name: str
    network: str | None
    time: str | None


#: Every exported table and view, with the SQL (fixed text, over the alias ``t``) of its partition values; the small
#: tables (see the module docstring) have none and are written as one file.
EXPORTS: tuple[ExportSpec, ...] = (
    ExportSpec("networks", None, None),
    ExportSpec("channels", None, None),
    ExportSpec("wallets", None, None),
    ExportSpec("watchers", None, None),
    ExportSpec("operations", _NETWORK_OF_SELECTOR, "t.created_at"),
    ExportSpec("operation_transactions", _NETWORK_OF_OPERATION, _CREATED_OF_OPERATION),
    ExportSpec("queries", _NETWORK_OF_SELECTOR, "t.created_at"),
    ExportSpec("events", _NETWORK_OF_SELECTOR, "t.ts"),
    ExportSpec("sync_state", None, None),
    ExportSpec("sync_runs", None, None),
    ExportSpec("event_verifications", None, None),
    ExportSpec("operation_transitions", "t.network", "t.entered_at"),
    ExportSpec("operation_lifecycle", "t.network", "t.created_at"),
    ExportSpec("query_lifecycle", "t.network", "t.created_at"),
)

#: The tables written as one file each (no partition columns).
SMALL_TABLES: tuple[str, ...] = tuple(e.name for e in EXPORTS if e.network is None and e.time is None)

_AS_TEXT = re.compile(r"^(UBIGINT|HUGEINT|UHUGEINT|UUID|JSON|ENUM\(.*\)|BIT|INTERVAL|VARINT|BIGNUM)$", re.S)
_WIDER = {"UTINYINT": "SMALLINT", "USMALLINT": "INTEGER", "UINTEGER": "BIGINT"}
_TIMES = ("TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMP WITH TIME ZONE", "DATETIME")


def _quote(identifier: str) -> str:
    """A catalog identifier as a quoted SQL identifier."""
    return '"' + identifier.replace('"', '""') + '"'


def portable_column(name: str, duckdb_type: str) -> str:
    """The select expression of one column with a portable type (see the module docstring).

    Arguments: ``name`` the column (from the catalog), ``duckdb_type`` its DuckDB type. Returns SQL over ``t``.
    """
    col = f"t.{_quote(name)}"
    kind = duckdb_type.upper()
    if _AS_TEXT.match(kind):
        expr = f"CAST({col} AS VARCHAR)"
    elif kind in _WIDER:
        expr = f"CAST({col} AS {_WIDER[kind]})"
    elif kind in _TIMES:
        expr = f"CAST({col} AS TIMESTAMPTZ)"  # the session time zone is UTC: naive times are read as UTC
    elif kind.endswith("]") or kind.startswith(("STRUCT", "MAP", "UNION")):
        expr = f"CAST(to_json({col}) AS VARCHAR)"
    else:
        return f"{col} AS {_quote(name)}"
    return f"{expr} AS {_quote(name)}"


#: A network name longer than this, in UTF-8 bytes, is shortened in its partition (the directory ``network=...``,
#: which URL-encoding may make three times longer, must stay under the 255 bytes a file name may hold).
PARTITION_NAME_BYTES = 60


def partition_name(expr: str) -> str:
    """SQL for the partition value of a network name ``expr``: the name itself, or, past
    :data:`PARTITION_NAME_BYTES`, its first 16 characters, ``~`` and 12 hex digits of its MD5 (distinct names stay
    distinct; the whole name is in ``networks``)."""
    return (
        f"CASE WHEN strlen({expr}) > {PARTITION_NAME_BYTES} "
        f"THEN left({expr}, 16) || '~' || left(md5({expr}), 12) ELSE {expr} END"
    )


def export_sql(wh: Warehouse, spec: ExportSpec) -> tuple[str, list[str]]:
    """The SELECT that exports one table (portable types, plus its partition columns) and the partition columns.

    Arguments: ``wh`` and the table's :class:`ExportSpec`. Returns ``(sql, partition columns)``.
    """
    described = wh.con.execute(f"DESCRIBE SELECT * FROM {_quote(spec.name)}").fetchall()
    partitions = []
    extra = []
    if spec.network is not None:
        partitions.append("network")
        extra.append(f"{partition_name(f'CAST({spec.network} AS VARCHAR)')} AS network")
    if spec.time is not None:
        partitions.append("day")
        extra.append(f"strftime(timezone('UTC', CAST({spec.time} AS TIMESTAMPTZ)), '%Y-%m-%d') AS day")
    columns = [portable_column(name, str(kind)) for name, kind, *_ in described if name not in partitions]
    return f"SELECT {', '.join([*columns, *extra])} FROM {_quote(spec.name)} AS t", partitions


def export_parquet(
    warehouse: Warehouse | str | os.PathLike[str], out: str | os.PathLike[str], *, batch_rows: int = 100_000
) -> dict[str, int]:
    """Write every table and view of :data:`EXPORTS` that the warehouse holds under ``out`` (one directory each).

    Arguments: ``warehouse`` (opened read-only when given as a path); ``out`` the directory; ``batch_rows`` rows
    per Arrow batch streamed from DuckDB (memory stays bounded). Returns the number of Parquet files per table.
    """
    # every table is written into one staging directory, then swapped in: a failure leaves the old export (or no
    # directory) and no partial files
    if isinstance(warehouse, Warehouse):
        with atomic_dir(out) as staging:
            return _export_all(warehouse, staging, batch_rows)
    with Warehouse(warehouse, read_only=True) as wh, atomic_dir(out) as staging:
        return _export_all(wh, staging, batch_rows)


def _export_all(wh: Warehouse, out: Path, batch_rows: int) -> dict[str, int]:
    present = set(wh.tables())
    written = {}
    for spec in EXPORTS:
        if spec.name in present:
            written[spec.name] = _export_one(wh, spec, out, batch_rows)
    return written


def _reader(result: object, batch_rows: int) -> pa.RecordBatchReader:
    """A streaming Arrow reader of a DuckDB result (the method's name moved across DuckDB releases)."""
    for name in ("to_arrow_reader", "fetch_record_batch", "fetch_arrow_reader"):
        method = getattr(result, name, None)
        if method is not None:
            return method(batch_rows)
    raise RuntimeError("this DuckDB release has no streaming Arrow export; install duckdb>=1.1")


def _export_one(wh: Warehouse, spec: ExportSpec, out: Path, batch_rows: int) -> int:
    """Write one table as ``out/<name>`` (``out`` is the staging directory of :func:`export_parquet`)."""
    sql, partitions = export_sql(wh, spec)
    staging = out / spec.name
    reader = _reader(wh.con.sql(sql), batch_rows)
    schema = reader.schema
    if partitions:
        partitioning = ds.partitioning(pa.schema([schema.field(p) for p in partitions]), flavor="hive")
    else:
        partitioning = None
    ds.write_dataset(
        reader,
        staging,
        format="parquet",
        partitioning=partitioning,
        basename_template="part-{i}.parquet",
        existing_data_behavior="overwrite_or_ignore",
        max_rows_per_file=1_000_000,
        max_rows_per_group=min(batch_rows * 10, 1_000_000),
    )
    files = sorted(staging.rglob("*.parquet")) if staging.exists() else []
    if not files:  # an empty table: one empty file keeps its schema readable
        staging.mkdir(parents=True, exist_ok=True)
        keep = pa.schema([f for f in schema if f.name not in partitions])
        pq.write_table(keep.empty_table(), staging / "part-0.parquet")
        files = [staging / "part-0.parquet"]
    return len(files)


__all__ = [
    "EXPORTS",
    "NULL_PARTITION",
    "PARTITION_COLUMNS",
    "SMALL_TABLES",
    "ExportSpec",
    "export_parquet",
    "export_sql",
    "portable_column",
]
