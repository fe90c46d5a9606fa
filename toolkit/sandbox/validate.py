"""Request-body validation, as the service's schema does it: 400 ``VALIDATION_ERROR`` for any violation.

Closed bodies (``CreateOperation``, its transactions, ``PatchOperation``, ``CreateQuery`` and its params) reject
unknown fields; the other bodies ignore them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolkit.sandbox.apierror import conflict, validation
from toolkit.sandbox.networks import MODELS
from toolkit.spec import (
    ADDRESS_RE,
    CALLDATA_RE,
    DECIMAL_RE,
    MAX_TRANSACTIONS_PER_OPERATION,
    QUERY_CALLDATA_RE,
    SIGNATURE_RE,
    UUID_RE,
    WALLET_OPERATION_ID_RE,
    ConflictCode,
    QueryKind,
    WalletType,
)

INT64_MAX = 2**63 - 1
_RSA_E = re.compile(r"^0x[0-9a-fA-F]{2,34}$")
_RSA_N = re.compile(r"^0x[0-9a-fA-F]{512,}$")


def parse_json(body: bytes) -> dict:
    """The request body as a JSON object."""
    try:
        data = json.loads(body or b"null")
    except ValueError:
        raise validation("request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise validation("request body must be a JSON object")
    return data


def _closed(obj: dict, allowed: set[str], where: str) -> None:
    extra = sorted(set(obj) - allowed)
    if extra:
        raise validation(f"{where}: unknown field {extra[0]!r}")


def _obj(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise validation(f"{where} must be an object")
    return value


def _required(obj: dict, names: tuple[str, ...], where: str) -> None:
    for name in names:
        if obj.get(name) is None:
            raise validation(f"{where}: {name} is required")


def _str(
    value: Any,
    where: str,
    pattern: re.Pattern | None = None,
    min_len: int = 0,
    max_len: int | None = None,
    non_blank: bool = False,
) -> str:
    if not isinstance(value, str):
        raise validation(f"{where} must be a string")
    if len(value) < min_len or (max_len is not None and len(value) > max_len):
        raise validation(f"{where} must be {min_len}-{max_len or 'any'} characters")
    if non_blank and not value.strip():
        raise validation(f"{where} must contain a non-space character")
    if pattern is not None and not pattern.match(value):
        raise validation(f"{where} has an invalid format")
    return value


def _name(value: Any, where: str, min_len: int = 1) -> str:
    return _str(value, where, min_len=min_len, max_len=255, non_blank=True)


def _description(obj: dict) -> None:
    if "description" in obj and obj["description"] is not None:
        _str(obj["description"], "description", max_len=255)


def _chain(value: Any, where: str = "chain_selector") -> str:
    selector = _str(value, where, DECIMAL_RE)
    if selector not in MODELS:
        raise validation(f"{where}: unknown chain selector")
    return selector


def _int64(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise validation(f"{where} must be an integer between 0 and 2^63-1")
    return value


def create_wallet(body: dict) -> dict:
    """``CreateWallet``."""
    _required(body, ("name", "wallet_owner_address", "chain_selector", "wallet_type"), "wallet")
    _name(body["name"], "name")
    _str(body["wallet_owner_address"], "wallet_owner_address", ADDRESS_RE)
    selector = _str(body["chain_selector"], "chain_selector", DECIMAL_RE)
    if selector not in MODELS:
        raise conflict(ConflictCode.CHAIN_UNAVAILABLE, "chain is unavailable for wallet creation")
    if body["wallet_type"] not in {t.value for t in WalletType}:
        raise validation("wallet_type: unknown value")
    _description(body)
    if body.get("configuration") is not None:
        _obj(body["configuration"], "configuration")
    if body.get("status_channel_id") is not None:
        _str(body["status_channel_id"], "status_channel_id", UUID_RE)
    signers = body.get("allowed_ecdsa_signers")
    if signers is not None:
        if not isinstance(signers, list) or len(signers) > 10 or len({str(s).lower() for s in signers}) != len(signers):
            raise validation("allowed_ecdsa_signers must be 0-10 unique addresses")
        for s in signers:
            _str(s, "allowed_ecdsa_signers[]", ADDRESS_RE)
    rsa = body.get("allowed_rsa_signers")
    if rsa is not None:
        if not isinstance(rsa, list) or len(rsa) > 10:
            raise validation("allowed_rsa_signers must be 0-10 keys")
        for key in rsa:
            key = _obj(key, "allowed_rsa_signers[]")
            _str(key.get("e"), "allowed_rsa_signers[].e", _RSA_E)
            _str(key.get("n"), "allowed_rsa_signers[].n", _RSA_N)
    return body


def update_wallet(body: dict) -> dict:
    """``UpdateWallet``."""
    if "name" in body:
        _name(body["name"], "name")
    _description(body)
    if "status" in body and body["status"] != "archived":
        raise validation("status may only be set to archived")
    return body


def create_channel(body: dict) -> dict:
    """``CreateChannel``."""
    _required(body, ("name",), "channel")
    _name(body["name"], "name")
    _description(body)
    return body


def patch_channel(body: dict) -> dict:
    """``PatchChannel``."""
    if "name" in body:
        _name(body["name"], "name")
    _description(body)
    if "status" in body and body["status"] not in ("active", "archived"):
        raise validation("status must be active or archived")
    return body


def _event_abi(item: Any) -> None:
    item = _obj(item, "abi[]")
    if not isinstance(item.get("anonymous"), bool) or item.get("type") != "event":
        raise validation("abi[]: anonymous (bool) and type 'event' are required")
    _str(item.get("name"), "abi[].name", min_len=1)
    inputs = item.get("inputs")
    if not isinstance(inputs, list):
        raise validation("abi[].inputs must be an array")
    for arg in inputs:
        arg = _obj(arg, "abi[].inputs[]")
        if not isinstance(arg.get("indexed"), bool):
            raise validation("abi[].inputs[].indexed must be a boolean")
        for key in ("internalType", "name", "type"):
            _str(arg.get(key), f"abi[].inputs[].{key}")


def create_watcher(body: dict) -> dict:
    """``CreateWatcher``: one of ``CreateWatcherWithService`` / ``CreateWatcherWithABI``."""
    _required(body, ("name", "chain_selector", "address", "events"), "watcher")
    _name(body["name"], "name", min_len=4)
    _chain(body["chain_selector"])
    _str(body["address"], "address", ADDRESS_RE)
    events = body["events"]
    if not isinstance(events, list) or not events:
        raise validation("events must be a non-empty array")
    for name in events:
        _str(name, "events[]", min_len=1)
    has_service, has_abi = body.get("service") is not None, body.get("abi") is not None
    if has_service == has_abi:
        raise validation("a watcher is created from exactly one of service or abi")
    if has_service:
        _str(body["service"], "service", min_len=1)
        if body.get("service_config") is not None:
            _obj(body["service_config"], "service_config")
    else:
        if not isinstance(body["abi"], list) or not body["abi"]:
            raise validation("abi must be a non-empty array")
        for item in body["abi"]:
            _event_abi(item)
    return {k: v for k, v in body.items() if v is not None}


def update_watcher(body: dict) -> dict:
    """``UpdateWatcher``."""
    if "name" in body:
        _name(body["name"], "name")
    if "status" in body and body["status"] != "archived":
        raise validation("status may only be set to archived")
    return body


def _transaction(tx: Any, index: int) -> None:
    where = f"transactions[{index}]"
    tx = _obj(tx, where)
    _closed(tx, {"to", "value", "data", "preview"}, where)
    _required(tx, ("to", "value", "data"), where)
    _str(tx["to"], f"{where}.to", ADDRESS_RE)
    _str(tx["value"], f"{where}.value", DECIMAL_RE)
    _str(tx["data"], f"{where}.data", CALLDATA_RE)
    if "preview" in tx:
        preview = _obj(tx["preview"], f"{where}.preview")
        _closed(preview, {"function_signature", "metadata"}, f"{where}.preview")
        _str(preview.get("function_signature"), f"{where}.preview.function_signature")


def create_operation(body: dict) -> dict:
    """``CreateOperation`` (closed)."""
    _closed(
        body, {"chain_selector", "address", "wallet_operation_id", "deadline", "transactions", "signature"}, "operation"
    )
    for name in ("chain_selector", "address", "wallet_operation_id", "deadline", "transactions"):
        if name not in body:
            raise validation(f"operation: {name} is required")
    _chain(body["chain_selector"])
    _str(body["address"], "address", ADDRESS_RE)
    _str(body["wallet_operation_id"], "wallet_operation_id", WALLET_OPERATION_ID_RE)
    _int64(body["deadline"], "deadline")
    txs = body["transactions"]
    if not isinstance(txs, list) or not 1 <= len(txs) <= MAX_TRANSACTIONS_PER_OPERATION:
        raise validation(f"transactions must hold 1-{MAX_TRANSACTIONS_PER_OPERATION} items")
    for i, tx in enumerate(txs):
        _transaction(tx, i)
    if body.get("signature") is not None:
        _str(body["signature"], "signature", SIGNATURE_RE)
    return body


def patch_operation(body: dict) -> dict:
    """``PatchOperation``: ``FinalizeOperation`` or ``CancelOperation`` (both closed)."""
    status = body.get("status")
    if status == "accepted":
        _closed(body, {"status", "signature", "digest"}, "finalize")
        _str(body.get("signature"), "signature")
        _str(body.get("digest"), "digest")
    elif status == "cancelled":
        _closed(body, {"status"}, "cancel")
    else:
        raise validation("status must be accepted (finalize) or cancelled (cancel)")
    return body


def _block_selection(value: Any) -> None:
    sel = _obj(value, "params.block_selection")
    kind = sel.get("type")
    if kind in ("latest", "finalized"):
        _closed(sel, {"type"}, "params.block_selection")
    elif kind == "block_number":
        _closed(sel, {"type", "block_number"}, "params.block_selection")
        number = _str(sel.get("block_number"), "params.block_selection.block_number", DECIMAL_RE)
        if int(number) >= 2**64:
            raise validation("params.block_selection.block_number must fit uint64")
    else:
        raise validation("params.block_selection.type must be latest, finalized or block_number")


def create_query(body: dict) -> dict:
    """``CreateQuery`` with ``EVMCallQueryParams`` (closed)."""
    _closed(body, {"idempotency_key", "query_kind", "chain_selector", "params", "metadata"}, "query")
    _required(body, ("idempotency_key", "query_kind", "chain_selector", "params"), "query")
    _str(body["idempotency_key"], "idempotency_key", min_len=1, max_len=255)
    if body["query_kind"] not in {k.value for k in QueryKind}:
        raise validation("query_kind: unknown value")
    _chain(body["chain_selector"])
    params = _obj(body["params"], "params")
    _closed(params, {"contract_address", "call_data", "block_selection", "from_address"}, "params")
    _required(params, ("contract_address", "call_data", "block_selection"), "params")
    _str(params["contract_address"], "params.contract_address", ADDRESS_RE)
    _str(params["call_data"], "params.call_data", QUERY_CALLDATA_RE)
    if params.get("from_address") is not None:
        _str(params["from_address"], "params.from_address", ADDRESS_RE)
    _block_selection(params["block_selection"])
    if body.get("metadata") is not None:
        _obj(body["metadata"], "metadata")
        if len(json.dumps(body["metadata"])) > 16 * 1024:
            raise validation("metadata must be at most 16 KB")
    return body
