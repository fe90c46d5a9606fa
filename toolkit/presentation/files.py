"""The one writer of a table's data files, for ``chainops metrics --format csv|json|parquet`` and the report's tables.

Files keep every column and full precision (nothing here rounds). One form of each value in every file:

- times: ISO 8601 in UTC ending in ``Z``, ``2026-01-01T00:00:00Z`` (fractions of a second only when there are
  some: ``2026-01-01T00:00:00.250000Z``); Parquet keeps them as UTC timestamps;
- categoricals (the metrics' statuses, networks) as plain text, so other engines read text;
- CSV cells a spreadsheet would run as a formula (``=HYPERLINK(...)``) defused with a leading ``'``
  (:func:`toolkit.presentation.safe.csv_safe`); printed to a terminal, control characters shown visibly too;
- JSON: an array of objects, every number as exact as a float is, a missing value ``null``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .safe import frame_for_csv

if TYPE_CHECKING:
    import pandas as pd

#: The formats this module writes.
FORMATS = ("csv", "json", "parquet")


def _iso(value: object) -> object:
    """A UTC time as ``2026-01-01T00:00:00Z`` (a missing one stays missing)."""
    import pandas as pd

    if value is None or value is pd.NaT:
        return None
    stamp = pd.Timestamp(value)  # type: ignore[arg-type]
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.isoformat().replace("+00:00", "Z")


def portable(df: pd.DataFrame, *, times_as_text: bool = False) -> pd.DataFrame:
    """A copy of ``df`` any engine reads alike: categoricals as plain text, times in UTC (as ISO 8601 text ending in
    ``Z`` with ``times_as_text``, for CSV and JSON)."""
    import pandas as pd

    out = df.copy()
    for col in out.columns:
        series = out[col]
        if isinstance(series.dtype, pd.CategoricalDtype):
            out[col] = series.astype(object).where(series.notna(), None)
        elif pd.api.types.is_datetime64_any_dtype(series.dtype):
            utc = series.dt.tz_localize("UTC") if series.dt.tz is None else series.dt.tz_convert("UTC")
            out[col] = utc.map(_iso).astype(object) if times_as_text else utc
    return out


def csv_text(df: pd.DataFrame, *, terminal: bool = False) -> str:
    """``df`` as CSV text (see the module's docstring); ``terminal``: printed rather than written to a file, so
    control characters are shown visibly."""
    return frame_for_csv(portable(df, times_as_text=True), terminal=terminal).to_csv(index=False)


def json_text(df: pd.DataFrame) -> str:
    """``df`` as a JSON array of objects, every number as exact as a float is (shortest round-trip form)."""
    import orjson

    frame = portable(df, times_as_text=True)
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    option = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z
    return orjson.dumps(records, default=_json_value, option=option).decode() + "\n"


def _json_value(value: object) -> object:
    """What orjson cannot write itself: a time as ISO 8601 UTC text, a duration as ISO text, a missing value as
    null."""
    import pandas as pd

    if value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, pd.Timestamp):
        return _iso(value)
    if isinstance(value, pd.Timedelta):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def write_parquet(df: pd.DataFrame, path: str | Path) -> None:
    """``df`` as a Parquet file at ``path`` (categoricals as text, times as UTC timestamps)."""
    portable(df).to_parquet(path, index=False)


def write_table(df: pd.DataFrame, path: str | Path, fmt: str) -> None:
    """``df`` into the file ``path`` as ``fmt`` (one of :data:`FORMATS`). The caller makes the file appear whole
    (:mod:`toolkit.atomic`)."""
    if fmt == "parquet":
        write_parquet(df, path)
    elif fmt == "csv":
        Path(path).write_text(csv_text(df), encoding="utf-8")
    elif fmt == "json":
        Path(path).write_text(json_text(df), encoding="utf-8")
    else:
        raise ValueError(f"unknown file format {fmt!r}; choose from {FORMATS}")


__all__ = ["FORMATS", "csv_text", "json_text", "portable", "write_parquet", "write_table"]
