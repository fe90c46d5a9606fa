"""Typed decoding of event pages straight from the bytes (msgspec), for the loaders' fast path.

The event log is the one high-volume stream, and most of an event's bytes are its payload and proofs. A page in
exactly the documented shape (``{events, has_more}``; each event ``{event_id, headers{type, offset, proofs},
payload}``) is decoded here into small typed structs: the proofs kept as the raw JSON text the service sent (stored
verbatim for verification) and decoded only as far as counting them and their signatures, and each payload twice
cheaply, once kept as the raw JSON text the service sent (stored verbatim, never serialised
again) and once into the few fields the warehouse has columns for.

A page in any other shape (an unknown field, a value of another type, a ``data`` envelope, a payload that is not an
object) is not an error here: :func:`decode_event_page` returns ``None`` and the caller parses the page generically,
which keeps everything. Invalid JSON also returns ``None``; the generic parse reports it with its request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

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
    """One event, exactly as documented; ``payload`` is the raw JSON text."""

    event_id: str
    headers: WireHeaders
    payload: Raw


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


class _WireEventList(Struct, gc=False):
    events: list[WireEvent]
    has_more: bool


_PAGE = msgspec.json.Decoder(_WireEventList)
_PAYLOAD = msgspec.json.Decoder(WirePayload)
_PROOFS = msgspec.json.Decoder(list[WireProof])


@dataclass(frozen=True)
class DecodedEvents:
    """The events of one page in the documented shape and their payloads' columns. Each payload's raw JSON text is
    ``events[i].payload``, a view into the page body (checked to be valid UTF-8), so a pending page costs its body
    once."""

    events: list[WireEvent]
    payloads: list[WirePayload]
    has_more: bool
    #: each event's ``headers.proofs``, decoded as far as their signatures (the raw text is ``headers.proofs``)
    proofs: list[list[WireProof]]

    def __len__(self) -> int:
        return len(self.events)

    def payload_texts(self) -> tuple[bytes, list[int]]:
        """The payloads' raw JSON texts concatenated, and the size of each in bytes."""
        raws = [e.payload for e in self.events]
        return b"".join(raws), [len(raw) for raw in raws]


def decode_event_page(body: bytes) -> DecodedEvents | None:
    """Decode an event page in the documented shape, or return ``None`` when it needs the generic parse."""
    if not body.isascii():
        try:
            body.decode("utf-8")  # msgspec does not check the text it skips or keeps raw; the generic parse does
        except UnicodeDecodeError:
            return None
    try:
        page = _PAGE.decode(body)
        decode = _PAYLOAD.decode
        payloads = [decode(e.payload) for e in page.events]
        proofs = _PROOFS.decode
        proof_lists = [proofs(e.headers.proofs) for e in page.events]
    except (msgspec.DecodeError, RecursionError):  # ValidationError (another shape) is a DecodeError too
        return None  # the generic parse reports what is wrong (orjson refuses deep nesting with a JSONDecodeError)
    return DecodedEvents(page.events, payloads, page.has_more, proof_lists)


def merge_decoded(parts: Sequence[DecodedEvents]) -> DecodedEvents:
    """Several decoded pages of one stream as one, in order (converting a few thousand events at once costs less
    than page by page); ``has_more`` is the last page's."""
    if len(parts) == 1:
        return parts[0]
    return DecodedEvents(
        [e for part in parts for e in part.events],
        [p for part in parts for p in part.payloads],
        parts[-1].has_more,
        [p for part in parts for p in part.proofs],
    )


class _RawEventList(Struct):
    events: list[Raw] | UnsetType = UNSET
    data: list[Raw] | UnsetType = UNSET


class _RawPayload(Struct):
    payload: Raw | UnsetType = UNSET


def raw_payloads(body: bytes) -> list[bytes | None] | None:
    """The payload of each object in the page's event array, as the raw JSON text the service sent (``None`` where
    an event has none), in page order; items that are not objects are skipped, as the generic parse skips them.
    ``None`` when the page has no event array. Used by the generic path so that a payload is stored as the same
    text whichever path converted its page."""
    try:
        page = msgspec.json.decode(body, type=_RawEventList)
    except (msgspec.DecodeError, RecursionError):
        return None
    items = page.events if not isinstance(page.events, UnsetType) else page.data
    if isinstance(items, UnsetType):
        return None
    out: list[bytes | None] = []
    for item in items:
        if bytes(item).lstrip()[:1] != b"{":
            continue
        try:
            payload = msgspec.json.decode(item, type=_RawPayload).payload
        except (msgspec.DecodeError, RecursionError):
            payload = UNSET
        text = None if isinstance(payload, UnsetType) else bytes(payload)
        out.append(None if text == b"null" else text)
    return out
