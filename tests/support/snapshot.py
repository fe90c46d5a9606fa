"""A warehouse's synced tables as comparable rows, and the settings of a sync against a test server: what the
integration tests compare an incremental, killed or windowed sync with a fresh one by."""

from __future__ import annotations

from tests.conftest import TEST_KEY
from toolkit.config import Settings
from toolkit.warehouse import Warehouse

TABLES = ["networks", "channels", "wallets", "watchers", "operations", "operation_transactions", "queries", "events"]


def snapshot(path) -> dict[str, list[tuple]]:
    """Every table's rows without the sync bookkeeping columns (when and by which transaction), sorted."""
    out = {}
    with Warehouse(path, read_only=True) as wh:
        for table in TABLES:
            cols = [c for c in wh.columns(table) if c not in ("synced_at", "write_seq")]
            select = ", ".join(f'"{c}"::VARCHAR' for c in cols)
            out[table] = sorted(wh.con.execute(f'SELECT {select} FROM "{table}"').fetchall(), key=repr)
    return out


def settings_for(server, path) -> Settings:
    """The settings of a sync of ``server`` (anything with a ``base_url``) into ``path`` with the tests' key."""
    return Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={})
