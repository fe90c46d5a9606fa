"""Records from the service -> Arrow record batches with one fixed schema per table.

A page of records becomes one :class:`pyarrow.RecordBatch` whose columns match the warehouse table. Nothing is lost
and nothing crashes on a messy feed:

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

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from .. import spec

Record = dict[str, Any]
UTC_SECONDS = pa.timestamp("s", tz="UTC")
TIMESTAMP = pa.timestamp("us", tz="UTC")
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


@dataclass(frozen=True)
class Column:
    """One warehouse column: its name, Arrow type, the wire field it reads, and how to get it from a record."""

    name: str
    kind: str  # text | ts | int | bool | json
    source: str | None = None  # wire field name when it differs from `name`
    getter: Callable[[Record], Any] | None = None  # for nested or derived values
    #: The DuckDB column type when it is not the kind's (:data:`toolkit.warehouse.ddl.SQL_TYPES`).
    sql: str | None = None

    @property
    def field(self) -> str:
        return self.source or self.name


ARROW_TYPES = {"text": pa.string(), "ts": TIMESTAMP, "int": pa.int64(), "bool": pa.bool_(), "json": pa.string()}


@dataclass(frozen=True)
class TableSpec:
    """One warehouse table, declared once: its columns and key, how records of one resource become its rows (Arrow),
    and what its DDL holds (:mod:`toolkit.warehouse.ddl` writes the ``CREATE TABLE`` from it)."""

    name: str
    key: tuple[str, ...]
    columns: tuple[Column, ...]
    #: Wire fields read by the columns (anything else is "extra").
    consumed: frozenset[str]
    #: Consumed fields whose column holds text taken from an object value: such an object is also kept whole in
    #: ``extra`` under the field's name (a query's ``target`` before 0.8).
    object_fields: frozenset[str] = frozenset()
    #: The key is a PRIMARY KEY constraint; otherwise the loader keeps it unique (see :mod:`toolkit.warehouse.ddl`).
    primary_key: bool = False
    #: A warehouse made before may still hold a PRIMARY KEY on this loader-keyed table (dropped when opened to write).
    had_primary_key: bool = False
    #: The DuckDB type of the trailing ``extra`` column (unknown fields, JSON text); None: the table has none.
    extra_sql: str | None = "JSON"
    #: The table ends with ``synced_at`` (when a sync last wrote the row) and ``write_seq`` (by which transaction),
    #: set by the writer, not by the conversion.
    synced_at: bool = True

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of a converted batch: the columns, then ``extra`` (``synced_at`` is the writer's)."""
        fields = [pa.field(c.name, ARROW_TYPES[c.kind]) for c in self.columns]
        if self.extra_sql is not None:
            fields.append(pa.field("extra", pa.string()))
        return pa.schema(fields)


def _table(
    name: str,
    key: tuple[str, ...],
    columns: Sequence[Column],
    also_consumed: Iterable[str] = (),
    object_fields: Iterable[str] = (),
    **ddl: Any,
) -> TableSpec:
    consumed = frozenset(c.field for c in columns if c.getter is None) | frozenset(also_consumed)
    return TableSpec(name, key, tuple(columns), consumed | frozenset(object_fields), frozenset(object_fields), **ddl)


def _t(name: str, source: str | None = None) -> Column:
    return Column(name, "text", source)


def _ts(name: str, source: str | None = None) -> Column:
    return Column(name, "ts", source)


def _j(name: str, source: str | None = None) -> Column:
    return Column(name, "json", source)


def _i(name: str, source: str | None = None) -> Column:
    return Column(name, "int", source)


NETWORKS = _table(
    "networks",
    ("chain_selector",),
    [
        _t("chain_selector"),
        _t("network_id", "id"),
        _t("name"),
        _t("chain_id"),
        _t("chain_family"),
        # 0.8 names it `type` (ChainEnvironment); older answers may say `network_type`
        Column("network_type", "text", getter=lambda r: r.get("type", r.get("network_type"))),
        _ts("created_at"),
        _ts("updated_at"),
    ],
    also_consumed={"type", "network_type"},
    primary_key=True,
)

CHANNELS = _table(
    "channels",
    ("channel_id",),
    [
        _t("channel_id"),
        _t("name"),
        _t("description"),
        _t("status"),
        _ts("created_at"),
    ],
    primary_key=True,
)

WALLETS = _table(
    "wallets",
    ("wallet_id",),
    [
        _t("wallet_id"),
        _t("name"),
        _t("description"),
        _t("address"),
        _t("wallet_owner_address"),
        _t("chain_selector"),
        _t("wallet_type"),
        _t("status"),
        _t("status_channel_id"),
        _j("configuration"),
        _ts("created_at"),
    ],
    primary_key=True,
)

WATCHERS = _table(
    "watchers",
    ("watcher_id",),
    [
        _t("watcher_id"),
        _t("channel_id"),
        _t("name"),
        _t("status"),
        _t("chain_selector"),
        _t("address"),
        _t("service"),
        _j("event_names", "events"),
        _t("don_family"),
        _t("workflow_id"),
        _ts("created_at"),
    ],
    primary_key=True,
)


def _tx_count(record: Record) -> int | None:
    txs = record.get("transactions")
    return len(txs) if isinstance(txs, list) else None


OPERATIONS = _table(
    "operations",
    ("operation_id",),
    [
        _t("operation_id"),
        _t("channel_id"),
        _t("status"),
        _t("chain_selector"),
        _t("address"),
        _t("wallet_operation_id"),
        _i("deadline"),
        Column("deadline_at", "ts", getter=lambda r: r.get("deadline") or None),
        Column("transaction_count", "int", getter=_tx_count, sql="INTEGER"),
        _t("signature"),
        _t("digest"),
        _j("initiator"),
        _j("signer"),
        _j("canceller"),
        _ts("signed_at"),
        _ts("cancelled_at"),
        _ts("confirmed_at"),
        _ts("created_at"),
        _ts("updated_at"),
        _t("operation_writer_workflow_id"),
        _t("operation_writer_workflow_execution_id"),
        _t("operation_status_workflow_id"),
        _t("operation_status_workflow_execution_id"),
    ],
    also_consumed={"transactions"},
    had_primary_key=True,
)

OPERATION_TRANSACTIONS = _table(
    "operation_transactions",
    ("operation_id", "idx"),
    [
        _t("operation_id"),
        Column("idx", "int", sql="INTEGER"),
        _t("to_address", "to"),
        _t("value"),
        Column("data_size", "int", getter=lambda r: _data_size(r.get("data")), sql="INTEGER"),
        Column("selector", "text", getter=lambda r: _selector(r.get("data"))),
        Column(
            "function_signature",
            "text",
            getter=lambda r: (
                (r.get("preview_snapshot") or {}).get("function_signature")
                if isinstance(r.get("preview_snapshot"), dict)
                else None
            ),
        ),
    ],
    also_consumed={"data", "preview_snapshot"},
    synced_at=False,
    had_primary_key=True,
)


def _query_target(value: Any) -> Any:
    """A query's ``target`` as its column holds it: the contract address (0.8 sends the string; an older object
    gives its ``contract_address``). Any other value goes on to the text column's checks."""
    return spec.query_target_address(value) if isinstance(value, dict) else value


QUERIES = _table(
    "queries",
    ("query_id",),
    [
        _t("query_id"),
        _t("channel_id"),
        _t("status"),
        _t("query_kind"),
        _t("chain_selector"),
        Column("target", "text", getter=lambda r: _query_target(r.get("target"))),
        _t("event_hash"),
        Column("has_proof", "bool", getter=lambda r: bool(r.get("proof"))),
        _ts("created_at"),
        _ts("updated_at"),
        _ts("expires_at"),
        *(_ts(f"{s}_at") for s in spec.QUERY_STATUSES),
        _t("workflow_id"),
        _t("workflow_execution_id"),
    ],
    also_consumed={"proof", "verifiable_result"},
    object_fields={"target"},
    had_primary_key=True,
)


# The events table is converted by its own module (event_batches.py, a fast and a careful path); these columns give
# its schema and the kind of each value. Nested wire fields are named by the column.
EVENTS = _table(
    "events",
    ("event_id",),
    [
        _t("event_id"),
        _t("channel_id"),
        _t("type"),
        _i("offset"),
        _ts("ts"),
        _t("status"),
        _t("status_reason"),
        _t("subject_id"),
        _t("operation_id"),
        _t("query_id"),
        _t("watcher_id"),
        _t("wallet_id"),
        _t("chain_selector"),
        _t("address"),
        _t("event_hash"),
        Column("proof_count", "int", sql="INTEGER"),
        Column("signature_count", "int", sql="INTEGER"),
        # headers.proofs as sent (verified by toolkit.verify); JSON text as the payload, for the same reasons
        Column("proofs", "json", sql="VARCHAR USING COMPRESSION zstd"),
        # JSON text kept as VARCHAR on this high-volume table: DuckDB's JSON functions and ->> read it the same,
        # and loading skips a second validation of every payload (about 20% of the insert time)
        Column("payload", "json", sql="VARCHAR USING COMPRESSION zstd"),
    ],
    extra_sql="VARCHAR",
)

TABLES: dict[str, TableSpec] = {
    t.name: t for t in (NETWORKS, CHANNELS, WALLETS, WATCHERS, OPERATIONS, OPERATION_TRANSACTIONS, QUERIES, EVENTS)
}


def _data_size(data: Any) -> int | None:
    if not isinstance(data, str):
        return None
    hexpart = data[2:] if data.startswith(("0x", "0X")) else data
    return len(hexpart) // 2


def _selector(data: Any) -> str | None:
    if not isinstance(data, str):
        return None
    hexpart = data[2:] if data.startswith(("0x", "0X")) else data
    return "0x" + hexpart[:8].lower() if len(hexpart) >= 8 else None


# ---- value coercion (the slow path, used only for a column that holds a bad value) ------------------------------

_INVALID = object()
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


def _json_text(value: Any) -> bytes | None:
    """Compact JSON (UTF-8 bytes; Arrow stores them as text). Values JSON cannot hold are kept as their repr."""
    if value is None:
        return None
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        # integers beyond 64 bits and other rarities: the standard library writes them exactly
        return json.dumps(value, ensure_ascii=False, default=repr).encode()


def _build_column(col: Column, values: Sequence[Any], invalid: dict[int, dict[str, Any]]) -> pa.Array:
    """An Arrow array for one column; bad values become NULL and are noted in ``invalid`` by row."""
    if col.kind == "json":
        dumps = orjson.dumps
        try:
            return pa.array([None if v is None else dumps(v) for v in values], pa.string())
        except (TypeError, orjson.JSONEncodeError):
            return pa.array([_json_text(v) for v in values], pa.string())
    fast_type = {"text": pa.string(), "ts": pa.int64(), "int": pa.int64(), "bool": pa.bool_()}[col.kind]
    try:
        if fast_type == pa.int64():
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


def _key_problem(value: Any) -> str | None:
    if value is None:
        return "is missing"
    if isinstance(value, bool) or not isinstance(value, str | int):
        return f"is not a string ({type(value).__name__})"
    if isinstance(value, str) and not value.strip():
        return "is empty"
    return None


def to_batch(
    table: str, records: Sequence[Record], *, defaults: dict[str, Any] | None = None
) -> tuple[pa.RecordBatch, list[RejectedRecord]]:
    """Convert one page of records into a record batch of ``table``'s schema, plus the records it had to reject.

    ``defaults`` fills columns the records do not carry (for example ``channel_id`` from the request path).
    Records with the same key keep the last one seen (DuckDB cannot upsert a key twice in one statement).
    """
    if table == "events":
        from .event_batches import events_batch  # the high-volume table has its own module

        return events_batch(records, channel_id=(defaults or {}).get("channel_id"))
    tspec = TABLES[table]
    rejected: list[RejectedRecord] = []
    kept: dict[Any, int] = {}
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            rejected.append(RejectedRecord(table, i, "<record>", f"is a {type(rec).__name__}, not an object"))
            continue
        parts = []
        for k in tspec.key:
            v = rec.get(k) if k != "channel_id" or not defaults else rec.get(k, defaults.get(k))
            problem = _key_problem(v)
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
        extras.append(_json_text(unknown) if unknown else None)
    arrays.append(pa.array(extras, pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=tspec.schema), rejected


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
