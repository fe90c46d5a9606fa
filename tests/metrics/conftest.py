"""The metric tests' shared warehouse (``tests/support/filters_warehouse.py``), for the modules that do not build
their own."""

from __future__ import annotations

import pytest

from tests.support.filters_warehouse import filters_warehouse
from toolkit.warehouse import Warehouse


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """Four operations on two channels and two networks (one failed), a query and a watcher; models refreshed."""
    return filters_warehouse(tmp_path_factory.mktemp("filters") / "w.duckdb")
