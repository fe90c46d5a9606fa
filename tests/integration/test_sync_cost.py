"""An incremental run costs what changed: it learns from the event logs, and lists only when the safety net is due.

A sandbox on a frozen clock; each sync's requests are recorded by a real HTTP transport under the toolkit's client.
What changed reaches the warehouse from the events (new operations and queries fetched by id, watchers named by
``watcher.status`` events fetched again), and every table then equals a fresh sync of the same state. A change the
service announces with no event (a watcher renamed) waits for the safety net, which runs when its time has come
(its stored time made older here, in the warehouse file) or with ``--full``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from benchmarks.support.bodies import query_body
from tests.support.snapshot import TABLES, snapshot
from toolkit.api import Client
from toolkit.config import Settings
from toolkit.loader import SyncResult, sync
from toolkit.loader.safety_net import SAFETY_NET_EVERY
from toolkit.sandbox import Sandbox
from toolkit.warehouse import Warehouse

#: Its syncs count their requests through a real HTTP transport to the sandbox on 127.0.0.1 (the whole module is slow).
pytestmark = pytest.mark.slow

KEY = "ck_cost_SECRET-5e1d"
START = 1_791_000_000 // 60 * 60
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Counting(httpx.HTTPTransport):
    """A real HTTP transport that counts requests by endpoint (ids as ``{}``)."""

    def __init__(self) -> None:
        super().__init__()
        self.by_endpoint: Counter[str] = Counter()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Count, then send."""
        self.by_endpoint[_UUID.sub("{}", request.url.path.removeprefix("/v1"))] += 1
        return super().handle_request(request)


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    """A seeded organisation of five channels on a frozen clock."""
    return Sandbox(orgs=(KEY,), seed=23, days=1, operations_per_day=200, start=START)


@pytest.fixture(scope="module")
def server(sb: Sandbox) -> Iterator[object]:
    """The sandbox on 127.0.0.1."""
    with sb.serve() as running:
        yield running


def run(server, path, **kwargs) -> tuple[SyncResult, Counter[str]]:
    """One sync; its result and its requests by endpoint."""
    transport = Counting()
    with Client(server.base_url, KEY, transport=transport) as client:
        settings = Settings.load(base_url=server.base_url, api_key=KEY, warehouse=path, environ={})
        result = sync(settings, client=client, quiet=True, **kwargs)
    assert result.outcome == "ok", result.summary()
    return result, transport.by_endpoint


def assert_same_as_fresh_sync(server, path, tmp_path) -> None:
    fresh = tmp_path / "fresh.duckdb"
    run(server, fresh)
    got, want = snapshot(path), snapshot(fresh)
    for table in TABLES:
        assert got[table] == want[table], table


def age_safety_net(path, by: timedelta) -> None:
    """Make every channel's last safety net older by ``by`` (in the warehouse file, as a past run would have left
    it)."""
    with Warehouse(path) as wh:
        sql = "SELECT stream, cursor->>'at' FROM sync_state WHERE stream LIKE 'safety_net:%'"
        rows = wh.con.execute(sql).fetchall()
        assert rows, "a completed run records its safety net"
        with wh.transaction():
            for stream, at in rows:
                wh.set_cursor(stream, {"at": (datetime.fromisoformat(at) - by).astimezone(UTC).isoformat()})


def channel_requests(by: Counter[str], kind: str) -> int:
    """Requests to ``/channels/{}/<kind>`` (lists only, not single records)."""
    return by[f"/channels/{{}}/{kind}"]


def test_changes_reach_the_warehouse_from_the_events_alone(sb, server, tmp_path) -> None:
    path = tmp_path / "cost.duckdb"
    first, _ = run(server, path)
    channels = len(sb.truth(KEY).channels)
    quiet, by = run(server, path)
    assert quiet.requests == 3 + channels, by  # networks, channels, wallets; one poll per channel
    with Client(server.base_url, KEY) as api:
        cids = [c["channel_id"] for c in api.iter_channels()][:2]
        chain = next(w for w in api.iter_wallets() if w["status"] == "deployed")["chain_selector"]
        queries = [api.create_query(cid, query_body(f"cost-{i}", chain, i)) for i, cid in enumerate(cids)]
        body = {"name": "cost-watcher", "chain_selector": chain, "address": "0x" + "ab" * 20, "events": ["Transfer"]}
        watcher = api.create_watcher(cids[0], {**body, "service": "dta"})
        sb.advance(900)
        api.archive_watcher(cids[0], watcher["watcher_id"])
        sb.advance(120)
    later, by = run(server, path)
    for kind in ("watchers", "operations", "queries"):
        assert channel_requests(by, kind) == 0, by  # nothing listed: the safety net is not due
    assert by["/channels/{}/queries/{}"] >= len(queries), "new queries fetched by id"
    assert by["/channels/{}/watchers/{}"] >= 1, "the watcher its events name fetched again"
    with Warehouse(path, read_only=True) as wh:
        sql = "SELECT status FROM watchers WHERE watcher_id = ?"
        (status,) = wh.con.execute(sql, [watcher["watcher_id"]]).fetchone()
    assert status == "archived"
    assert later.requests < first.requests
    assert_same_as_fresh_sync(server, path, tmp_path)


def test_the_safety_net_runs_when_due_and_catches_what_no_event_said(sb, server, tmp_path) -> None:
    path = tmp_path / "net.duckdb"
    run(server, path)
    with Client(server.base_url, KEY) as api:
        cid, wid = next(
            (c["channel_id"], w["watcher_id"])
            for c in api.iter_channels()
            for w in api.iter_watchers(c["channel_id"])
            if w["status"] != "archived"
        )
        api.rename_watcher(cid, wid, "renamed-without-an-event")

    def name() -> str:
        with Warehouse(path, read_only=True) as wh:
            return wh.con.execute("SELECT name FROM watchers WHERE watcher_id = ?", [wid]).fetchone()[0]

    _, by = run(server, path)
    assert channel_requests(by, "watchers") == 0 and name() != "renamed-without-an-event"
    age_safety_net(path, SAFETY_NET_EVERY - timedelta(minutes=5))
    _, by = run(server, path)
    assert channel_requests(by, "watchers") == 0, "not due yet"
    age_safety_net(path, timedelta(minutes=10))
    _, by = run(server, path)
    channels = len(sb.truth(KEY).channels)
    assert channel_requests(by, "watchers") >= channels and channel_requests(by, "operations") >= channels
    assert name() == "renamed-without-an-event"
    _, by = run(server, path)
    assert channel_requests(by, "watchers") == 0, "netted again only after SAFETY_NET_EVERY"
    assert_same_as_fresh_sync(server, path, tmp_path)


def test_full_runs_the_safety_net(sb, server, tmp_path) -> None:
    path = tmp_path / "full.duckdb"
    run(server, path)
    _, by = run(server, path, full=True)
    channels = len(sb.truth(KEY).channels)
    for kind in ("watchers", "operations", "queries"):
        assert channel_requests(by, kind) >= channels, by


def test_when_the_safety_net_is_due(tmp_path) -> None:
    """Never netted, or netted SAFETY_NET_EVERY ago or more, or forgotten after a run with a problem: due; with
    ``full``, every channel."""
    from toolkit.loader import safety_net

    now = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    channels = ["c-new", "c-recent", "c-old", "c-forgotten"]
    with Warehouse(tmp_path / "net.duckdb") as wh:
        safety_net.mark(wh, ["c-recent", "c-forgotten"], now - SAFETY_NET_EVERY + timedelta(seconds=1))
        safety_net.mark(wh, ["c-old"], now - SAFETY_NET_EVERY)
        safety_net.forget(wh, ["c-forgotten"])
        assert safety_net.due(wh, channels, now, full=False) == {"c-new", "c-old", "c-forgotten"}
        assert safety_net.due(wh, channels, now, full=True) == set(channels)
        safety_net.mark(wh, channels, now)
        assert safety_net.due(wh, channels, now + SAFETY_NET_EVERY - timedelta(seconds=1), full=False) == set()
