"""The Tuning passed to a sync is what it runs with: DuckDB's memory limit, checkpoint threshold and threads while
loading, the models' memory limit and threads, and the workers over a network (no module global involved)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.conftest import TEST_KEY, small_sandbox
from tests.support.snapshot import snapshot
from toolkit.config import Settings
from toolkit.loader import DEFAULT_TUNING, Tuning, default_workers, sync
from toolkit.loader import run as loader_run
from toolkit.warehouse import Warehouse


@pytest.fixture(scope="module")
def sandbox():
    """Half a day of history: which settings a sync runs with does not depend on its size (the first sync still stores
    events in partly filled row groups)."""
    return small_sandbox()


#: Values no default has, so each can only come from the instance passed in.
OURS = Tuning(
    sync_memory_limit="200MB",
    models_memory_limit="300MB",
    models_threads=1,
    sync_threads=2,
    checkpoint_threshold="7MB",
    workers=3,
    peak_budget_mib=None,  # the models' limit as set (with a budget it is what the budget leaves: tests/loader)
)


def test_a_sync_runs_with_the_tuning_passed_in(server, tmp_path, monkeypatch) -> None:
    assert all(getattr(OURS, f) != getattr(DEFAULT_TUNING, f) for f in ("sync_memory_limit", "models_memory_limit"))
    limits: list[object] = []
    settings_seen: list[dict[str, object]] = []
    models_threads: list[int] = []
    init, configure, refresh = Warehouse.__init__, Warehouse.configure, loader_run.refresh_models

    def spying_init(self: Warehouse, *args: object, **kwargs: object) -> None:
        limits.append(kwargs.get("memory_limit"))
        init(self, *args, **kwargs)  # type: ignore[arg-type]

    def spying_configure(self: Warehouse, **settings: str | int) -> None:
        settings_seen.append(settings)
        configure(self, **settings)

    def spying_refresh(wh: Warehouse, *, threads: int, **kwargs: object) -> object:
        models_threads.append(threads)
        return refresh(wh, threads=threads, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Warehouse, "__init__", spying_init)
    monkeypatch.setattr(Warehouse, "configure", spying_configure)
    monkeypatch.setattr(loader_run, "refresh_models", spying_refresh)
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=tmp_path / "w.duckdb", environ={})
    result = sync(settings, quiet=True, tuning=OURS)
    assert result.outcome == "ok", result.summary()
    assert limits[0] == "200MB"  # the run's own connection
    assert {"checkpoint_threshold": "7MB", "threads": 2} in settings_seen
    assert {"memory_limit": "300MB"} in settings_seen
    assert models_threads == [1]


def test_the_workers_over_a_network_come_from_the_tuning() -> None:
    assert default_workers("https://api.example.com/v1", OURS) == 3
    assert default_workers("https://api.example.com/v1", replace(OURS, workers=9)) == 9
    assert default_workers("http://127.0.0.1:8080/v1", OURS) == 1  # loopback: one, whatever the tuning


def test_only_a_first_sync_leaves_partly_filled_row_groups_unmerged(server, tmp_path, monkeypatch) -> None:
    """DuckDB's vacuum (merging partly filled row groups at checkpoints) is off for a sync into a warehouse without
    events, on for the next sync and for a first sync whose tuning asks for it; what is stored is the same."""
    configured: list[dict[str, object]] = []
    configure = Warehouse.configure

    def spying_configure(self: Warehouse, **settings: str | int) -> None:
        configured.append(settings)
        configure(self, **settings)

    monkeypatch.setattr(Warehouse, "configure", spying_configure)

    def run(path, tuning: Tuning = DEFAULT_TUNING) -> bool:
        configured.clear()
        settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={})
        result = sync(settings, quiet=True, tuning=tuning)
        assert result.outcome == "ok", result.summary()
        return {"max_vacuum_tasks": 0} in configured

    assert run(tmp_path / "first.duckdb") is True
    unmerged = snapshot(tmp_path / "first.duckdb")
    assert run(tmp_path / "merged.duckdb", replace(DEFAULT_TUNING, first_sync_merges_row_groups=True)) is False
    assert unmerged["events"]
    assert unmerged == snapshot(tmp_path / "merged.duckdb")  # only how DuckDB lays rows out differs
    assert run(tmp_path / "first.duckdb") is False  # the warehouse holds events now
