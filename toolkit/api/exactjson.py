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


def loads(content: bytes) -> Any:
    """Parse a JSON body (``None`` for an empty one); integers of any size stay exact. Raises ``ValueError`` (or
    ``RecursionError`` for absurd nesting) when the body is not valid JSON."""
    if not content:
        return None
    value = orjson.loads(content)
    if not may_hold_long_integer(content) or _LONG_INTEGER.search(content) is None:
        return value
    # orjson accepted it, so it is valid UTF-8 JSON; NaN and Infinity, which the standard library accepts, are not
    return json.loads(content, parse_constant=_refuse_constant)


def may_hold_long_integer(content: bytes) -> bool:
    """Whether ``content`` may hold an integer literal of 19 digits or more (``False`` means it certainly does not;
    ``True`` leaves it to :data:`_LONG_INTEGER`)."""
    return content.translate(_CANDIDATES).find(_CANDIDATE_RUN) != -1
