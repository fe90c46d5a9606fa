"""Event pages -> record batches of the ``events`` table, by one of two paths with the same schema and rules.

- :func:`wire_events_batch`, the fast path: a page the API layer decoded in the documented shape (typed structs,
  payloads as raw JSON text). Columns come from attribute lists, and the payload column is built from the raw
  texts without parsing or serialising them again.
- :func:`events_batch`, the careful path: generic dicts of any shape, value by value. Unknown fields go to
  ``extra`` (``headers`` extras under ``extra.headers``), a value of the wrong type is NULL in its column and kept
  in ``extra._invalid`` under its wire path, and an event without a usable ``event_id`` is rejected by name.

Both store the payload as the text the service sent when it is known, so an event is stored identically whichever
path its page took (a payload that repeats a name is stored as its last-value reading: see
:mod:`.repeated_names`). Within a page the last copy of an ``event_id`` wins.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from .. import spec
from .arrow import EVENTS, TIMESTAMP, UTC_SECONDS, RejectedRecord, _build_column, _json_text, _key_problem
from .repeated_names import settle_repeated_names

Record = dict[str, Any]
_S = pa.string()
_EVENT_TOP = frozenset({"event_id", "headers", "payload", "type", "event_hash", "proofs", "channel_id"})
_EMPTY: dict[str, Any] = {}
_PAYLOAD_TEXT_FIELDS = (
    "status",
    "status_reason",
    "operation_id",
    "query_id",
    "watcher_id",
    "wallet_id",
    "chain_selector",
    "address",
    "event_hash",
)
#: Columns filled only for the event type that names that kind of subject.
_ONLY_FOR_TYPE = {"operation_id": "operation.status", "query_id": "query.status", "wallet_id": "wallet.status"}


# ---- the fast path: typed structs decoded from the wire ---------------------------------------------------------


def _first_signature_count(proofs: Sequence[Any]) -> int | None:
    for proof in proofs:
        if type(proof.signatures) is list:
            return len(proof.signatures)
    return None


def _compact(raw: bytes) -> bytes:
    """A JSON text as the careful path writes it (orjson, compact), so both paths store proofs alike."""
    try:
        return orjson.dumps(orjson.loads(raw))
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, TypeError):
        return raw


def _text_array(blob: bytes, sizes: Sequence[int]) -> pa.Array:
    """A string array over concatenated texts, without copying each one into a Python object."""
    offsets = pa.array(list(itertools.accumulate(sizes, initial=0)), pa.int32()) if len(blob) < 2**31 else None
    if offsets is None:  # a page over 2 GB of payloads: large offsets
        big = pa.array(list(itertools.accumulate(sizes, initial=0)), pa.int64())
        return pa.LargeStringArray.from_buffers(len(sizes), big.buffers()[1], pa.py_buffer(blob)).cast(_S)
    return pa.StringArray.from_buffers(len(sizes), offsets.buffers()[1], pa.py_buffer(blob))


def wire_events_batch(decoded: Any, *, channel_id: str | None) -> tuple[pa.RecordBatch, list[RejectedRecord]]:
    """The events of a page decoded in the documented shape (see :mod:`toolkit.api.wire`) as a record batch."""
    events, payloads, proof_lists = decoded.events, decoded.payloads, decoded.proofs
    payload_texts = _text_array(*decoded.payload_texts())
    ids = [e.event_id for e in events]
    kept = dict(zip(ids, range(len(ids)), strict=True))
    rejected: list[RejectedRecord] = []
    blank = [k for k in kept if not k.strip()]
    if blank or len(kept) != len(ids):
        for key in blank:
            del kept[key]
        for i, key in enumerate(ids):
            if not key.strip():  # every copy is reported, as the careful path does
                rejected.append(
                    RejectedRecord(
                        "events",
                        i,
                        "event_id",
                        _key_problem(key) or "is empty",
                        key=f"offset {events[i].headers.offset}",
                    )
                )
        order = sorted(kept.values())
        events = [events[i] for i in order]
        payloads = [payloads[i] for i in order]
        proof_lists = [proof_lists[i] for i in order]
        ids = [e.event_id for e in events]
        payload_texts = payload_texts.take(pa.array(order, pa.int64()))
    n = len(events)
    heads = [e.headers for e in events]
    types = pa.array([h.type for h in heads], _S)
    fields = {name: pa.array(list(map(attrgetter(name), payloads)), _S) for name in _PAYLOAD_TEXT_FIELDS}
    for name, kind in _ONLY_FOR_TYPE.items():
        fields[name] = pc.if_else(pc.equal(types, kind), fields[name], pa.nulls(n, _S))
    subject = (
        pc.case_when(
            pc.make_struct(*(pc.fill_null(pc.equal(types, t), False) for t in spec.EVENT_SUBJECT_FIELD)),
            *(fields[f] for f in spec.EVENT_SUBJECT_FIELD.values()),
        )
        if n
        else pa.nulls(0, _S)
    )
    proofs = proof_lists
    proof_texts = [_compact(bytes(h.proofs)) for h in heads]
    arrays = [
        pa.array(ids, _S),
        pa.array([channel_id] * n, _S),
        types,
        pa.array([h.offset for h in heads], pa.int64()),
        pa.array([p.timestamp for p in payloads], pa.int64()).cast(UTC_SECONDS).cast(TIMESTAMP),
        fields["status"],
        fields["status_reason"],
        subject,
        fields["operation_id"],
        fields["query_id"],
        fields["watcher_id"],
        fields["wallet_id"],
        fields["chain_selector"],
        fields["address"],
        fields["event_hash"],
        pa.array([len(x) for x in proofs], pa.int64()),
        pa.array([_first_signature_count(x) if x else None for x in proofs], pa.int64()),
        _text_array(b"".join(proof_texts), [len(t) for t in proof_texts]),
        payload_texts,
        pa.nulls(n, _S),
    ]
    return settle_repeated_names(pa.RecordBatch.from_arrays(arrays, schema=EVENTS.schema)), rejected


# ---- the careful path: generic dicts, value by value --------------------------------------------------------------


def _signature_count_of(proofs: Any) -> int | None:
    if not proofs or not isinstance(proofs, list):
        return None
    for proof in proofs:
        if isinstance(proof, dict) and "signatures" in proof:
            sigs = proof["signatures"]
            return len(sigs) if isinstance(sigs, list) else None
    return None


def _event_columns(rows: Sequence[Record], channel_id: Any, *, stream: bool) -> list[list[Any]]:
    """The event table's columns but ``payload``, each built by one list comprehension."""
    heads = [h if type(h) is dict else _EMPTY for h in (r.get("headers") for r in rows)]
    pays = [p if type(p) is dict else _EMPTY for p in (r.get("payload") for r in rows)]
    types = [h.get("type") if "type" in h else r.get("type") for h, r in zip(heads, rows, strict=True)]
    proofs = [h.get("proofs") if "proofs" in h else r.get("proofs") for h, r in zip(heads, rows, strict=True)]
    subject = spec.EVENT_SUBJECT_FIELD

    def only(kind: str, field: str) -> list[Any]:
        return [p.get(field) if t == kind else None for p, t in zip(pays, types, strict=True)]

    return [
        [r.get("event_id") for r in rows],
        [channel_id] * len(rows) if stream else [r.get("channel_id", channel_id) for r in rows],
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
        proofs,
    ]


def events_batch(
    records: Sequence[Record],
    *,
    channel_id: str | None,
    payload_texts: Sequence[bytes | None] | None = None,
    stream_channel: bool = False,
) -> tuple[pa.RecordBatch, list[RejectedRecord]]:
    """Events of any shape as a record batch, plus the events rejected for want of a usable ``event_id``.

    ``payload_texts`` (aligned with ``records``) are the payloads as the service sent them; without them a payload
    is stored as compact JSON. ``channel_id`` fills in events that name no channel; with ``stream_channel`` it is
    the channel whose log the events came from and is stored for every event (an event's own differing
    ``channel_id`` field is then kept in ``extra``), as the fast path does.
    """
    rejected: list[RejectedRecord] = []
    kept: dict[str, int] = {}
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            rejected.append(RejectedRecord("events", i, "<record>", f"is a {type(rec).__name__}, not an object"))
            continue
        key = rec.get("event_id")
        problem = _key_problem(key)
        if problem:
            rejected.append(RejectedRecord("events", i, "event_id", problem, key=_offset_name(rec)))
            continue
        kept[str(key)] = i
    order = sorted(kept.values())
    rows = [records[i] for i in order]
    stream = stream_channel and channel_id is not None
    columns = _event_columns(rows, channel_id, stream=stream)
    invalid: dict[int, dict[str, Any]] = {}
    arrays = [_build_column(col, values, invalid) for col, values in zip(EVENTS.columns[:-1], columns, strict=True)]

    def payload_text(row: Record, index: int) -> bytes | None:
        payload = row.get("payload")
        if payload is None:
            return None
        sent = payload_texts[index] if payload_texts is not None else None
        return sent if sent is not None else _json_text(payload)

    arrays.append(pa.array([payload_text(r, i) for r, i in zip(rows, order, strict=True)], _S))
    extras: list[bytes | None] = []
    for i, rec in enumerate(rows):
        unknown = {k: v for k, v in rec.items() if k not in _EVENT_TOP} if len(rec) > 3 else {}
        if stream and rec.get("channel_id", channel_id) != channel_id:
            unknown["channel_id"] = rec["channel_id"]  # the stream's channel is stored; the record's own is kept
        headers = rec.get("headers")
        if isinstance(headers, dict) and len(headers) > 3:
            more = {k: v for k, v in headers.items() if k not in ("type", "offset", "proofs")}
            if more:
                unknown["headers"] = more
        if i in invalid:
            unknown["_invalid"] = _invalid_names(invalid[i])
        extras.append(_json_text(unknown) if unknown else None)
    arrays.append(pa.array(extras, _S))
    return settle_repeated_names(pa.RecordBatch.from_arrays(arrays, schema=EVENTS.schema)), rejected


def _invalid_names(bad: dict[str, Any]) -> dict[str, Any]:
    # event columns read nested fields; name them by their wire path
    paths = {"offset": "headers.offset", "ts": "payload.timestamp", "type": "headers.type"}
    return {paths.get(k, k): v for k, v in bad.items()}


def _offset_name(rec: Record) -> str | None:
    headers = rec.get("headers")
    if isinstance(headers, dict) and "offset" in headers:
        return f"offset {headers['offset']}"
    return None
