"""A sync against a hostile or scripted server as the integration tests run it: quick retries, quiet, and the
warehouse's rows read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import TEST_KEY
from toolkit.api import Client
from toolkit.api.retry import RetryPolicy
from toolkit.config import Settings
from toolkit.loader import SyncResult, sync
from toolkit.warehouse import Warehouse


def quick_retry(deadline: float = 10.0) -> RetryPolicy:
    """Two attempts, hundredths of a second apart: a test waits on the server's behaviour, not on backoff."""
    return RetryPolicy(attempts=2, initial=0.01, maximum=0.02, floor=0.01, deadline=deadline)


def sync_against(
    server: Any, path: Path | str, *, deadline: float = 10.0, workers: int | None = None, **client: Any
) -> SyncResult:
    """One quiet sync of ``server`` (anything with a ``base_url``) into ``path``; ``client`` keywords go to the
    :class:`~toolkit.api.Client`. Returns its result."""
    settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={})
    with Client(server.base_url, TEST_KEY, retry=quick_retry(deadline), **client) as c:
        return sync(settings, client=c, quiet=True, workers=workers)


def warehouse_rows(path: Path | str, sql: str, *args: Any) -> list[tuple]:
    """The rows of ``sql`` (parameters ``args``) on the warehouse at ``path``, opened read-only."""
    with Warehouse(path, read_only=True) as wh:
        return wh.con.execute(sql, list(args)).fetchall()
