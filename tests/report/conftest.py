"""The report tests' shared warehouse (``tests/support/report_warehouse.py``), built once per module that uses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.report_warehouse import report_warehouse


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This period: Ethereum 8 ok + 2 failed, Sepolia 9 ok + 1 failed, the evil network 1 failed; the day before:
    Ethereum 10 ok. One operation stuck in ``sending``; a channel and a network name full of markup."""
    return report_warehouse(tmp_path_factory.mktemp("report") / "w.duckdb")
