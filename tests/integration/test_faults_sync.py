"""A sync under every fault the sandbox injects completes, and ends identical to a sync without faults; when the
faults never clear it stops with a clear error. The network's faults are served over real HTTP; the clean reference
and the warehouse's own faults (a failed commit, a failed reopen) are answered in process by one sandbox."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.support.latency_proxy import LatencyProxy
from tests.conftest import TEST_KEY
from tests.support.service import InProcess
from tests.support.snapshot import TABLES, snapshot
from toolkit import errors
from toolkit.api import Client
from toolkit.api.retry import RetryPolicy
from toolkit.loader import sync

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("CHAINOPS_TEST_SEED", "20261122"))
START = 1_795_000_000  # the same simulated "now" for every sandbox, so their histories are identical
PATIENT = RetryPolicy(attempts=12, initial=0.01, maximum=0.1, floor=0.01, deadline=60)

FAULTS = {
    "5xx": {"fail_rate": 0.25},
    "429": {"limit_rate": 0.2},  # at random, not a bucket: a slow machine must see them too
    "slow": {"slow_rate": 0.1, "slow_seconds": 0.8},  # twice the client's timeout in this mode (SLOW_TIMEOUT)
    "truncated": {"truncate_rate": 0.2},
    "dropped": {"drop_rate": 0.2},
    "malformed": {"malformed_rate": 0.2},
}
#: The client's timeout: each slow answer costs the client this long, so the slow mode's is short (a normal answer
#: still comes well within it; one that does not is retried like a slow one, and the sync still ends exact).
TIMEOUT, SLOW_TIMEOUT = 0.75, 0.4


def make_sandbox(**faults):
    from toolkit.sandbox import Sandbox

    return Sandbox(orgs=(TEST_KEY,), seed=SEED % 1000, days=1, operations_per_day=600, start=START, **faults)


def serve(**faults):
    return make_sandbox(**faults).serve(host="127.0.0.1", port=0)


@pytest.fixture(scope="module")
def clean() -> InProcess:
    """The sandbox without faults, answering in process: the clean reference and the tests whose fault is the
    warehouse's, not the network's, sync from it (built once; syncs only read it)."""
    return InProcess(make_sandbox())


@pytest.fixture(scope="module")
def reference(clean, tmp_path_factory):
    path = tmp_path_factory.mktemp("ref") / "clean.duckdb"
    assert clean.sync(path).outcome == "ok"
    return snapshot(path)


@pytest.mark.parametrize("mode", sorted(FAULTS))
def test_sync_under_faults_equals_a_clean_sync(mode, reference, tmp_path) -> None:
    path = tmp_path / f"{mode}.duckdb"
    timeout = SLOW_TIMEOUT if mode == "slow" else TIMEOUT
    with serve(**FAULTS[mode]) as server, Client(server.base_url, TEST_KEY, retry=PATIENT, timeout=timeout) as client:
        result = sync(client=client, warehouse=str(path), quiet=True)
    assert result.outcome == "ok", f"seed {SEED}: {result.summary()}"
    assert result.retries > 0, f"seed {SEED}: the {mode} faults were never hit"
    got = snapshot(path)
    for table in TABLES:
        assert got[table] == reference[table], f"seed {SEED}: {table} differs under {mode} faults"


def test_faults_that_never_clear_stop_with_a_clear_error(tmp_path) -> None:
    quick = RetryPolicy(attempts=3, initial=0.01, maximum=0.05, floor=0.01)
    with (
        serve(fail_rate=1.0) as server,
        LatencyProxy(server.base_url, 0.0) as counted,
        Client(counted.base_url, TEST_KEY, retry=quick) as client,
        pytest.raises(errors.ServerError) as info,
    ):
        sync(client=client, warehouse=str(tmp_path / "w.duckdb"), quiet=True)
    text = str(info.value)
    assert "GET /networks answered 500" in text and "after 3 attempts" in text and "run again later" in text
    assert counted.requests == 3  # the three attempts, then it stops: no endless retrying, however fast the machine
    from toolkit.warehouse import Warehouse

    with Warehouse(tmp_path / "w.duckdb", read_only=True) as wh:
        outcome, message = wh.con.execute("SELECT outcome, message FROM sync_runs").fetchall()[0]
    assert outcome == "failed" and "answered 500" in message


def test_a_failed_commit_keeps_no_cursor_without_its_rows_and_the_next_run_catches_up(
    clean, reference, tmp_path, monkeypatch
) -> None:
    """A commit that fails (a full disk, say) loses its transaction whole: no cursor survives without its rows,
    the run is audited as failed with the error, the error says the disk is full and to run again, and the next run
    ends identical to a clean sync."""
    from toolkit.errors import WarehouseError
    from toolkit.warehouse import Warehouse

    path = tmp_path / "w.duckdb"
    real = Warehouse.set_cursors
    calls = {"n": 0}

    def failing_once(self, cursors):
        calls["n"] += 1
        if calls["n"] == 4:  # the fourth transaction's COMMIT fails, and DuckDB drops the transaction, as it does
            self.con.execute("ROLLBACK")
            raise OSError("No space left on device")
        return real(self, cursors)

    monkeypatch.setattr(Warehouse, "set_cursors", failing_once)
    with clean.client() as client:
        with pytest.raises(WarehouseError, match=r"No space left.*disk is full.*run the sync again") as raised:
            sync(client=client, warehouse=str(path), quiet=True)
        assert isinstance(raised.value.__cause__, OSError)
        with Warehouse(path, read_only=True) as wh:
            outcome, message = wh.con.execute("SELECT outcome, message FROM sync_runs").fetchall()[0]
            cursors = dict(wh.con.execute("SELECT stream, cursor FROM sync_state").fetchall())
            events = dict(wh.con.execute("SELECT channel_id, count(*) FROM events GROUP BY ALL").fetchall())
        assert outcome == "failed" and "No space left" in message
        for stream, cursor in cursors.items():  # every saved event cursor is covered by stored rows
            if stream.startswith("events:"):
                assert events.get(stream.split(":", 1)[1], 0) >= int(json.loads(cursor)["next_offset"] or 0)
        monkeypatch.setattr(Warehouse, "set_cursors", real)
        assert sync(client=client, warehouse=str(path), quiet=True).outcome == "ok"
    got = snapshot(path)
    for table in TABLES:
        assert got[table] == reference[table], f"seed {SEED}: {table} differs after a failed commit"


def test_a_warehouse_that_cannot_be_reopened_reports_why_and_keeps_what_was_synced(
    clean, reference, tmp_path, monkeypatch
) -> None:
    """Before the models the sync reopens its connection; if the file cannot be opened again, the error says so
    (not a closed-connection error from writing the audit row) and the rows already committed stay."""
    from toolkit.errors import WarehouseError
    from toolkit.warehouse import Warehouse

    path = tmp_path / "w.duckdb"
    real = Warehouse._connect
    calls = {"n": 0}

    def failing_second_time(self, wait):
        calls["n"] += 1
        if calls["n"] == 2:
            raise WarehouseError(f"Cannot open the warehouse {self.path}: simulated lock (try again).")
        return real(self, wait)

    monkeypatch.setattr(Warehouse, "_connect", failing_second_time)
    with clean.client() as client:
        with pytest.raises(WarehouseError, match="simulated lock"):
            sync(client=client, warehouse=str(path), quiet=True)
        monkeypatch.setattr(Warehouse, "_connect", real)
        with Warehouse(path, read_only=True) as wh:
            assert wh.count("events") == sum(1 for r in reference["events"])
        assert sync(client=client, warehouse=str(path), quiet=True).outcome == "ok"
    got = snapshot(path)
    for table in TABLES:
        assert got[table] == reference[table], f"seed {SEED}: {table} differs after a failed reopen"
