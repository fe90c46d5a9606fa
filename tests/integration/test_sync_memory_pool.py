"""A sync converts with Arrow's system allocator and gives the process its own default back, even when it fails."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pytest

from tests.conftest import TEST_KEY, small_sandbox
from toolkit.config import Settings
from toolkit.errors import ChainopsError
from toolkit.loader import DEFAULT_TUNING, sync
from toolkit.warehouse import Warehouse


@pytest.fixture(scope="module")
def sandbox():
    """Half a day of history: which pool and which GC freeze a sync runs with does not depend on its size."""
    return small_sandbox()


def _pools_seen_by_upserts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    upsert = Warehouse.upsert

    def spying(self: Warehouse, table: str, batch: pa.RecordBatch | pa.Table) -> tuple[int, int]:
        seen.append(pa.default_memory_pool().backend_name)
        return upsert(self, table, batch)

    monkeypatch.setattr(Warehouse, "upsert", spying)
    return seen


def test_sync_uses_the_system_pool_and_restores_the_default(server, tmp_path, monkeypatch) -> None:
    before = pa.default_memory_pool()
    seen = _pools_seen_by_upserts(monkeypatch)
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=tmp_path / "w.duckdb", environ={})
    result = sync(settings, quiet=True)
    assert result.outcome == "ok", result.summary()
    assert result.rows["events"] > 0
    assert seen and set(seen) == {pa.system_memory_pool().backend_name}
    assert pa.default_memory_pool().backend_name == before.backend_name


def test_a_failed_sync_restores_the_default_pool_too(server, tmp_path, monkeypatch) -> None:
    before = pa.default_memory_pool().backend_name
    entered: list[str] = []

    def system_pool() -> pa.MemoryPool:
        entered.append("pool")
        return pa.system_memory_pool()

    settings = Settings.load(
        base_url=server.base_url, api_key="not-a-key-of-this-sandbox", warehouse=tmp_path / "w.duckdb", environ={}
    )
    with pytest.raises(ChainopsError):
        sync(settings, quiet=True, tuning=replace(DEFAULT_TUNING, arrow_pool=system_pool))
    assert entered  # the run had switched pools before the key was refused
    assert pa.default_memory_pool().backend_name == before


def test_a_sync_freezes_older_objects_out_of_gc_and_unfreezes_them_after(server, tmp_path, monkeypatch) -> None:
    import gc

    before = gc.get_freeze_count()
    frozen_during: list[int] = []
    upsert = Warehouse.upsert

    def spying(self: Warehouse, table: str, batch: pa.RecordBatch | pa.Table) -> tuple[int, int]:
        frozen_during.append(gc.get_freeze_count())
        return upsert(self, table, batch)

    monkeypatch.setattr(Warehouse, "upsert", spying)
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=tmp_path / "w.duckdb", environ={})
    assert sync(settings, quiet=True).outcome == "ok"
    assert frozen_during and min(frozen_during) > before  # the objects older than the run were out of the passes
    assert gc.get_freeze_count() == before
    bad = Settings.load(base_url=server.base_url, api_key="not-a-key", warehouse=tmp_path / "x.duckdb", environ={})
    with pytest.raises(ChainopsError):
        sync(bad, quiet=True)
    assert gc.get_freeze_count() == before  # a failed run unfreezes them too
