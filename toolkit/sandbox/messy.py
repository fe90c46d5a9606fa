"""Messy operation histories, as real services serve them: the ``messy`` scenario shape.

A :class:`Mess` picks a few relayed operations and gives each one kind of trouble in its event log:

- ``duplicate``: the ``sending`` event is served twice, the copy (same ``event_id``) at a later offset;
- ``reemit``: the ``sending`` event is emitted again with a new ``event_id`` (same status and time), later;
- ``disorder``: the ``sending`` event appears after the event of the next status (a later status at a lower offset);
- ``reorg``: the block is reorganised after ``confirmed_latest``: ``broadcasting`` then ``confirmed_latest`` again,
  before the rest of the ladder;
- ``skew``: the ``sent`` event's timestamp is a few seconds before the ``sending`` event's (a skewed clock);
- ``unknown``: after ``sent`` the operation moves to ``replaced``, a status the 0.8 vocabulary does not have, and
  stays there.

Everything else is as the default scenario makes it. The operation records (GET) follow the moves; the engine's
own record of moves (``Truth.transitions``) holds the true times, the event log what a caller is served.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from toolkit.sandbox.eventlog import EventMeta

if TYPE_CHECKING:
    from toolkit.sandbox.core import Core

#: The kinds of trouble, in the order they are drawn.
MESS_KINDS: tuple[str, ...] = ("duplicate", "reemit", "disorder", "reorg", "skew", "unknown")
#: The status an ``unknown`` operation ends in (not an OperationStatus of API.md).
UNKNOWN_STATUS = "replaced"

Plan = list[tuple[float, str, str | None]]
_Held = tuple[str, dict, list, EventMeta]


class Mess:
    """Chooses messy operations (``rate`` of the relayed ones) and serves their events messily."""

    def __init__(self, rng: random.Random, rate: float = 0.06) -> None:
        self.rng = rng
        self.rate = rate
        #: operation id -> kind of trouble it was given
        self.kinds: dict[str, str] = {}
        self._held: dict[str, list[_Held]] = {}
        self._last_ts: dict[str, int] = {}
        self._turn = 0

    def replan(self, operation_id: str, plan: Plan) -> Plan:
        """Maybe give a newly relayed operation trouble; answer its (possibly changed) relay plan."""
        if self.rng.random() >= self.rate:
            return plan
        statuses = [step[1] for step in plan]
        fits = [k for k in MESS_KINDS if self._fits(k, statuses)]
        # the kinds take turns (the next one that fits this plan), so a small history has every kind
        kind = min(fits, key=lambda k: (MESS_KINDS.index(k) - self._turn) % len(MESS_KINDS))
        self._turn = MESS_KINDS.index(kind) + 1
        self.kinds[operation_id] = kind
        if kind == "unknown":
            at = statuses.index("sent")
            return [*plan[: at + 1], (self.rng.uniform(5, 90), UNKNOWN_STATUS, "replaced by another transaction")]
        if kind == "reorg":
            at = statuses.index("confirmed_latest")
            again = [
                (self.rng.uniform(5, 40), "broadcasting", "block reorganised; awaiting re-inclusion"),
                (self.rng.uniform(10, 60), "confirmed_latest", None),
            ]
            return [*plan[: at + 1], *again, *plan[at + 1 :]]
        return plan

    @staticmethod
    def _fits(kind: str, statuses: list[str]) -> bool:
        if kind in ("skew", "unknown"):
            return "sent" in statuses
        if kind == "reorg":
            return "confirmed_latest" in statuses
        return True

    def emit(self, backend: Core, channel_id: str | None, payload: dict, meta: EventMeta, proof: dict | None) -> None:
        """Append one ``operation.status`` event, messily when its operation was given trouble."""
        log = backend.org.logs.get(channel_id) if channel_id is not None else None
        if log is None:
            return
        oid, status = payload["operation_id"], payload["status"]
        kind = self.kinds.get(oid)
        proofs = [proof] if proof else []
        if kind == "skew" and status == "sent":
            payload["timestamp"] = self._last_ts[oid] - self.rng.randint(2, 5)
        event: _Held = (backend.uuid(), payload, proofs, meta)
        held = self._held.pop(oid, [])
        if kind in ("duplicate", "reemit", "disorder") and status == "sending":
            if kind != "disorder":
                self._append(log, event)
            copy = (backend.uuid(), payload, proofs, meta) if kind == "reemit" else event
            self._held[oid] = [copy]
        else:
            self._append(log, event)
        for late in held:
            self._append(log, late)
        if kind is not None:
            self._last_ts[oid] = payload["timestamp"]

    @staticmethod
    def _append(log: object, event: _Held) -> None:
        event_id, payload, proofs, meta = event
        log.append(event_id, "operation.status", payload, proofs, payload["timestamp"], meta)  # type: ignore[attr-defined]
