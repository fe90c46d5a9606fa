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


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(content: bytes) -> Any:
    """Parse a JSON body (``None`` for an empty one); integers of any size stay exact. Raises ``ValueError`` (or
    ``RecursionError`` for absurd nesting) when the body is not valid JSON."""
    if not content:
        return None
    value = orjson.loads(content)
    if _LONG_INTEGER.search(content) is None:
        return value
    # orjson accepted it, so it is valid UTF-8 JSON; NaN and Infinity, which the standard library accepts, are not
    return json.loads(content, parse_constant=_refuse_constant)
