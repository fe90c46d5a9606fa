"""The wire types of event pages and the one columnar form a page of events takes after decoding.

Both the service client (``toolkit.api``), which decodes pages, and the warehouse (``toolkit.warehouse``), which
stores them, import this module; it imports nothing of the toolkit but :mod:`toolkit.spec`. A page of events reaches
the warehouse in one shape whichever way it was read, :class:`EventColumns`:

- a page in exactly the documented shape is decoded straight from the bytes into the msgspec structs below
  (``toolkit.api.wire``) and put in columns by :func:`columns_from_structs`: payloads and proofs stay the raw JSON
  text the service sent;
- a page in any other shape (an unknown field, a value of another type, a ``data`` envelope) is parsed generically
  and put in columns by :func:`columns_from_records`, which keeps what the structs cannot: unknown fields (for the
  ``extra`` column), values of any type (checked and converted by the warehouse, which keeps a wrong one under
  ``extra._invalid``), and the events rejected for want of a usable ``event_id``.

An event without an ``event_id`` (0.8 does not require one; absent or ``null``) is stored all the same, under an id
made from where it was served, :func:`offset_event_id` (``offset:<channel_id>:<offset>``), which the converter fills
in once the channel is known: its ``event_ids`` entry here is ``None``.

``toolkit.warehouse.event_batches.columns_batch`` is then the one converter of events to Arrow.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from operator import attrgetter
from typing import Annotated, Any, NamedTuple

import msgspec
import orjson
from msgspec import UNSET, Raw, Struct, UnsetType

from . import spec

#: 9999-12-31T23:59:59Z: the last second a warehouse timestamp can hold.
MAX_SECONDS = 253402300799
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Seconds = Annotated[int, msgspec.Meta(ge=0, le=MAX_SECONDS)]


class WireProof(Struct, gc=False):
    """One item of ``headers.proofs``: only its signatures (other keys, such as the report, are skipped)."""

    signatures: list[Raw] | UnsetType = UNSET


class WireHeaders(Struct, forbid_unknown_fields=True, gc=False):
    """``headers`` of an event, exactly as documented."""

    type: str
    offset: Int64
    proofs: Raw = Raw(b"[]")


class WireEvent(Struct, forbid_unknown_fields=True, gc=False):
    """One event, exactly as documented; ``payload`` is the raw JSON text; ``event_id`` is optional (0.8)."""

    headers: WireHeaders
    payload: Raw
    event_id: str | None = None


class WirePayload(Struct, gc=False):
    """The payload fields the warehouse has columns for (any others stay in the payload text)."""

    status: str | None = None
    status_reason: str | None = None
    operation_id: str | None = None
    query_id: str | None = None
    watcher_id: str | None = None
    wallet_id: str | None = None
    chain_selector: str | None = None
    address: str | None = None
    event_hash: str | None = None
    timestamp: Seconds | None = None


_Text = str | None | UnsetType
#: A raw field the payload did not send: equal to the default, so written as nothing.
_NOT_SENT = Raw(b"")


class WireTransaction(Struct, gc=False, omit_defaults=True):
    """An item of an ``operation.status`` payload's ``transactions``, as documented (``preview_snapshot`` is left
    out: its ``execution_values`` object has no fixed shape)."""

    to: _Text = UNSET
    value: _Text = UNSET
    data: _Text = UNSET


class WireFullPayload(WirePayload, gc=False, omit_defaults=True):
    """:class:`WirePayload` with every other documented payload field (of any event type) read as well, so that the
    struct written again as JSON holds every name-value pair the payload sent when it sent no other name: the
    repeated-names check (:mod:`toolkit.warehouse.repeated_names`) compares the two. A payload whose documented
    fields hold values of another type is decoded as :class:`WirePayload` instead."""

    wallet_operation_id: _Text = UNSET
    digest: _Text = UNSET
    transactions: list[WireTransaction] | UnsetType | None = UNSET
    target: _Text = UNSET
    service: _Text = UNSET
    #: base64 texts, the largest part of a payload: read raw, no string made of each (see payloads_may_repeat)
    verifiable_event: Raw = _NOT_SENT
    verifiable_result: Raw = _NOT_SENT
    workflow_id: _Text = UNSET
    workflow_execution_id: _Text = UNSET
    operation_writer_workflow_id: _Text = UNSET
    operation_writer_workflow_execution_id: _Text = UNSET
    operation_status_workflow_id: _Text = UNSET
    operation_status_workflow_execution_id: _Text = UNSET


#: Payload fields stored in text columns of their own name.
PAYLOAD_TEXT_FIELDS = (
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
ONLY_FOR_TYPE = {"operation_id": "operation.status", "query_id": "query.status", "wallet_id": "wallet.status"}
#: Top-level fields of an event that have columns (any other goes to ``extra``).
_EVENT_TOP = frozenset({"event_id", "headers", "payload", "type", "event_hash", "proofs", "channel_id"})
_EMPTY: dict[str, Any] = {}


class RejectedEvent(NamedTuple):
    """An event left out: its position in the page, the field that made it so, why, and a name for it."""

    index: int
    field: str
    reason: str
    key: str | None = None


@dataclass(frozen=True)
class EventColumns:
    """Events in columns, one list per column of the warehouse's ``events`` table (before any check of their values).

    Rows are every event object of the page(s), rejected ones included (the gap pass asks which offsets a page
    served); ``kept`` lists the rows to store, in order (``None``: all). ``typed`` columns hold only values of the
    documented types (the typed decode), so nothing needs checking or keeping under ``extra``; otherwise
    ``subjects`` is given and ``extras`` holds each row's unknown fields.
    """

    event_ids: list[Any]
    types: list[Any]
    offsets: list[Any]
    timestamps: list[Any]
    #: one list per name of :data:`PAYLOAD_TEXT_FIELDS` (those of :data:`ONLY_FOR_TYPE` need not be masked)
    fields: dict[str, list[Any]]
    proof_counts: list[int]
    signature_counts: list[int | None]
    #: ``headers.proofs`` as the JSON text the service sent (``None``: the event had none)
    proofs: Sequence[bytes | Raw | None]
    #: each payload as the JSON text the service sent (``None``: the event had none)
    payloads: Sequence[bytes | Raw | None]
    typed: bool
    #: ``subject_id`` per row; ``None``: derived from each event's type
    subjects: list[Any] | None = None
    #: each row's fields without a column (``None`` for none); ``None``: no row has any
    extras: list[dict[str, Any] | None] | None = None
    #: the ``channel_id`` that rows name themselves, by row
    channel_ids: Mapping[int, Any] | None = None
    kept: list[int] | None = None
    rejected: tuple[RejectedEvent, ...] = ()
    #: per row, whether its payload may repeat a name inside one object (``False`` is certain: see
    #: :func:`payloads_may_repeat`); ``None``: not told (the generic parse), every payload is checked
    may_repeat: list[bool] | None = None

    def __len__(self) -> int:
        return len(self.event_ids)

    @property
    def clean(self) -> bool:
        """Typed, and nothing rejected: may be converted together with a stream's other clean pages."""
        return self.typed and not self.rejected

    @property
    def payload_bytes(self) -> int:
        """The size of the payload texts."""
        if self.typed:  # every event has one
            return sum(map(len, self.payloads))
        return sum(len(p) for p in self.payloads if p is not None)

    def served_offsets(self) -> list[int]:
        """The message offsets the page served (rejected events too), those that are integers."""
        if self.typed:
            return list(self.offsets)
        return [o for o in map(offset_value, self.offsets) if o is not None]

    def served_ids(self) -> list[tuple[str, int]]:
        """``(event_id, offset)`` of every event served with a text id and an integer offset."""
        pairs = zip(self.event_ids, map(offset_value, self.offsets), strict=True)
        return [(i, o) for i, o in pairs if isinstance(i, str) and o is not None]

    @staticmethod
    def empty() -> EventColumns:
        """No events."""
        return columns_from_structs([], [], [])

    @staticmethod
    def concat(parts: Sequence[EventColumns]) -> EventColumns:
        """Clean columns of several pages of one stream as one, in order (converting a few thousand events at once
        costs less than page by page)."""
        if len(parts) == 1:
            return parts[0]
        if not all(part.clean for part in parts):
            raise ValueError("only clean (typed, nothing rejected) columns are concatenated")

        def joined(get: Any) -> list[Any]:
            return list(itertools.chain.from_iterable(map(get, parts)))

        return EventColumns(
            event_ids=joined(attrgetter("event_ids")),
            types=joined(attrgetter("types")),
            offsets=joined(attrgetter("offsets")),
            timestamps=joined(attrgetter("timestamps")),
            fields={name: joined(lambda p, n=name: p.fields[n]) for name in PAYLOAD_TEXT_FIELDS},
            proof_counts=joined(attrgetter("proof_counts")),
            signature_counts=joined(attrgetter("signature_counts")),
            proofs=joined(attrgetter("proofs")),
            payloads=joined(attrgetter("payloads")),
            typed=True,
            may_repeat=joined(attrgetter("may_repeat")) if all(p.may_repeat is not None for p in parts) else None,
        )


def offset_value(value: Any) -> int | None:
    """A ``headers.offset`` value as an int, or ``None`` when it is not an integer (digits in a string count)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


#: The deepest value written as JSON again when the text the service sent is not at hand: deeper than this, the
#: standard library's writer (recursive, under Python's recursion limit of 1,000 frames, whatever the stack already
#: holds) might fail, so such a value is refused (:class:`NestedTooDeep`) at a depth that does not depend on where it
#: is written. orjson writes 255 levels; the parsers read about 1,000 (msgspec) and 1,024 (orjson).
MAX_REWRITTEN_DEPTH = 512


class NestedTooDeep(ValueError):
    """A value nested deeper than :data:`MAX_REWRITTEN_DEPTH`, which cannot be written as JSON again."""

    def __init__(self) -> None:
        super().__init__(f"is nested more than {MAX_REWRITTEN_DEPTH} levels deep, too deep to store")


def nesting_depth(value: Any, limit: int = MAX_REWRITTEN_DEPTH) -> int:
    """How deep lists and objects nest in ``value`` (a scalar: 0), walked without recursion; the walk stops once
    past ``limit`` and answers ``limit + 1``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        if depth > limit:
            return limit + 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def json_text(value: Any) -> bytes | None:
    """Compact JSON (UTF-8 bytes). Values JSON cannot hold are kept as their repr. Raises :class:`NestedTooDeep` for
    a value nested deeper than :data:`MAX_REWRITTEN_DEPTH` (the callers leave that record out, by name)."""
    if value is None:
        return None
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        # integers beyond 64 bits, nesting past orjson's 255 levels and other rarities: the standard library
        # writes them exactly, within a depth checked first (its writer recurses)
        if nesting_depth(value) > MAX_REWRITTEN_DEPTH:
            raise NestedTooDeep() from None
        try:
            return json.dumps(value, ensure_ascii=False, default=_repr_unless_number).encode()
        except _ExactNumber:  # a number past float range, read as a Decimal: written as its digits
            return exact_json_text(value, separators=(", ", ": ")).encode()


class _ExactNumber(Exception):
    """A :class:`~decimal.Decimal` met by the standard library's writer, which would write it as its repr."""


def _repr_unless_number(value: Any) -> str:
    if isinstance(value, Decimal):
        raise _ExactNumber()
    return repr(value)


class JsonNumber(str):
    """A JSON number's text exactly as written (``1e400``, ``-0``, ``1.50``): :func:`exact_json_text` writes it back
    unchanged."""


def read_number(text: str) -> float | Decimal:
    """A JSON fraction or exponent as the generic parse keeps it: a float when one holds it, else (past a double's
    range: ``1e400``) a :class:`~decimal.Decimal` with every digit, which :func:`json_text` writes back exactly."""
    value = float(text)
    return value if math.isfinite(value) else Decimal(text)


def exact_json_text(value: Any, *, separators: tuple[str, str] = (",", ":"), ensure_ascii: bool = False) -> str:
    """``value`` as JSON text, as the standard library writes it, but every number read as :class:`JsonNumber` (or
    a :class:`~decimal.Decimal`) written with the digits it was read with, never through a float. Iterative: any
    depth the parsers read is written."""
    item_sep, key_sep = separators
    dumps = json.dumps
    out: list[str] = []
    stack: list[Any] = [value]
    push = stack.append
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is _Piece or kind is JsonNumber:
            out.append(item)
        elif isinstance(item, str):
            out.append(dumps(item, ensure_ascii=ensure_ascii))
        elif isinstance(item, dict):
            push(_Piece("}"))
            for i, (name, child) in enumerate(reversed(item.items())):
                if i:
                    push(_Piece(item_sep))
                push(child)
                push(_Piece(dumps(str(name), ensure_ascii=ensure_ascii) + key_sep))
            push(_Piece("{"))
        elif isinstance(item, list | tuple):
            push(_Piece("]"))
            for i, child in enumerate(reversed(item)):
                if i:
                    push(_Piece(item_sep))
                push(child)
            push(_Piece("["))
        elif isinstance(item, Decimal):
            out.append(str(item))
        else:
            out.append(dumps(item, default=repr))
    return "".join(out)


class _Piece(str):
    """Punctuation :func:`exact_json_text` writes as it is."""


#: The prefix of the ids made for events served without one (:func:`offset_event_id`).
OFFSET_ID_PREFIX = "offset:"


def offset_event_id(channel_id: str, offset: int) -> str:
    """The id stored for an event the service sent without ``event_id``: ``offset:<channel_id>:<offset>``, made from
    where it was served. Deterministic, so a re-read of that offset stores the same row again, and unique in the
    table (offsets are unique within a channel's log; a service's ids are UUIDs, never of this form)."""
    return f"{OFFSET_ID_PREFIX}{channel_id}:{offset}"


def key_problem(value: Any) -> str | None:
    """Why ``value`` cannot be an event's key, or ``None`` when it can."""
    if value is None:
        return "is missing"
    if isinstance(value, bool) or not isinstance(value, str | int):
        return f"is not a string ({type(value).__name__})"
    if isinstance(value, str) and not value.strip():
        return "is empty"
    return None


# ---- a page decoded in the documented shape ---------------------------------------------------------------------

_ENCODE = msgspec.json.Encoder().encode


def payloads_may_repeat(texts: Sequence[Raw], decoded: Sequence[WirePayload]) -> list[bool]:
    """Per payload (``texts``: each as sent; ``decoded``: each as the typed decode read it), whether it may repeat a
    name inside one object; ``False`` is certain.

    The struct written again as JSON is never longer than the text sent: msgspec writes each string with the
    fewest characters JSON allows, each integer without ``-0``'s sign, a field name unescaped, and no spaces. It is
    shorter by at least ``"":0`` for every name-value pair it does not hold: a repeated name (one value kept), a
    name the struct does not read, or ``null`` in a field whose absence it writes as nothing. Every object of a
    payload the struct reads whole is a struct (a field of another type fails the decode), or inside one of the two
    base64 fields it reads raw (written again as sent), which must then hold no ``{``; so a text exactly as long as
    its struct, its raw fields without a ``{``, repeats no name. Told for a whole page at once, and payload by
    payload only when that fails."""
    if not texts:
        return []
    try:  # the fields read raw are written again as sent: an object in one would hide a repeat
        raw = b"".join(itertools.chain.from_iterable(map(_raw_fields, decoded)))
    except AttributeError:  # a WirePayload among them (it reads no field raw)
        raw = b"{"
    if b"{" not in raw and sum(map(len, texts)) == len(_ENCODE(decoded)) - len(texts) - 1:
        return [False] * len(texts)
    return [
        len(text) != len(_ENCODE(value)) or b"{" in b"".join(getattr(value, name, b"") for name in _RAW_FIELDS)
        for text, value in zip(texts, decoded, strict=True)
    ]


#: The fields :class:`WireFullPayload` reads raw.
_RAW_FIELDS = ("verifiable_event", "verifiable_result")
_raw_fields = attrgetter(*_RAW_FIELDS)


def _first_signature_count(proofs: Sequence[WireProof]) -> int | None:
    for proof in proofs:
        if type(proof.signatures) is list:
            return len(proof.signatures)
    return None


def _any_blank(ids: list[str | None]) -> bool:
    """Whether any id is empty or only whitespace (``None`` is not: it is named by its offset), in C loops."""
    present = ids if None not in ids else [key for key in ids if key is not None]
    return "" in present or any(map(str.isspace, present))  # type: ignore[arg-type]


def columns_from_structs(
    events: Sequence[WireEvent], payloads: Sequence[WirePayload], proofs: Sequence[Sequence[WireProof]]
) -> EventColumns:
    """The columns of events decoded in the documented shape (``payloads[i]`` and ``proofs[i]`` decoded from
    ``events[i]``'s raw texts). An event with a blank ``event_id`` is rejected by name (its offset); one without
    ``event_id`` is kept, its id ``None`` until the converter makes one from its channel and offset."""
    heads = [e.headers for e in events]
    ids = [e.event_id for e in events]
    texts = [e.payload for e in events]
    rejected: tuple[RejectedEvent, ...] = ()
    kept = None
    if _any_blank(ids):
        rejected = tuple(
            RejectedEvent(i, "event_id", key_problem(key) or "is empty", f"offset {heads[i].offset}")
            for i, key in enumerate(ids)
            if key is not None and not key.strip()
        )
        kept = [i for i, key in enumerate(ids) if key is None or key.strip()]
    return EventColumns(
        event_ids=ids,
        types=[h.type for h in heads],
        offsets=[h.offset for h in heads],
        timestamps=[p.timestamp for p in payloads],
        fields={name: list(map(attrgetter(name), payloads)) for name in PAYLOAD_TEXT_FIELDS},
        proof_counts=[len(x) for x in proofs],
        signature_counts=[_first_signature_count(x) if x else None for x in proofs],
        proofs=[h.proofs for h in heads],
        payloads=texts,
        typed=True,
        kept=kept,
        rejected=rejected,
        may_repeat=payloads_may_repeat(texts, payloads),
    )


# ---- a page in any other shape ----------------------------------------------------------------------------------


def _signature_count_of(proofs: Any) -> int | None:
    if not proofs or not isinstance(proofs, list):
        return None
    for proof in proofs:
        if isinstance(proof, dict) and "signatures" in proof:
            sigs = proof["signatures"]
            return len(sigs) if isinstance(sigs, list) else None
    return None


def _offset_name(rec: Mapping[str, Any]) -> str | None:
    headers = rec.get("headers")
    if isinstance(headers, dict) and "offset" in headers:
        return f"offset {headers['offset']}"
    return None


def _unknown_fields(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    unknown = {k: v for k, v in rec.items() if k not in _EVENT_TOP} if len(rec) > 3 else {}
    headers = rec.get("headers")
    if isinstance(headers, dict) and len(headers) > 3:
        more = {k: v for k, v in headers.items() if k not in ("type", "offset", "proofs")}
        if more:
            unknown["headers"] = more
    return unknown or None


def _row_key(rec: Mapping[str, Any]) -> Any:
    """What tells a record's copies apart: its ``event_id`` as text; without one (absent or ``null``), its integer
    offset and the channel it names, if any (a tuple, never equal to a text); ``None`` when it has neither (it is
    rejected)."""
    key = rec.get("event_id")
    if key is None:
        headers = rec.get("headers")
        offset = offset_value(headers.get("offset")) if isinstance(headers, dict) else None
        return None if offset is None else ("offset", offset, repr(rec.get("channel_id")))
    return None if key_problem(key) else str(key)


def columns_from_records(
    records: Sequence[Any],
    payload_texts: Sequence[bytes | None] | None = None,
    proof_texts: Sequence[bytes | None] | None = None,
) -> EventColumns:
    """The columns of events of any shape, value by value. ``payload_texts`` and ``proof_texts`` (aligned with
    ``records``) are the payloads and proofs as the service sent them; without one a value is stored as compact
    JSON. A record that is not an object, or has an unusable ``event_id`` (blank, of another type), is rejected by
    name; one without ``event_id`` (absent or ``null``) is kept when its ``headers.offset`` is an integer (its id
    ``None`` until the converter makes one from its channel and offset) and rejected by name otherwise. Of two
    records with one ``event_id`` (or, without one, one offset) the last is kept."""
    rejected: list[RejectedEvent] = []
    rows: list[dict[str, Any]] = []
    positions: list[int] = []  # each row's index in ``records``
    kept: dict[Any, int] = {}
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            rejected.append(RejectedEvent(i, "<record>", f"is a {type(rec).__name__}, not an object"))
            continue
        key = _row_key(rec)
        if key is None:
            problem = key_problem(rec.get("event_id"))
            if rec.get("event_id") is None:
                problem = "is missing, and headers.offset is not an integer to name the event by"
            rejected.append(RejectedEvent(i, "event_id", problem or "is unusable", _offset_name(rec)))
        else:
            kept[key] = len(rows)
        rows.append(rec)
        positions.append(i)
    heads = [h if type(h) is dict else _EMPTY for h in (r.get("headers") for r in rows)]
    pays = [p if type(p) is dict else _EMPTY for p in (r.get("payload") for r in rows)]
    types = [h.get("type") if "type" in h else r.get("type") for h, r in zip(heads, rows, strict=True)]
    proofs = [h.get("proofs") if "proofs" in h else r.get("proofs") for h, r in zip(heads, rows, strict=True)]
    subject = spec.EVENT_SUBJECT_FIELD

    def only(kind: str, field: str) -> list[Any]:
        return [p.get(field) if t == kind else None for p, t in zip(pays, types, strict=True)]

    fields = {name: [p.get(name) for p in pays] for name in PAYLOAD_TEXT_FIELDS}
    fields.update({name: only(kind, name) for name, kind in ONLY_FOR_TYPE.items()})
    fields["event_hash"] = [
        p.get("event_hash") if "event_hash" in p else r.get("event_hash") for p, r in zip(pays, rows, strict=True)
    ]

    def text(value: Any, texts: Sequence[bytes | None] | None, index: int) -> bytes | None:
        if value is None:
            return None
        sent = texts[index] if texts is not None else None
        return sent if sent is not None else json_text(value)

    extras = [_unknown_fields(r) for r in rows]
    payloads: list[bytes | None] = []
    proof_list: list[bytes | None] = []
    for j, (row, i) in enumerate(zip(rows, positions, strict=True)):
        # the texts as sent are at hand unless the page was too deep for msgspec: a value is then written again,
        # and one nested too deep for that leaves its event out by name (the other events of the page are stored)
        field = "payload"
        try:
            payloads.append(text(row.get("payload"), payload_texts, i))
            field = "headers.proofs"
            proof_list.append(text(proofs[j], proof_texts, i))
            field = "unknown fields"
            json_text(extras[j])
        except NestedTooDeep as exc:
            payloads[j:] = [None]
            proof_list[j:] = [None]
            key = _row_key(row)
            if key is not None and kept.get(key) == j:
                del kept[key]
                rejected.append(RejectedEvent(i, field, str(exc), _offset_name(row)))
            extras[j] = None
    return EventColumns(
        event_ids=[r.get("event_id") for r in rows],
        types=types,
        offsets=[h.get("offset") for h in heads],
        timestamps=[p.get("timestamp") for p in pays],
        fields=fields,
        proof_counts=[len(x) if type(x) is list else 0 for x in proofs],
        signature_counts=[_signature_count_of(x) for x in proofs],
        proofs=proof_list,
        payloads=payloads,
        typed=False,
        subjects=[
            p.get(subject[t]) if isinstance(t, str) and t in subject else None for p, t in zip(pays, types, strict=True)
        ],
        extras=extras if any(e is not None for e in extras) else None,
        channel_ids={j: r["channel_id"] for j, r in enumerate(rows) if "channel_id" in r},
        kept=sorted(kept.values()),
        rejected=tuple(sorted(rejected, key=attrgetter("index"))),
    )
