"""An analyst's independent reading of the service: raw HTTP answers (httpx directly, no toolkit client) turned into
operation outcomes, finality stages and status entries in plain Python, following docs/metrics.md.

Nothing here imports the toolkit: the vocabulary is written out by hand from API.md, so a test that compares a
metric with these values does not compare the code under test with itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import httpx
import numpy as np

#: Operation statuses in the order of the relay and finality ladder (API.md, "Operation status"); the terminal
#: statuses that end the ladder early come after it. A status outside this table is unknown.
STAGE_RANK: dict[str, int] = {
    "pending_signature": 0,
    "accepted": 1,
    "sending": 2,
    "sent": 3,
    "broadcasting": 4,
    "confirmed_latest": 5,
    "confirmed_safe": 6,
    "confirmed": 7,
    "failed": 8,
    "cancelled": 9,
    "expired": 10,
}
TERMINAL = frozenset({"confirmed", "failed", "cancelled", "expired"})
#: Statuses that show an operation was relayed (accepted for relay or later on the ladder).
RELAY = frozenset({"accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed"})
#: Time from ``accepted`` to each finality stage, and the stages a later one implies.
STAGES: dict[str, tuple[str, ...]] = {
    "latest": ("confirmed_latest", "confirmed_safe", "confirmed"),
    "safe": ("confirmed_safe", "confirmed"),
    "finalized": ("confirmed",),
}
STAGE_STATUS = {"latest": "confirmed_latest", "safe": "confirmed_safe", "finalized": "confirmed"}


@dataclass
class RawOperation:
    """One operation as the raw HTTP answers show it: its record and its ``operation.status`` events."""

    operation_id: str
    network: str
    network_type: str | None
    created_at: int
    record_status: str
    #: (offset, event_id, status, timestamp) in the order served
    events: list[tuple[int, str, str, int]] = field(default_factory=list)
    #: the record's deadline (unix seconds), None when it has none (0 or absent)
    deadline: int | None = None

    def entries(self) -> list[tuple[str, int]]:
        """Status entries: duplicates dropped (the same event id, or the same status at the same time), the rest in
        time order (equal times: the later stage). A status entered again after a later one is kept (a revisit)."""
        seen_ids: set[str] = set()
        seen: set[tuple[str, int]] = set()
        out = []
        for _, event_id, status, ts in self.events:
            if event_id in seen_ids or (status, ts) in seen:
                continue
            seen_ids.add(event_id)
            seen.add((status, ts))
            out.append((status, ts))
        return sorted(out, key=lambda e: (e[1], STAGE_RANK.get(e[0], -1)))

    def first(self, status: str) -> int | None:
        """The time ``status`` was first entered, or None."""
        times = [ts for s, ts in self.entries() if s == status]
        return min(times) if times else None

    def last_status(self) -> str:
        """The status with the latest event time (equal times: the later stage); the record's without events."""
        entries = self.entries()
        return entries[-1][0] if entries else self.record_status

    def statuses(self) -> set[str]:
        """Every status the operation was seen in."""
        return {s for s, _ in self.entries()} | {self.record_status}

    def relayed(self) -> bool:
        """Whether it was accepted for relay (reached ``accepted`` or later)."""
        return bool(self.statuses() & (RELAY | {"failed"}))

    def revisits(self) -> int:
        """Entries into a status already entered and left before (docs/metrics.md, Revisits): after a reorg
        ``broadcasting`` and ``confirmed_latest`` are each entered again. Consecutive entries of one status are one
        stay."""
        count, seen, prev = 0, set(), None
        for status, _ in self.entries():
            if status != prev and status in seen:
                count += 1
            seen.add(status)
            prev = status
        return count

    def reorgs(self) -> int:
        """Moves back down the ladder into a status entered before (a reorganisation: ``confirmed_latest`` back to
        ``broadcasting``); the re-entries that follow one are revisits, not further reorgs."""
        count, seen, prev = 0, set(), -1
        for status, _ in self.entries():
            rank = STAGE_RANK.get(status, -1)
            if status in seen and rank < prev:
                count += 1
            seen.add(status)
            prev = rank
        return count


def outcome(op: RawOperation, latest_only: set[str]) -> str | None:
    """The operation's outcome (docs/metrics.md, "Outcomes of an operation"), None while in flight."""
    last = op.last_status()
    if last not in STAGE_RANK:
        return "unknown"
    if last == "confirmed" or (last == "confirmed_latest" and op.network in latest_only):
        return "confirmed"
    if last in ("expired", "cancelled"):
        return last if op.relayed() else f"draft_{last}"
    if last == "failed":
        return "failed"
    return None


def latest_only_networks(ops: Iterable[RawOperation]) -> set[str]:
    """Networks where only the latest stage is active: never a mainnet; a testnet (or a network without a type)
    unless an operation on it ever reached ``confirmed_safe`` or ``confirmed``."""
    ops = list(ops)
    deeper = {o.network for o in ops if o.statuses() & {"confirmed_safe", "confirmed"}}
    return {o.network for o in ops if o.network_type != "mainnet" and o.network not in deeper}


def reached(op: RawOperation, stage: str) -> bool:
    """Whether the operation reached a finality stage (a later stage implies the earlier ones)."""
    return bool(op.statuses() & set(STAGES[stage]))


def time_to(op: RawOperation, stage: str) -> float | None:
    """Seconds from ``accepted`` to the stage's own first event, or None."""
    start, end = op.first("accepted"), op.first(STAGE_STATUS[stage])
    return None if start is None or end is None else float(end - start)


def median(values: list[float]) -> float | None:
    """The median as docs/metrics.md defines percentiles with nothing censored (Hyndman–Fan type 2)."""
    return float(np.quantile(values, 0.5, method="averaged_inverted_cdf")) if values else None


def _pages(client: httpx.Client, path: str, key: str, limit: int, **params: object) -> Iterator[dict]:
    offset = 0
    while True:
        body = client.get(path, params={**params, "limit": limit, "offset": offset}).raise_for_status().json()
        yield from body[key]
        if not body["has_more"] or not body[key]:
            return
        offset += len(body[key])


def _status_events(client: httpx.Client, channel_id: str) -> Iterator[dict]:
    """The channel's ``operation.status`` events in offset order (the poll's ``type`` filter; the next page starts
    after the last message offset served, since a filtered page skips offsets)."""
    offset = 0
    while True:
        params = {"type": "operation.status", "limit": 200, "offset": offset}
        body = client.get(f"/channels/{channel_id}/events", params=params).raise_for_status().json()
        yield from body["events"]
        if not body["has_more"] or not body["events"]:
            return
        offset = int(body["events"][-1]["headers"]["offset"]) + 1


def read_history(
    base_url: str, api_key: str, transport: httpx.BaseTransport | None = None, *, as_of: bool = True
) -> tuple[list[RawOperation], int]:
    """Every operation of the organisation with its ``operation.status`` events, and the newest payload
    ``timestamp`` of any event of any channel (the time the data is as of, docs/metrics.md), in one read of every
    list and event log over HTTP, page by page (through ``transport`` when given, such as a sandbox's in-process
    one: the same answers without a socket). Without ``as_of`` only the status events are read (the newest time
    answered is then 0): most of a log can be watcher events."""
    headers = {"Authorization": f"Apikey {api_key}"}
    newest = 0
    with httpx.Client(base_url=base_url, headers=headers, timeout=60, transport=transport) as client:
        networks = {n["chain_selector"]: n for n in client.get("/networks").raise_for_status().json()["data"]}
        channels = list(_pages(client, "/channels", "data", 50, status=["active", "archived"]))
        ops: dict[str, RawOperation] = {}
        events: dict[str, list] = defaultdict(list)
        for channel in channels:
            cid = channel["channel_id"]
            for record in _pages(client, f"/channels/{cid}/operations", "data", 100):
                net = networks.get(record["chain_selector"], {})
                ops[record["operation_id"]] = RawOperation(
                    record["operation_id"],
                    net.get("name", record["chain_selector"]),
                    net.get("type"),
                    int(record["created_at"]),
                    record["status"],
                    deadline=int(record["deadline"]) if record.get("deadline") else None,
                )
            served = _pages(client, f"/channels/{cid}/events", "events", 200) if as_of else _status_events(client, cid)
            for event in served:
                stamp = (event.get("payload") or {}).get("timestamp")
                if stamp is not None:
                    newest = max(newest, int(stamp))
                if event["headers"]["type"] != "operation.status":
                    continue
                p = event["payload"]
                events[p["operation_id"]].append(
                    (event["headers"]["offset"], event["event_id"], p["status"], int(p["timestamp"]))
                )
    for oid, evs in events.items():
        if oid in ops:
            ops[oid].events = evs
    return list(ops.values()), newest


def read_operations(base_url: str, api_key: str, transport: httpx.BaseTransport | None = None) -> list[RawOperation]:
    """Every operation of the organisation with its ``operation.status`` events, read over HTTP page by page."""
    return read_history(base_url, api_key, transport, as_of=False)[0]


def newest_event_time(base_url: str, api_key: str) -> int:
    """The newest payload ``timestamp`` of any event of any channel (the time the data is as of, docs/metrics.md)."""
    return read_history(base_url, api_key)[1]
