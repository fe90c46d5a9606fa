"""Per-organisation in-memory store: records as served, per-channel indexes and event logs."""

from __future__ import annotations

from dataclasses import dataclass, field

from toolkit.sandbox.eventlog import EventLog


@dataclass
class Org:
    """Everything one onboarded organisation owns. Records are the dicts GET serves (insertion ordered)."""

    org_id: str
    owner: bytes
    wallets: dict[str, dict] = field(default_factory=dict)
    channels: dict[str, dict] = field(default_factory=dict)
    watchers: dict[str, dict] = field(default_factory=dict)
    operations: dict[str, dict] = field(default_factory=dict)
    queries: dict[str, dict] = field(default_factory=dict)
    #: channel id -> ids of its watchers / operations / queries, in creation order
    channel_watchers: dict[str, list[str]] = field(default_factory=dict)
    channel_operations: dict[str, list[str]] = field(default_factory=dict)
    channel_queries: dict[str, list[str]] = field(default_factory=dict)
    logs: dict[str, EventLog] = field(default_factory=dict)
    #: operation id -> wallet id; query id -> request fingerprint
    operation_wallet: dict[str, str] = field(default_factory=dict)
    #: (channel id, idempotency key) -> (request fingerprint, query id)
    idempotency: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    #: (operation_id, status, unix_ts) of every operation move the engine made
    transitions: list[tuple[str, str, int]] = field(default_factory=list)

    def add_channel(self, record: dict) -> None:
        """Store a new channel with its empty indexes and event log."""
        cid = record["channel_id"]
        self.channels[cid] = record
        self.channel_watchers[cid] = []
        self.channel_operations[cid] = []
        self.channel_queries[cid] = []
        self.logs[cid] = EventLog()

    def wallet_by_address(self, address: str) -> dict | None:
        """The wallet whose address equals ``address`` (case-insensitive), or ``None``."""
        needle = address.lower()
        for wallet in self.wallets.values():
            if wallet["address"].lower() == needle:
                return wallet
        return None

    def channel_by_name(self, name: str) -> dict | None:
        """The channel named ``name``, or ``None``."""
        return next((c for c in self.channels.values() if c["name"] == name), None)

    def wallet_by_name(self, name: str) -> dict | None:
        """The wallet named ``name``, or ``None``."""
        return next((w for w in self.wallets.values() if w["name"] == name), None)

    @property
    def event_count(self) -> int:
        """Events across all channels."""
        return sum(len(log) for log in self.logs.values())
