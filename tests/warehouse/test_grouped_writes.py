"""The loader's grouped writes: rows and cursors committed together, in few transactions, and a reader in another
process never waits for more than one batch."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from toolkit.api import Client
from toolkit.loader.run import Loader, SyncResult
from toolkit.warehouse import Warehouse, to_batch


def channel(cid: str):
    batch, _ = to_batch("channels", [{"channel_id": cid, "name": cid, "status": "active", "created_at": 1}])
    return batch


def loader_for(wh: Warehouse) -> Loader:
    client = Client("http://127.0.0.1:9/v1", "unused-key")  # never called: the test writes rows directly
    result = SyncResult(run_id="test", started_at=datetime.now(UTC))
    return Loader(client, wh, result, full=False, quiet=True, workers=1)


def test_batches_share_a_transaction_until_settled(tmp_path) -> None:
    with Warehouse(tmp_path / "w.duckdb") as wh:
        loader = loader_for(wh)
        loader.write("channels", channel("c1"), cursor=("channels:test", {"n": 1}))
        loader.write("channels", channel("c2"), cursor=("channels:test", {"n": 2}))
        loader.writer.drain()
        assert loader.result.rows["channels"] == 0  # written, not yet committed
        loader.settle()
        assert loader.result.rows["channels"] == 2
        assert wh.get_cursor("channels:test") == {"n": 2}
        loader.finish()


def test_a_waiting_reader_gets_the_open_transaction_committed_first(tmp_path) -> None:
    with Warehouse(tmp_path / "w.duckdb") as wh:
        loader = loader_for(wh)
        loader.write("channels", channel("c1"), cursor=("channels:test", {"n": 1}))
        loader.writer.drain()
        request = Path(f"{wh.path}.readers")
        request.touch()  # what a reader in another process does while it waits for the file
        loader.write("channels", channel("c2"), cursor=("channels:test", {"n": 2}))
        loader.writer.drain()
        assert not request.exists(), "the sync made room for the reader"
        assert loader.result.rows["channels"] == 1  # c1 was committed before the reader got in; c2 is pending
        loader.finish()
        assert loader.result.rows["channels"] == 2
        assert wh.count("channels") == 2
