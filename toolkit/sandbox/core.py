"""Shared machinery of one organisation's backend: RNG streams, the engine, event emission with proofs."""

from __future__ import annotations

from toolkit.sandbox.don import FORGERIES, committee
from toolkit.sandbox.engine import Engine
from toolkit.sandbox.eventlog import EventMeta
from toolkit.sandbox.ids import new_address, new_hex, new_uuid, stream
from toolkit.sandbox.proofs import ocr_proof
from toolkit.sandbox.state import Org


class Core:
    """Holds an organisation's store, the shared engine and this organisation's seeded RNG streams."""

    def __init__(self, org: Org, engine: Engine, seed: int, org_index: int, api_key_name: str) -> None:
        self.org = org
        self.engine = engine
        self.ids = stream(seed, org_index, "ids")
        self.timing = stream(seed, org_index, "timing")
        self.proof_rng = stream(seed, org_index, "proofs")
        self.don = committee(seed)
        #: the share of proofs forged (Sandbox(forge_share=...)); drawn from a stream of its own, so a share of 0
        #: leaves every other value as it was
        self.forge_share = 0.0
        self.forge_rng = stream(seed, org_index, "forge")
        #: event hash -> which forgery its proof carries (for tests and the demo)
        self.forged: dict[str, str] = {}
        self.subject = {
            "subject_type": "api_key",
            "subject_id": new_uuid(stream(seed, org_index, "subject")),
            "subject_name": api_key_name,
        }

    @property
    def now(self) -> int:
        """The engine's current time (the time of the step or request being handled)."""
        return self.engine.now

    def uuid(self) -> str:
        """A fresh deterministic UUID."""
        return new_uuid(self.ids)

    def address(self) -> str:
        """A fresh deterministic address."""
        return new_address(self.ids)

    def hex32(self) -> str:
        """A fresh 32-byte hex value (hashes)."""
        return new_hex(self.ids, 32)

    def emit(
        self, channel_id: str | None, event_type: str, payload: dict, meta: EventMeta, proof: dict | None = None
    ) -> None:
        """Append one event to a channel's log (no-op without a channel)."""
        if channel_id is None:
            return
        log = self.org.logs.get(channel_id)
        if log is None:
            return
        log.append(new_uuid(self.ids), event_type, payload, [proof] if proof else [], payload["timestamp"], meta)

    def proof_for(self, event_hash: str, *, execution_id: str, workflow_id: str, lazy: bool = True) -> dict:
        """An OCR proof binding ``event_hash`` to this organisation's workflow owner, made by the workflow
        ``workflow_id`` in its execution ``execution_id`` (as the event's payload names them), signed by the
        committee (or, for a ``forge_share`` of them, forged in one of the ways of
        :data:`~toolkit.sandbox.don.FORGERIES`).
        ``lazy`` (for proofs that only go into event logs) leaves the signing to the log's first read of the event;
        a proof served as part of a resource (a query's) must be made at once."""
        forgery = None
        if self.forge_share > 0 and self.forge_rng.random() < self.forge_share:
            forgery = self.forge_rng.choice(FORGERIES)
            self.forged[event_hash] = forgery
        return ocr_proof(
            self.proof_rng,
            self.don,
            self.org.owner,
            event_hash,
            self.now,
            execution_id=execution_id,
            workflow_id=workflow_id,
            forgery=forgery,
            lazy=lazy,
        )
