"""Events -> record batches of the ``events`` table: one converter, :func:`columns_batch`.

Whichever way a page of events was read, it arrives here as :class:`~toolkit.event_wire.EventColumns` (the typed
decode of a page in the documented shape, or the generic parse of any other; see :mod:`toolkit.event_wire`). Each
column's values are checked against its kind: a value of the wrong type is NULL in its column and kept in
``extra._invalid`` under its wire path; unknown fields go to ``extra`` (``headers`` extras under ``extra.headers``).
Payloads are stored as the text the service sent, never serialised again, so an event is stored identically
whichever way its page was read. The last copy of an ``event_id`` wins. An event served without ``event_id`` is
stored under ``offset:<channel_id>:<offset>`` (:func:`~toolkit.event_wire.offset_event_id`), the channel it is
stored under and its ``headers.offset``.

:func:`events_batch` converts generic records (``to_batch("events", ...)``, tests, benchmarks) the same way. A
payload that repeats a name is stored as its last-value reading (see :mod:`.repeated_names`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .. import spec
from ..event_wire import (
    ONLY_FOR_TYPE,
    EventColumns,
    RejectedEvent,
    columns_from_records,
    json_text,
    offset_event_id,
    offset_value,
)
from .arrow import EVENTS, TIMESTAMP, UTC_SECONDS, Column, RejectedRecord, _build_column
from .repeated_names import settle_repeated_names

Record = dict[str, Any]
_S = pa.string()
#: Wire paths of the nested fields, for ``extra._invalid``.
_WIRE_PATHS = {"offset": "headers.offset", "ts": "payload.timestamp", "type": "headers.type"}


def _text_array(blob: bytes, sizes: Sequence[int]) -> pa.Array:
    """A string array over concatenated texts, without copying each one into a Python object."""
    if len(blob) >= 2**31:  # over 2 GB of text: large offsets
        big = pa.array(list(itertools.accumulate(sizes, initial=0)), pa.int64())
        return pa.LargeStringArray.from_buffers(len(sizes), big.buffers()[1], pa.py_buffer(blob)).cast(_S)
    offsets = pa.array(list(itertools.accumulate(sizes, initial=0)), pa.int32())
    return pa.StringArray.from_buffers(len(sizes), offsets.buffers()[1], pa.py_buffer(blob))


def _texts(values: Sequence[Any], *, checked: bool) -> tuple[pa.Array, bytes | None]:
    """JSON texts (bytes) as a string array, and the texts joined when they were (``checked``: known valid UTF-8
    and none missing, so not copied one by one)."""
    if checked:
        joined = b"".join(values)
        return _text_array(joined, list(map(len, values))), joined
    return pa.array([None if v is None else bytes(v) for v in values], _S), None


def _typed_column(col: Column, values: Sequence[Any]) -> pa.Array:
    """A column of values known to be of its type (the typed decode): built without inferring or checking them."""
    if col.kind == "text":
        return pa.array(values, _S)
    array = pa.array(values, pa.int64())
    return array.cast(UTC_SECONDS).cast(TIMESTAMP) if col.kind == "ts" else array


def columns_batch(
    cols: EventColumns, *, channel_id: str | None, stream_channel: bool = False
) -> tuple[pa.RecordBatch, list[RejectedRecord]]:
    """Events in columns as a record batch of the ``events`` table, plus the events rejected (each by name).

    ``channel_id`` fills in events that name no channel; with ``stream_channel`` it is the channel whose log the
    events came from and is stored for every event (an event's own differing ``channel_id`` is kept in ``extra``).
    An event without ``event_id`` is stored under :func:`~toolkit.event_wire.offset_event_id` of the channel it is
    stored under and its offset (rejected by name when no channel is known).
    """
    stream = stream_channel and channel_id is not None
    if any(i is None for i in cols.event_ids):
        cols = _named_by_offset(cols, channel_id, stream)
    rejected = [RejectedRecord("events", r.index, r.field, r.reason, key=r.key) for r in cols.rejected]
    rows: list[int] | None = cols.kept
    ids = cols.event_ids if rows is None else [cols.event_ids[i] for i in rows]
    last = dict(zip(ids, range(len(ids)), strict=True))
    if len(last) < len(ids):  # an event seen twice (pages converted together): its last copy is stored
        order = sorted(last.values())
        rows = order if rows is None else [rows[i] for i in order]
        ids = [ids[i] for i in order]

    def pick(values: Sequence[Any]) -> Sequence[Any]:
        return values if rows is None else [values[i] for i in rows]

    n = len(ids)
    named = cols.channel_ids or {}
    positions = range(len(cols)) if rows is None else rows
    if stream or not named:
        channels: Sequence[Any] = [channel_id] * n
    else:
        channels = [named.get(i, channel_id) for i in positions]
    values: dict[str, Sequence[Any]] = {
        "event_id": ids,
        "channel_id": channels,
        "type": pick(cols.types),
        "offset": pick(cols.offsets),
        "ts": pick(cols.timestamps),
        **{name: pick(v) for name, v in cols.fields.items()},
        "proof_count": pick(cols.proof_counts),
        "signature_count": pick(cols.signature_counts),
    }
    if cols.subjects is not None:
        values["subject_id"] = pick(cols.subjects)
    invalid: dict[int, dict[str, Any]] = {}
    # built in table order, so that ``extra._invalid`` names a row's fields in that order; typed columns hold only
    # values of their column's type, so they need no check
    build = _typed_column if cols.typed else (lambda c, v: _build_column(c, v, invalid))
    arrays = {c.name: build(c, values[c.name]) for c in EVENTS.columns if c.name in values}
    types = arrays["type"]
    for name, kind in ONLY_FOR_TYPE.items():
        arrays[name] = pc.if_else(pc.equal(types, kind), arrays[name], pa.nulls(n, _S))
    if "subject_id" not in arrays:
        arrays["subject_id"] = (
            pc.case_when(
                pc.make_struct(*(pc.fill_null(pc.equal(types, t), False) for t in spec.EVENT_SUBJECT_FIELD)),
                *(arrays[f] for f in spec.EVENT_SUBJECT_FIELD.values()),
            )
            if n
            else pa.nulls(0, _S)
        )
    proofs, payloads = pick(cols.proofs), pick(cols.payloads)
    arrays["proofs"], _ = _texts(proofs, checked=cols.typed)
    arrays["payload"], joined = _texts(payloads, checked=cols.typed)
    arrays["extra"] = _extras(cols, positions, channel_id if stream else None, invalid)
    columns = [arrays[c.name] for c in EVENTS.columns] + [arrays["extra"]]
    batch = pa.RecordBatch.from_arrays(columns, schema=EVENTS.schema)
    may_repeat = None if cols.may_repeat is None else pick(cols.may_repeat)
    return settle_repeated_names(batch, payloads, joined, may_repeat), rejected


def _named_by_offset(cols: EventColumns, channel_id: str | None, stream: bool) -> EventColumns:
    """``cols`` with an id made for each kept event served without one, from the channel it is stored under and its
    offset; such an event whose channel is unknown is rejected by name instead."""
    named = {} if stream else (cols.channel_ids or {})
    ids = list(cols.event_ids)
    kept = list(range(len(ids))) if cols.kept is None else list(cols.kept)
    dropped: list[RejectedEvent] = []
    for i in kept:
        if ids[i] is not None:
            continue
        channel, offset = named.get(i, channel_id), offset_value(cols.offsets[i])
        if isinstance(channel, str) and channel and offset is not None:
            ids[i] = offset_event_id(channel, offset)
        else:
            reason = "is missing, and no channel is known to name the event by its offset"
            dropped.append(RejectedEvent(i, "event_id", reason, None if offset is None else f"offset {offset}"))
    if dropped:
        gone = {r.index for r in dropped}
        kept = [i for i in kept if i not in gone]
    rejected = tuple(sorted([*cols.rejected, *dropped], key=lambda r: r.index))
    return dataclasses.replace(cols, event_ids=ids, kept=kept, rejected=rejected)


def _extras(
    cols: EventColumns, positions: Sequence[int], stream: str | None, invalid: dict[int, dict[str, Any]]
) -> pa.Array:
    """The ``extra`` column: unknown fields, a differing ``channel_id`` of a stream's event, values not stored as
    sent (``_invalid``, by wire path)."""
    named = {i: c for i, c in (cols.channel_ids or {}).items() if c != stream} if stream is not None else {}
    if cols.extras is None and not named and not invalid:
        return pa.nulls(len(positions), _S)
    texts: list[bytes | None] = []
    for j, i in enumerate(positions):
        unknown = dict((cols.extras[i] if cols.extras is not None else None) or {})
        if i in named:  # the stream's channel is stored; the record's own is kept (before its headers, as ever)
            headers = unknown.pop("headers", None)
            unknown["channel_id"] = named[i]
            if headers is not None:
                unknown["headers"] = headers
        if j in invalid:
            unknown["_invalid"] = {_WIRE_PATHS.get(k, k): v for k, v in invalid[j].items()}
        texts.append(json_text(unknown) if unknown else None)
    return pa.array(texts, _S)


def events_batch(
    records: Sequence[Record],
    *,
    channel_id: str | None,
    payload_texts: Sequence[bytes | None] | None = None,
    proof_texts: Sequence[bytes | None] | None = None,
    stream_channel: bool = False,
) -> tuple[pa.RecordBatch, list[RejectedRecord]]:
    """Events of any shape as a record batch (see :func:`columns_batch` and
    :func:`~toolkit.event_wire.columns_from_records`)."""
    columns = columns_from_records(records, payload_texts, proof_texts)
    return columns_batch(columns, channel_id=channel_id, stream_channel=stream_channel)
