"""Request-body validation, as the service's schema does it: 400 ``VALIDATION_ERROR`` naming the field for any
violation, a value of the wrong JSON type included.

Each body is checked against its JSON Schema in :mod:`toolkit.sandbox.schemas` (the one the OpenAPI description
publishes) by :func:`check`, a walker of the few keywords those schemas use; the handful of rules a schema cannot
say (a chain the sandbox does not model is a conflict for wallets, signers unique ignoring case, the size of a
query's metadata) follow it. Closed bodies (``CreateOperation``, its transactions, ``PatchOperation``,
``CreateQuery`` and its params) refuse unknown fields; the others ignore them.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from toolkit.sandbox import schemas
from toolkit.sandbox.apierror import ApiError, conflict, validation
from toolkit.sandbox.networks import MODELS
from toolkit.spec import ConflictCode

_TYPES: dict[str, Any] = {
    "string": str,
    "object": dict,
    "array": list,
    "boolean": bool,
    "null": type(None),
}
_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "object": "an object",
    "array": "an array",
    "boolean": "a boolean",
    "null": "null",
}


#: ECMA-262's white space and line terminators: its ``\s``. Python's also holds U+001C-U+001F and U+0085, so a name of
#: U+001D would be refused here although the published schema (``\S``) allows it.
_ECMA_SPACE = r"\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


@cache
def _regex(pattern: str) -> re.Pattern:
    # JSON Schema patterns are ECMA-262, where $ ends the text (Python's $ also matches before a final newline) and
    # \s is ECMA's white space (outside a character class, the only place the schemas use it)
    pattern = re.sub(r"(?<!\\)\$", r"\\Z", pattern)
    pattern = re.sub(r"(?<!\\)\\S", f"[^{_ECMA_SPACE}]".replace("\\", "\\\\"), pattern)
    pattern = re.sub(r"(?<!\\)\\s", f"[{_ECMA_SPACE}]".replace("\\", "\\\\"), pattern)
    return re.compile(pattern)


def matches(pattern: str, value: str) -> bool:
    """Whether ``value`` matches the JSON Schema ``pattern`` (anywhere, as JSON Schema says; ``$`` is the end)."""
    return _regex(pattern).search(value) is not None


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":  # JSON Schema: 731.0 is an integer too
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    return isinstance(value, _TYPES[kind])


def _unique_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def check(schema: schemas.Schema, value: Any, where: str) -> None:
    """Raise a 400 naming ``where`` (the field's path) unless ``value`` matches ``schema``."""
    if "oneOf" in schema:
        _one_of(schema["oneOf"], value, where)
        return
    if "not" in schema and isinstance(value, dict):  # used as "not": {"required": [...]}: a field it must not have
        present = [name for name in schema["not"].get("required", ()) if name in value]
        if present and len(present) == len(schema["not"]["required"]):
            raise validation(f"{where}: {present[0]} does not belong in this form")
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            raise validation(f"{where} must be {' or '.join(_TYPE_WORDS[k] for k in kinds)}")
    if "enum" in schema and value not in schema["enum"]:
        raise validation(f"{where}: unknown value {value!r}"[:200])
    if isinstance(value, str):
        _check_string(schema, value, where)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if value < schema.get("minimum", value) or value > schema.get("maximum", value):
            raise validation(f"{where} must be between {schema.get('minimum')} and {schema.get('maximum')}")
    elif isinstance(value, list):
        _check_array(schema, value, where)
    elif isinstance(value, dict):
        _check_object(schema, value, where)


def _check_string(schema: schemas.Schema, value: str, where: str) -> None:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    if len(value) < low or (high is not None and len(value) > high):
        raise validation(f"{where} must be {low}-{high or 'any'} characters")
    pattern = schema.get("pattern")
    if pattern is not None and not matches(pattern, value):
        raise validation(f"{where} has an invalid format")


def _check_array(schema: schemas.Schema, value: list, where: str) -> None:
    low, high = schema.get("minItems", 0), schema.get("maxItems")
    if len(value) < low or (high is not None and len(value) > high):
        raise validation(f"{where} must hold {low}-{high if high is not None else 'any'} items")
    if schema.get("uniqueItems") and len({_unique_key(v) for v in value}) != len(value):
        raise validation(f"{where} must hold unique items")
    items = schema.get("items")
    if items is not None:
        for i, item in enumerate(value):
            check(items, item, f"{where}[{i}]")


def _check_object(schema: schemas.Schema, value: dict, where: str) -> None:
    prefix = "" if where == "body" else f"{where}."
    for name in schema.get("required", ()):
        if name not in value:
            raise validation(f"{prefix}{name} is required")
    properties = schema.get("properties", {})
    if schema.get("additionalProperties") is False:
        extra = sorted(set(value) - set(properties))
        if extra:
            raise validation(f"{where}: unknown field {extra[0]!r}"[:200])
    for name, sub in properties.items():
        if name in value:
            check(sub, value[name], f"{prefix}{name}")


def _one_of(options: list[schemas.Schema], value: Any, where: str) -> None:
    """Exactly one of ``options``; when none matches, the error of the option whose required fields are all present
    (or whose ``enum``-tagged ``status``/``type`` matches) explains it best."""
    failures: list[ApiError] = []
    for option in options:
        try:
            check(option, value, where)
        except ApiError as err:
            failures.append(err)
    matched = len(options) - len(failures)
    if matched == 1:
        return
    if matched > 1:
        names = " or ".join(sorted({r for o in options for r in o.get("required", ())} - _shared(options)))
        raise validation(f"{where} must be exactly one form: name one of {names}, not several")
    if isinstance(value, dict):
        tag = _tag(options)
        if tag is not None and tag in value:  # a tag no form takes: name the tag, not a field of some form
            prefix = "" if where == "body" else f"{where}."
            allowed = [v for option in options for v in option["properties"][tag]["enum"]]
            check({"type": "string", "enum": allowed}, value[tag], f"{prefix}{tag}")
        for option, err in zip(options, failures, strict=True):
            if _selects(option, value):
                raise err
    raise failures[0]


def _tag(options: list[schemas.Schema]) -> str | None:
    """The field every form requires with an ``enum`` of its own (``status``, ``type``), if there is one."""
    for name in sorted(_shared(options)):
        if all("enum" in option.get("properties", {}).get(name, {}) for option in options):
            return name
    return None


def _shared(options: list[schemas.Schema]) -> set[str]:
    sets = [set(o.get("required", ())) for o in options]
    return set.intersection(*sets) if sets else set()


def _selects(option: schemas.Schema, value: dict) -> bool:
    """Whether ``value`` is plainly meant as ``option``: its tag field matches, or it has the option's own fields."""
    properties = option.get("properties", {})
    for tag in ("status", "type"):
        allowed = properties.get(tag, {}).get("enum")
        if allowed is not None and tag in option.get("required", ()) and len(allowed) <= 2:
            return value.get(tag) in allowed
    return all(name in value for name in option.get("required", ()))


def parse_json(body: bytes) -> dict:
    """The request body as a JSON object."""
    try:
        data = json.loads(body or b"null")
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        raise validation("request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise validation("request body must be a JSON object")
    return data


def _body(name: str, body: dict) -> dict:
    check(schemas.BODIES[name], body, "body")
    return body


def create_wallet(body: dict) -> dict:
    """``CreateWallet``; a chain the sandbox does not model is 409 ``CHAIN_UNAVAILABLE``."""
    _body("CreateWallet", body)
    if body["chain_selector"] not in MODELS:
        raise conflict(ConflictCode.CHAIN_UNAVAILABLE, "chain is unavailable for wallet creation")
    signers = body.get("allowed_ecdsa_signers") or []
    if len({s.lower() for s in signers}) != len(signers):
        raise validation("allowed_ecdsa_signers must be unique addresses (ignoring case)")
    return body


def update_wallet(body: dict) -> dict:
    """``UpdateWallet``."""
    return _body("UpdateWallet", body)


def create_channel(body: dict) -> dict:
    """``CreateChannel``."""
    return _body("CreateChannel", body)


def patch_channel(body: dict) -> dict:
    """``PatchChannel``."""
    return _body("PatchChannel", body)


def create_watcher(body: dict) -> dict:
    """``CreateWatcher``: one of ``CreateWatcherWithService`` / ``CreateWatcherWithABI``."""
    return _body("CreateWatcher", body)


def update_watcher(body: dict) -> dict:
    """``UpdateWatcher``."""
    return _body("UpdateWatcher", body)


def create_operation(body: dict) -> dict:
    """``CreateOperation`` (closed); an integral ``deadline`` sent as ``731.0`` is kept as ``731``."""
    _body("CreateOperation", body)
    body["deadline"] = int(body["deadline"])
    return body


def patch_operation(body: dict) -> dict:
    """``PatchOperation``: ``FinalizeOperation`` or ``CancelOperation`` (both closed)."""
    return _body("PatchOperation", body)


def create_query(body: dict) -> dict:
    """``CreateQuery`` with ``EVMCallQueryParams`` (closed)."""
    _body("CreateQuery", body)
    if "metadata" in body and len(json.dumps(body["metadata"])) > schemas.METADATA_MAX_BYTES:
        raise validation(f"metadata must be at most {schemas.METADATA_MAX_BYTES // 1024} KB")
    return body
