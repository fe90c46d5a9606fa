"""The sandbox reached without a socket: a client, and a sync, answered in the test's process by the sandbox's app
(:mod:`toolkit.sandbox.inprocess`). For tests whose subject is what is synced, not how it crosses a network; faults,
truncation, kills, latency, signals and every ``chainops`` process keep real HTTP (the ``server`` fixture)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import TEST_KEY
from toolkit.api import Client
from toolkit.loader import SyncResult, sync
from toolkit.sandbox import Sandbox
from toolkit.sandbox.inprocess import BASE_URL


class InProcess:
    """One sandbox answering in process: ``base_url``, :meth:`client`, :meth:`sync`."""

    base_url = BASE_URL

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def __repr__(self) -> str:
        return f"<InProcess {self.sandbox!r}>"

    def client(self, key: str = TEST_KEY, **options: Any) -> Client:
        """The toolkit's client for ``key``, answered by the sandbox (options as :class:`Client` takes them)."""
        return Client(BASE_URL, key, transport=self.sandbox.transport(), **options)

    def sync(self, path: str | Path, key: str = TEST_KEY, **options: Any) -> SyncResult:
        """``tk.sync`` of the sandbox into ``path`` (quiet; options as :func:`toolkit.loader.sync` takes them)."""
        with self.client(key) as client:
            return sync(client=client, warehouse=str(path), quiet=True, **options)
