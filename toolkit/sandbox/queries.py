"""Chain queries: idempotent create, dispatch to the DON, callback with proof, expiry at the time-to-live.

A query fails "by DON callback or dispatch" and carries a proof "when from the DON" (API.md, Query status): the DON's
failures (after ``sent``) carry its signed result; a dispatch failure (the gateway rejects the request, before the
DON has it: from ``accepted`` or ``sending``, never having reached ``sent``) carries no result and no proof.
"""

from __future__ import annotations

import json
import random

from toolkit.sandbox.apierror import conflict, not_found
from toolkit.sandbox.core import Core
from toolkit.sandbox.eventlog import EventMeta
from toolkit.sandbox.networks import MODELS
from toolkit.sandbox.proofs import encode_blob, event_hash, rfc3339
from toolkit.spec import QUERY_PROOF_STATUSES, QUERY_TERMINAL, QUERY_TTL_SECONDS, ConflictCode, NotFoundCode

ZERO_ADDRESS = "0x" + "0" * 40
#: DON error codes and messages of failed queries (weights follow how often each happens).
QUERY_ERRORS: tuple[tuple[str, str, int], ...] = (
    ("CALL_REVERTED", "execution reverted", 5),
    ("CONTRACT_NOT_FOUND", "no contract code at target address", 2),
    ("BLOCK_SELECTION_NOT_AVAILABLE", "requested block is not available on the node", 1),
    ("CHAIN_UNAVAILABLE", "chain unavailable: RPC endpoint timeout", 2),
    ("CRE_WORKFLOW_FAILED", "workflow execution failed", 1),
)
QUERY_FAIL_RATE = 0.04
QUERY_NO_CALLBACK_RATE = 0.02
#: Share of queries that fail in dispatch (no DON answer, no proof), about a third of all failed queries; a third of
#: those fail as the dispatch worker picks them up (from ``accepted``), the rest once sent to the gateway
#: (from ``sending``). Drawn from a stream of their own, so every other value of a seed stays as it was.
QUERY_DISPATCH_FAIL_RATE = 0.02
QUERY_DISPATCH_AT_ACCEPTED = 1 / 3
#: Why a dispatch fails (not on the wire: a dispatch failure carries no verifiable_result; kept for tests).
DISPATCH_ERROR = "CRE_GATEWAY_REJECTED"


class QueriesMixin(Core):
    """Query lifecycle."""

    forced: dict[str, bool]
    #: query id -> the code of its dispatch failure (:data:`DISPATCH_ERROR`), for every query failed in dispatch
    dispatch_failed: dict[str, str]

    def create_query(self, channel_id: str, body: dict) -> tuple[dict, bool]:
        """POST /channels/{id}/queries. Answers (query, created). Same key + same body gives the original back."""
        self.open_channel(channel_id)  # type: ignore[attr-defined]
        fingerprint = json.dumps(body, sort_keys=True, separators=(",", ":"))
        key = (channel_id, body["idempotency_key"])
        seen = self.org.idempotency.get(key)
        if seen is not None:
            if seen[0] != fingerprint:
                raise conflict(
                    ConflictCode.IDEMPOTENCY_KEY_MISMATCH, "idempotency key was already used with a different request"
                )
            return self.org.queries[seen[1]], False
        params, now = body["params"], self.now
        query = {
            "query_id": self.uuid(),
            "channel_id": channel_id,
            "status": "accepted",
            "query_kind": body["query_kind"],
            "chain_selector": body["chain_selector"],
            # 0.8: the contract address; the whole call appears only in the decoded verifiable_result
            "target": params["contract_address"],
            "created_at": now,
            "updated_at": now,
            "expires_at": now + QUERY_TTL_SECONDS,
            "accepted_at": now,
        }
        qid = query["query_id"]
        self.org.queries[qid] = query
        self.org.channel_queries[channel_id].append(qid)
        self.org.idempotency[key] = (fingerprint, qid)
        self._query_selection[qid] = params["block_selection"]
        self._query_call[qid] = {
            "from_address": params.get("from_address", ZERO_ADDRESS),
            "contract_address": params["contract_address"],
            "call_data": params["call_data"],
        }
        self._query_event(query, None)
        self._plan_query(qid)
        return query, True

    def query(self, channel_id: str, query_id: str) -> dict:
        """The query of that channel, or 404 ``QUERY_NOT_FOUND``."""
        self.channel(channel_id)  # type: ignore[attr-defined]
        query = self.org.queries.get(query_id)
        if query is None or query["channel_id"] != channel_id:
            raise not_found(NotFoundCode.QUERY_NOT_FOUND, "query not found")
        return query

    def _plan_query(self, query_id: str) -> None:
        rng, now = self.timing, self.now
        forced = self.forced.pop(query_id, None)
        dispatch_roll, at_accepted = (
            self._dispatch_rng.random(),
            self._dispatch_rng.random() < QUERY_DISPATCH_AT_ACCEPTED,
        )
        dispatch_fails = forced is None and dispatch_roll < QUERY_DISPATCH_FAIL_RATE
        roll = rng.random()
        t_sending = now + rng.uniform(0.2, 2)
        t_sent = t_sending + rng.uniform(0.5, 3)
        if dispatch_fails:
            self.dispatch_failed[query_id] = DISPATCH_ERROR
        if dispatch_fails and at_accepted:
            self.engine.schedule(t_sending, self._query_step, query_id, "failed", None)
        else:
            self.engine.schedule(t_sending, self._query_step, query_id, "sending", None)
            self.engine.schedule(t_sent, self._query_step, query_id, "failed" if dispatch_fails else "sent", None)
        if forced is None and roll < QUERY_NO_CALLBACK_RATE:
            pass  # the DON never answers: expiry below
        else:  # drawn for a dispatch failure too (its callback never comes), so the timing stream stays as it was
            fail = forced if forced is not None else roll < QUERY_NO_CALLBACK_RATE + QUERY_FAIL_RATE
            error = rng.choices(QUERY_ERRORS, [w for *_, w in QUERY_ERRORS])[0][:2] if fail else None
            callback = t_sent + rng.uniform(3, 40)
            if not dispatch_fails:
                self.engine.schedule(callback, self._query_step, query_id, "failed" if fail else "completed", error)
        self.engine.schedule(now + QUERY_TTL_SECONDS, self._query_step, query_id, "expired", None)

    def _query_step(self, query_id: str, status: str, error: tuple[str, str] | None) -> None:
        query = self.org.queries[query_id]
        if query["status"] in QUERY_TERMINAL:
            return
        now = self.now
        query["status"] = status
        query["updated_at"] = now
        query[f"{status}_at"] = now
        from_don = status in QUERY_PROOF_STATUSES and query_id not in self.dispatch_failed
        if from_don:
            query["workflow_id"] = self._query_workflow
            query["workflow_execution_id"] = self.hex32()
            query["verifiable_result"] = self._result_blob(query, error)
            query["event_hash"] = event_hash(query["verifiable_result"])
            query["proof"] = self.proof_for(  # served with the query itself: made at once
                query["event_hash"],
                execution_id=query["workflow_execution_id"],
                workflow_id=query["workflow_id"],
                lazy=False,
            )
        if status in QUERY_TERMINAL:
            self._query_selection.pop(query_id, None)
            self._query_call.pop(query_id, None)
        self._query_event(query, query.get("proof") if from_don else None)

    def _result_blob(self, query: dict, error: tuple[str, str] | None) -> str:
        model = MODELS[query["chain_selector"]]
        selection = self._query_selection.get(query["query_id"], {"type": "latest"})
        lag = 0 if selection["type"] != "finalized" or model.final_after is None else int(model.final_after[0])
        block = (
            int(selection["block_number"]) if selection["type"] == "block_number" else model.block_at(self.now - lag)
        )
        data: dict = {
            "query_id": query["query_id"],
            "channel_id": query["channel_id"],
            "query_kind": query["query_kind"],
            "target": self._query_call.get(query["query_id"], {"contract_address": query["target"]}),
            "block_selection": {
                "requested": selection,
                "resolved": {
                    "block_number": str(block),
                    "block_hash": self.hex32(),
                    "block_timestamp": rfc3339(self.now - lag),
                },
            },
        }
        if error is None:
            data["result"] = {"raw_return_data": self.hex32()}
        else:
            data["error"] = {"code": error[0], "message": error[1], "raw_revert_data": "0x"}
        return encode_blob(
            {
                "service": "_crec",
                "name": "ChainQuery",
                "chain_selector": query["chain_selector"],
                "timestamp": rfc3339(self.now),
                "data": data,
            }
        )

    def _query_event(self, query: dict, proof: dict | None) -> None:
        status = query["status"]
        payload = {
            "query_id": query["query_id"],
            "status": status,
            "target": query["target"],
            "chain_selector": query["chain_selector"],
            "timestamp": self.now,
        }
        if proof is not None:
            payload.update(
                event_hash=query["event_hash"],
                verifiable_result=query["verifiable_result"],
                workflow_id=query["workflow_id"],
                workflow_execution_id=query["workflow_execution_id"],
            )
        meta = EventMeta(status, query["query_id"], query["chain_selector"])
        self.emit(query["channel_id"], "query.status", payload, meta, proof)

    _query_selection: dict[str, dict]
    #: draws whether each query fails in dispatch (a stream of its own: see :data:`QUERY_DISPATCH_FAIL_RATE`)
    _dispatch_rng: random.Random
    #: the call of each query in flight: ``{from_address, contract_address, call_data}`` (decoded results carry it)
    _query_call: dict[str, dict]
    _query_workflow: str
