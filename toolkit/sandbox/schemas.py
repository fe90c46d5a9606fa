"""The API's shapes as JSON Schema, defined once: the validators check requests against them and
:mod:`toolkit.sandbox.openapi` publishes them, so the two cannot drift.

Built from :mod:`toolkit.spec` (statuses, enums, patterns, page limits) and WIRE.md sections 1-4. Request bodies are
checked by :func:`toolkit.sandbox.validate.check`; query parameters by :func:`toolkit.sandbox.params.check_query`.
Where the sandbox is stricter or looser than the service, the schema says so in a ``description`` beginning
"Sandbox:" (and :data:`DEVIATIONS` lists them for the description's ``info``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolkit.sandbox.networks import MODELS
from toolkit.spec import (
    ADDRESS_RE,
    CALLDATA_RE,
    CHANNEL_STATUSES,
    DECIMAL_RE,
    EVENT_SEARCH_FILTERS,
    EVENT_TYPES,
    MAX_TRANSACTIONS_PER_OPERATION,
    OPERATION_STATUSES,
    PAGE_LIMITS,
    QUERY_CALLDATA_RE,
    QUERY_STATUSES,
    SIGNATURE_RE,
    UUID_RE,
    WALLET_OPERATION_ID_RE,
    WALLET_STATUSES,
    WATCHER_STATUSES,
    BlockSelection,
    ChainEnvironment,
    ConflictCode,
    ErrorType,
    NotFoundCode,
    QueryKind,
    SubjectType,
    WalletType,
)

Schema = dict[str, Any]
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: JSON text of ``metadata`` a query may carry (docs: 16 KB).
METADATA_MAX_BYTES = 16 * 1024


def max_decimal_pattern(maximum: int) -> str:
    """A regular expression matching the decimal strings (leading zeros allowed) of the integers 0..``maximum``."""
    digits = str(maximum)
    width = len(digits)
    alternatives = ["0", f"[1-9][0-9]{{0,{width - 2}}}"] if width > 1 else []
    for i, d in enumerate(digits):
        low, high = (1 if i == 0 else 0), int(d) - 1
        if high >= low:
            rest = width - i - 1
            span = str(low) if high == low else f"[{low}-{high}]"
            alternatives.append(digits[:i] + span + (f"[0-9]{{{rest}}}" if rest else ""))
    alternatives.append(digits)
    return "^0*(" + "|".join(alternatives) + ")$"


def payload_name(event_type: str) -> str:
    """The component name of an event type's payload schema (``operation.status`` -> ``OperationStatusPayload``)."""
    return "".join(part.capitalize() for part in event_type.split(".")) + "Payload"


# ---- building blocks -----------------------------------------------------------------------------------------------


def string(
    pattern: str | None = None,
    *,
    min_length: int | None = None,
    max_length: int | None = None,
    enum: tuple[str, ...] | list[str] | None = None,
    description: str | None = None,
) -> Schema:
    """A string schema."""
    out: Schema = {"type": "string"}
    if enum is not None:
        out["enum"] = list(enum)
    if pattern is not None:
        out["pattern"] = pattern
    if min_length is not None:
        out["minLength"] = min_length
    if max_length is not None:
        out["maxLength"] = max_length
    if description:
        out["description"] = description
    return out


def integer(minimum: int | None = None, maximum: int | None = None, *, description: str | None = None) -> Schema:
    """An integer schema (int64 unless narrower)."""
    out: Schema = {"type": "integer", "format": "int64"}
    if minimum is not None:
        out["minimum"] = minimum
    if maximum is not None:
        out["maximum"] = maximum
    if description:
        out["description"] = description
    return out


def array(items: Schema, *, min_items: int | None = None, max_items: int | None = None, unique: bool = False) -> Schema:
    """An array schema."""
    out: Schema = {"type": "array", "items": items}
    if min_items is not None:
        out["minItems"] = min_items
    if max_items is not None:
        out["maxItems"] = max_items
    if unique:
        out["uniqueItems"] = True
    return out


def obj(
    properties: dict[str, Schema],
    required: tuple[str, ...] = (),
    *,
    closed: bool = False,
    description: str | None = None,
) -> Schema:
    """An object schema; ``closed`` refuses properties it does not name."""
    out: Schema = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    if closed:
        out["additionalProperties"] = False
    if description:
        out["description"] = description
    return out


def nullable(schema: Schema) -> Schema:
    """``schema`` or JSON ``null``."""
    return {**schema, "type": [schema["type"], "null"]}


ADDRESS = string(ADDRESS_RE.pattern)
UUID = string(UUID_RE.pattern)
DECIMAL = string(DECIMAL_RE.pattern)
TIMESTAMP = integer(description="Unix seconds")
FREE_OBJECT: Schema = {"type": "object"}
#: Chain selectors of the networks the sandbox models (``GET /networks``).
KNOWN_SELECTORS = tuple(MODELS)
KNOWN_CHAIN = string(
    enum=KNOWN_SELECTORS,
    description="Sandbox: only the networks of GET /networks (the service documents a decimal string); "
    "another selector is a 400.",
)
_NAME = string(r"\S", min_length=1, max_length=255, description="At least one non-space character.")
#: A name on create: the 0.8 description bounds only the names of the patch bodies.
_CREATE_NAME = {
    **_NAME,
    "description": "Sandbox: 1-255 characters with a non-space one, as a rename requires (the 0.8 description sets "
    "no bound on create), so that every name can also be sent back in a PATCH.",
}
_DESCRIPTION = string(max_length=255, description='"" means none.')
_UINT64 = string(max_decimal_pattern(2**64 - 1), description="A decimal uint64.")

# ---- request bodies -------------------------------------------------------------------------------------------------

_RSA_KEY = obj({"e": string(r"^0x[0-9a-fA-F]{2,34}$"), "n": string(r"^0x[0-9a-fA-F]{512,}$")}, ("e", "n"))

CREATE_WALLET = obj(
    {
        "name": _CREATE_NAME,
        "description": _DESCRIPTION,
        "wallet_owner_address": ADDRESS,
        "chain_selector": string(
            description="A selector of a network the sandbox does not model (any other string) answers 409 "
            "CHAIN_UNAVAILABLE."
        ),
        "wallet_type": string(enum=tuple(t.value for t in WalletType)),
        "configuration": FREE_OBJECT,
        "status_channel_id": {**UUID, "description": "A channel of the organisation; another id is a 400."},
        "allowed_rsa_signers": {**array(_RSA_KEY, max_items=10, unique=True), "deprecated": True},
        "allowed_ecdsa_signers": {
            **array(ADDRESS, max_items=10, unique=True),
            "deprecated": True,
            "description": "Sandbox: addresses must also be unique ignoring case.",
        },
    },
    ("name", "wallet_owner_address", "chain_selector", "wallet_type"),
)
#: The one status a caller may set (API.md: PATCH with ``status`` = ``archived``); 0.8 allows the whole enum.
_ARCHIVE_ONLY = string(
    enum=("archived",),
    description="Sandbox: only archived, the one move a caller can ask for (the 0.8 description allows every "
    "status of the enum; the service's answer to another is not documented).",
)
UPDATE_WALLET = obj({"name": _NAME, "description": _DESCRIPTION, "status": _ARCHIVE_ONLY})
CREATE_CHANNEL = obj({"name": _CREATE_NAME, "description": _DESCRIPTION}, ("name",))
PATCH_CHANNEL = obj({"name": _NAME, "description": _DESCRIPTION, "status": string(enum=CHANNEL_STATUSES)})

_ABI_INPUT = obj(
    {"indexed": {"type": "boolean"}, "internalType": string(), "name": string(), "type": string()},
    ("indexed", "internalType", "name", "type"),
)
EVENT_ABI = obj(
    {
        "anonymous": {"type": "boolean"},
        "inputs": array(_ABI_INPUT),
        "name": string(min_length=1),
        "type": string(enum=("event",)),
    },
    ("anonymous", "inputs", "name", "type"),
)
_WATCHER_COMMON: dict[str, Schema] = {
    "name": {**_NAME, "minLength": 4, "description": "Sandbox: also at most 255 characters with a non-space one."},
    "chain_selector": KNOWN_CHAIN,
    "address": {
        **ADDRESS,
        "description": "Sandbox: a 0x-prefixed 20-byte hex address, the contract the watcher observes (the 0.8 "
        "description leaves it a plain string).",
    },
    "events": {
        **array(string(min_length=1), min_items=1),
        "description": "Sandbox: each event name non-empty (an empty name observes nothing).",
    },
}
CREATE_WATCHER_WITH_SERVICE = obj(
    {**_WATCHER_COMMON, "service": string(min_length=1), "service_config": FREE_OBJECT},
    ("name", "chain_selector", "address", "service", "events"),
    description="A watcher of a service's events (for example dta, dvp); without abi.",
)
CREATE_WATCHER_WITH_SERVICE["not"] = {"required": ["abi"]}
CREATE_WATCHER_WITH_ABI = obj(
    {**_WATCHER_COMMON, "abi": array(EVENT_ABI, min_items=1)},
    ("name", "chain_selector", "address", "events", "abi"),
    description="A watcher of the events an ABI declares; without service.",
)
CREATE_WATCHER_WITH_ABI["not"] = {"required": ["service"]}
# oneOf without a discriminator: a body naming both service and abi matches both, so it is refused
CREATE_WATCHER: Schema = {
    "oneOf": [CREATE_WATCHER_WITH_SERVICE, CREATE_WATCHER_WITH_ABI],
    "description": "Sandbox: a body naming both service and abi is refused, whatever their values.",
}
UPDATE_WATCHER = obj({"name": _NAME, "status": _ARCHIVE_ONLY})

TRANSACTION_REQUEST = obj(
    {
        "to": ADDRESS,
        "value": DECIMAL,
        "data": string(CALLDATA_RE.pattern),
        "preview": obj({"function_signature": string(), "metadata": FREE_OBJECT}, ("function_signature",), closed=True),
    },
    ("to", "value", "data"),
    closed=True,
)
CREATE_OPERATION = obj(
    {
        "chain_selector": KNOWN_CHAIN,
        "address": {**ADDRESS, "description": "The smart account that executes (a wallet of the organisation)."},
        "wallet_operation_id": string(WALLET_OPERATION_ID_RE.pattern),
        "deadline": integer(0, INT64_MAX, description="Unix seconds; 0 = never expires."),
        "transactions": array(TRANSACTION_REQUEST, min_items=1, max_items=MAX_TRANSACTIONS_PER_OPERATION),
        "signature": string(SIGNATURE_RE.pattern, description="Omitted: the operation is a pending_signature draft."),
    },
    ("chain_selector", "address", "wallet_operation_id", "deadline", "transactions"),
    closed=True,
)
FINALIZE_OPERATION = obj(
    {"status": string(enum=("accepted",)), "signature": string(), "digest": string()},
    ("status", "signature", "digest"),
    closed=True,
)
CANCEL_OPERATION = obj({"status": string(enum=("cancelled",))}, ("status",), closed=True)
PATCH_OPERATION: Schema = {"oneOf": [FINALIZE_OPERATION, CANCEL_OPERATION]}

_SELECTION_TAG = obj(
    {"type": string(enum=(BlockSelection.LATEST.value, BlockSelection.FINALIZED.value))}, ("type",), closed=True
)
_SELECTION_NUMBER = obj(
    {"type": string(enum=(BlockSelection.BLOCK_NUMBER.value,)), "block_number": _UINT64},
    ("type", "block_number"),
    closed=True,
)
EVM_CALL_PARAMS = obj(
    {
        "contract_address": ADDRESS,
        "call_data": string(QUERY_CALLDATA_RE.pattern),
        "block_selection": {"oneOf": [_SELECTION_TAG, _SELECTION_NUMBER]},
        "from_address": {**ADDRESS, "description": "The zero address when omitted."},
    },
    ("contract_address", "call_data", "block_selection"),
    closed=True,
)
CREATE_QUERY = obj(
    {
        "idempotency_key": string(min_length=1, max_length=255),
        "query_kind": string(enum=tuple(k.value for k in QueryKind)),
        "chain_selector": KNOWN_CHAIN,
        "params": EVM_CALL_PARAMS,
        "metadata": {**FREE_OBJECT, "description": f"At most {METADATA_MAX_BYTES // 1024} KB of JSON."},
    },
    ("idempotency_key", "query_kind", "chain_selector", "params"),
    closed=True,
)

# ---- responses -----------------------------------------------------------------------------------------------------

APPLICATION_ERROR = obj(
    {
        "type": string(enum=tuple(t.value for t in ErrorType)),
        "code": string(enum=(*(c.value for c in NotFoundCode), *(c.value for c in ConflictCode))),
        "message": string(description="Human text; it may change between releases, so it must not drive logic."),
    },
    ("type", "message"),
)
_STR, _NSTR = string(), nullable(string())
NETWORK = obj(
    {
        "id": UUID,
        "name": _STR,
        "chain_selector": DECIMAL,
        "chain_id": _STR,
        "chain_family": _STR,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "type": string(enum=tuple(e.value for e in ChainEnvironment)),
    },
    ("id", "name", "chain_selector", "chain_id", "chain_family", "created_at", "updated_at"),
)
WALLET = obj(
    {
        "wallet_id": UUID,
        "name": _STR,
        "description": _STR,
        "address": ADDRESS,
        "wallet_owner_address": ADDRESS,
        "chain_selector": DECIMAL,
        "wallet_type": _STR,
        "status": string(enum=WALLET_STATUSES),
        "status_channel_id": UUID,
        "configuration": FREE_OBJECT,
        "created_at": TIMESTAMP,
        "allowed_rsa_signers": array(_RSA_KEY),
        "allowed_ecdsa_signers": array(ADDRESS),
    },
    (
        "wallet_id",
        "name",
        "address",
        "wallet_owner_address",
        "chain_selector",
        "wallet_type",
        "status",
        "configuration",
        "allowed_rsa_signers",
        "allowed_ecdsa_signers",
    ),
)
CHANNEL = obj(
    {
        "channel_id": UUID,
        "name": _STR,
        "description": _STR,
        "status": string(enum=CHANNEL_STATUSES),
        "created_at": TIMESTAMP,
    },
    ("channel_id", "name", "status", "created_at"),
)
_WATCHER_SUMMARY_FIELDS: dict[str, Schema] = {
    "watcher_id": UUID,
    "name": _STR,
    "channel_id": UUID,
    "created_at": TIMESTAMP,
    "status": string(
        enum=WATCHER_STATUSES,
        description="Sandbox: also archive_failed, which the docs still name (the 0.8 schema dropped it).",
    ),
    "chain_selector": DECIMAL,
    "address": ADDRESS,
    "service": _STR,
    "don_family": _STR,
    "workflow_id": _STR,
}
_WATCHER_REQUIRED = ("watcher_id", "channel_id", "created_at", "status", "chain_selector", "address", "don_family")
WATCHER_SUMMARY = obj(_WATCHER_SUMMARY_FIELDS, _WATCHER_REQUIRED)
WATCHER = obj(
    {
        **_WATCHER_SUMMARY_FIELDS,
        "events": array(_STR),
        "abi": array(EVENT_ABI),
        "service_config": FREE_OBJECT,
    },
    (*_WATCHER_REQUIRED, "events"),
)
SUBJECT = obj(
    {"subject_type": string(enum=tuple(s.value for s in SubjectType)), "subject_id": _STR, "subject_name": _STR},
    ("subject_type", "subject_id", "subject_name"),
)
TRANSACTION = obj(
    {
        "to": ADDRESS,
        "value": DECIMAL,
        "data": _STR,
        "preview_snapshot": obj(
            {"function_signature": _STR, "execution_values": FREE_OBJECT, "metadata": {}},
            ("function_signature", "execution_values"),
        ),
    },
    ("to", "value", "data"),
)
_WORKFLOW_IDS = (
    "operation_writer_workflow_id",
    "operation_writer_workflow_execution_id",
    "operation_status_workflow_id",
    "operation_status_workflow_execution_id",
)
OPERATION = obj(
    {
        "operation_id": UUID,
        "status": string(enum=OPERATION_STATUSES),
        "chain_selector": DECIMAL,
        "address": ADDRESS,
        "wallet_operation_id": _STR,
        "deadline": integer(0, INT64_MAX),
        "transactions": array(TRANSACTION),
        "signature": _NSTR,
        "digest": _NSTR,
        "initiator": {"oneOf": [SUBJECT, {"type": "null"}]},
        "signer": {"oneOf": [SUBJECT, {"type": "null"}]},
        "canceller": {"oneOf": [SUBJECT, {"type": "null"}]},
        "signed_at": TIMESTAMP,
        "cancelled_at": TIMESTAMP,
        "confirmed_at": TIMESTAMP,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        **{name: _STR for name in _WORKFLOW_IDS},
    },
    (
        "operation_id",
        "status",
        "chain_selector",
        "address",
        "wallet_operation_id",
        "deadline",
        "transactions",
        "signature",
        "created_at",
        "updated_at",
    ),
)
OCR_PROOF = obj(
    {"alg": _STR, "ocr_report": _STR, "ocr_context": _STR, "signatures": array(_STR)},
    ("alg", "ocr_report", "ocr_context", "signatures"),
)
QUERY_TARGET = {**ADDRESS, "description": "The contract address the query calls (a string in 0.8, not an object)."}
QUERY = obj(
    {
        "query_id": UUID,
        "channel_id": UUID,
        "status": string(enum=QUERY_STATUSES),
        "query_kind": _STR,
        "chain_selector": DECIMAL,
        "target": QUERY_TARGET,
        "event_hash": _STR,
        "verifiable_result": string(description="Base64 of the DON's JSON result."),
        "proof": OCR_PROOF,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "expires_at": TIMESTAMP,
        **{f"{s}_at": TIMESTAMP for s in QUERY_STATUSES},
        "workflow_id": _STR,
        "workflow_execution_id": _STR,
    },
    ("query_id", "channel_id", "status", "query_kind", "chain_selector", "target", "created_at", "updated_at"),
)
QUERY_ACCEPTED = obj({"query_id": UUID, "status": string(enum=QUERY_STATUSES)}, ("query_id", "status"))
OPERATION_RESPONSE = obj({"operation_id": UUID}, ("operation_id",))
HEALTH_CHECK = obj({"status": _STR}, ("status",))

_STATUS_PAYLOAD_BASE = ("status", "status_reason", "chain_selector", "timestamp")
PAYLOADS: dict[str, Schema] = {
    "operation.status": obj(
        {
            "status": string(enum=OPERATION_STATUSES),
            "status_reason": _STR,
            "operation_id": UUID,
            "wallet_operation_id": _STR,
            "address": ADDRESS,
            "chain_selector": DECIMAL,
            "timestamp": TIMESTAMP,
            "digest": _NSTR,
            "transactions": nullable(array(TRANSACTION)),
            "event_hash": _STR,
            "verifiable_event": _STR,
            **{name: _STR for name in _WORKFLOW_IDS},
        },
        (*_STATUS_PAYLOAD_BASE, "operation_id", "wallet_operation_id", "address"),
    ),
    "query.status": obj(
        {
            "query_id": UUID,
            "status": string(enum=QUERY_STATUSES),
            "target": QUERY_TARGET,
            "chain_selector": DECIMAL,
            "timestamp": TIMESTAMP,
            "event_hash": _STR,
            "verifiable_result": _STR,
            "workflow_id": _STR,
            "workflow_execution_id": _STR,
        },
        ("query_id", "status", "target", "chain_selector", "timestamp"),
    ),
    "watcher.status": obj(
        {
            "status": string(enum=WATCHER_STATUSES),
            "status_reason": _STR,
            "watcher_id": _STR,
            "chain_selector": DECIMAL,
            "timestamp": TIMESTAMP,
            "service": _STR,
            "workflow_id": _STR,
        },
        (*_STATUS_PAYLOAD_BASE, "watcher_id"),
    ),
    "watcher.event": obj(
        {
            "watcher_id": _STR,
            "event_hash": _STR,
            "verifiable_event": _STR,
            "chain_selector": DECIMAL,
            "timestamp": TIMESTAMP,
            "workflow_id": _STR,
            "workflow_execution_id": _STR,
        },
        ("watcher_id", "event_hash", "verifiable_event", "chain_selector", "timestamp"),
    ),
    "wallet.status": obj(
        {
            "status": string(enum=WALLET_STATUSES),
            "status_reason": _STR,
            "wallet_id": UUID,
            "address": ADDRESS,
            "chain_selector": DECIMAL,
            "timestamp": TIMESTAMP,
        },
        (*_STATUS_PAYLOAD_BASE, "wallet_id", "address"),
    ),
}
EVENT = obj(
    {
        "event_id": UUID,
        "headers": obj(
            {
                "type": string(enum=EVENT_TYPES),
                "offset": integer(0, INT64_MAX),
                "proofs": array({"type": "object", "required": ["alg"]}),
            },
            ("type", "offset", "proofs"),
        ),
        "payload": {
            "description": "The variant is chosen by headers.type.",
            "anyOf": [{"$ref": f"#/components/schemas/{payload_name(t)}"} for t in EVENT_TYPES],
        },
    },
    ("payload", "headers"),
)


def list_of(item_ref: str, key: str = "data") -> Schema:
    """A list envelope: ``{data, has_more}`` (``{events, has_more}`` for events)."""
    return obj(
        {key: array({"$ref": f"#/components/schemas/{item_ref}"}), "has_more": {"type": "boolean"}},
        (key, "has_more"),
    )


# ---- query parameters ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One query parameter: its name, schema and what it means."""

    name: str
    schema: Schema
    description: str = ""

    @property
    def is_array(self) -> bool:
        """Whether it is an array filter (repeat the key: ``status=a&status=b``)."""
        return self.schema.get("type") == "array"


def _paging(kind: str, *, offset_default: bool = True, offset_text: str = "Rows to skip.") -> tuple[Param, ...]:
    limits = PAGE_LIMITS[kind]
    offset = integer(0, INT64_MAX)
    if offset_default:
        offset["default"] = 0
    return (
        Param("limit", {**integer(1, limits.maximum), "default": limits.default}),
        Param("offset", offset, offset_text),
    )


def _enum_list(values: tuple[str, ...] | list[str], description: str = "") -> Schema:
    text = "Sandbox: also accepts the name[] spelling and comma-separated values."
    return {**array(string(enum=values)), "description": f"{description} {text}".strip()}


_STRING_LIST: Schema = {
    **array(string()),
    "description": "Sandbox: also accepts the name[] spelling and comma-separated values.",
}
#: The watchers' and operations' ``address`` filter: a plain string in 0.8 (the wallets' and search's are addresses).
_TEXT_ADDRESS = "Matched ignoring case; a value that is no address matches nothing."
_ENVIRONMENT = Param(
    "chain_environment", string(enum=tuple(e.value for e in ChainEnvironment)), "One value: mainnet or testnet."
)
_SUBJECT_TYPES = tuple(s.value for s in SubjectType)


def _subject_filters() -> tuple[Param, ...]:
    out: list[Param] = []
    for role in ("initiator", "signer", "canceller"):
        out.append(Param(f"{role}_subject_type", string(enum=_SUBJECT_TYPES), f"Type of the operation's {role}."))
        out.append(Param(f"{role}_subject_id", string(), f"Id of the operation's {role}."))
    return tuple(out)


_EVENT_SEARCH_TEXT = (
    "Filters that apply to each type (another combination is a 400): "
    + "; ".join(f"{t}: {', '.join(sorted(f))}" for t, f in EVENT_SEARCH_FILTERS.items())
    + ". Universal: type, limit, offset, created.*, chain_environment."
)

#: Query parameters of each list operation, by (method, route pattern).
QUERY_PARAMS: dict[tuple[str, tuple[str, ...]], tuple[Param, ...]] = {
    ("GET", ("wallets",)): (
        *_paging("wallets"),
        Param("name", string(), "Case-insensitive partial match."),
        Param("chain_selector", string()),
        _ENVIRONMENT,
        Param("owner", ADDRESS),
        Param("address", ADDRESS),
        Param("type", string(enum=tuple(t.value for t in WalletType)), "One wallet type."),
        Param("status", _enum_list(WALLET_STATUSES, "Archived wallets are listed only when named here.")),
    ),
    ("GET", ("channels",)): (
        *_paging("channels"),
        Param("name", string()),
        Param("status", _enum_list(CHANNEL_STATUSES, "Archived channels are listed only when named here.")),
    ),
    ("GET", ("channels", "{}", "watchers")): (
        *_paging("watchers"),
        Param("name", string()),
        Param("status", _enum_list(WATCHER_STATUSES, "Archived watchers are listed only when named here.")),
        Param("chain_selector", string()),
        _ENVIRONMENT,
        Param("address", string(), _TEXT_ADDRESS),
        Param("service", _STRING_LIST),
        Param("event_name", string()),
    ),
    ("GET", ("channels", "{}", "operations")): (
        *_paging("operations"),
        Param("status", _enum_list(OPERATION_STATUSES)),
        Param("chain_selector", string()),
        _ENVIRONMENT,
        Param("address", string(), _TEXT_ADDRESS),
        Param("wallet_id", UUID),
        *_subject_filters(),
    ),
    ("GET", ("channels", "{}", "queries")): (
        *_paging("queries"),
        Param("status", _enum_list(QUERY_STATUSES)),
        Param("query_kind", _enum_list(tuple(k.value for k in QueryKind))),
        Param("chain_selector", string()),
        _ENVIRONMENT,
    ),
    ("GET", ("channels", "{}", "events")): (
        *_paging(
            "events",
            offset_default=False,
            offset_text="A message offset: without it the newest events come first; with it, events from that "
            "offset forward.",
        ),
        Param(
            "type",
            _enum_list(EVENT_TYPES, "Sandbox: the 0.8 poll has no filters; older clients sent this one."),
        ),
    ),
    ("GET", ("channels", "{}", "events", "search")): (
        *_paging("events_search", offset_default=False, offset_text="A message offset: events from it forward."),
        Param("type", _enum_list(EVENT_TYPES)),
        *(Param(f"created.{op}", integer(INT64_MIN, INT64_MAX), "Unix seconds.") for op in ("lt", "lte", "gt", "gte")),
        Param("chain_selector", _STRING_LIST),
        _ENVIRONMENT,
        Param("status", _STRING_LIST),
        Param("watcher_id", UUID),
        Param("wallet_id", UUID),
        Param("address", {**array(ADDRESS), "description": _STRING_LIST["description"]}),
        Param("wallet_operation_id", string()),
        Param("operation_id", string()),
        Param("query_id", string()),
        Param("event_name", string()),
        Param("service", _STRING_LIST),
    ),
}


@dataclass(frozen=True)
class Deviation:
    """A place where the sandbox differs from the service on purpose."""

    where: str
    what: str


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("chain_selector of watchers, operations and queries", "only the networks the sandbox models; 400"),
    Deviation("allowed_ecdsa_signers", "unique ignoring case"),
    Deviation("array query filters", "also the name[] spelling and comma-separated values"),
    Deviation("GET /channels/{channel_id}/events", "accepts a type filter (0.8 has none)"),
    Deviation("watcher status", "archive_failed, which the docs still name"),
    Deviation(
        "name of CreateChannel, CreateWallet, CreateWatcher",
        "1-255 characters with a non-space one, as a rename requires (0.8 bounds only the patch bodies); 400",
    ),
    Deviation(
        "CreateWatcher address and events",
        "a 0x address and non-empty event names, what a watcher needs to observe anything (0.8: plain strings); 400",
    ),
    Deviation(
        "status of UpdateWallet, UpdateWatcher",
        "only archived, the one move a caller can ask for (0.8 allows the whole status enum); 400",
    ),
    Deviation(
        "GET /health-check",
        "answers without a key, as the docs say it is anonymous (0.8 applies ApiKeyAuth to it too); a key is accepted",
    ),
    Deviation(
        "400 on GET /wallets, /channels and the watcher, operation and query lists",
        "a malformed parameter is a 400 naming it; 0.8 declares no 400 there (its answer is not documented)",
    ),
    Deviation("429", "any /v1 request under --rate-limit; Retry-After only with --rate-limit-retry-after"),
    Deviation(
        "/sandbox/clock, /sandbox/clock/advance, /sandbox/signers", "the sandbox's control API, not described here"
    ),
)


@dataclass(frozen=True)
class Operation:
    """One operation of the API: its route, body, answer and the errors it declares."""

    method: str
    pattern: tuple[str, ...]
    summary: str
    status: int
    response: str | None
    body: str | None = None
    errors: tuple[int, ...] = (401, 404, 500)
    also: dict[int, str] = field(default_factory=dict)
    description: str = ""
    #: Error statuses the sandbox sends that the 0.8 description does not declare for this operation.
    undeclared: tuple[int, ...] = ()

    @property
    def params(self) -> tuple[Param, ...]:
        """Its query parameters."""
        return QUERY_PARAMS.get((self.method, self.pattern), ())


_W = ("channels", "{}", "watchers")
_O = ("channels", "{}", "operations")
_Q = ("channels", "{}", "queries")
_E = ("channels", "{}", "events")

#: Every operation of the API (``/health-check`` aside), in the order API.md lists them.
OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", ("networks",), "List the networks", 200, "NetworkList", errors=(401, 500)),
    Operation("POST", ("wallets",), "Create a wallet", 201, "Wallet", "CreateWallet", (400, 401, 409, 500)),
    Operation("GET", ("wallets",), "List wallets", 200, "WalletList", errors=(400, 401, 500), undeclared=(400,)),
    Operation("GET", ("wallets", "{}"), "Get a wallet", 200, "Wallet"),
    Operation(
        "PATCH",
        ("wallets", "{}"),
        "Rename, describe or archive a wallet",
        200,
        "Wallet",
        "UpdateWallet",
        (400, 401, 404, 409, 500),
    ),
    Operation("POST", ("channels",), "Create a channel", 201, "Channel", "CreateChannel", (400, 401, 409, 500)),
    Operation("GET", ("channels",), "List channels", 200, "ChannelList", errors=(400, 401, 500), undeclared=(400,)),
    Operation("GET", ("channels", "{}"), "Get a channel", 200, "Channel"),
    Operation(
        "PATCH",
        ("channels", "{}"),
        "Rename, describe or archive a channel",
        200,
        "Channel",
        "PatchChannel",
        (400, 401, 404, 409, 500),
    ),
    Operation("POST", _W, "Create a watcher", 201, "Watcher", "CreateWatcher", (400, 401, 404, 409, 500)),
    Operation(
        "GET", _W, "List a channel's watchers", 200, "WatcherList", errors=(400, 401, 404, 500), undeclared=(400,)
    ),
    Operation("GET", (*_W, "{}"), "Get a watcher", 200, "Watcher"),
    Operation(
        "PATCH",
        (*_W, "{}"),
        "Rename (200) or archive (202) a watcher",
        200,
        "Watcher",
        "UpdateWatcher",
        (400, 401, 404, 409, 500),
        also={202: "Watcher"},
    ),
    Operation(
        "POST",
        _O,
        "Create an operation (a draft without signature)",
        201,
        "OperationResponse",
        "CreateOperation",
        (400, 401, 404, 409, 500),
    ),
    Operation(
        "GET", _O, "List a channel's operations", 200, "OperationList", errors=(400, 401, 404, 500), undeclared=(400,)
    ),
    Operation("GET", (*_O, "{}"), "Get an operation", 200, "Operation"),
    Operation(
        "PATCH", (*_O, "{}"), "Finalize or cancel a draft", 200, "Operation", "PatchOperation", (400, 401, 404, 409)
    ),
    Operation(
        "POST",
        _Q,
        "Create a chain query (idempotent by key)",
        202,
        "QueryAccepted",
        "CreateQuery",
        (400, 401, 404, 409, 429, 500),
    ),
    Operation("GET", _Q, "List a channel's queries", 200, "QueryList", errors=(400, 401, 404, 500), undeclared=(400,)),
    Operation("GET", (*_Q, "{}"), "Get a query", 200, "Query"),
    Operation("GET", _E, "Poll a channel's events", 200, "EventList", errors=(400, 401, 404, 500)),
    Operation(
        "GET",
        (*_E, "search"),
        "Search a channel's events",
        200,
        "EventList",
        errors=(400, 401, 404, 500),
        description=_EVENT_SEARCH_TEXT,
    ),
    Operation("GET", (*_E, "search", "{}"), "Get one event", 200, "Event"),
)

#: Request body schemas by component name.
BODIES: dict[str, Schema] = {
    "CreateWallet": CREATE_WALLET,
    "UpdateWallet": UPDATE_WALLET,
    "CreateChannel": CREATE_CHANNEL,
    "PatchChannel": PATCH_CHANNEL,
    "CreateWatcher": CREATE_WATCHER,
    "UpdateWatcher": UPDATE_WATCHER,
    "CreateOperation": CREATE_OPERATION,
    "PatchOperation": PATCH_OPERATION,
    "CreateQuery": CREATE_QUERY,
}

#: Response schemas by component name.
RESPONSES: dict[str, Schema] = {
    "ApplicationError": APPLICATION_ERROR,
    "HealthCheck": HEALTH_CHECK,
    "Network": NETWORK,
    "NetworkList": list_of("Network"),
    "Wallet": WALLET,
    "WalletList": list_of("Wallet"),
    "Channel": CHANNEL,
    "ChannelList": list_of("Channel"),
    "Watcher": WATCHER,
    "WatcherSummary": WATCHER_SUMMARY,
    "WatcherList": list_of("WatcherSummary"),
    "Operation": OPERATION,
    "OperationResponse": OPERATION_RESPONSE,
    "OperationList": list_of("Operation"),
    "Query": QUERY,
    "QueryAccepted": QUERY_ACCEPTED,
    "QueryList": list_of("Query"),
    "Event": EVENT,
    "EventList": list_of("Event", "events"),
    **{payload_name(t): schema for t, schema in PAYLOADS.items()},
}
