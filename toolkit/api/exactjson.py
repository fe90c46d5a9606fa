"""Parsing a JSON body without losing a digit.

orjson, the fast parser, turns an integer it cannot hold in 64 bits (a chain selector of 2**64 sent as a number, say)
into a float, silently dropping digits. A body holding an integer literal that long is parsed by the standard
library instead, which keeps every integer exact; any other body takes orjson.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from ..event_wire import read_number

#: An integer literal of 19 digits or more after ``:``, ``[`` or ``,`` (a long run of digits inside a string only
#: sends the body to the exact parser, which is slower, never wrong).
_LONG_INTEGER = re.compile(rb"[:\[,]\s*-?[0-9]{19,}")
#: A quick test that a body cannot hold such a literal, in two C passes instead of the regular expression's scan
#: (3x orjson's own time on a page of operations): digits become ``0``, and the characters that may come before the
#: digits (``:``, ``[``, ``,``, whitespace, ``-``) become ``!``; any match of :data:`_LONG_INTEGER` then shows as
#: ``!`` and 19 zeros. The converse need not hold: what shows the run is searched with the expression.
_CANDIDATE_CHARS = b"0123456789:[, \t\n\r\x0b\x0c-"
_CANDIDATES = bytes.maketrans(_CANDIDATE_CHARS, b"0" * 10 + b"!" * (len(_CANDIDATE_CHARS) - 10))
_CANDIDATE_RUN = b"!" + b"0" * 19


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(content: bytes, *, past_float_range: bool = False) -> Any:
    """Parse a JSON body (``None`` for an empty one); integers of any size stay exact. Raises ``ValueError`` (or
    ``RecursionError`` for absurd nesting) when the body is not valid JSON. ``past_float_range``: a number past a
    double's range (``1e400``, valid JSON that orjson refuses) is read as a :class:`~decimal.Decimal` holding its
    digits (:func:`toolkit.event_wire.read_number`) instead of making the body unreadable."""
    if not content:
        return None
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        message = str(exc)
        # an escaped lone surrogate ("\ud800") is valid JSON but no Unicode: the standard library reads it and each
        # becomes U+FFFD, so one broken name does not make a whole page (the channel list, say) unreadable
        if "surrogate" not in message and not (past_float_range and "infinity" in message):
            raise
        parse_float = read_number if past_float_range else float
        return _without_surrogates(json.loads(content, parse_constant=_refuse_constant, parse_float=parse_float))
    if not may_hold_long_integer(content) or _LONG_INTEGER.search(content) is None:
        return value
    # orjson accepted it, so it is valid UTF-8 JSON; NaN and Infinity, which the standard library accepts, are not
    return json.loads(content, parse_constant=_refuse_constant)


def _without_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD; pairs are joined."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def may_hold_long_integer(content: bytes) -> bool:
    """Whether ``content`` may hold an integer literal of 19 digits or more (``False`` means it certainly does not;
    ``True`` leaves it to :data:`_LONG_INTEGER`)."""
    return content.translate(_CANDIDATES).find(_CANDIDATE_RUN) != -1


#: The name under which :func:`loads_marking_repeats` lists the names an object repeated (the warehouse keeps
#: unknown fields in ``extra``, so a record's own list ends up in ``extra._repeated_names``).
REPEATED_NAMES = "_repeated_names"


def loads_marking_repeats(content: bytes) -> Any:
    """:func:`loads`, and every object that repeated a name (JSON names SHOULD be unique; RFC 8259) is read with its
    last value, as orjson reads it, and carries the names it repeated under :data:`REPEATED_NAMES`. The check costs
    one orjson serialisation of the value: a repeat is the only way the structural ``:`` of ``content`` outnumber
    those of the value written again."""
    value = loads(content)
    if not isinstance(value, dict | list) or not _may_repeat(content, value):
        return value

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) < len(items):
            names: list[str] = []
            for name, _ in items:
                if name not in names and sum(1 for n, _ in items if n == name) > 1:
                    names.append(name)
            out[REPEATED_NAMES] = names
        return out

    try:
        marked = json.loads(content, object_pairs_hook=pairs, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return value
    for record in _records(marked):
        _hoist_repeats(record)
    return _without_surrogates(marked)  # as loads reads an escaped lone surrogate (only bodies that repeat get here)


#: The names under which a list envelope holds its items (WIRE.md: ``{data, has_more}``, ``{events, has_more}``).
_ENVELOPES = ("data", "events")


def _records(value: Any) -> list[dict[str, Any]]:
    """The records of an answer: the items of a list envelope (``{data, has_more}``, ``{events, has_more}``), the
    items of a bare list, or the answer itself (a record fetched by id)."""
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    if isinstance(value, dict) and ("has_more" in value or any(isinstance(value.get(k), list) for k in _ENVELOPES)):
        return [v for items in value.values() if isinstance(items, list) for v in items if isinstance(v, dict)]
    return [value] if isinstance(value, dict) else []


def _hoist_repeats(record: dict[str, Any]) -> None:
    """Move the marks of objects nested in ``record`` to the record itself, by path (``initiator.subject_id``,
    ``transactions[0].value``): the record is what the warehouse names in a problem and keeps ``extra`` for, and a
    nested object must not gain a field the service never sent."""
    paths = list(record.get(REPEATED_NAMES, ()))

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for name in value.pop(REPEATED_NAMES, ()):
                paths.append(f"{path}.{name}")
            for name, item in value.items():
                walk(item, f"{path}.{name}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")

    for name, item in record.items():
        if name != REPEATED_NAMES:
            walk(item, name)
    if paths:
        record[REPEATED_NAMES] = paths


def _may_repeat(content: bytes, value: Any) -> bool:
    if b"\\u003" in content:  # an escaped ':' inside a string would upset the count
        return True
    try:
        again = orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):  # an integer beyond 64 bits: look closer
        return True
    return content.count(b":") != again.count(b":")
