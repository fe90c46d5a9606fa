"""The filter tests' warehouse: four operations on two channels and two networks (one failed), a query and a
watcher, models refreshed (``tests/metrics/conftest.py`` gives it as the ``warehouse`` fixture)."""

from __future__ import annotations

from pathlib import Path

from tests.support.builders import SEPOLIA, build, ladder, query_event, refresh, watcher_event, watcher_status
from toolkit.warehouse import Warehouse

__all__ = ["FULL", "filters_warehouse"]

FULL = ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed")


def filters_warehouse(path: Path) -> Warehouse:
    """The warehouse at ``path``, open for writing."""
    events = ladder("a", FULL, (0, 1, 2, 3, 15, 400, 800), channel="ch-1")
    events += ladder("b", FULL, (86_400, 86_401, 86_402, 86_403, 86_415, 86_800, 87_200), channel="ch-2")
    events += ladder(
        "c",
        ("accepted", "sending", "sent", "broadcasting", "confirmed_latest"),
        (0, 1, 2, 3, 12),
        chain=SEPOLIA,
        channel="ch-1",
    )
    events += ladder("d", ("accepted", "sending", "failed"), (0, 1, 5), reason="nonce too low", channel="ch-2")
    events += [query_event("q", s, t) for s, t in (("accepted", 0), ("sending", 1), ("sent", 2), ("completed", 9))]
    events += [watcher_status("w", "active", 0), watcher_event("w", 60)]
    return refresh(build(path, events=events))
