"""The service's vocabulary, defined once.

Every status, terminal set, stage order, event type, error type and code of the Channel-Based Chain Operations
Service (``API.md``, with the wire facts of ``WIRE.md``) lives here. Both the toolkit and the sandbox import it;
it imports only the standard library.

Values the service may add later (minor versions add optional fields and enum values) are not errors anywhere in
the toolkit: code that meets an unknown value keeps it as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

API_VERSION = "0.8.0"


class OperationStatus(StrEnum):
    """Operation statuses in lifecycle order (drafts first, then the relay ladder, then the other terminals)."""

    PENDING_SIGNATURE = "pending_signature"
    ACCEPTED = "accepted"
    SENDING = "sending"
    SENT = "sent"
    BROADCASTING = "broadcasting"
    CONFIRMED_LATEST = "confirmed_latest"
    CONFIRMED_SAFE = "confirmed_safe"
    CONFIRMED = "confirmed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


OPERATION_STATUSES: tuple[str, ...] = tuple(s.value for s in OperationStatus)
OPERATION_TERMINAL: frozenset[str] = frozenset({"confirmed", "failed", "cancelled", "expired"})
#: Rank of each operation status in lifecycle order; ties in a timestamp are broken by it.
OPERATION_STAGE_ORDER: dict[str, int] = {s: i for i, s in enumerate(OPERATION_STATUSES)}
#: Finality stages an operation may reach, from weakest to strongest confidence.
FINALITY_STAGES: tuple[str, ...] = ("confirmed_latest", "confirmed_safe", "confirmed")
#: Operation statuses whose ``operation.status`` event carries a DON proof.
OPERATION_PROOF_STATUSES: frozenset[str] = frozenset(FINALITY_STAGES)


class QueryStatus(StrEnum):
    """Chain-query statuses in lifecycle order."""

    ACCEPTED = "accepted"
    SENDING = "sending"
    SENT = "sent"
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"


QUERY_STATUSES: tuple[str, ...] = tuple(s.value for s in QueryStatus)
QUERY_TERMINAL: frozenset[str] = frozenset({"completed", "failed", "expired"})
QUERY_STAGE_ORDER: dict[str, int] = {s: i for i, s in enumerate(QUERY_STATUSES)}
#: Query statuses whose ``query.status`` event carries a DON proof (``failed`` only when the DON answered: a query
#: that failed in dispatch, before the DON had it, carries none; see :func:`event_requires_proof`).
QUERY_PROOF_STATUSES: frozenset[str] = frozenset({"completed", "failed"})
#: Query statuses that show the query was dispatched to the DON (``sent``: awaiting its callback; ``completed``: its
#: answer). A ``failed`` query whose history holds neither, and that carries no DON result, failed in dispatch.
QUERY_DISPATCHED_STATUSES: frozenset[str] = frozenset({"sent", "completed"})


class WatcherStatus(StrEnum):
    """Watcher statuses. ``archive_failed`` left the 0.7 spec but the docs still name it: accept it."""

    PENDING = "pending"
    ACTIVE = "active"
    FAILED = "failed"
    ARCHIVING = "archiving"
    ARCHIVED = "archived"
    ARCHIVE_FAILED = "archive_failed"


WATCHER_STATUSES: tuple[str, ...] = tuple(s.value for s in WatcherStatus)
WATCHER_TERMINAL: frozenset[str] = frozenset({"archived"})


class WalletStatus(StrEnum):
    """Wallet (smart account) statuses."""

    PENDING = "pending"
    DEPLOYING = "deploying"
    DEPLOYED = "deployed"
    FAILED = "failed"
    ARCHIVED = "archived"


WALLET_STATUSES: tuple[str, ...] = tuple(s.value for s in WalletStatus)


class ChannelStatus(StrEnum):
    """Channel statuses."""

    ACTIVE = "active"
    ARCHIVED = "archived"


CHANNEL_STATUSES: tuple[str, ...] = tuple(s.value for s in ChannelStatus)


class WalletType(StrEnum):
    """Wallet signer types (``protected_rsa`` is new in 0.8)."""

    ECDSA = "ecdsa"
    RSA = "rsa"
    PROTECTED_ECDSA = "protected_ecdsa"
    PROTECTED_RSA = "protected_rsa"


class ChainEnvironment(StrEnum):
    """Network type (``ChainEnvironment`` in 0.8, ``NetworkType`` in 0.7; same values)."""

    MAINNET = "mainnet"
    TESTNET = "testnet"


class QueryKind(StrEnum):
    """Chain-query kinds."""

    EVM_CALL = "evm_call"


class BlockSelection(StrEnum):
    """Block selections a query accepts (there is no ``safe``)."""

    LATEST = "latest"
    FINALIZED = "finalized"
    BLOCK_NUMBER = "block_number"


class SubjectType(StrEnum):
    """Who initiated, signed or cancelled an operation."""

    API_KEY = "api_key"
    USER = "user"


class EventType(StrEnum):
    """Event types of a channel's event log."""

    OPERATION_STATUS = "operation.status"
    QUERY_STATUS = "query.status"
    WATCHER_STATUS = "watcher.status"
    WATCHER_EVENT = "watcher.event"
    WALLET_STATUS = "wallet.status"


EVENT_TYPES: tuple[str, ...] = tuple(t.value for t in EventType)

#: Payload field naming the subject of each event type.
EVENT_SUBJECT_FIELD: dict[str, str] = {
    "operation.status": "operation_id",
    "query.status": "query_id",
    "watcher.status": "watcher_id",
    "watcher.event": "watcher_id",
    "wallet.status": "wallet_id",
}

#: Search filters that apply to each event type; any other filter with that type is a 400 (WIRE.md section 1).
EVENT_SEARCH_FILTERS: dict[str, frozenset[str]] = {
    "operation.status": frozenset({"status", "chain_selector", "address", "wallet_operation_id", "operation_id"}),
    "query.status": frozenset({"status", "chain_selector", "query_id"}),
    "watcher.status": frozenset({"watcher_id", "status", "chain_selector"}),
    "watcher.event": frozenset({"watcher_id", "chain_selector", "address", "event_name", "service"}),
    "wallet.status": frozenset({"wallet_id", "status", "chain_selector", "address"}),
}
#: Search parameters that apply to every type.
EVENT_SEARCH_UNIVERSAL: frozenset[str] = frozenset(
    {"type", "limit", "offset", "created.lt", "created.lte", "created.gt", "created.gte", "chain_environment"}
)

#: Default minimum of distinct DON signatures a verifier requires (F+1 with F=3).
PROOF_MIN_SIGNATURES = 4


class Verdict(StrEnum):
    """``event_verifications.verdict``: what verifying a proof-bearing event's DON proof found."""

    VERIFIED = "verified"
    INVALID = "invalid"
    MISSING_PROOF = "missing_proof"


def event_requires_proof(event_type: str, status: str | None, *, failed_in_dispatch: bool = False) -> bool:
    """Whether an event of this type (and status, for status events) must carry a DON proof (API.md, Events).

    A query that fails "by DON callback or dispatch" carries a proof only "when from the DON" (API.md, Query
    status): ``failed_in_dispatch`` says the ``failed`` event came from dispatch (the query never reached ``sent``
    and the event carries no DON result), and then no proof is owed."""
    if event_type == EventType.WATCHER_EVENT:
        return True
    if event_type == EventType.OPERATION_STATUS:
        return status in OPERATION_PROOF_STATUSES
    if event_type == EventType.QUERY_STATUS:
        return status in QUERY_PROOF_STATUSES and not (failed_in_dispatch and status == QueryStatus.FAILED)
    return False


class ErrorType(StrEnum):
    """``ApplicationError.type`` values."""

    VALIDATION_ERROR = "VALIDATION_ERROR"
    NOT_FOUND = "NOT_FOUND"
    CONFLICT = "CONFLICT"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    ORGANIZATION_NOT_FOUND = "ORGANIZATION_NOT_FOUND"


class NotFoundCode(StrEnum):
    """``ApplicationError.code`` values under ``NOT_FOUND``."""

    CHANNEL_NOT_FOUND = "CHANNEL_NOT_FOUND"
    WALLET_NOT_FOUND = "WALLET_NOT_FOUND"
    OPERATION_NOT_FOUND = "OPERATION_NOT_FOUND"
    WATCHER_NOT_FOUND = "WATCHER_NOT_FOUND"
    QUERY_NOT_FOUND = "QUERY_NOT_FOUND"


class ConflictCode(StrEnum):
    """``ApplicationError.code`` values under ``CONFLICT``."""

    CHANNEL_ALREADY_EXISTS = "CHANNEL_ALREADY_EXISTS"
    WALLET_ALREADY_EXISTS = "WALLET_ALREADY_EXISTS"
    WATCHER_ALREADY_EXISTS = "WATCHER_ALREADY_EXISTS"
    IDEMPOTENCY_KEY_MISMATCH = "IDEMPOTENCY_KEY_MISMATCH"
    OPERATION_NOT_FINALIZABLE = "OPERATION_NOT_FINALIZABLE"
    OPERATION_NOT_CANCELLABLE = "OPERATION_NOT_CANCELLABLE"
    OPERATION_DEADLINE_ELAPSED = "OPERATION_DEADLINE_ELAPSED"
    RESOURCE_VERSION_CONFLICT = "RESOURCE_VERSION_CONFLICT"
    WALLET_ALREADY_ARCHIVED = "WALLET_ALREADY_ARCHIVED"
    CHAIN_UNAVAILABLE = "CHAIN_UNAVAILABLE"


#: Failure codes inside a failed query's decoded ``verifiable_result`` (``data.error.code``).
QUERY_FAILURE_CODES: tuple[str, ...] = (
    "CRE_GATEWAY_REJECTED",
    "CONTRACT_NOT_FOUND",
    "CALL_REVERTED",
    "CHAIN_UNAVAILABLE",
    "BLOCK_SELECTION_NOT_AVAILABLE",
    "CRE_WORKFLOW_FAILED",
    "QUERY_EXPIRED",
    "INTERNAL_ERROR",
)


@dataclass(frozen=True)
class PageLimits:
    """``limit`` range and default of one list endpoint."""

    default: int
    maximum: int


#: Page limits per list endpoint (WIRE.md section 1). ``offset`` is a row skip except on the two event endpoints,
#: where it is a per-channel message offset.
PAGE_LIMITS: dict[str, PageLimits] = {
    "wallets": PageLimits(default=50, maximum=100),
    "channels": PageLimits(default=20, maximum=50),
    "watchers": PageLimits(default=20, maximum=50),
    "operations": PageLimits(default=20, maximum=100),
    "queries": PageLimits(default=20, maximum=100),
    "events": PageLimits(default=200, maximum=200),
    "events_search": PageLimits(default=50, maximum=200),
}

#: HTTP statuses with which a service refuses one channel's resources while it lists the channel (deleted after the
#: channel list was read, forbidden to this key, in conflict, gone, unavailable for legal reasons): a sync records
#: that channel's problem with its request and goes on with the other channels.
CHANNEL_REFUSED_STATUSES = frozenset({403, 404, 409, 410, 451})

MAX_TRANSACTIONS_PER_OPERATION = 16
#: Seconds before a draft's deadline within which the service refuses to finalize it.
FINALIZE_DEADLINE_BUFFER_SECONDS = 60
#: Default time-to-live of a chain query, in seconds.
QUERY_TTL_SECONDS = 300

ADDRESS_RE = re.compile(r"^0x[a-fA-F0-9]{40}$")
DECIMAL_RE = re.compile(r"^[0-9]+$")
WALLET_OPERATION_ID_RE = re.compile(r"^[0-9]{1,78}$")
CALLDATA_RE = re.compile(r"^(0x)?([a-fA-F0-9]{2})*$")
QUERY_CALLDATA_RE = re.compile(r"^0x([0-9a-fA-F]{2})*$")
SIGNATURE_RE = re.compile(r"^0x([0-9a-fA-F]{130}|[0-9a-fA-F]{512})$")
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


@dataclass(frozen=True)
class KnownNetwork:
    """A network of the service's published list (WIRE.md section 6)."""

    name: str
    chain_id: str
    chain_selector: str
    type: str


KNOWN_NETWORKS: tuple[KnownNetwork, ...] = (
    KnownNetwork("Ethereum Mainnet", "1", "5009297550715157269", "mainnet"),
    KnownNetwork("Arbitrum One", "42161", "4949039107694359620", "mainnet"),
    KnownNetwork("Avalanche", "43114", "6433500567565415381", "mainnet"),
    KnownNetwork("Polygon", "137", "4051577828743386545", "mainnet"),
    KnownNetwork("Base", "8453", "15971525489660198786", "mainnet"),
    KnownNetwork("Ethereum Sepolia", "11155111", "16015286601757825753", "testnet"),
    KnownNetwork("Arbitrum Sepolia", "421614", "3478487238524512106", "testnet"),
    KnownNetwork("Avalanche Fuji", "43113", "14767482510784806043", "testnet"),
    KnownNetwork("Polygon Amoy", "80002", "16281711391670634445", "testnet"),
    KnownNetwork("Base Sepolia", "84532", "10344971235874465080", "testnet"),
)


def query_target_address(target: object) -> str | None:
    """The contract address a query's ``target`` names: the string itself (0.8), or the ``contract_address`` of the
    object sandboxes before 0.8 sent there; ``None`` when it names none."""
    if isinstance(target, str):
        return target
    if isinstance(target, dict) and isinstance(target.get("contract_address"), str):
        return target["contract_address"]
    return None
