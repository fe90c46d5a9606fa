"""Query-string parameters: paging (limit/offset) and filters, validated as the service does (400 otherwise)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from toolkit.sandbox import validate
from toolkit.sandbox.apierror import validation
from toolkit.spec import ADDRESS_RE, UUID_RE, PageLimits

if TYPE_CHECKING:
    from toolkit.sandbox.schemas import Param

INT64_MAX = 2**63 - 1
_INTEGER = re.compile(r"^-?[0-9]+$")


def one(query: dict[str, list[str]], name: str) -> str | None:
    """The single value of a parameter (the last one when repeated), or ``None``."""
    values = query.get(name)
    return values[-1] if values else None


def many(query: dict[str, list[str]], name: str, allowed: tuple[str, ...] | None = None) -> frozenset[str] | None:
    """An array filter (repeated keys, also ``name[]``), checked against ``allowed``; ``None`` when absent."""
    values = [*query.get(name, ()), *query.get(name + "[]", ())]
    values = [v for raw in values for v in raw.split(",") if v != ""]
    if not values:
        return None
    if allowed is not None:
        bad = [v for v in values if v not in allowed]
        if bad:
            raise validation(f"{name}: unknown value {bad[0]!r}")
    return frozenset(values)


def integer(query: dict[str, list[str]], name: str, minimum: int = 0, maximum: int = INT64_MAX) -> int | None:
    """An integer parameter in ``[minimum, maximum]``, or ``None`` when absent."""
    raw = one(query, name)
    if raw is None:
        return None
    if not _INTEGER.match(raw):
        raise validation(f"{name} must be an integer")
    value = int(raw)
    if not minimum <= value <= maximum:
        raise validation(f"{name} must be between {minimum} and {maximum}")
    return value


def paging(query: dict[str, list[str]], limits: PageLimits) -> tuple[int, int]:
    """``(limit, offset)`` of a row-skip list."""
    limit = integer(query, "limit", 1, limits.maximum)
    offset = integer(query, "offset", 0)
    return (limits.default if limit is None else limit), (offset or 0)


def address(query: dict[str, list[str]], name: str) -> str | None:
    """An address filter, lower-cased; 400 when malformed."""
    raw = one(query, name)
    if raw is None:
        return None
    if not ADDRESS_RE.match(raw):
        raise validation(f"{name} must be a 0x-prefixed 20-byte hex address")
    return raw.lower()


def lowered(query: dict[str, list[str]], name: str) -> str | None:
    """A text filter matched ignoring case (the service gives it no pattern), lower-cased; ``None`` when absent."""
    raw = one(query, name)
    return None if raw is None else raw.lower()


def choice(query: dict[str, list[str]], name: str, allowed: tuple[str, ...]) -> str | None:
    """A single-valued enum filter, checked against ``allowed`` (400 otherwise); ``None`` when absent."""
    raw = one(query, name)
    if raw is not None and raw not in allowed:
        raise validation(f"{name}: unknown value {raw!r}"[:200])
    return raw


def uuid(query: dict[str, list[str]], name: str) -> str | None:
    """A UUID filter; 400 when malformed."""
    raw = one(query, name)
    if raw is not None and not UUID_RE.match(raw):
        raise validation(f"{name} must be a UUID")
    return raw


def page(items: list, limit: int, offset: int) -> tuple[list, bool]:
    """Row-skip slice of ``items`` and whether more follow."""
    return items[offset : offset + limit], offset + limit < len(items)


def _check_value(param: Param, schema: dict, raw: str) -> None:
    name = param.name
    if schema.get("type") == "integer":
        integer({name: [raw]}, name, schema.get("minimum", -(2**63)), schema.get("maximum", INT64_MAX))
        return
    if "enum" in schema and raw not in schema["enum"]:
        raise validation(f"{name}: unknown value {raw!r}"[:200])
    pattern = schema.get("pattern")
    if pattern is not None and not validate.matches(pattern, raw):
        raise validation(f"{name} has an invalid format")


def check_query(declared: Iterable[Param], query: dict[str, list[str]]) -> None:
    """Check each declared parameter present in ``query`` against its schema (400 naming it otherwise); parameters
    not declared are ignored, as the service ignores them."""
    for param in declared:
        if param.is_array:
            raws = [*query.get(param.name, ()), *query.get(param.name + "[]", ())]
            for value in (v for raw in raws for v in raw.split(",")):
                _check_value(param, param.schema["items"], value)
        else:
            values = query.get(param.name, ())
            if len(values) > 1:
                raise validation(f"{param.name} takes one value; it was given {len(values)} times")
            for value in values:
                _check_value(param, param.schema, value)
