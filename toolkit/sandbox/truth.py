"""A read-only view of one organisation's state for tests: records exactly as GET serves them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from toolkit.sandbox.backend import Backend
from toolkit.sandbox.networks import network_records

if TYPE_CHECKING:
    from toolkit.sandbox.sandbox import Sandbox


def _copy(records: object) -> list[dict]:
    return json.loads(json.dumps(records))


class Truth:
    """What the sandbox holds for one organisation (archived included), synced to the clock on each read."""

    def __init__(self, sandbox: Sandbox, backend: Backend) -> None:
        self._sandbox = sandbox
        self._b = backend

    def __repr__(self) -> str:
        return f"<Truth org={self._b.org.org_id[:8]}>"

    def _read(self, pick: object) -> list[dict]:
        with self._sandbox.lock:
            self._sandbox.sync()
            return _copy(pick)

    @property
    def networks(self) -> list[dict]:
        """Network records."""
        return _copy(network_records())

    @property
    def channels(self) -> list[dict]:
        """Channel records."""
        return self._read(list(self._b.org.channels.values()))

    @property
    def wallets(self) -> list[dict]:
        """Wallet records."""
        return self._read(list(self._b.org.wallets.values()))

    @property
    def watchers(self) -> list[dict]:
        """Full Watcher records (as GET one serves them)."""
        return self._read(list(self._b.org.watchers.values()))

    @property
    def operations(self) -> list[dict]:
        """Operation records of every channel."""
        return self._read(list(self._b.org.operations.values()))

    @property
    def queries(self) -> list[dict]:
        """Query records of every channel."""
        return self._read(list(self._b.org.queries.values()))

    def events(self, channel_id: str) -> list[dict]:
        """The channel's events as served, in offset order."""
        with self._sandbox.lock:
            self._sandbox.sync()
            log = self._b.org.logs.get(channel_id)
            return [] if log is None else list(log.all_events())

    def event_index(self, channel_id: str) -> list[tuple[int, str, str, int]]:
        """(offset, event_id, type, created) of the channel's events in offset order: ``created`` is the time the
        event search's ``created.*`` filters compare (unix seconds)."""
        with self._sandbox.lock:
            self._sandbox.sync()
            log = self._b.org.logs.get(channel_id)
            if log is None:
                return []
            # from the log's index: decoding every event (and making its signatures) cost seconds on a large log
            return log.index()

    @property
    def messy(self) -> dict[str, str]:
        """Operation id -> the kind of trouble the ``messy`` shape gave its events (empty for other shapes)."""
        mess = self._b.mess
        return {} if mess is None else dict(mess.kinds)

    @property
    def dispatch_failed(self) -> dict[str, str]:
        """Query id -> the code of its dispatch failure, for each query failed (or planned to fail) in dispatch: no
        DON answer, so no ``verifiable_result`` and no proof."""
        with self._sandbox.lock:
            self._sandbox.sync()
            return dict(self._b.dispatch_failed)

    @property
    def transitions(self) -> list[tuple[str, str, int]]:
        """(operation_id, status, unix_ts) of every operation move the engine made, in order."""
        with self._sandbox.lock:
            self._sandbox.sync()
            return list(self._b.org.transitions)
