"""The unit of work's grouped writes: rows and cursors committed together, in few transactions, and a reader in
another process never waits for more than one batch."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from toolkit.loader.unit_of_work import UnitOfWork, Write
from toolkit.warehouse import Warehouse, to_batch


def channel(cid: str) -> Write:
    batch, _ = to_batch("channels", [{"channel_id": cid, "name": cid, "status": "active", "created_at": 1}])
    return Write("channels", batch, cursor=("channels:test", {"n": cid}))


class Counts:
    """What the unit of work reports as committed."""

    def __init__(self) -> None:
        self.rows: Counter[str] = Counter()

    def __call__(self, new: Counter[str], updated: Counter[str]) -> None:
        self.rows.update(new)


def test_batches_share_a_transaction_until_a_read(tmp_path) -> None:
    counts = Counts()
    with UnitOfWork(lambda: Warehouse(tmp_path / "w.duckdb"), on_commit=counts) as uow:
        uow.write(channel("c1"))
        uow.write(channel("c2"))
        uow._writer.drain()
        assert counts.rows["channels"] == 0  # written, not yet committed
        assert uow.call(lambda wh: wh.get_cursor("channels:test")) == {"n": "c2"}  # a read commits first
        assert counts.rows["channels"] == 2
    with Warehouse(tmp_path / "w.duckdb", read_only=True) as wh:
        assert wh.count("channels") == 2


def test_a_waiting_reader_gets_the_open_transaction_committed_first(tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    counts = Counts()
    with UnitOfWork(lambda: Warehouse(path), on_commit=counts) as uow:
        uow.write(channel("c1"))
        uow._writer.drain()
        request = Path(f"{path}.readers")
        request.touch()  # what a reader in another process does while it waits for the file
        uow.write(channel("c2"))
        uow._writer.drain()
        assert not request.exists(), "the sync made room for the reader"
        assert counts.rows["channels"] == 1  # c1 was committed before the reader got in; c2 is pending
        uow.commit()
        assert counts.rows["channels"] == 2
        assert uow.call(lambda wh: wh.count("channels")) == 2


def test_what_is_not_committed_is_dropped_on_close_with_its_cursor(tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    with UnitOfWork(lambda: Warehouse(path)) as uow:
        uow.write(channel("c1"))
        uow.commit()
        uow.write(channel("c2"))  # never committed: as if the run were killed here
    with Warehouse(path, read_only=True) as wh:
        assert wh.count("channels") == 1
        assert wh.get_cursor("channels:test") == {"n": "c1"}


def test_an_error_in_a_write_rolls_its_transaction_back_and_is_raised_at_the_next_call(tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    with UnitOfWork(lambda: Warehouse(path)) as uow:
        uow.write(channel("c1"))
        uow.commit()
        uow.write(channel("c2"))
        bad = to_batch("channels", [{"channel_id": "c3", "name": "c3", "status": "active", "created_at": 1}])[0]
        uow.write(Write("no_such_table", bad, cursor=("channels:test", {"n": "c3"})))
        with pytest.raises(KeyError, match="no_such_table"):
            uow.call(lambda wh: None)
        assert uow.call(lambda wh: wh.count("channels")) == 1  # c2 went with the failed transaction
        assert uow.call(lambda wh: wh.get_cursor("channels:test")) == {"n": "c1"}
