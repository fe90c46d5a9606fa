"""Typed shapes of what the service answers (WIRE.md section 2, API version 0.8.0), for type checkers and readers.

These are :class:`typing.TypedDict` classes: at run time every result is still the plain ``dict`` the service sent,
so fields a newer minor version adds survive untouched (API.md: clients must tolerate unknown fields), and enum
values stay plain strings (an unknown status is kept, never rejected). Required fields are marked ``Required``;
the others may be absent. Timestamps are int64 Unix seconds; chain selectors are decimal strings.

>>> from toolkit.api import Client, Operation
>>> def pending(client: Client, channel_id: str) -> list[Operation]:  # doctest: +SKIP
...     return list(client.iter_operations(channel_id, status=["pending_signature"]))
"""

# No ``from __future__ import annotations`` here: on Python 3.11 ``Required`` inside string annotations is not
# seen by TypedDict, which would make every key optional in ``__required_keys__``.

from typing import Any, Required, TypedDict

__all__ = [
    "Channel",
    "Event",
    "EventABI",
    "EventABIInput",
    "EventHeaders",
    "EventPayload",
    "HealthCheck",
    "Network",
    "OCRProof",
    "Operation",
    "OperationResponse",
    "OperationStatusPayload",
    "Query",
    "QueryAccepted",
    "QueryStatusPayload",
    "QueryTarget",
    "RSAPublicKey",
    "Subject",
    "Transaction",
    "TransactionPreviewSnapshot",
    "Wallet",
    "WalletStatusPayload",
    "Watcher",
    "WatcherEventPayload",
    "WatcherStatusPayload",
    "WatcherSummary",
]


class HealthCheck(TypedDict):
    """``GET /health-check``: ``{"status": "ok"}``."""

    status: str


class Network(TypedDict, total=False):
    """A network the organisation can use (``GET /networks``). ``type`` is ``mainnet`` or ``testnet``."""

    id: Required[str]
    name: Required[str]
    chain_selector: Required[str]
    chain_id: Required[str]
    chain_family: Required[str]
    created_at: Required[int]
    updated_at: Required[int]
    type: str


class RSAPublicKey(TypedDict):
    """An RSA signer key: hex exponent ``e`` and modulus ``n``."""

    e: str
    n: str


class Wallet(TypedDict, total=False):
    """A wallet (smart account). ``status``: pending, deploying, deployed, failed, archived."""

    wallet_id: Required[str]
    name: Required[str]
    description: str
    address: Required[str]
    wallet_owner_address: Required[str]
    chain_selector: Required[str]
    wallet_type: Required[str]
    status: Required[str]
    #: the channel that receives this wallet's ``wallet.status`` events
    status_channel_id: str
    configuration: Required[dict[str, Any]]
    created_at: int
    #: deprecated in 0.8 but required in responses
    allowed_rsa_signers: Required[list[RSAPublicKey]]
    allowed_ecdsa_signers: Required[list[str]]


class Channel(TypedDict, total=False):
    """A channel. ``status``: active, archived."""

    channel_id: Required[str]
    name: Required[str]
    description: str
    status: Required[str]
    created_at: Required[int]


class EventABIInput(TypedDict):
    """One input of an event ABI item (``internalType`` is spelled as in Solidity's ABI JSON)."""

    indexed: bool
    internalType: str
    name: str
    type: str


class EventABI(TypedDict):
    """One event ABI item a watcher observes (``type`` is ``event``)."""

    anonymous: bool
    inputs: list[EventABIInput]
    name: str
    type: str


class WatcherSummary(TypedDict, total=False):
    """A watcher as lists serve it (no ``events``, ``abi`` or ``service_config``).

    ``status``: pending, active, failed, archiving, archived (and ``archive_failed``, which the docs still name).
    """

    watcher_id: Required[str]
    name: str
    channel_id: Required[str]
    created_at: Required[int]
    status: Required[str]
    chain_selector: Required[str]
    address: Required[str]
    service: str
    don_family: Required[str]
    workflow_id: str


class Watcher(WatcherSummary, total=False):
    """A full watcher, as ``GET``/create/update serve it."""

    events: Required[list[str]]
    abi: list[EventABI]
    service_config: dict[str, Any]


class TransactionPreviewSnapshot(TypedDict, total=False):
    """What the service decoded of a transaction's call when the operation was created."""

    function_signature: Required[str]
    execution_values: Required[dict[str, Any]]
    metadata: Any


class Transaction(TypedDict, total=False):
    """One transaction of an operation: ``value`` is a decimal wei string, ``data`` hex call data."""

    to: Required[str]
    value: Required[str]
    data: Required[str]
    preview_snapshot: TransactionPreviewSnapshot


class Subject(TypedDict):
    """Who initiated, signed or cancelled an operation (``subject_type``: api_key, user)."""

    subject_type: str
    subject_id: str
    subject_name: str


class Operation(TypedDict, total=False):
    """A full operation record. ``status`` is one of :data:`toolkit.spec.OPERATION_STATUSES`."""

    operation_id: Required[str]
    status: Required[str]
    chain_selector: Required[str]
    address: Required[str]
    wallet_operation_id: Required[str]
    #: Unix seconds; 0 = never expires
    deadline: Required[int]
    transactions: Required[list[Transaction]]
    #: required but ``None`` on a draft
    signature: Required[str | None]
    digest: str | None
    initiator: Subject | None
    signer: Subject | None
    canceller: Subject | None
    signed_at: int
    cancelled_at: int
    confirmed_at: int
    created_at: Required[int]
    updated_at: Required[int]
    operation_writer_workflow_id: str
    operation_writer_workflow_execution_id: str
    operation_status_workflow_id: str
    operation_status_workflow_execution_id: str


class OperationResponse(TypedDict):
    """``POST /channels/{id}/operations`` (201): the new operation's id only."""

    operation_id: str


class OCRProof(TypedDict):
    """A DON proof: hex ``ocr_report`` and ``ocr_context``, and hex 65-byte ``signatures``."""

    alg: str
    ocr_report: str
    ocr_context: str
    signatures: list[str]


class QueryTarget(TypedDict, total=False):
    """The call a chain query makes, as the decoded ``verifiable_result`` carries it (``data.target``).

    In 0.8 the ``target`` of a :class:`Query` and of a ``query.status`` payload is a string, the contract address;
    sandboxes before it sent this object there instead. The client hands either back as sent; the warehouse stores
    the address (:func:`toolkit.spec.query_target_address`) and keeps an object whole in ``extra``.
    """

    from_address: str
    contract_address: str
    call_data: str


class Query(TypedDict, total=False):
    """A chain query. ``status``: accepted, sending, sent, completed, failed, expired."""

    query_id: Required[str]
    channel_id: Required[str]
    status: Required[str]
    query_kind: Required[str]
    chain_selector: Required[str]
    #: the contract address the query calls (0.8: a string; see :class:`QueryTarget` for the older object)
    target: Required[str]
    event_hash: str
    #: base64 of the DON's JSON result (completed and failed queries)
    verifiable_result: str
    proof: OCRProof
    created_at: Required[int]
    updated_at: Required[int]
    expires_at: int
    accepted_at: int
    sending_at: int
    sent_at: int
    completed_at: int
    failed_at: int
    expired_at: int
    workflow_id: str
    workflow_execution_id: str


class QueryAccepted(TypedDict):
    """``POST /channels/{id}/queries`` (202): the query's id and status (the original one for a reused key)."""

    query_id: str
    status: str


class EventHeaders(TypedDict):
    """An event's type, its per-channel message ``offset``, and its proofs (OCR proofs, or other ``alg`` objects)."""

    type: str
    offset: int
    proofs: list[OCRProof | dict[str, Any]]


class OperationStatusPayload(TypedDict, total=False):
    """Payload of ``operation.status``."""

    status: Required[str]
    status_reason: Required[str]
    operation_id: Required[str]
    wallet_operation_id: Required[str]
    address: Required[str]
    chain_selector: Required[str]
    timestamp: Required[int]
    digest: str | None
    transactions: list[Transaction] | None
    event_hash: str
    verifiable_event: str
    operation_writer_workflow_id: str
    operation_writer_workflow_execution_id: str
    operation_status_workflow_id: str
    operation_status_workflow_execution_id: str


class QueryStatusPayload(TypedDict, total=False):
    """Payload of ``query.status``."""

    query_id: Required[str]
    status: Required[str]
    #: the contract address (0.8: a string)
    target: Required[str]
    chain_selector: Required[str]
    timestamp: Required[int]
    event_hash: str
    verifiable_result: str
    workflow_id: str
    workflow_execution_id: str


class WatcherStatusPayload(TypedDict, total=False):
    """Payload of ``watcher.status``."""

    status: Required[str]
    status_reason: Required[str]
    watcher_id: Required[str]
    chain_selector: Required[str]
    timestamp: Required[int]
    service: str
    workflow_id: str


class WatcherEventPayload(TypedDict, total=False):
    """Payload of ``watcher.event``: an observed on-chain event, ``verifiable_event`` in base64."""

    watcher_id: Required[str]
    event_hash: Required[str]
    verifiable_event: Required[str]
    chain_selector: Required[str]
    timestamp: Required[int]
    workflow_id: str
    workflow_execution_id: str


class WalletStatusPayload(TypedDict):
    """Payload of ``wallet.status``."""

    status: str
    status_reason: str
    wallet_id: str
    address: str
    chain_selector: str
    timestamp: int


#: The payload variant is chosen by ``headers.type``.
EventPayload = (
    OperationStatusPayload | QueryStatusPayload | WatcherStatusPayload | WatcherEventPayload | WalletStatusPayload
)


class Event(TypedDict, total=False):
    """One event of a channel's log."""

    event_id: str
    headers: Required[EventHeaders]
    payload: Required[EventPayload]
