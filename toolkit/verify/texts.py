"""An event's stored payload and proofs read for verification: only what the rules need decides the verdict.

The warehouse keeps the payload and ``headers.proofs`` as the JSON text the service sent. orjson reads nearly all of
them; it refuses valid JSON that holds a number past a double's range (``1e400``), which a field verification never
reads may carry. Such a text is read again by msgspec into just the fields the rules use (their lists,
:data:`~.rules.PAYLOAD_FIELDS` and :data:`~.rules.OCR_FIELDS`), skipping every other value, so an unrelated field
cannot make a proof invalid. A text that is not JSON at all, or whose needed fields are themselves unreadable, is
still refused (:class:`Unreadable`).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import orjson
from msgspec import UNSET, Raw, Struct, UnsetType

from .rules import OCR_FIELDS, PAYLOAD_FIELDS


class Unreadable(ValueError):
    """A stored payload or proofs text that is not JSON."""


# each field the rules read (and no other) kept as its raw JSON text, to be read alone
_Payload = msgspec.defstruct("_Payload", [(name, Raw | UnsetType, UNSET) for name in PAYLOAD_FIELDS])
_Proof = msgspec.defstruct("_Proof", [(name, Raw | UnsetType, UNSET) for name in OCR_FIELDS])


def _fields(item: Struct) -> dict[str, Any]:
    """The fields an item carried, each value read by the standard library (a number past a double's range is
    ``inf`` there, which no rule takes for a text or a list: the rule that reads it fails, naming it)."""
    out = {}
    for name in item.__struct_fields__:
        raw = getattr(item, name)
        if not isinstance(raw, UnsetType):
            try:
                out[name] = json.loads(bytes(raw))
            except (ValueError, RecursionError):
                out[name] = None
    return out


def read_payload(text: str | bytes | None) -> Any:
    """A stored payload as the rules read it (``None`` for none); raises :class:`Unreadable`."""
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return _fields(msgspec.json.decode(text, type=_Payload))
    except msgspec.ValidationError:
        return None  # valid JSON but not an object: no verifiable_event, as the rules say
    except (msgspec.DecodeError, RecursionError) as exc:
        raise Unreadable(f"the payload is not JSON ({exc})") from None


def read_proofs(text: str | bytes | None) -> Any:
    """Stored ``headers.proofs`` as the rules read them (``[]`` for none); raises :class:`Unreadable`."""
    if text is None:
        return []
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        items = msgspec.json.decode(text, type=list[Raw])
    except msgspec.ValidationError:
        return None  # valid JSON but not a list: no proof
    except (msgspec.DecodeError, RecursionError) as exc:
        raise Unreadable(f"the proofs are not JSON ({exc})") from None
    out: list[Any] = []
    for item in items:
        try:
            out.append(_fields(msgspec.json.decode(item, type=_Proof)))
        except (msgspec.DecodeError, RecursionError):  # not an object: skipped by the rules, as any non-OCR item
            out.append(None)
    return out
