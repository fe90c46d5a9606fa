"""Operations: create (signed or draft), finalize, cancel, expiry, and the relay/finality ladder per network."""

from __future__ import annotations

from toolkit.sandbox.apierror import conflict, not_found
from toolkit.sandbox.core import Core
from toolkit.sandbox.eventlog import EventMeta
from toolkit.sandbox.messy import Mess
from toolkit.sandbox.networks import MODELS, NetworkModel
from toolkit.sandbox.proofs import encode_blob, event_hash, rfc3339
from toolkit.spec import (
    FINALIZE_DEADLINE_BUFFER_SECONDS,
    OPERATION_PROOF_STATUSES,
    OPERATION_TERMINAL,
    ConflictCode,
    NotFoundCode,
)

_REASONS = {
    "pending_signature": "draft created; awaiting signature",
    "accepted": "operation accepted for relay",
    "sending": "relayer picked up the operation",
    "sent": "transaction submitted to the mempool",
    "broadcasting": "awaiting block inclusion",
    "cancelled": "draft cancelled",
    "expired": "deadline elapsed",
}
_CONFIDENCE = {"confirmed_latest": "latest", "confirmed_safe": "safe", "confirmed": "finalized"}
_WRITER_WORKFLOW_KEYS = ("operation_writer_workflow_id", "operation_writer_workflow_execution_id")
_STATUS_WORKFLOW_KEYS = ("operation_status_workflow_id", "operation_status_workflow_execution_id")
#: Share of failures rejected before broadcast (the rest revert on chain).
PRE_BROADCAST_SHARE = 0.4


class OperationsMixin(Core):
    """Operation lifecycle."""

    forced: dict[str, bool]
    #: messy event histories (the ``messy`` scenario shape); None serves every event once, in order
    mess: Mess | None = None

    def create_operation(self, channel_id: str, body: dict) -> dict:
        """POST /channels/{id}/operations: ``accepted`` when signed, else a ``pending_signature`` draft."""
        self.open_channel(channel_id)  # type: ignore[attr-defined]
        wallet = self.org.wallet_by_address(body["address"])
        if wallet is None:
            raise not_found(NotFoundCode.WALLET_NOT_FOUND, "no wallet of this organisation has that address")
        if wallet["status"] == "archived":
            raise conflict(ConflictCode.WALLET_ALREADY_ARCHIVED, "wallet is archived and accepts no operations")
        now, signed = self.now, body.get("signature") is not None
        op = {
            "operation_id": self.uuid(),
            "status": "accepted" if signed else "pending_signature",
            "chain_selector": body["chain_selector"],
            "address": body["address"],
            "wallet_operation_id": str(int(body["wallet_operation_id"])),
            "deadline": body["deadline"],
            "transactions": [_transaction(t) for t in body["transactions"]],
            "signature": body.get("signature"),
            "digest": None,
            "initiator": self.subject,
            "signer": self.subject if signed else None,
            "canceller": None,
        }
        if signed:
            op["signed_at"] = now
        op.update({"created_at": now, "updated_at": now})
        oid = op["operation_id"]
        self.org.operations[oid] = op
        self.org.channel_operations[channel_id].append(oid)
        self.org.operation_wallet[oid] = wallet["wallet_id"]
        self._op_channel[oid] = channel_id
        self._op_event(op, _REASONS[op["status"]])
        if signed:
            self._start_relay(oid)
        elif op["deadline"]:
            self.engine.schedule(op["deadline"], self._expire_draft, oid)
        return op

    def operation(self, channel_id: str, operation_id: str) -> dict:
        """The operation of that channel, or 404 ``OPERATION_NOT_FOUND``."""
        self.channel(channel_id)  # type: ignore[attr-defined]
        op = self.org.operations.get(operation_id)
        if op is None or self._op_channel.get(operation_id) != channel_id:
            raise not_found(NotFoundCode.OPERATION_NOT_FOUND, "operation not found")
        return op

    def finalize_operation(self, channel_id: str, operation_id: str, signature: str, digest: str) -> dict:
        """PATCH status=accepted: sign a draft. An elapsed (or within-buffer) deadline expires it inline."""
        op = self.operation(channel_id, operation_id)
        if op["status"] == "expired":  # API.md: once a draft expired, finalize gives OPERATION_DEADLINE_ELAPSED
            raise conflict(ConflictCode.OPERATION_DEADLINE_ELAPSED, "operation deadline has elapsed")
        if op["status"] != "pending_signature":
            raise conflict(ConflictCode.OPERATION_NOT_FINALIZABLE, f"operation is {op['status']}, not a draft")
        if op["deadline"] and self.now >= op["deadline"] - FINALIZE_DEADLINE_BUFFER_SECONDS:
            self._set_status(op, "expired", _REASONS["expired"])
            raise conflict(ConflictCode.OPERATION_DEADLINE_ELAPSED, "operation deadline has elapsed")
        op.update(signature=signature, digest=digest, signer=self.subject, signed_at=self.now)
        self._set_status(op, "accepted", "draft finalized; operation accepted for relay")
        self._start_relay(operation_id)
        return op

    def cancel_operation(self, channel_id: str, operation_id: str) -> dict:
        """PATCH status=cancelled: cancel a draft."""
        op = self.operation(channel_id, operation_id)
        if op["status"] != "pending_signature":
            raise conflict(ConflictCode.OPERATION_NOT_CANCELLABLE, f"operation is {op['status']}, not a draft")
        op.update(canceller=self.subject, cancelled_at=self.now)
        self._set_status(op, "cancelled", _REASONS["cancelled"])
        return op

    def _expire_draft(self, operation_id: str) -> None:
        op = self.org.operations[operation_id]
        if op["status"] == "pending_signature":
            self._set_status(op, "expired", "deadline elapsed before the draft was signed")

    # -- relay -----------------------------------------------------------------------------------------------------

    def _start_relay(self, operation_id: str) -> None:
        op = self.org.operations[operation_id]
        model = MODELS[op["chain_selector"]]
        plan = self._plan(model, self.forced.pop(operation_id, None))
        if self.mess is not None:
            plan = self.mess.replan(operation_id, plan)
        self._op_plan[operation_id] = plan
        self._schedule_step(operation_id, 0)

    def _plan(self, model: NetworkModel, forced_fail: bool | None) -> list[tuple[float, str, str | None]]:
        """(delay since previous step, status, failure reason) for each step after ``accepted``."""
        rng = self.timing
        fail = forced_fail if forced_fail is not None else rng.random() < model.fail_rate
        pre = fail and rng.random() < PRE_BROADCAST_SHARE
        plan: list[tuple[float, str, str | None]] = [(rng.uniform(0.5, 4), "sending", None)]
        if pre:
            return [*plan, (rng.uniform(0.5, 3), "failed", model.failure_reason(rng, on_chain=False))]
        plan += [(rng.uniform(0.5, 3), "sent", None), (rng.uniform(0, 2), "broadcasting", None)]
        inclusion = rng.uniform(*model.inclusion)
        if fail:
            return [*plan, (inclusion, "failed", model.failure_reason(rng, on_chain=True))]
        plan.append((inclusion, "confirmed_latest", None))
        if model.safe_after is not None and model.final_after is not None:
            safe = rng.uniform(*model.safe_after)
            final = max(safe, rng.uniform(*model.final_after))
            plan += [(safe, "confirmed_safe", None), (final - safe, "confirmed", None)]
        return plan

    def _schedule_step(self, operation_id: str, index: int) -> None:
        plan = self._op_plan.get(operation_id)
        if plan is None or index >= len(plan):
            for table in (self._op_plan, self._op_clock, self._op_block):
                table.pop(operation_id, None)
            return
        self._op_clock[operation_id] = self._op_clock.get(operation_id, self.now) + plan[index][0]
        self.engine.schedule(self._op_clock[operation_id], self._relay_step, operation_id, index)

    def _relay_step(self, operation_id: str, index: int) -> None:
        op = self.org.operations[operation_id]
        if op["status"] in OPERATION_TERMINAL:
            self._op_plan.pop(operation_id, None)
            return
        _, status, reason = self._op_plan[operation_id][index]
        model = MODELS[op["chain_selector"]]
        if status in ("sending", "sent") and op["deadline"] and self.now >= op["deadline"]:
            self._set_status(op, "expired", "deadline elapsed before broadcast")
            self._op_plan.pop(operation_id, None)
            return
        if status == "sending":
            op["operation_writer_workflow_id"] = self._writer_workflow
            op["operation_writer_workflow_execution_id"] = self.hex32()
        if status == "confirmed_latest":
            self._op_block[operation_id] = (model.block_at(self.now), self.hex32(), self.hex32())
        if status in OPERATION_PROOF_STATUSES:
            op["operation_status_workflow_id"] = self._status_workflow
            op["operation_status_workflow_execution_id"] = self.hex32()
            last_stage = status == "confirmed" or (status == "confirmed_latest" and model.is_testnet)
            if last_stage:
                op["confirmed_at"] = self.now
        if reason is None:
            reason = self._stage_reason(operation_id, status)
        self._set_status(op, status, reason)
        self._schedule_step(operation_id, index + 1)

    def _stage_reason(self, operation_id: str, status: str) -> str:
        if status not in _CONFIDENCE:
            return _REASONS[status]
        block = self._op_block[operation_id][0]
        return {
            "confirmed_latest": f"included in block {block}",
            "confirmed_safe": f"block {block} reached safe confidence",
            "confirmed": f"block {block} finalized",
        }[status]

    # -- status moves and events -----------------------------------------------------------------------------------

    def _set_status(self, op: dict, status: str, reason: str) -> None:
        op["status"] = status
        op["updated_at"] = self.now
        self._op_event(op, reason)
        if status in OPERATION_TERMINAL:
            self._op_plan.pop(op["operation_id"], None)
            self._op_clock.pop(op["operation_id"], None)
            self._op_block.pop(op["operation_id"], None)

    def _op_event(self, op: dict, reason: str) -> None:
        status, oid, now = op["status"], op["operation_id"], self.now
        self.org.transitions.append((oid, status, now))
        payload = {
            "status": status,
            "status_reason": reason,
            "operation_id": oid,
            "wallet_operation_id": op["wallet_operation_id"],
            "address": op["address"],
            "chain_selector": op["chain_selector"],
            "timestamp": now,
        }
        if op["digest"] is not None:
            payload["digest"] = op["digest"]
        if status in ("pending_signature", "accepted"):
            payload["transactions"] = op["transactions"]
        proof = None
        if status in OPERATION_PROOF_STATUSES:
            block, _, tx_hash = self._op_block[oid]
            blob = encode_blob(
                {
                    "service": "_crec",
                    "name": "OperationStatus",
                    "chain_selector": op["chain_selector"],
                    "timestamp": rfc3339(now),
                    "data": {
                        "operation_id": oid,
                        "wallet_operation_id": op["wallet_operation_id"],
                        "account": op["address"],
                        "status": status,
                        "confidence_level": _CONFIDENCE[status],
                        "transaction_hash": tx_hash,
                        "block_number": str(block),
                    },
                }
            )
            payload["event_hash"] = event_hash(blob)
            payload["verifiable_event"] = blob
            proof = self.proof_for(
                payload["event_hash"],
                execution_id=op["operation_status_workflow_execution_id"],
                workflow_id=op["operation_status_workflow_id"],
            )
        # the writer workflow reports the relay steps, the status workflow the finality stages
        keys = _STATUS_WORKFLOW_KEYS if status in OPERATION_PROOF_STATUSES else _WRITER_WORKFLOW_KEYS
        for key in keys:
            if key in op:
                payload[key] = op[key]
        meta = EventMeta(status, oid, op["chain_selector"], op["address"], op["wallet_operation_id"])
        if self.mess is not None:
            self.mess.emit(self, self._op_channel[oid], payload, meta, proof)
        else:
            self.emit(self._op_channel[oid], "operation.status", payload, meta, proof)

    # state the mixin needs (set up by Backend)
    _op_channel: dict[str, str]
    _op_plan: dict[str, list[tuple[float, str, str | None]]]
    _op_clock: dict[str, float]
    _op_block: dict[str, tuple[int, str, str]]
    _writer_workflow: str
    _status_workflow: str


def _transaction(tx: dict) -> dict:
    out = {"to": tx["to"], "value": tx["value"], "data": tx["data"]}
    preview = tx.get("preview")
    if preview is not None:
        out["preview_snapshot"] = {
            "function_signature": preview["function_signature"],
            "execution_values": {},
            **({"metadata": preview["metadata"]} if "metadata" in preview else {}),
        }
    return out
