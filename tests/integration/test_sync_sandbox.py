"""End to end: the sandbox over real HTTP on 127.0.0.1 -> sync -> a real DuckDB file, checked against the truth."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest

from benchmarks.support.km_reference import km_percentile
from tests.conftest import TEST_KEY
from toolkit import spec
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.metrics import status_latency
from toolkit.warehouse import Warehouse

#: The sandbox over real HTTP, end to end (its in-process counterparts: test_incremental, the loader's tests).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def synced(server, tmp_path_factory):
    path = tmp_path_factory.mktemp("wh") / "sync.duckdb"
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={})
    result = sync(settings, quiet=True)
    return path, result, settings


def ids(rows, key):
    return sorted(r[key] for r in rows)


def test_sync_completes_and_is_audited(synced) -> None:
    path, result, _ = synced
    assert result.outcome == "ok", result.summary()
    with Warehouse(path, read_only=True) as wh:
        run = wh.con.execute("SELECT outcome, requests, rows_written->'$.events'->>'new' FROM sync_runs").fetchall()
    assert run == [("ok", result.requests, str(result.rows["events"]))]
    assert result.requests > 0
    # the model refresh is part of the run's record: what it recomputed, in how many pieces, and its retries
    with Warehouse(path, read_only=True) as wh:
        models = wh.con.execute(
            "SELECT models->>'operations', models->>'rebuilt', models->>'retries', models->>'pieces' FROM sync_runs"
        ).fetchall()[0]
        operations = wh.count("operation_lifecycle")
    assert models == (str(operations), "true", "0", str(result.models["pieces"])) and operations > 0


def test_resources_match_what_the_sandbox_served(synced, sandbox) -> None:
    path, _, _ = synced
    truth = sandbox.truth(TEST_KEY)
    with Warehouse(path, read_only=True) as wh:

        def column(sql):
            return sorted(r[0] for r in wh.con.execute(sql).fetchall())

        assert column("SELECT chain_selector FROM networks") == ids(truth.networks, "chain_selector")
        assert column("SELECT channel_id FROM channels") == ids(truth.channels, "channel_id")
        assert "archived" in {c["status"] for c in truth.channels}
        assert column("SELECT wallet_id FROM wallets") == ids(truth.wallets, "wallet_id")
        assert column("SELECT watcher_id FROM watchers") == ids(truth.watchers, "watcher_id")
        assert column("SELECT query_id FROM queries") == ids(truth.queries, "query_id")
        ops = dict(wh.con.execute("SELECT operation_id, status FROM operations").fetchall())
        assert ops == {o["operation_id"]: o["status"] for o in truth.operations}
        n_tx = wh.count("operation_transactions")
        assert n_tx == sum(len(o["transactions"]) for o in truth.operations)
        for channel in truth.channels:
            served = [e["event_id"] for e in truth.events(channel["channel_id"])]
            stored = column(f"SELECT event_id FROM events WHERE channel_id = '{channel['channel_id']}'")
            assert stored == sorted(served), channel["name"]


def test_four_fetch_threads_store_exactly_what_one_thread_stores(synced, server, tmp_path) -> None:
    """Against a remote service four threads fetch at once; on loopback one thread does it all. Same warehouse."""
    path, _, _ = synced
    other = tmp_path / "threads.duckdb"
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=other, environ={})
    assert sync(settings, quiet=True, workers=4).outcome == "ok"
    keys = {
        "events": "event_id",
        "operations": "operation_id",
        "operation_transactions": "operation_id, idx",
        "queries": "query_id",
        "watchers": "watcher_id",
        "wallets": "wallet_id",
    }
    with Warehouse(path, read_only=True) as one, Warehouse(other, read_only=True) as four:
        for table, key in keys.items():
            columns = ", ".join(f'"{c}"' for c in one.columns(table) if c not in ("synced_at", "write_seq"))
            sql = f"SELECT {columns} FROM {table} ORDER BY {key}"
            assert one.arrow(sql).equals(four.arrow(sql)), table


def test_transitions_match_the_engine(synced, sandbox) -> None:
    path, _, _ = synced
    truth = {(op, status): ts for op, status, ts in sandbox.truth(TEST_KEY).transitions}
    with Warehouse(path, read_only=True) as wh:
        stored = {
            (op, status): ts
            for op, status, ts in wh.con.execute(
                "SELECT operation_id, status, epoch(entered_at)::BIGINT FROM operation_transitions"
            ).fetchall()
        }
    assert stored == truth


def test_status_latency_matches_an_independent_computation(synced, sandbox) -> None:
    path, _, _ = synced
    truth = sandbox.truth(TEST_KEY)
    network_of = {n["chain_selector"]: n["name"] for n in truth.networks}
    chain_of = {o["operation_id"]: o["chain_selector"] for o in truth.operations}
    per_op = defaultdict(list)
    for op, status, ts in truth.transitions:
        per_op[op].append((ts, spec.OPERATION_STAGE_ORDER[status], status))
    with Warehouse(path, read_only=True) as wh:
        as_of = float(wh.con.execute("SELECT epoch(max(ts)) FROM events").fetchone()[0])
    reached = defaultdict(set)
    for op, moves in per_op.items():
        reached[network_of[chain_of[op]]] |= {s for _, _, s in moves}
    latest_only = {n for n, s in reached.items() if "confirmed_latest" in s and not s & {"confirmed_safe", "confirmed"}}
    # (duration, censored) per (network, status): a status left is a duration; the status an operation in flight
    # is still in is censored at the newest stored event; a terminal one (or latest-only's final stage) is neither
    observations = defaultdict(list)
    for op, moves in per_op.items():
        moves.sort()
        name = network_of[chain_of[op]]
        for (t0, _, s0), (t1, _, _) in itertools.pairwise(moves):
            observations[(name, s0)].append((t1 - t0, False))
        t_last, _, last = moves[-1]
        if last not in spec.OPERATION_TERMINAL and not (last == "confirmed_latest" and name in latest_only):
            observations[(name, last)].append((as_of - t_last, True))
    df = status_latency(str(path), by=["network", "status"])
    got = {(r.network, r.status): (r.n, r.censored, r.p50_s, r.p90_s, r.mean_s) for r in df.itertuples()}
    want = {}
    for key, obs in observations.items():
        durations, censored = [d for d, _ in obs], [c for _, c in obs]
        ended = [d for d, c in obs if not c]
        want[key] = (
            len(ended),
            sum(censored),
            km_percentile(durations, censored, 0.5),
            km_percentile(durations, censored, 0.9),
            float(np.mean(ended)) if ended else float("nan"),
        )
    assert {k for k, v in got.items() if v[0] or v[1]} == want.keys()
    for key, (n, censored, p50, p90, mean) in want.items():
        assert got[key][:2] == (n, censored), key
        assert got[key][2:] == pytest.approx((p50, p90, mean), nan_ok=True), key
    assert df["status"].cat.ordered
    testnets = {n["name"] for n in truth.networks if n.get("type") == "testnet"}
    reached = set(df.loc[df["status"].isin(["confirmed_safe", "confirmed"]), "network"])
    assert testnets and not (testnets & reached), "test networks stop at confirmed_latest"


def test_second_sync_is_incremental_and_catches_new_events(synced, sandbox) -> None:
    path, _, settings = synced
    again = sync(settings, quiet=True)
    assert again.rows["events"] == 0
    sandbox.advance(1800)
    later = sync(settings, quiet=True)
    assert later.rows["events"] > 0
    truth = sandbox.truth(TEST_KEY)
    with Warehouse(path, read_only=True) as wh:
        assert wh.count("events") == sum(len(truth.events(c["channel_id"])) for c in truth.channels)
        ops = dict(wh.con.execute("SELECT operation_id, status FROM operations").fetchall())
    assert ops == {o["operation_id"]: o["status"] for o in truth.operations}


def test_key_never_logged_stored_or_shown(server, tmp_path, caplog) -> None:
    import logging
    import traceback

    from toolkit import errors

    caplog.set_level(logging.DEBUG)
    path = tmp_path / "keys.duckdb"
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={})
    result = sync(settings, quiet=True)
    bad = Settings.load(base_url=server.base_url, api_key=TEST_KEY + "-wrong", warehouse=path, environ={})
    with pytest.raises(errors.AuthenticationError) as info:
        sync(bad, quiet=True)
    shown = [
        caplog.text,
        repr(settings),
        str(settings),
        repr(result),
        result.summary(),
        "".join(traceback.format_exception(info.value)),
    ]
    assert "httpx" in caplog.text  # the requests were logged, at every level, without the key
    for text in shown:
        assert TEST_KEY not in text
    assert TEST_KEY.encode() not in path.read_bytes()


def test_channel_option_limits_the_per_channel_streams(server, sandbox, tmp_path) -> None:
    from toolkit.errors import ChainopsError

    truth = sandbox.truth(TEST_KEY)
    one = next(c for c in truth.channels if truth.events(c["channel_id"]))
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=tmp_path / "one.duckdb", environ={})
    sync(settings, channels=[one["channel_id"]], quiet=True)
    with Warehouse(tmp_path / "one.duckdb", read_only=True) as wh:
        assert {r[0] for r in wh.con.execute("SELECT DISTINCT channel_id FROM events").fetchall()} == {
            one["channel_id"]
        }
        assert wh.count("channels") == len(truth.channels)  # the organisation-wide lists are whole
    with pytest.raises(ChainopsError) as info:
        sync(settings, channels=["no-such-channel"], quiet=True)
    assert "no-such-channel" in str(info.value) and "chainops sql" in str(info.value)
