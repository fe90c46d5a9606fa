"""The seeded scenario: channels, wallets and watchers on several networks, then days of operations and queries.

A :class:`Shape` changes how the same workload is laid out, for testing the toolkit on data other than the default's:
one channel holding everything, hundreds of tiny channels, operations with many transactions, long-lived
operations, ten times more queries than operations, or messy event histories (see :data:`SHAPES`).

History is made by the same backend and engine that serve live requests: the scenario schedules its actions on the
engine from ``start - days*86400`` and the engine runs them up to ``start``. Work still in flight at ``start`` moves
on as the clock advances; in live mode the workload keeps arriving after ``start``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from toolkit.sandbox.backend import Backend
from toolkit.sandbox.ids import stream
from toolkit.sandbox.messy import Mess
from toolkit.sandbox.networks import MODELS
from toolkit.spec import KNOWN_NETWORKS

_NET = {n.name: n.chain_selector for n in KNOWN_NETWORKS}
DRAFT_SHARE = 0.10
TRANSFER_EVENT_ABI = [
    {
        "anonymous": False,
        "name": "Transfer",
        "type": "event",
        "inputs": [
            {"indexed": True, "internalType": "address", "name": "from", "type": "address"},
            {"indexed": True, "internalType": "address", "name": "to", "type": "address"},
            {"indexed": False, "internalType": "uint256", "name": "value", "type": "uint256"},
        ],
    }
]
ANSWER_UPDATED_ABI = [
    {
        "anonymous": False,
        "name": "AnswerUpdated",
        "type": "event",
        "inputs": [
            {"indexed": True, "internalType": "int256", "name": "current", "type": "int256"},
            {"indexed": True, "internalType": "uint256", "name": "roundId", "type": "uint256"},
            {"indexed": False, "internalType": "uint256", "name": "updatedAt", "type": "uint256"},
        ],
    }
]

CHANNELS = (
    ("treasury-ops", "Treasury transfers and rebalancing"),
    ("payments-settlement", "Merchant payouts on L2s"),
    ("dta-subscriptions", "Digital transfer agent subscriptions and redemptions"),
    ("market-data", "Price feed monitoring and chain queries"),
    ("legacy-payouts", "Retired payout flow"),
)
# name, network, home channel index, status channel index or None, op weight, fate
WALLETS = (
    ("treasury-eth", "Ethereum Mainnet", 0, 0, 3.0, None),
    ("treasury-arb", "Arbitrum One", 0, 0, 2.0, None),
    ("payments-base", "Base", 1, 1, 4.0, None),
    ("payments-polygon", "Polygon", 1, 1, 3.0, None),
    ("settlement-avax", "Avalanche", 2, 2, 2.5, None),
    ("qa-sepolia", "Ethereum Sepolia", 3, None, 1.0, None),
    ("qa-base-sepolia", "Base Sepolia", 1, 1, 1.0, None),
    ("legacy-eth", "Ethereum Mainnet", 4, 4, 2.0, "archive"),
    ("broken-deploy", "Polygon", 0, 0, 0.0, "fail"),
)
# name, channel index, network, address-seed, service or None (ABI), events, rate per hour, fate
WATCHERS = (
    ("usdc-transfers", 0, "Ethereum Mainnet", None, ["Transfer"], 40.0, None),
    ("arb-usdc-transfers", 0, "Arbitrum One", None, ["Transfer"], 25.0, None),
    ("base-settlements", 1, "Base", "dvp", ["SettlementExecuted", "SettlementFailed"], 30.0, None),
    ("dta-requests", 2, "Avalanche", "dta", ["SubscriptionRequested", "RedemptionRequested"], 15.0, None),
    ("eth-usd-feed", 3, "Ethereum Mainnet", None, ["AnswerUpdated"], 20.0, None),
    ("sepolia-canary", 3, "Ethereum Sepolia", None, ["Transfer"], 10.0, "fail"),
    ("legacy-watch", 4, "Ethereum Mainnet", None, ["Transfer"], 12.0, "archive"),
)


@dataclass(frozen=True)
class Shape:
    """How the seeded organisation is laid out. ``channels`` replaces the default five channels with that many (1: one
    channel holds every wallet, watcher, operation and query; more: each operation and query goes to a channel picked
    at random); ``transactions`` are the choices of transactions per operation; drafts are ``draft_share`` of the
    operations, finalized after ``finalize_after`` seconds (a range) before a deadline ``deadline_after`` seconds
    away; ``queries_per_operation`` sets the query workload against the operation workload."""

    name: str
    channels: int | None = None
    transactions: tuple[int, ...] = (1, 1, 1, 2, 3)
    draft_share: float = DRAFT_SHARE
    finalize_after: tuple[float, float] | None = None
    deadline_after: tuple[int, int] = (900, 6 * 3600)
    queries_per_operation: float = 1 / 6
    #: serve some operations' events messily (duplicates, disorder, reorgs, a skewed clock, an unknown status)
    messy: bool = False


#: The shapes ``Sandbox(shape=...)`` and ``chainops sandbox --shape`` know.
SHAPES: dict[str, Shape] = {
    shape.name: shape
    for shape in (
        Shape("default"),
        Shape("one-channel", channels=1),
        Shape("many-channels", channels=300),
        Shape("many-transactions", transactions=(16,)),
        # drafts signed hours to days after they were made: operations stay in flight across many syncs
        Shape(
            "long-lived", draft_share=0.6, finalize_after=(3600.0, 3 * 86400.0), deadline_after=(4 * 86400, 5 * 86400)
        ),
        Shape("query-heavy", queries_per_operation=10.0),
        # the default workload with messy event histories (toolkit/sandbox/messy.py)
        Shape("messy", messy=True),
    )
}


@dataclass
class _Wallet:
    wallet_id: str
    channel_id: str
    chain_selector: str
    weight: float


class Scenario:
    """Schedules the seeded organisation's setup and workload on the engine."""

    def __init__(
        self,
        backend: Backend,
        seed: int,
        start: int,
        days: float,
        operations_per_day: float,
        live: bool,
        shape: Shape = SHAPES["default"],
    ) -> None:
        self.b = backend
        self.shape = shape
        self.rng = stream(seed, "scenario")
        if shape.messy:
            backend.mess = Mess(stream(seed, "messy"))
        self.start = int(start)
        self.t0 = int(start - days * 86400)
        self.window = max(self.start - self.t0, 1)
        self.ops_rate = operations_per_day / 86400.0
        self.live = live
        self.wallets: list[_Wallet] = []
        self.channel_ids: list[str] = []
        self._counter = 0

    def schedule(self) -> None:
        """Create the setup now (at ``t0``) and schedule everything else."""
        b, sched = self.b, self.b.engine.schedule
        for name, description in self._channels():
            self.channel_ids.append(b.create_channel({"name": name, "description": description})["channel_id"])
        for i, spec in enumerate(WALLETS):
            sched(self.t0 + 30 + 20 * i, self._create_wallet, spec)
        for i, spec in enumerate(WATCHERS):
            sched(self.t0 + 120 + 45 * i, self._create_watcher, spec)
        sched(self.t0 + 0.40 * self.window, self._archive_wallet, "legacy-eth")
        sched(self.t0 + 0.45 * self.window, self._archive_watcher, "legacy-watch")
        if len(self.channel_ids) > 4:
            sched(self.t0 + 0.50 * self.window, self._archive_channel, 4)
        if self.ops_rate > 0:
            sched(self.t0 + 900, self._next_operation, float(self.t0 + 900))
            sched(self.t0 + 1200, self._next_query, float(self.t0 + 1200))

    # -- setup -----------------------------------------------------------------------------------------------------

    def _channels(self) -> list[tuple[str, str]]:
        count = self.shape.channels
        if count is None:
            return list(CHANNELS)
        if count == 1:
            return [("everything", "One busy channel holding every wallet, watcher, operation and query")]
        return [(f"tiny-{i:03d}", f"Tiny channel {i}") for i in range(count)]

    def _channel(self, index: int) -> str:
        """The channel the default layout's channel ``index`` maps to (the same one in a one-channel shape)."""
        return self.channel_ids[index % len(self.channel_ids)]

    def _workload_channel(self, home: str) -> str:
        """Where an operation or query goes: its wallet's home channel, or any channel when there are many."""
        count = self.shape.channels
        return self.rng.choice(self.channel_ids) if count is not None and count > 1 else home

    def _create_wallet(self, spec: tuple) -> None:
        name, network, home, status_channel, weight, fate = spec
        body = {
            "name": name,
            "wallet_owner_address": self.b.address(),
            "chain_selector": _NET[network],
            "wallet_type": "ecdsa",
            "configuration": {"threshold": 1},
            "allowed_ecdsa_signers": [self.b.address()],
        }
        if status_channel is not None:
            body["status_channel_id"] = self._channel(status_channel)
        wallet = self.b.create_wallet(body)
        if fate == "fail":
            self.b.forced[wallet["wallet_id"]] = True
        else:
            self.b.forced[wallet["wallet_id"]] = False
            self.wallets.append(_Wallet(wallet["wallet_id"], self._channel(home), _NET[network], weight))

    def _create_watcher(self, spec: tuple) -> None:
        name, channel, network, service, events, rate, fate = spec
        body: dict = {"name": name, "chain_selector": _NET[network], "address": self.b.address(), "events": events}
        if service is None:
            body["abi"] = ANSWER_UPDATED_ABI if events == ["AnswerUpdated"] else TRANSFER_EVENT_ABI
        else:
            body["service"] = service
            body["service_config"] = {"fund_token": self.b.address()}
        watcher = self.b.create_watcher(self._channel(channel), body, rate_per_hour=rate)
        self.b.forced[watcher["watcher_id"]] = fate == "fail"

    def _archive_wallet(self, name: str) -> None:
        wallet = self.b.org.wallet_by_name(name)
        if wallet is not None and wallet["status"] != "archived":
            self.b.update_wallet(wallet["wallet_id"], {"status": "archived"})

    def _archive_watcher(self, name: str) -> None:
        for watcher in self.b.org.watchers.values():
            if watcher.get("name") == name and watcher["status"] in ("pending", "active", "failed"):
                self.b.update_watcher(watcher["channel_id"], watcher["watcher_id"], {"status": "archived"})

    def _archive_channel(self, index: int) -> None:
        channel_id = self._channel(index)
        watchers = [self.b.org.watchers[w] for w in self.b.org.channel_watchers[channel_id]]
        if any(w["status"] in ("pending", "active", "archiving") for w in watchers):
            self.b.engine.schedule(self.b.now + 60, self._archive_channel, index)
            return
        self.b.update_channel(channel_id, {"status": "archived"})

    # -- workload --------------------------------------------------------------------------------------------------

    def _running(self) -> bool:
        return self.live or self.b.now < self.start

    def _gap(self, rate: float) -> float:
        """Exponential gap with a diurnal swing (busier in the UTC afternoon)."""
        hour = (self.b.now % 86400) / 3600.0
        swing = 1.0 + 0.6 * math.sin((hour - 9.0) / 24.0 * 2 * math.pi)
        return self.rng.expovariate(rate * swing)

    def _usable_wallets(self) -> list[_Wallet]:
        org = self.b.org
        return [
            w
            for w in self.wallets
            if org.wallets[w.wallet_id]["status"] == "deployed"
            and w.weight > 0
            and org.channels[w.channel_id]["status"] == "active"
        ]

    def _active(self, channel_id: str) -> bool:
        return self.b.org.channels[channel_id]["status"] == "active"

    def _next_operation(self, due: float) -> None:
        """One arrival of the operation workload. Arrivals follow their own fractional clock (``due``): the engine
        runs each at the next whole second, and the next gap counts from ``due``, so the rate is exact."""
        if not self._running():
            return
        wallets = self._usable_wallets()
        if wallets:
            wallet = self.rng.choices(wallets, [w.weight for w in wallets])[0]
            self._create_operation(wallet)
        nxt = due + self._gap(self.ops_rate)
        self.b.engine.schedule(nxt, self._next_operation, nxt)

    def _create_operation(self, wallet: _Wallet) -> None:
        rng, now, shape = self.rng, self.b.now, self.shape
        self._counter += 1
        channel_id = self._workload_channel(wallet.channel_id)
        if not self._active(channel_id):
            return
        draft = rng.random() < shape.draft_share
        txs = [self._transfer() for _ in range(rng.choice(shape.transactions))]
        body: dict = {
            "chain_selector": wallet.chain_selector,
            "address": self.b.org.wallets[wallet.wallet_id]["address"],
            "wallet_operation_id": str(now * 1000 + self._counter % 1000),
            "transactions": txs,
        }
        if draft:
            body["deadline"] = 0 if rng.random() < 0.1 else now + rng.randint(*shape.deadline_after)
        else:
            body["deadline"] = 0 if rng.random() < 0.2 else now + 86400
            body["signature"] = "0x" + rng.randbytes(65).hex()
        op = self.b.create_operation(channel_id, body)
        if draft:
            self._plan_draft(channel_id, op)

    def _plan_draft(self, channel_id: str, op: dict) -> None:
        rng, now = self.rng, self.b.now
        horizon = (op["deadline"] - now - 120) if op["deadline"] else 4 * 3600
        fate = rng.random()
        if fate < 0.55 and horizon > 60:
            lo, hi = self.shape.finalize_after or (30, horizon)
            delay = min(rng.uniform(lo, hi), horizon) if op["deadline"] else rng.uniform(lo, hi)
            self.b.engine.schedule(now + delay, self._finalize, channel_id, op["operation_id"])
        elif fate < 0.75:
            self.b.engine.schedule(now + rng.uniform(60, 3600), self._cancel, channel_id, op["operation_id"])
        # else: left alone; expires at its deadline (or stays a draft when the deadline is 0)

    def _finalize(self, channel_id: str, operation_id: str) -> None:
        if self._running() and self.b.org.operations[operation_id]["status"] == "pending_signature":
            self.b.finalize_operation(
                channel_id, operation_id, "0x" + self.rng.randbytes(65).hex(), "0x" + self.rng.randbytes(32).hex()
            )

    def _cancel(self, channel_id: str, operation_id: str) -> None:
        if self._running() and self.b.org.operations[operation_id]["status"] == "pending_signature":
            self.b.cancel_operation(channel_id, operation_id)

    def _transfer(self) -> dict:
        rng = self.rng
        to = f"{rng.getrandbits(160):040x}"
        amount = rng.randrange(10**6, 10**12)
        return {
            "to": "0x" + f"{rng.getrandbits(160):040x}",
            "value": "0",
            "data": "0xa9059cbb" + to.rjust(64, "0") + f"{amount:064x}",
        }

    def _next_query(self, due: float) -> None:
        """One arrival of the query workload (fractional clock, as :meth:`_next_operation`)."""
        if not self._running():
            return
        channels = [c for c in self.channel_ids[:4] if self._active(c)]
        wallets = self._usable_wallets()
        if channels and wallets:
            rng = self.rng
            chain = rng.choice(wallets).chain_selector
            kind = rng.random()
            if kind < 0.6:
                selection: dict = {"type": "latest"}
            elif kind < 0.9:
                selection = {"type": "finalized"}
            else:
                selection = {"type": "block_number", "block_number": str(MODELS[chain].block_at(self.b.now) - 50)}
            call = "0x70a08231" + f"{rng.getrandbits(160):064x}" if rng.random() < 0.7 else "0x50d25bcd"
            body = {
                "idempotency_key": f"scn-{self.b.now}-{rng.getrandbits(32):08x}",
                "query_kind": "evm_call",
                "chain_selector": chain,
                "params": {"contract_address": self.b.address(), "call_data": call, "block_selection": selection},
            }
            channel_id = self._workload_channel(rng.choice(channels))
            if self._active(channel_id):
                self.b.create_query(channel_id, body)
        nxt = due + self._gap(self.ops_rate * self.shape.queries_per_operation)
        self.b.engine.schedule(nxt, self._next_query, nxt)
