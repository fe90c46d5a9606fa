"""Typed decoding of event pages straight from the bytes (msgspec), for the loaders' fast path.

The event log is the one high-volume stream, and most of an event's bytes are its payload and proofs. A page in
exactly the documented shape (``{events, has_more}``; each event ``{event_id, headers{type, offset, proofs},
payload}``) is decoded here into the small typed structs of :mod:`toolkit.event_wire` and put in its columns
(:class:`~toolkit.event_wire.EventColumns`): the proofs kept as the raw JSON text the service sent (stored verbatim
for verification) and decoded only as far as counting them and their signatures (a page's in one call), and each
payload twice cheaply, once kept as the raw JSON text the service sent (stored verbatim, never serialised again) and
once into every documented payload field (:class:`~toolkit.event_wire.WireFullPayload`): the warehouse has columns
for a few, and the struct written again tells whether the payload may repeat a name
(:func:`~toolkit.event_wire.payloads_may_repeat`). A payload whose other documented fields hold values of another
type is read into the column fields only (:class:`~toolkit.event_wire.WirePayload`; its repeat then judged by the
warehouse's generic check).

A page in any other shape (an unknown field, a value of another type, a ``data`` envelope, a payload that is not an
object) is not an error here: :func:`decode_event_page` returns ``None`` and the caller parses the page generically,
which keeps everything. Invalid JSON also returns ``None``; the generic parse reports it with its request.
"""

from __future__ import annotations

import re

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ..event_wire import (
    MAX_SECONDS,
    EventColumns,
    Int64,
    Seconds,
    WireEvent,
    WireFullPayload,
    WireHeaders,
    WirePayload,
    WireProof,
    columns_from_structs,
)

__all__ = [
    "MAX_SECONDS",
    "Int64",
    "Seconds",
    "WireEvent",
    "WireHeaders",
    "WirePayload",
    "WireProof",
    "decode_event_page",
    "raw_payloads",
    "raw_texts",
]


class _WireEventList(Struct, gc=False):
    events: list[WireEvent]
    has_more: bool


_PAGE = msgspec.json.Decoder(_WireEventList)
_FULL_PAYLOAD = msgspec.json.Decoder(WireFullPayload)
_PAYLOAD = msgspec.json.Decoder(WirePayload)
_PAGE_PROOFS = msgspec.json.Decoder(list[list[WireProof]])


def decode_event_page(body: bytes) -> tuple[EventColumns, bool] | None:
    """Decode an event page in the documented shape into its columns and ``has_more``, or return ``None`` when it
    needs the generic parse."""
    if not body.isascii():
        try:
            body.decode("utf-8")  # msgspec does not check the text it skips or keeps raw; the generic parse does
        except UnicodeDecodeError:
            return None
    try:
        page = _PAGE.decode(body)
        texts = [e.payload for e in page.events]
        try:
            payloads: list[WirePayload] = list(map(_FULL_PAYLOAD.decode, texts))
        except msgspec.ValidationError:  # a documented field of another type: that payload's column fields only
            payloads = [_payload(text) for text in texts]
        proof_lists = _proof_lists([e.headers.proofs for e in page.events])
    except (msgspec.DecodeError, RecursionError):  # ValidationError (another shape) is a DecodeError too
        return None  # the generic parse reports what is wrong (orjson refuses deep nesting with a JSONDecodeError)
    return columns_from_structs(page.events, payloads, proof_lists), page.has_more


def _payload(text: Raw) -> WirePayload:
    """A payload as :class:`WireFullPayload`, or as :class:`WirePayload` when another of its fields has a type the
    documentation does not give it (a ``ValidationError`` of that is the page's: another shape)."""
    try:
        return _FULL_PAYLOAD.decode(text)
    except msgspec.ValidationError:
        return _PAYLOAD.decode(text)


def _proof_lists(texts: list[Raw]) -> list[list[WireProof]]:
    """Each event's ``headers.proofs`` decoded, the page's in one call (one per event cost half again as much)."""
    joined = b",".join(texts)
    # every text ``[]``: the texts' characters are all in pairs ``[]``, and each text is one JSON value
    if len(joined) == 3 * len(texts) - 1 and joined.count(b"[]") == len(texts):
        return [[]] * len(texts)
    return _PAGE_PROOFS.decode(b"[" + joined + b"]")


class _RawEventList(Struct):
    events: list[Raw] | UnsetType = UNSET
    data: list[Raw] | UnsetType = UNSET


class _RawEvent(Struct):
    payload: Raw | UnsetType = UNSET
    headers: Raw | UnsetType = UNSET
    proofs: Raw | UnsetType = UNSET


class _RawHeaders(Struct):
    proofs: Raw | UnsetType = UNSET


def _text(raw: Raw | UnsetType) -> bytes | None:
    text = None if isinstance(raw, UnsetType) else bytes(raw)
    return None if text == b"null" else text


def _is_object(raw: Raw | UnsetType) -> bool:
    return not isinstance(raw, UnsetType) and bytes(raw).lstrip()[:1] == b"{"


def raw_texts(body: bytes) -> tuple[list[bytes | None], list[bytes | None]] | None:
    """The payload and the proofs of each object in the page's event array, as the raw JSON texts the service sent
    (``None`` where an event has none), in page order; items that are not objects are skipped, as the generic parse
    skips them. The proofs are ``headers.proofs`` (a top-level ``proofs`` where the headers hold none, as the
    generic parse reads them). ``None`` when the page has no event array. Used by the generic path so that an event
    is stored as the same texts whichever path converted its page."""
    masked = _masked(body)
    try:
        page = msgspec.json.decode(masked, type=_RawEventList)
    except (msgspec.DecodeError, RecursionError):
        return None
    items = page.events if not isinstance(page.events, UnsetType) else page.data
    if isinstance(items, UnsetType):
        return None
    sent = _Sent(body, masked)
    payloads: list[bytes | None] = []
    proofs: list[bytes | None] = []
    for item in items:
        if not _is_object(item):
            continue
        try:
            event = msgspec.json.decode(item, type=_RawEvent)
        except (msgspec.DecodeError, RecursionError):
            event = _RawEvent()
        proof = UNSET
        if _is_object(event.headers):
            try:
                proof = msgspec.json.decode(event.headers, type=_RawHeaders).proofs
            except (msgspec.DecodeError, RecursionError):
                proof = UNSET
        payloads.append(sent.text(event.payload))
        proofs.append(sent.text(event.proofs if isinstance(proof, UnsetType) else proof))
    return payloads, proofs


#: An escaped surrogate (``\ud800``): valid JSON, but msgspec refuses a lone one, even inside a text it keeps raw.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _masked(body: bytes) -> bytes:
    """``body`` with every escaped surrogate replaced by an escaped space, which is as long: only the contents of
    strings change, so every value keeps its place, and msgspec reads the copy (``body`` itself when it has none)."""
    if b"\\u" not in body:
        return body
    return _SURROGATE_ESCAPE.sub(rb"\\u0020", body)


class _Sent:
    """Texts msgspec kept raw from the masked copy of a body (:func:`_masked`), cut from the body as sent at the
    same place. msgspec's raw texts point into the buffer it read, so where one lies in the copy is known exactly."""

    def __init__(self, body: bytes, masked: bytes) -> None:
        self.body, self.masked = body, masked
        self.base = _address(masked) if masked is not body else 0

    def text(self, raw: Raw | UnsetType) -> bytes | None:
        """The text of ``raw`` as sent (``None`` for none, ``null``, or one whose place cannot be told)."""
        text = _text(raw)
        if text is None or self.masked is self.body:
            return text
        start = _address(raw) - self.base  # type: ignore[arg-type]
        if start < 0 or self.masked[start : start + len(text)] != text:  # not a view of the copy: no place to cut
            return None
        return self.body[start : start + len(text)]


def _address(buffer: bytes | Raw) -> int:
    """Where ``buffer``'s bytes start in memory."""
    import numpy as np  # only for a page holding an escaped surrogate: not a cost of every import of the client

    return int(np.frombuffer(buffer, np.uint8).__array_interface__["data"][0]) if len(buffer) else -1


def raw_payloads(body: bytes) -> list[bytes | None] | None:
    """The payloads of :func:`raw_texts`."""
    texts = raw_texts(body)
    return None if texts is None else texts[0]
