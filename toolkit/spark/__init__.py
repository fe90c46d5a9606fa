"""The toolkit's metrics on Apache Spark, over the Parquet export (``chainops export``).

Every metric's SQL is written once, for DuckDB; :mod:`.transpile` derives the Spark SQL from it, :mod:`.source`
registers the export in a session and rebuilds the modelled views there, :mod:`.session` finds Java and starts a
local session when none is running. From Python::

    import toolkit as tk
    tk.metrics.status_latency(engine="spark", parquet="data/export", by=["network", "status"])
    tk.metrics.failure_rates(spark=spark, parquet="s3a://bucket/export")  # a session of your own

and from the command line: ``chainops metrics status-latency --engine spark --parquet data/export``.
Nothing runs as Python on the executors (no UDFs): only the driver needs the toolkit installed.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from .session import SparkUnavailable, java_home, spark_session, spark_unavailable_reason
from .source import RAW_TABLES, ExportNotFound, SparkWarehouse
from .transpile import SparkSqlError, to_spark

_cache: dict[tuple[Any, ...], SparkWarehouse] = {}
_lock = threading.Lock()


def _export_state(parquet: str) -> tuple[Any, ...]:
    """What changes when an export is written again (each table's directory is swapped in whole)."""
    if "://" in parquet:
        return ()
    state = []
    for table in RAW_TABLES:
        try:
            st = Path(parquet, table).stat()
        except OSError:
            continue
        state.append((table, st.st_ino, st.st_mtime_ns))
    return tuple(state)


def spark_warehouse(parquet: str | os.PathLike[str], session: Any = None) -> SparkWarehouse:
    """The export ``parquet`` registered in ``session`` (default: the active or a new local one), reused while the
    export is unchanged so that a series of metrics reads its schemas once."""
    session = session if session is not None else spark_session()
    path = str(parquet).rstrip("/")
    if "://" not in path:
        path = str(Path(path).resolve())
    key = (id(session), path, _export_state(path))
    with _lock:
        cached = _cache.get(key)
        if cached is None or cached.session is not session:
            for old in [k for k in _cache if k[:2] == key[:2]]:
                _cache.pop(old).close()
            cached = _cache[key] = SparkWarehouse(path, session)
        return cached


__all__ = [
    "RAW_TABLES",
    "ExportNotFound",
    "SparkSqlError",
    "SparkUnavailable",
    "SparkWarehouse",
    "java_home",
    "spark_session",
    "spark_unavailable_reason",
    "spark_warehouse",
    "to_spark",
]
