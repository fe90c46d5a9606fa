"""Records from the service -> Arrow record batches with one fixed schema per table.

A page of records becomes one :class:`pyarrow.RecordBatch` whose columns match the warehouse table (declared, with
how each column is read from a record, in :mod:`toolkit.warehouse.schema`). Nothing is lost and nothing crashes on
a messy feed:

- fields the schema does not know are kept in the ``extra`` JSON column;
- a value of the wrong type (text where a timestamp belongs, ...) is stored as NULL in its column and kept verbatim
  in ``extra["_invalid"][field]``; a number where text belongs (a chain selector sent as a JSON number) is stored
  as its exact digits and kept there too, and so is a fractional number where an integer or a timestamp belongs,
  stored rounded down;
- unknown enum values are plain text and stored as they are;
- a record without a usable key cannot be stored: it is returned as a :class:`RejectedRecord` naming the record
  and the field, and the rest of the page is converted.

Columns are built one at a time from Python lists (C code does the work when the feed is clean; a column with a
bad value falls back to checking value by value).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from ..event_wire import json_text, key_problem
from .schema import EVENTS, RAW_TABLES, TIMESTAMP, Column, Record

__all__ = ["EVENTS", "TIMESTAMP", "UTC_SECONDS", "RejectedRecord", "table_batch", "transaction_records"]

UTC_SECONDS = pa.timestamp("s", tz="UTC")
_MAX_TS = 253402300799  # 9999-12-31T23:59:59Z


@dataclass(frozen=True)
class RejectedRecord:
    """A record that could not be stored, with the field that made it so."""

    table: str
    index: int
    field: str
    reason: str
    key: str | None = None

    def __str__(self) -> str:
        who = f"{self.table} record {self.key!r}" if self.key else f"{self.table} record #{self.index}"
        return f"{who}: field {self.field!r} {self.reason}"


# ---- value coercion (the slow path, used only for a column that holds a bad value) ------------------------------

_INVALID = object()
#: The Python types of a column of integers that Arrow converts as they are (``bool`` is not one: a typed conversion
#: would refuse it, and a ``float`` would be truncated).
_INTS = frozenset({int, type(None)})
#: ASCII digits only: str.isdigit() also accepts characters such as '²' that int() refuses.
_INTEGER_TEXT = re.compile(r"-?[0-9]{1,20}")


def _coerce(kind: str, value: Any) -> tuple[Any, bool]:
    """A value for a column of ``kind``, and whether the original must be kept under ``extra._invalid`` (the column
    holds NULL or a value changed from what was sent)."""
    if value is None:
        return None, False
    if kind == "text":
        if isinstance(value, str):
            return value, False
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value), True  # ids and selectors sent as numbers: the exact digits as text, and a note
        return _INVALID, True
    if kind in ("int", "ts"):
        if isinstance(value, bool):
            return _INVALID, True
        changed = False
        if isinstance(value, float) and math.isfinite(value):
            changed = not value.is_integer()  # fractional: rounded down, never silently
            value = math.floor(value)
        if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
            value, changed = int(value), True  # a number sent as text: stored as the number, never silently
        if not isinstance(value, int):
            return _INVALID, True
        if kind == "ts" and not 0 <= value <= _MAX_TS:
            return _INVALID, True
        if kind == "int" and not -(2**63) <= value < 2**63:
            return _INVALID, True
        return value, changed
    if kind == "bool":
        return (value, False) if isinstance(value, bool) else (_INVALID, True)
    raise AssertionError(kind)


def _build_column(col: Column, values: Sequence[Any], invalid: dict[int, dict[str, Any]]) -> pa.Array:
    """An Arrow array for one column; bad values become NULL and are noted in ``invalid`` by row."""
    if col.kind == "json":
        dumps = orjson.dumps
        try:
            return pa.array([None if v is None else dumps(v) for v in values], pa.string())
        except (TypeError, orjson.JSONEncodeError):
            return pa.array([json_text(v) for v in values], pa.string())
    fast_type = {"text": pa.string(), "ts": pa.int64(), "int": pa.int64(), "bool": pa.bool_()}[col.kind]
    try:
        if fast_type == pa.int64() and set(map(type, values)) <= _INTS:
            arr = pa.array(values, fast_type)  # only ints (no bool, no float): nothing to infer
        elif fast_type == pa.int64():
            # inferred first: a typed conversion would truncate a fractional number silently
            arr = pa.array(values)
            if not (pa.types.is_integer(arr.type) or pa.types.is_null(arr.type)):
                raise TypeError(f"{col.name} holds {arr.type}")
            arr = arr.cast(pa.int64())
        else:
            arr = pa.array(values, fast_type)
        if col.kind == "ts":
            if len(arr) and arr.null_count < len(arr):
                import pyarrow.compute as pc

                lo, hi = pc.min_max(arr).values()
                if lo.as_py() < 0 or hi.as_py() > _MAX_TS:
                    raise ValueError("timestamp out of range")
            return arr.cast(UTC_SECONDS).cast(TIMESTAMP)
        return arr
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        pass
    clean: list[Any] = []
    for i, v in enumerate(values):
        c, note = _coerce(col.kind, v)
        if note:
            invalid.setdefault(i, {})[col.field] = v
        clean.append(None if c is _INVALID else c)
    arr = pa.array(clean, fast_type)
    return arr.cast(UTC_SECONDS).cast(TIMESTAMP) if col.kind == "ts" else arr


def table_batch(
    table: str, records: Sequence[Record], *, defaults: dict[str, Any] | None = None
) -> tuple[pa.RecordBatch, list[RejectedRecord]]:
    """Convert one page of records of a raw table other than ``events`` (:mod:`.event_batches` converts those; use
    :func:`toolkit.warehouse.to_batch` for any table) into a record batch of ``table``'s schema, plus the records
    it had to reject.

    ``defaults`` fills columns the records do not carry (for example ``channel_id`` from the request path).
    Records with the same key keep the last one seen (DuckDB cannot upsert a key twice in one statement).
    """
    tspec = RAW_TABLES[table]
    rejected: list[RejectedRecord] = []
    keys = _usable_keys(records, tspec.key, defaults)
    kept: dict[Any, int] = {} if keys is None else dict(zip(keys, range(len(records)), strict=True))
    for i, rec in enumerate(records if keys is None else ()):
        if not isinstance(rec, dict):
            rejected.append(RejectedRecord(table, i, "<record>", f"is a {type(rec).__name__}, not an object"))
            continue
        parts = []
        for k in tspec.key:
            v = rec.get(k) if k != "channel_id" or not defaults else rec.get(k, defaults.get(k))
            problem = key_problem(v)
            if problem:
                rejected.append(RejectedRecord(table, i, k, problem, key=_short(rec, tspec.key[0])))
                break
            parts.append(str(v))
        else:
            kept[tuple(parts)] = i
    rows = [records[i] for i in sorted(kept.values())]
    invalid: dict[int, dict[str, Any]] = {}
    arrays = []
    for col in tspec.columns:
        if col.getter is not None:
            values = list(map(col.getter, rows))
        else:
            name = col.field
            values = [r.get(name) for r in rows]
        if defaults and col.name in defaults:
            values = [defaults[col.name] if v is None else v for v in values]
        arrays.append(_build_column(col, values, invalid))
    extras = []
    consumed, objects = tspec.consumed, tspec.object_fields
    for i, rec in enumerate(rows):
        # the common case, no unknown field, is one C-level subset test; the rest keeps the record's key order
        whole = objects and any(isinstance(rec.get(f), dict) for f in objects)
        unknown = (
            {}
            if consumed.issuperset(rec) and not whole
            else {k: v for k, v in rec.items() if k not in consumed or (k in objects and isinstance(v, dict))}
        )
        if i in invalid:
            unknown["_invalid"] = invalid[i]
        extras.append(json_text(unknown) if unknown else None)
    arrays.append(pa.array(extras, pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=tspec.schema), rejected


def _usable_keys(records: Sequence[Any], key: Sequence[str], defaults: dict[str, Any] | None) -> list[Any] | None:
    """Each record's key as :func:`table_batch` reads it (the tuple of its parts as text), when every record is an
    object whose key is usable (text that is not blank, or an integer), told in C loops; ``None`` otherwise (each
    record is then read on its own, and those that cannot be stored are named)."""
    if not all(type(rec) is dict for rec in records):
        return None
    parts = []
    for k in key:
        if k == "channel_id" and defaults:
            values = [rec.get(k, defaults.get(k)) for rec in records]
        else:
            values = [rec.get(k) for rec in records]
        kinds = set(map(type, values))
        if not kinds <= _KEY_TYPES:
            return None
        texts = values if int not in kinds else [v for v in values if type(v) is str]
        if "" in texts or any(map(str.isspace, texts)):
            return None
        parts.append(values if int not in kinds else list(map(str, values)))
    return list(zip(*parts, strict=True))


#: The types of a key's parts that :func:`_usable_keys` reads in C (a subclass, ``bool`` say, is read on its own).
_KEY_TYPES = frozenset({str, int})


def _short(rec: Record, field: str) -> str | None:
    v = rec.get(field)
    return str(v)[:80] if v is not None else None


def transaction_records(operations: Iterable[Record]) -> list[Record]:
    """One record per transaction of each operation, with ``operation_id`` and ``idx`` (its position)."""
    out: list[Record] = []
    for op in operations:
        txs = op.get("transactions") if isinstance(op, dict) else None
        if not isinstance(txs, list) or not isinstance(op.get("operation_id"), str):
            continue
        for idx, tx in enumerate(txs):
            if isinstance(tx, dict):
                out.append({**tx, "operation_id": op["operation_id"], "idx": idx})
    return out
