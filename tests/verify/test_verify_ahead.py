"""verify's batch read ahead (``toolkit/verify/ahead.py``): the pool checks a first batch, read over a read-only
connection, while the warehouse opens for writing. Every event must still be checked once, with the verdict one
process gives, that batch's verdicts stored first however the first stream ends, and nothing written to a file
the open refuses."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from tests.verify.test_verify_pool import _verdicts
from tests.verify.test_verify_warehouse import verified, world  # noqa: F401 - the module's fixtures, shared
from tests.warehouse.test_foreign_warehouses import digest
from toolkit.errors import WarehouseError
from toolkit.verify import resolve_policy
from toolkit.verify import run as verify_run
from toolkit.verify.ahead import read_ahead
from toolkit.verify.run import verify_warehouse
from toolkit.warehouse.migrations import MIGRATIONS, RECORD_PREFIX

pytestmark = pytest.mark.slow

BATCH = 97


def _policy(info: dict):
    return resolve_policy(org_id=info["org_id"], signers=",".join(info["signers"]), env={})


def _copy(source: Path, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    shutil.copy(source, path)
    return path


def _spied(monkeypatch) -> tuple[list, list[list[str]]]:
    """What ``read_ahead`` returned, and the event ids of each batch of verdicts stored, in order."""
    read, stored = [], []
    real_read, real_store = verify_run.read_ahead, verify_run._store

    def reading(*args, **kwargs):
        read.append(real_read(*args, **kwargs))
        return read[-1]

    def storing(wh, batch, results, policy) -> None:
        stored.append(batch.column("event_id").to_pylist())
        real_store(wh, batch, results, policy)

    monkeypatch.setattr(verify_run, "read_ahead", reading)
    monkeypatch.setattr(verify_run, "_store", storing)
    monkeypatch.setattr(verify_run, "POOL_THRESHOLD", 0)  # the sandbox's world is below it
    return read, stored


@pytest.mark.parametrize("all_events", [False, True])
def test_the_pool_checks_the_batch_read_ahead_and_the_stream_leaves_it_out(
    world,  # noqa: F811
    verified,  # noqa: F811
    tmp_path,
    monkeypatch,
    all_events: bool,
) -> None:
    _, info, forged, synced = world
    policy = _policy(info)
    # --all starts from a verified warehouse: every event has a verdict already, the run's start tells them apart
    source = verified if all_events else synced
    one, pooled = _copy(source, tmp_path, "one.duckdb"), _copy(source, tmp_path, "pooled.duckdb")
    alone = verify_warehouse(one, policy, all_events=all_events, workers=1)
    read, stored = _spied(monkeypatch)
    result = verify_warehouse(pooled, policy, all_events=all_events, workers=2, batch_rows=BATCH)
    (ahead,) = read
    assert alone.checked > BATCH * 3
    assert ahead is not None and ahead.batch is not None and ahead.batch.num_rows == ahead.todo == BATCH
    assert stored[0] == ahead.batch.column("event_id").to_pylist()  # its verdicts are the first stored
    ids = [i for batch in stored for i in batch]
    assert len(ids) == len(set(ids)) == result.checked == alone.checked  # none checked twice, none left out
    assert result.workers == 2 and result.standing == alone.standing
    assert alone.standing.get("invalid", 0) == len(forged) > 0
    assert _verdicts(pooled) == _verdicts(one)
    assert "read ahead for the pool" in result.phases and "count what to verify" not in result.phases


def test_a_reader_waiting_from_the_start_gets_in_after_the_batch_read_ahead_is_stored(
    world,  # noqa: F811
    tmp_path,
    monkeypatch,
) -> None:
    """The first stream stops before reading a batch of its own: the one the pool had is stored, the reader gets
    in, and the next stream (which knows nothing of that batch) reads the rest."""
    _, info, _, synced = world
    policy = _policy(info)
    one, pooled = _copy(synced, tmp_path, "one.duckdb"), _copy(synced, tmp_path, "pooled.duckdb")
    alone = verify_warehouse(one, policy, workers=1)
    read, stored = _spied(monkeypatch)
    reopened: list[bool] = []
    real_yield = verify_run.Warehouse.yield_to_readers

    def yielding(self, **kwargs) -> bool:
        reopened.append(True)
        return real_yield(self, **kwargs)

    monkeypatch.setattr(verify_run.Warehouse, "yield_to_readers", yielding)
    Path(f"{pooled}.readers").touch()  # a reader asks before verify has opened the file for writing
    result = verify_warehouse(pooled, policy, workers=2, batch_rows=BATCH)
    (ahead,) = read
    assert reopened == [True]
    assert stored[0] == ahead.batch.column("event_id").to_pylist()
    ids = [i for batch in stored for i in batch]
    assert len(ids) == len(set(ids)) == result.checked == alone.checked
    assert _verdicts(pooled) == _verdicts(one)


def test_read_ahead_reads_only_a_warehouse_whose_migrations_are_all_recorded(world, tmp_path) -> None:  # noqa: F811
    _, info, _, synced = world
    policy = _policy(info)
    path = _copy(synced, tmp_path, "w.duckdb")
    todo = verify_warehouse(_copy(synced, tmp_path, "counted.duckdb"), policy, workers=1).checked
    sql, params = verify_run._pending_sql(False), verify_run._policy_params(policy)
    ahead = read_ahead(path, sql, params, 50, 0, "64MB")
    assert ahead is not None and ahead.batch is not None and ahead.batch.num_rows == 50
    assert ahead.batch.schema.names == ["event_id", "type", "payload", "proofs", "write_seq"]
    enough = read_ahead(path, sql, params, 50, todo, "64MB")  # read up to the threshold, the first 50 for the pool
    assert enough is not None and enough.todo == todo and enough.batch is not None and enough.batch.num_rows == 50
    few = read_ahead(path, sql, params, 50, todo + 1, "64MB")
    assert few is not None and few.todo == todo and few.batch is None  # fewer than the pool's threshold: no batch
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM chainops_meta WHERE key = ?", [RECORD_PREFIX + MIGRATIONS[-1].name])
    con.close()
    assert read_ahead(path, sql, params, 50, 0, "64MB") is None  # the open would migrate it: nothing read before
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    text = tmp_path / "notes.duckdb"
    text.write_text("not a database\n" * 100)
    assert read_ahead(other, sql, params, 50, 0, "64MB") is None
    assert read_ahead(text, sql, params, 50, 0, "64MB") is None


def _flip_a_bit(path: Path, table: str, column: str) -> None:
    """A bit of ``table``'s first data block of ``column`` flipped, past the block's checksum."""
    con = duckdb.connect(str(path), read_only=True)
    ((block_size,),) = con.execute("SELECT block_size FROM pragma_database_size()").fetchall()
    ((block,),) = con.execute(
        f"SELECT min(block_id) FROM pragma_storage_info('{table}') WHERE column_name = ? AND block_id >= 0", [column]
    ).fetchall()
    con.close()
    offset = 3 * 4096 + block * block_size + 1000
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ 0x10]))


def test_a_damaged_warehouse_gets_no_verdict_of_the_batch_the_pool_checked(world, tmp_path, monkeypatch) -> None:  # noqa: F811
    """The damage is where the batch read ahead does not reach (another table): the pool checks that batch, the
    open for writing refuses the file, and nothing is written."""
    _, info, _, synced = world
    path = _copy(synced, tmp_path, "w.duckdb")
    _flip_a_bit(path, "operations", "operation_id")
    before = digest(path)
    read, stored = _spied(monkeypatch)
    with pytest.raises(WarehouseError, match="is damaged"):
        verify_warehouse(path, _policy(info), workers=2, batch_rows=BATCH)
    (ahead,) = read
    assert ahead is not None and ahead.batch is not None  # the pool had a batch
    assert stored == [] and digest(path) == before
