"""Records from the service -> Arrow record batches with one fixed schema per table.

A page of records becomes one :class:`pyarrow.RecordBatch` whose columns match the warehouse table. Nothing is lost
and nothing crashes on a messy feed:

- fields the schema does not know are kept in the ``extra`` JSON column;
- a value of the wrong type (a number where text belongs, text where a timestamp belongs, ...) is stored as NULL
  in its column and kept verbatim in ``extra["_invalid"][field]``;
- unknown enum values are plain text and stored as they are;
- a record without a usable key cannot be stored: it is returned as a :class:`RejectedRecord` naming the record
  and the field, and the rest of the page is converted.

Columns are built one at a time from Python lists (C code does the work when the feed is clean; a column with a
bad value falls back to checking value by value).
"""

from __future__ import annotations

import json
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

    @property
    def field(self) -> str:
        return self.source or self.name


ARROW_TYPES = {"text": pa.string(), "ts": TIMESTAMP, "int": pa.int64(), "bool": pa.bool_(), "json": pa.string()}


@dataclass(frozen=True)
class TableSpec:
    """How records of one resource become rows of one table."""

    name: str
    key: tuple[str, ...]
    columns: tuple[Column, ...]
    #: Wire fields read by the columns (anything else is "extra").
    consumed: frozenset[str]

    @property
    def schema(self) -> pa.Schema:
        fields = [pa.field(c.name, ARROW_TYPES[c.kind]) for c in self.columns]
        return pa.schema([*fields, pa.field("extra", pa.string())])


def _table(name: str, key: tuple[str, ...], columns: Sequence[Column], also_consumed: Iterable[str] = ()) -> TableSpec:
    consumed = frozenset(c.field for c in columns if c.getter is None) | frozenset(also_consumed)
    return TableSpec(name, key, tuple(columns), consumed)


def _t(name: str, source: str | None = None) -> Column:
    return Column(name, "text", source)


def _ts(name: str, source: str | None = None) -> Column:
    return Column(name, "ts", source)


def _j(name: str, source: str | None = None) -> Column:
    return Column(name, "json", source)


def _i(name: str, source: str | None = None) -> Column:
    return Column(name, "int", source)


NETWORKS = _table("networks", ("chain_selector",), [
    _t("chain_selector"), _t("network_id", "id"), _t("name"), _t("chain_id"), _t("chain_family"),
    # 0.8 names it `type` (ChainEnvironment); older answers may say `network_type`
    Column("network_type", "text", getter=lambda r: r.get("type", r.get("network_type"))),
    _ts("created_at"), _ts("updated_at"),
], also_consumed={"type", "network_type"})

CHANNELS = _table("channels", ("channel_id",), [
    _t("channel_id"), _t("name"), _t("description"), _t("status"), _ts("created_at"),
])

WALLETS = _table("wallets", ("wallet_id",), [
    _t("wallet_id"), _t("name"), _t("description"), _t("address"), _t("wallet_owner_address"),
    _t("chain_selector"), _t("wallet_type"), _t("status"), _t("status_channel_id"), _j("configuration"),
    _ts("created_at"),
])

WATCHERS = _table("watchers", ("watcher_id",), [
    _t("watcher_id"), _t("channel_id"), _t("name"), _t("status"), _t("chain_selector"), _t("address"),
    _t("service"), _j("event_names", "events"), _t("don_family"), _t("workflow_id"), _ts("created_at"),
])


def _tx_count(record: Record) -> int | None:
    txs = record.get("transactions")
    return len(txs) if isinstance(txs, list) else None


OPERATIONS = _table("operations", ("operation_id",), [
    _t("operation_id"), _t("channel_id"), _t("status"), _t("chain_selector"), _t("address"),
    _t("wallet_operation_id"), _i("deadline"),
    Column("deadline_at", "ts", getter=lambda r: r.get("deadline") or None),
    Column("transaction_count", "int", getter=_tx_count),
    _t("signature"), _t("digest"), _j("initiator"), _j("signer"), _j("canceller"),
    _ts("signed_at"), _ts("cancelled_at"), _ts("confirmed_at"), _ts("created_at"), _ts("updated_at"),
    _t("operation_writer_workflow_id"), _t("operation_writer_workflow_execution_id"),
    _t("operation_status_workflow_id"), _t("operation_status_workflow_execution_id"),
], also_consumed={"transactions"})

OPERATION_TRANSACTIONS = _table("operation_transactions", ("operation_id", "idx"), [
    _t("operation_id"), _i("idx"), _t("to_address", "to"), _t("value"),
    Column("data_size", "int", getter=lambda r: _data_size(r.get("data"))),
    Column("selector", "text", getter=lambda r: _selector(r.get("data"))),
    Column("function_signature", "text", getter=lambda r: (r.get("preview_snapshot") or {}).get("function_signature")
           if isinstance(r.get("preview_snapshot"), dict) else None),
], also_consumed={"data", "preview_snapshot"})

QUERIES = _table("queries", ("query_id",), [
    _t("query_id"), _t("channel_id"), _t("status"), _t("query_kind"), _t("chain_selector"), _j("target"),
    _t("event_hash"), Column("has_proof", "bool", getter=lambda r: bool(r.get("proof"))),
    _ts("created_at"), _ts("updated_at"), _ts("expires_at"),
    *(_ts(f"{s}_at") for s in spec.QUERY_STATUSES),
    _t("workflow_id"), _t("workflow_execution_id"),
], also_consumed={"proof", "verifiable_result"})


# The events table is converted by its own two paths below (fast and careful); these columns give its schema and
# the kind of each value. Nested wire fields are named by the column.
EVENTS = _table("events", ("event_id",), [
    _t("event_id"), _t("channel_id"), _t("type"), _i("offset"), _ts("ts"), _t("status"), _t("status_reason"),
    _t("subject_id"), _t("operation_id"), _t("query_id"), _t("watcher_id"), _t("wallet_id"), _t("chain_selector"),
    _t("address"), _t("event_hash"), _i("proof_count"), _i("signature_count"), _j("payload"),
])

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


def _coerce(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "text":
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)  # ids and selectors sent as numbers: keep them exact as text
        return _INVALID
    if kind in ("int", "ts"):
        if isinstance(value, bool):
            return _INVALID
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
            value = int(value)
        if not isinstance(value, int):
            return _INVALID
        if kind == "ts" and not 0 <= value <= _MAX_TS:
            return _INVALID
        if kind == "int" and not -(2**63) <= value < 2**63:
            return _INVALID
        return value
    if kind == "bool":
        return value if isinstance(value, bool) else _INVALID
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
        c = _coerce(col.kind, v)
        if c is _INVALID:
            invalid.setdefault(i, {})[col.field] = v
            c = None
        clean.append(c)
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
        return _events_batch(records, defaults or {})
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
            values = [col.getter(r) for r in rows]
        else:
            values = [r.get(col.field) for r in rows]
        if defaults and col.name in defaults:
            values = [defaults[col.name] if v is None else v for v in values]
        arrays.append(_build_column(col, values, invalid))
    extras = []
    for i, rec in enumerate(rows):
        unknown = {k: v for k, v in rec.items() if k not in tspec.consumed} if len(rec) else {}
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


# ---- events: the high-volume table gets a one-pass extractor (same schema and rules as the generic path) ---------

_EVENT_TOP = frozenset({"event_id", "headers", "payload", "type", "event_hash", "proofs", "channel_id"})
_EVENT_COLUMNS = EVENTS.columns
_EVENT_TYPES_WITH_ID = {
    "operation.status": "operation_id",
    "query.status": "query_id",
    "wallet.status": "wallet_id",
}


_EMPTY: dict[str, Any] = {}


def _signature_count_of(proofs: Any) -> int | None:
    if not proofs or not isinstance(proofs, list):
        return None
    for proof in proofs:
        if isinstance(proof, dict) and "signatures" in proof:
            sigs = proof["signatures"]
            return len(sigs) if isinstance(sigs, list) else None
    return None


def _event_columns(rows: Sequence[Record], channel_id: Any) -> list[list[Any]]:
    """The event table's columns, each built by one list comprehension (a dict lookup per value)."""
    heads = [h if type(h) is dict else _EMPTY for h in (r.get("headers") for r in rows)]
    pays = [p if type(p) is dict else _EMPTY for p in (r.get("payload") for r in rows)]
    types = [h.get("type") if "type" in h else r.get("type") for h, r in zip(heads, rows, strict=True)]
    proofs = [h.get("proofs") if "proofs" in h else r.get("proofs") for h, r in zip(heads, rows, strict=True)]
    subject = spec.EVENT_SUBJECT_FIELD

    def only(kind: str, field: str) -> list[Any]:
        return [p.get(field) if t == kind else None for p, t in zip(pays, types, strict=True)]

    return [
        [r.get("event_id") for r in rows],
        [r.get("channel_id", channel_id) for r in rows],
        types,
        [h.get("offset") for h in heads],
        [p.get("timestamp") for p in pays],
        [p.get("status") for p in pays],
        [p.get("status_reason") for p in pays],
        [p.get(subject[t]) if t in subject else None for p, t in zip(pays, types, strict=True)],
        only("operation.status", "operation_id"),
        only("query.status", "query_id"),
        [p.get("watcher_id") for p in pays],
        only("wallet.status", "wallet_id"),
        [p.get("chain_selector") for p in pays],
        [p.get("address") for p in pays],
        [p.get("event_hash") if "event_hash" in p else r.get("event_hash") for p, r in zip(pays, rows, strict=True)],
        [len(x) if type(x) is list else 0 for x in proofs],
        [_signature_count_of(x) for x in proofs],
        [r.get("payload") for r in rows],
    ]


def _events_batch(records: Sequence[Record], defaults: dict[str, Any]) -> tuple[pa.RecordBatch, list[RejectedRecord]]:
    channel_id = defaults.get("channel_id")
    rejected: list[RejectedRecord] = []
    kept: dict[str, int] = {}
    for i, rec in enumerate(records):
        key = rec.get("event_id") if type(rec) is dict else None
        if type(key) is str and key.strip():
            kept[key] = i
            continue
        if not isinstance(rec, dict):
            rejected.append(RejectedRecord("events", i, "<record>", f"is a {type(rec).__name__}, not an object"))
            continue
        problem = _key_problem(key)
        if problem:
            rejected.append(RejectedRecord("events", i, "event_id", problem, key=_offset_name(rec)))
            continue
        kept[str(key)] = i
    rows = [records[i] for i in sorted(kept.values())] if len(kept) != len(records) else list(records)
    fast = _events_batch_fast(rows, channel_id)
    return (fast if fast is not None else _events_batch_careful(rows, channel_id)), rejected


def _events_batch_careful(rows: Sequence[Record], channel_id: Any) -> pa.RecordBatch:
    """The event batch built value by value: any shape, unknown fields and bad values kept in ``extra``."""
    columns = _event_columns(rows, channel_id)
    invalid: dict[int, dict[str, Any]] = {}
    arrays = [_build_column(col, values, invalid) for col, values in zip(_EVENT_COLUMNS, columns, strict=True)]
    extras: list[bytes | None] = []
    for i, rec in enumerate(rows):
        unknown = {k: v for k, v in rec.items() if k not in _EVENT_TOP} if len(rec) > 3 else {}
        headers = rec.get("headers")
        if isinstance(headers, dict) and len(headers) > 3:
            more = {k: v for k, v in headers.items() if k not in ("type", "offset", "proofs")}
            if more:
                unknown["headers"] = more
        if i in invalid:
            unknown["_invalid"] = _invalid_names(invalid[i])
        extras.append(_json_text(unknown) if unknown else None)
    arrays.append(pa.array(extras, pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=EVENTS.schema)


def _invalid_names(bad: dict[str, Any]) -> dict[str, Any]:
    # event columns read nested fields; name them by their wire path
    paths = {"offset": "headers.offset", "ts": "payload.timestamp", "type": "headers.type"}
    return {paths.get(k, k): v for k, v in bad.items()}


def _offset_name(rec: Record) -> str | None:
    headers = rec.get("headers")
    if isinstance(headers, dict) and "offset" in headers:
        return f"offset {headers['offset']}"
    return None


# ---- events, fast path: Arrow converts the dicts in C++ when the page has exactly the documented shape -----------

_S = pa.string()
_PAYLOAD_TEXT_FIELDS = ("status", "status_reason", "operation_id", "query_id", "watcher_id", "wallet_id",
                        "chain_selector", "address", "event_hash")
_EVENT_STRUCT = pa.struct([
    ("event_id", _S),
    ("headers", pa.struct([("type", _S), ("offset", pa.int64()),
                           ("proofs", pa.list_(pa.struct([("signatures", pa.list_(_S))])))])),
    ("payload", pa.struct([*((f, _S) for f in _PAYLOAD_TEXT_FIELDS), ("timestamp", pa.int64())])),
])
_TOP_KEYS = frozenset({"event_id", "headers", "payload"})
_HEADER_KEYS = frozenset({"type", "offset", "proofs"})


def _only_where(types: pa.Array, kind: str, values: pa.Array) -> pa.Array:
    import pyarrow.compute as pc

    return pc.if_else(pc.equal(types, kind), values, pa.nulls(len(values), values.type))


def _events_batch_fast(rows: Sequence[Record], channel_id: Any) -> pa.RecordBatch | None:
    """The event batch built by Arrow's C++ converter, or ``None`` when the page needs the careful path (unknown
    top-level or header fields, a value of an unexpected type, more than one proof, out-of-range times)."""
    import pyarrow.compute as pc

    for r in rows:
        if r.keys() - _TOP_KEYS or type(r.get("headers")) is not dict or r["headers"].keys() - _HEADER_KEYS:
            return None
    try:
        events = pa.array(rows, type=_EVENT_STRUCT)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    heads, pays = pc.struct_field(events, "headers"), pc.struct_field(events, "payload")
    proofs = pc.struct_field(heads, "proofs")
    n_proofs = pc.fill_null(pc.list_value_length(proofs), 0)
    if len(rows) and pc.max(n_proofs).as_py() > 1:
        return None
    ts = pc.struct_field(pays, "timestamp")
    if len(rows) and ts.null_count < len(ts):
        lo, hi = pc.min_max(ts).values()
        if lo.as_py() < 0 or hi.as_py() > _MAX_TS:
            return None
    first_sigs = pc.struct_field(pc.list_element(pc.if_else(pc.greater(n_proofs, 0), proofs, None), 0), "signatures")
    field = {name: pc.struct_field(pays, name) for name in _PAYLOAD_TEXT_FIELDS}
    types = pc.struct_field(heads, "type")
    subject = pc.case_when(
        pc.make_struct(*(pc.fill_null(pc.equal(types, t), False) for t in spec.EVENT_SUBJECT_FIELD)),
        *(field[f] for f in spec.EVENT_SUBJECT_FIELD.values()),
    )
    dumps = orjson.dumps
    payloads = pa.array([None if (p := r.get("payload")) is None else dumps(p) for r in rows], pa.string())
    n = len(rows)
    arrays = [
        pc.struct_field(events, "event_id"),
        pa.array([channel_id] * n, _S),
        types,
        pc.struct_field(heads, "offset"),
        ts.cast(UTC_SECONDS).cast(TIMESTAMP),
        field["status"],
        field["status_reason"],
        subject,
        _only_where(types, "operation.status", field["operation_id"]),
        _only_where(types, "query.status", field["query_id"]),
        field["watcher_id"],
        _only_where(types, "wallet.status", field["wallet_id"]),
        field["chain_selector"],
        field["address"],
        field["event_hash"],
        n_proofs.cast(pa.int64()),
        pc.list_value_length(first_sigs).cast(pa.int64()),
        payloads,
        pa.nulls(n, _S),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=EVENTS.schema)
