"""The Tuning passed to a sync is what it runs with: DuckDB's memory limit, checkpoint threshold and threads while
loading, the models' memory limit and threads, and the workers over a network (no module global involved)."""

from __future__ import annotations

from dataclasses import replace

from tests.conftest import TEST_KEY
from toolkit.config import Settings
from toolkit.loader import DEFAULT_TUNING, Tuning, default_workers, sync
from toolkit.loader import run as loader_run
from toolkit.warehouse import Warehouse

#: Values no default has, so each can only come from the instance passed in.
OURS = Tuning(
    sync_memory_limit="200MB",
    models_memory_limit="300MB",
    models_threads=1,
    sync_threads=2,
    checkpoint_threshold="7MB",
    workers=3,
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
