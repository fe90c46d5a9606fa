"""How a writable warehouse opens its file: small row groups (each written and compressed once), spilling beside the
file, and a file that readers then open as usual."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from toolkit.errors import WarehouseError
from toolkit.warehouse import Warehouse, to_batch
from toolkit.warehouse.store import WRITE_ROW_GROUP_SIZE


def channel_rows(n: int) -> pa.RecordBatch:
    batch, rejected = to_batch(
        "channels",
        [{"channel_id": f"ch-{i}", "name": f"channel {i}", "status": "active", "created_at": 1} for i in range(n)],
    )
    assert not rejected
    return batch


def row_groups(con: duckdb.DuckDBPyConnection, table: str) -> list[int]:
    rows = con.execute(
        "SELECT row_group_id, max(count) FROM pragma_storage_info(?) GROUP BY row_group_id ORDER BY row_group_id",
        [table],
    ).fetchall()
    return [int(r[1]) for r in rows]


def test_a_writer_stores_row_groups_of_the_write_size(tmp_path) -> None:
    n = WRITE_ROW_GROUP_SIZE * 2 + 100
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh, wh.transaction():
        wh.upsert("channels", channel_rows(n))
    with Warehouse(path, read_only=True) as reader:
        assert reader.count("channels") == n
        sizes = row_groups(reader.con, "channels")
    assert sizes == [WRITE_ROW_GROUP_SIZE, WRITE_ROW_GROUP_SIZE, 100]


def test_a_writer_spills_beside_the_file_and_opens_a_path_with_a_quote(tmp_path) -> None:
    path = tmp_path / "it's here" / "w.duckdb"
    with Warehouse(path) as wh:
        temp = wh.con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
        assert temp == f"{path}.tmp"
        with wh.transaction():
            wh.upsert("channels", channel_rows(3))
        assert "channels" in wh.tables()
        assert wh.columns("channels")[0] == "channel_id"
    with duckdb.connect(str(path), read_only=True) as plain:  # a reader needs nothing special
        assert plain.execute("SELECT count(*) FROM channels").fetchall() == [(3,)]


SETTINGS = "SELECT current_setting('memory_limit'), current_setting('threads'), current_setting('checkpoint_threshold')"


def index_memory(con: duckdb.DuckDBPyConnection) -> int:
    rows = con.execute("SELECT memory_usage_bytes FROM duckdb_memory() WHERE tag = 'ART_INDEX'").fetchall()
    return int(rows[0][0]) if rows else 0


def test_reopen_lets_go_of_index_memory_and_keeps_settings_and_rows(tmp_path) -> None:
    # upserts into a table with a primary key load its index into memory, where it stays and grows with the
    # history; a sync reopens its connection before the models so that they get the whole memory limit
    path = tmp_path / "w.duckdb"
    with Warehouse(path, memory_limit="200MB") as wh:
        wh.configure(threads=1, checkpoint_threshold="16MB")
        with wh.transaction():
            wh.upsert("channels", channel_rows(50_000))
        with wh.transaction():
            wh.upsert("channels", channel_rows(10))  # an upsert by key probes the index
        loaded = index_memory(wh.con)
        assert loaded > 1_000_000
        before_limit, _, configured_threshold = wh.con.execute(SETTINGS).fetchall()[0]
        wh.reopen()
        assert index_memory(wh.con) < loaded / 10
        after = wh.con.execute(SETTINGS).fetchall()[0]
        wh.reopen()
        wh.reopen()
        assert wh.con.execute(SETTINGS).fetchall()[0] == after == (before_limit, 1, configured_threshold)
        assert wh.count("channels") == 50_000
        with wh.transaction():
            assert wh.upsert("channels", channel_rows(10)) == (0, 10)  # the key still holds after reopening


def test_a_second_writer_in_one_process_is_refused_with_a_clear_message(tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        with wh.transaction():
            wh.upsert("channels", channel_rows(3))
        with pytest.raises(WarehouseError, match="already open in this process"):
            Warehouse(path, wait=0.1)
        assert wh.count("channels") == 3


def test_an_upsert_that_aborts_its_transaction_raises_its_own_error(tmp_path) -> None:
    """DuckDB refuses to unregister the incoming rows once the statement's error has aborted the transaction; that
    refusal must not hide the error itself (it once turned an out-of-memory into 'Current transaction is aborted')."""
    bad = pa.table({"operation_id": ["op-1"], "idx": ["not a number"]})
    with Warehouse(tmp_path / "w.duckdb") as wh:
        with pytest.raises(duckdb.ConversionException, match="not a number"), wh.transaction():
            wh.upsert("operation_transactions", bad)
        assert wh.count("operation_transactions") == 0
        wh.upsert("operation_transactions", pa.table({"operation_id": ["op-1"], "idx": [0]}))  # usable again
        assert wh.count("operation_transactions") == 1
