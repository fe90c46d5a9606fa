"""Wallets, channels and watchers: the commands the API calls and the backend moves they schedule."""

from __future__ import annotations

import random

from toolkit.sandbox.apierror import conflict, not_found, validation
from toolkit.sandbox.core import Core
from toolkit.sandbox.eventlog import EventMeta
from toolkit.sandbox.networks import MODELS
from toolkit.sandbox.proofs import encode_blob, event_hash, rfc3339
from toolkit.spec import ConflictCode, NotFoundCode

WATCHER_SUMMARY_DROP = ("events", "abi", "service_config")
_ACTIVE_WATCHER = frozenset({"pending", "active", "archiving", "archive_failed"})


class ResourcesMixin(Core):
    """Wallet, channel and watcher lifecycles."""

    watcher_rates: dict[str, float]
    #: resource id -> forced outcome of its next backend decision (True = fail), for scenarios
    forced: dict[str, bool]

    # -- wallets ---------------------------------------------------------------------------------------------------

    def create_wallet(self, body: dict) -> dict:
        """POST /wallets: a wallet in ``pending``; deploy follows in the backend."""
        if self.org.wallet_by_name(body["name"]) is not None:
            raise conflict(ConflictCode.WALLET_ALREADY_EXISTS, "a wallet with this name already exists")
        channel_id = body.get("status_channel_id")
        if channel_id is not None and channel_id not in self.org.channels:
            # a 400, not a 404: the 0.8 description declares no 404 on POST /wallets
            raise validation("status_channel_id names no channel of this organisation; create the channel first")
        wallet = {"wallet_id": self.uuid(), "name": body["name"]}
        if body.get("description"):
            wallet["description"] = body["description"]
        wallet.update(
            {
                "address": self.address(),
                "wallet_owner_address": body["wallet_owner_address"],
                "chain_selector": body["chain_selector"],
                "wallet_type": body["wallet_type"],
                "status": "pending",
            }
        )
        if channel_id is not None:
            wallet["status_channel_id"] = channel_id
        wallet.update(
            {
                "configuration": body.get("configuration") or {},
                "created_at": self.now,
                "allowed_rsa_signers": body.get("allowed_rsa_signers") or [],
                "allowed_ecdsa_signers": body.get("allowed_ecdsa_signers") or [],
            }
        )
        self.org.wallets[wallet["wallet_id"]] = wallet
        self._wallet_event(wallet, "wallet creation accepted")
        self.engine.schedule(self.now + self.timing.uniform(2, 12), self._wallet_deploying, wallet["wallet_id"])
        return wallet

    def _wallet_event(self, wallet: dict, reason: str) -> None:
        payload = {
            "status": wallet["status"],
            "status_reason": reason,
            "wallet_id": wallet["wallet_id"],
            "address": wallet["address"],
            "chain_selector": wallet["chain_selector"],
            "timestamp": self.now,
        }
        meta = EventMeta(wallet["status"], wallet["wallet_id"], wallet["chain_selector"], wallet["address"])
        self.emit(wallet.get("status_channel_id"), "wallet.status", payload, meta)

    def _wallet_deploying(self, wallet_id: str) -> None:
        wallet = self.org.wallets[wallet_id]
        if wallet["status"] != "pending":
            return
        wallet["status"] = "deploying"
        self._wallet_event(wallet, "deployment transaction submitted")
        model = MODELS[wallet["chain_selector"]]
        delay = self.timing.uniform(*model.inclusion) + self.timing.uniform(3, 20)
        self.engine.schedule(self.now + delay, self._wallet_deployed, wallet_id)

    def _wallet_deployed(self, wallet_id: str) -> None:
        wallet = self.org.wallets[wallet_id]
        if wallet["status"] != "deploying":
            return
        model = MODELS[wallet["chain_selector"]]
        forced = self.forced.pop(wallet_id, None)
        if forced if forced is not None else self.timing.random() < model.fail_rate:
            wallet["status"] = "failed"
            reason = self.timing.choice(
                (
                    "deployment reverted: execution reverted",
                    "intrinsic gas too low",
                    "chain unavailable: RPC endpoint timeout",
                )
            )
        else:
            wallet["status"] = "deployed"
            reason = f"smart account deployed in block {model.block_at(self.now)}"
        self._wallet_event(wallet, reason)

    def wallet(self, wallet_id: str) -> dict:
        """The wallet, or 404 ``WALLET_NOT_FOUND``."""
        wallet = self.org.wallets.get(wallet_id)
        if wallet is None:
            raise not_found(NotFoundCode.WALLET_NOT_FOUND, "wallet not found")
        return wallet

    def update_wallet(self, wallet_id: str, body: dict) -> dict:
        """PATCH /wallets/{id}: rename, describe, archive (synchronous)."""
        wallet = self.wallet(wallet_id)
        name = body.get("name")
        if name is not None and name != wallet["name"] and self.org.wallet_by_name(name) is not None:
            raise conflict(ConflictCode.WALLET_ALREADY_EXISTS, "a wallet with this name already exists")
        if body.get("status") == "archived" and wallet["status"] == "archived":
            raise conflict(ConflictCode.WALLET_ALREADY_ARCHIVED, "wallet is already archived")
        if name is not None:
            wallet["name"] = name
        if "description" in body:
            _set_description(wallet, body["description"])
        if body.get("status") == "archived":
            wallet["status"] = "archived"
            self._wallet_event(wallet, "wallet archived")
        return wallet

    # -- channels --------------------------------------------------------------------------------------------------

    def create_channel(self, body: dict) -> dict:
        """POST /channels."""
        if self.org.channel_by_name(body["name"]) is not None:
            raise conflict(ConflictCode.CHANNEL_ALREADY_EXISTS, "a channel with this name already exists")
        channel = {"channel_id": self.uuid(), "name": body["name"]}
        if body.get("description"):
            channel["description"] = body["description"]
        channel.update({"status": "active", "created_at": self.now})
        self.org.add_channel(channel)
        return channel

    def channel(self, channel_id: str) -> dict:
        """The channel, or 404 ``CHANNEL_NOT_FOUND``."""
        channel = self.org.channels.get(channel_id)
        if channel is None:
            raise not_found(NotFoundCode.CHANNEL_NOT_FOUND, "channel not found")
        return channel

    def open_channel(self, channel_id: str) -> dict:
        """The channel, refused with 400 when archived (no new work goes into an archived channel)."""
        channel = self.channel(channel_id)
        if channel["status"] == "archived":
            raise validation("channel is archived")
        return channel

    def update_channel(self, channel_id: str, body: dict) -> dict:
        """PATCH /channels/{id}: rename, describe, archive (refused while watchers are active)."""
        channel = self.channel(channel_id)
        name = body.get("name")
        if name is not None and name != channel["name"] and self.org.channel_by_name(name) is not None:
            raise conflict(ConflictCode.CHANNEL_ALREADY_EXISTS, "a channel with this name already exists")
        archive = body.get("status") == "archived" and channel["status"] != "archived"
        if archive and any(
            self.org.watchers[w]["status"] in _ACTIVE_WATCHER for w in self.org.channel_watchers[channel_id]
        ):
            raise conflict(None, "channel has active watchers; archive them first")
        if body.get("status") == "active" and channel["status"] == "archived":  # a state conflict: 409, as 0.8
            raise conflict(None, "an archived channel cannot be reactivated")
        if name is not None:
            channel["name"] = name
        if "description" in body:
            _set_description(channel, body["description"])
        if archive:
            channel["status"] = "archived"
        return channel

    # -- watchers --------------------------------------------------------------------------------------------------

    def create_watcher(self, channel_id: str, body: dict, rate_per_hour: float | None = None) -> dict:
        """POST /channels/{id}/watchers: a watcher in ``pending``; provisioning follows."""
        self.open_channel(channel_id)
        names = (self.org.watchers[w].get("name") for w in self.org.channel_watchers[channel_id])
        if body["name"] in names:
            raise conflict(ConflictCode.WATCHER_ALREADY_EXISTS, "a watcher with this name already exists")
        watcher = {
            "watcher_id": self.uuid(),
            "name": body["name"],
            "channel_id": channel_id,
            "created_at": self.now,
            "status": "pending",
            "chain_selector": body["chain_selector"],
            "address": body["address"],
        }
        if "service" in body:
            watcher["service"] = body["service"]
        watcher["events"] = list(body["events"])
        if "abi" in body:
            watcher["abi"] = body["abi"]
        watcher["don_family"] = "zone-a"
        watcher["workflow_id"] = self.hex32()
        if "service_config" in body:
            watcher["service_config"] = body["service_config"]
        self.org.watchers[watcher["watcher_id"]] = watcher
        self.org.channel_watchers[channel_id].append(watcher["watcher_id"])
        self.watcher_rates[watcher["watcher_id"]] = rate_per_hour or self.timing.uniform(10, 60)
        self._watcher_status(watcher, "watcher provisioning requested")
        self.engine.schedule(self.now + self.timing.uniform(5, 45), self._watcher_provisioned, watcher["watcher_id"])
        return watcher

    def _watcher_status(self, watcher: dict, reason: str) -> None:
        payload = {
            "status": watcher["status"],
            "status_reason": reason,
            "watcher_id": watcher["watcher_id"],
            "chain_selector": watcher["chain_selector"],
            "timestamp": self.now,
        }
        if "service" in watcher:
            payload["service"] = watcher["service"]
        payload["workflow_id"] = watcher["workflow_id"]
        meta = EventMeta(watcher["status"], watcher["watcher_id"], watcher["chain_selector"], watcher["address"])
        self.emit(watcher["channel_id"], "watcher.status", payload, meta)

    def _watcher_provisioned(self, watcher_id: str) -> None:
        watcher = self.org.watchers[watcher_id]
        if watcher["status"] != "pending":
            return
        forced = self.forced.pop(watcher_id, None)
        if forced if forced is not None else self.timing.random() < 0.03:
            watcher["status"] = "failed"
            self._watcher_status(watcher, "provisioning failed: workflow registration rejected by DON")
            return
        watcher["status"] = "active"
        self._watcher_status(watcher, "watcher active")
        self._schedule_watcher_event(watcher_id)

    def _schedule_watcher_event(self, watcher_id: str) -> None:
        rate = self.watcher_rates.get(watcher_id, 30.0)
        self.engine.schedule(self.now + self.timing.expovariate(rate / 3600.0), self._watcher_event, watcher_id)

    def _watcher_event(self, watcher_id: str) -> None:
        watcher = self.org.watchers[watcher_id]
        if watcher["status"] != "active":
            return
        self.emit_watcher_event(watcher, self.timing)
        self._schedule_watcher_event(watcher_id)

    def emit_watcher_event(self, watcher: dict, rng: random.Random) -> None:
        """Emit one observed on-chain event for an active watcher."""
        now = self.now
        name = rng.choice(watcher["events"])
        model = MODELS[watcher["chain_selector"]]
        decoded = {
            "service": watcher.get("service", "_crec"),
            "name": name,
            "chain_selector": watcher["chain_selector"],
            "timestamp": rfc3339(now),
            "data": {
                "address": watcher["address"],
                "event": name,
                "block_number": str(model.block_at(now)),
                "tx_hash": self.hex32(),
                "log_index": rng.randrange(0, 400),
                "confidence_level": "latest" if model.is_testnet else "finalized",
                "params": {"from": self.address(), "to": self.address(), "value": str(rng.randrange(10**15, 10**22))},
            },
        }
        blob = encode_blob(decoded)
        digest = event_hash(blob)
        payload = {
            "watcher_id": watcher["watcher_id"],
            "event_hash": digest,
            "verifiable_event": blob,
            "chain_selector": watcher["chain_selector"],
            "timestamp": now,
            "workflow_id": watcher["workflow_id"],
            "workflow_execution_id": self.hex32(),
        }
        meta = EventMeta(
            None, watcher["watcher_id"], watcher["chain_selector"], watcher["address"], name, watcher.get("service")
        )
        proof = self.proof_for(
            digest, execution_id=payload["workflow_execution_id"], workflow_id=payload["workflow_id"]
        )
        self.emit(watcher["channel_id"], "watcher.event", payload, meta, proof)

    def watcher(self, channel_id: str, watcher_id: str) -> dict:
        """The watcher of that channel, or 404 ``WATCHER_NOT_FOUND``."""
        self.channel(channel_id)
        watcher = self.org.watchers.get(watcher_id)
        if watcher is None or watcher["channel_id"] != channel_id:
            raise not_found(NotFoundCode.WATCHER_NOT_FOUND, "watcher not found")
        return watcher

    def update_watcher(self, channel_id: str, watcher_id: str, body: dict) -> tuple[dict, bool]:
        """PATCH a watcher: rename (200) and/or archive (202, ``archiving``). Answers (watcher, archiving?)."""
        watcher = self.watcher(channel_id, watcher_id)
        name = body.get("name")
        if name is not None and name != watcher.get("name"):
            if any(self.org.watchers[w].get("name") == name for w in self.org.channel_watchers[channel_id]):
                raise conflict(ConflictCode.WATCHER_ALREADY_EXISTS, "a watcher with this name already exists")
            watcher["name"] = name
        if body.get("status") != "archived":
            if "status" in body:
                raise validation("status may only be set to archived")
            return watcher, False
        if watcher["status"] in ("archiving", "archived"):
            raise conflict(None, f"watcher is already {watcher['status']}")
        watcher["status"] = "archiving"
        self._watcher_status(watcher, "watcher archive requested")
        self.engine.schedule(self.now + self.timing.uniform(5, 30), self._watcher_archived, watcher_id)
        return watcher, True

    def _watcher_archived(self, watcher_id: str) -> None:
        watcher = self.org.watchers[watcher_id]
        if watcher["status"] != "archiving":
            return
        if self.forced.pop(watcher_id, False):
            watcher["status"] = "archive_failed"
            self._watcher_status(watcher, "tear-down failed: workflow deregistration rejected by DON")
            return
        watcher["status"] = "archived"
        self._watcher_status(watcher, "watcher torn down")


def _set_description(record: dict, description: str) -> None:
    if description:
        record["description"] = description
    else:
        record.pop("description", None)


def watcher_summary(watcher: dict) -> dict:
    """The ``WatcherSummary`` list item of a watcher."""
    return {k: v for k, v in watcher.items() if k not in WATCHER_SUMMARY_DROP}
