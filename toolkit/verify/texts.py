"""An event's stored payload and proofs read for verification: only what the rules need decides the verdict.

The warehouse keeps the payload and ``headers.proofs`` as the JSON text the service sent. orjson reads nearly all of
them; it refuses valid JSON that holds a number past a double's range (``1e400``), which a field verification never
reads may carry. Such a text is read again by msgspec into just the fields the rules use (the payload's
``verifiable_event``, ``verifiable_result``, ``event_hash`` and workflow execution ids; each proof item's
``ocr_report``, ``ocr_context``, ``signatures`` and ``alg``), skipping every other value, so an unrelated field
cannot make a proof invalid. A text that is not JSON at all, or whose needed fields are themselves unreadable, is
still refused (:class:`Unreadable`).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import orjson
from msgspec import UNSET, Raw, Struct, UnsetType


class Unreadable(ValueError):
    """A stored payload or proofs text that is not JSON."""


class _Payload(Struct):
    verifiable_event: Raw | UnsetType = UNSET
    verifiable_result: Raw | UnsetType = UNSET
    event_hash: Raw | UnsetType = UNSET
    # read by the workflow check (chainops verify --check-workflow)
    workflow_execution_id: Raw | UnsetType = UNSET
    operation_status_workflow_execution_id: Raw | UnsetType = UNSET
    operation_writer_workflow_execution_id: Raw | UnsetType = UNSET


class _Proof(Struct):
    ocr_report: Raw | UnsetType = UNSET
    ocr_context: Raw | UnsetType = UNSET
    signatures: Raw | UnsetType = UNSET


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
