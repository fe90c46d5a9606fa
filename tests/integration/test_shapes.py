"""Shapes of organisation the default scenario does not make, synced into a real DuckDB file: one
channel holding everything, hundreds of tiny channels, operations with many transactions, long-lived operations and
ten times more queries than operations.

Expected values come from the sandbox's own records (its ``Truth``), never from the code under test. The memory
ceilings of the sync are set far below what the work needs, so every shape also proves that a ceiling is a target:
the work spills, goes in smaller pieces or retries with more, and the sync completes.

The syncs read the sandbox through its in-process transport (``tests/support/service.py``): the subject is what a
sync stores under a memory ceiling, not how the answers cross a network (the same answers, byte for byte)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import duckdb
import pytest

from tests.conftest import TEST_KEY
from tests.support.service import InProcess
from toolkit.loader import DEFAULT_TUNING, SyncResult, Tuning
from toolkit.sandbox import Sandbox
from toolkit.warehouse import memory, model_tables, patch

pytestmark = pytest.mark.slow

START = 1_795_000_000
#: Far below what a first build of these shapes needs at the default piece size.
TIGHT_MEMORY = "24MB"

# shape, days, operations per day: sizes at which each shape's particular load shows (the one busy channel at the
# size the failure was reported at: about 200,000 events)
SHAPES = [
    ("one-channel", 4, 6200),
    ("many-channels", 1, 2500),
    ("many-transactions", 1, 2500),
    ("long-lived", 2, 1500),
    ("query-heavy", 1, 1200),
]


def run_sync(service: InProcess, path, tuning: Tuning = DEFAULT_TUNING) -> SyncResult:
    return service.sync(path, tuning=tuning)


def expected(sandbox: Sandbox) -> tuple[dict[str, Counter], dict[str, str]]:
    """What the warehouse must hold, counted from the sandbox's own records, and each operation's status: one read
    of the records (the clock is frozen; a copy of the busiest shape's 25,000 operations costs ~0.6 s of CPU)."""
    truth = sandbox.truth(TEST_KEY)
    channels = [c["channel_id"] for c in truth.channels]
    operations = truth.operations
    return {
        # counted from the log's index: decoding the one busy channel's 190,000 events twice took 18 s of CPU
        "events": Counter({c: n for c in channels if (n := len(truth.event_index(c)))}),
        "operations": Counter(o["status"] for o in operations),
        "transactions": Counter({o["operation_id"]: len(o["transactions"]) for o in operations}),
        "queries": Counter(q["status"] for q in truth.queries),
        "channels": Counter({"channels": len(channels)}),
    }, {o["operation_id"]: o["status"] for o in operations}


def stored(path) -> dict[str, Counter]:
    with duckdb.connect(str(path), read_only=True) as con:

        def counts(sql: str) -> Counter:
            return Counter(dict(con.execute(sql).fetchall()))

        return {
            "events": counts("SELECT channel_id, count(*) FROM events GROUP BY ALL"),
            "operations": counts("SELECT status, count(*) FROM operations GROUP BY ALL"),
            "transactions": counts("SELECT operation_id, count(*) FROM operation_transactions GROUP BY ALL"),
            "queries": counts("SELECT status, count(*) FROM queries GROUP BY ALL"),
            "channels": counts("SELECT 'channels', count(*) FROM channels"),
        }


@pytest.mark.slow
@pytest.mark.parametrize(("shape", "days", "per_day"), SHAPES)
def test_each_shape_syncs_completely_under_a_tight_memory_ceiling(shape, days, per_day, tmp_path, monkeypatch):
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=3, days=days, operations_per_day=per_day, shape=shape, start=START)
    want, statuses = expected(sandbox)  # the clock is frozen: what the sandbox holds stays put
    result = run_sync(
        InProcess(sandbox), tmp_path / "w.duckdb", replace(DEFAULT_TUNING, models_memory_limit=TIGHT_MEMORY)
    )
    assert result.outcome == "ok", result.summary()
    assert stored(tmp_path / "w.duckdb") == want
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        # every operation is in the model tables once, and its last status is the one the service reports
        lifecycle = dict(con.execute("SELECT operation_id, last_status FROM model_operation_lifecycle").fetchall())
        stale = con.execute("SELECT count(*) FROM model_stale_operations").fetchall()[0][0]
    assert stale == 0
    assert lifecycle == statuses


def lifecycle_of(path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(
            "SELECT operation_id, last_status, terminal_status, epoch(created_at) "
            "FROM operation_lifecycle ORDER BY operation_id"
        ).fetchall()


@pytest.fixture(scope="module")
def busy_transactions():
    """Operations of 16 transactions each: the largest rows a batch of operations can bring; what the warehouse must
    hold and each operation's status, read once (the clock is frozen: the sandbox's records stay put)."""
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=4, days=1, operations_per_day=2500, shape="many-transactions", start=START)
    return InProcess(sandbox), *expected(sandbox)


def test_loading_under_a_ceiling_too_low_for_one_batch_retries_with_more_and_completes(
    busy_transactions, tmp_path, monkeypatch
) -> None:
    service, want, _ = busy_transactions
    tight = replace(DEFAULT_TUNING, sync_memory_limit="8MB")  # an upsert of one batch needs more than this
    result = run_sync(service, tmp_path / "w.duckdb", tight)
    assert result.outcome == "ok", result.summary()
    assert stored(tmp_path / "w.duckdb") == want


def test_a_crash_in_the_models_build_leaves_a_warehouse_the_next_sync_completes(
    busy_transactions, tmp_path, monkeypatch
) -> None:
    service = busy_transactions[0]
    reference = tmp_path / "reference.duckdb"
    assert run_sync(service, reference).outcome == "ok"

    monkeypatch.setattr(model_tables, "CHUNK_BOUNDS", (200, 200))  # many pieces, so the crash comes mid-way
    fold = model_tables._fold_in_scope
    calls = []

    def crash_on_the_third_piece(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt("killed in the models build")
        return fold(*args, **kwargs)

    monkeypatch.setattr(model_tables, "_fold_in_scope", crash_on_the_third_piece)
    path = tmp_path / "crashed.duckdb"
    with pytest.raises(KeyboardInterrupt):
        run_sync(service, path)
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT outcome FROM sync_runs").fetchall() == [("interrupted",)]
    assert lifecycle_of(path) == lifecycle_of(reference)  # exact before the models are in: computed live
    monkeypatch.setattr(model_tables, "_fold_in_scope", fold)
    again = run_sync(service, path)
    assert again.outcome == "ok", again.summary()
    assert lifecycle_of(path) == lifecycle_of(reference)
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM model_stale_operations").fetchall() == [(0,)]


def test_models_that_cannot_be_built_at_the_ceiling_end_partial_with_every_row_stored(
    busy_transactions, tmp_path, monkeypatch
) -> None:
    service, want, statuses = busy_transactions
    monkeypatch.setattr(memory, "CEILING_BYTES", 2 * 2**20)  # no retry may go higher
    path = tmp_path / "w.duckdb"
    result = run_sync(service, path, replace(DEFAULT_TUNING, models_memory_limit="2MB"))
    assert result.outcome == "partial"
    assert "model tables were not refreshed" in result.message
    assert stored(path) == want
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT outcome FROM sync_runs").fetchall() == [("partial",)]
        lifecycle = dict(con.execute("SELECT operation_id, last_status FROM operation_lifecycle").fetchall())
    assert lifecycle == statuses


def test_a_patch_that_cannot_fit_is_a_problem_and_the_next_sync_applies_it(busy_transactions, tmp_path, monkeypatch):
    service, want, _ = busy_transactions
    applied = patch.apply_new_events

    def out_of_memory(con):
        raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block of size 256.0 KiB")

    monkeypatch.setattr(patch, "apply_new_events", out_of_memory)
    path = tmp_path / "w.duckdb"
    first = run_sync(service, path)
    assert first.outcome == "partial" and "not yet applied" in first.message

    def patched() -> list:
        with duckdb.connect(str(path), read_only=True) as con:
            return con.execute("SELECT stream FROM sync_state WHERE stream = 'patch'").fetchall()

    assert patched() == []  # nothing applied, nothing marked as applied
    monkeypatch.setattr(patch, "apply_new_events", applied)
    again = run_sync(service, path)
    assert again.outcome == "ok", again.summary()
    assert patched() == [("patch",)]
    assert stored(path) == want
