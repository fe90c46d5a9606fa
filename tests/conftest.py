"""Shared fixtures: a clean environment, and a seeded sandbox served over real HTTP on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolkit.config import ENV_API_KEY, ENV_BASE_URL, ENV_WAREHOUSE

#: A recognisable key: tests scan output for it to prove it never leaks.
TEST_KEY = "ck_test_SECRET-7f3a9e1b2c4d"


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's real service settings."""
    for name in (ENV_API_KEY, ENV_BASE_URL, ENV_WAREHOUSE):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def sandbox():
    """A seeded sandbox (frozen clock) with one organisation holding ``TEST_KEY``."""
    from toolkit.sandbox import Sandbox

    return Sandbox(
        orgs=(TEST_KEY, "other-org-key"), not_onboarded=("not-onboarded-key",), seed=11, days=2, operations_per_day=300
    )


@pytest.fixture(scope="module")
def server(sandbox) -> Iterator[object]:
    """The module's sandbox served on 127.0.0.1 (a free port)."""
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


#: The kinds `make test-fast` leaves out, the costliest first: under pytest-xdist their modules start first, so the
#: two workers finish together instead of one waiting on a Spark module collected last.
SLOW_KINDS = ("spark", "notebooks", "browser", "kill", "slow")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses the Spark session ``spark``; under xdist (``--dist loadgroup``) keep each module
    whole on one worker (its module-scoped sandbox and warehouses are built once) and every Spark test on the same
    worker (one JVM), and start the slow kinds first."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)
    if not hasattr(config, "workerinput"):  # not an xdist worker: order and groups change nothing
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = "spark" if item.get_closest_marker("spark") else item.nodeid.split("::", 1)[0]
            item.add_marker(pytest.mark.xdist_group(group))

    def group(item: pytest.Item) -> str:
        mark = item.get_closest_marker("xdist_group")
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))

    cost: dict[str, int] = {}
    for item in items:
        kinds = [i for i, kind in enumerate(SLOW_KINDS) if item.get_closest_marker(kind)]
        cost[group(item)] = min([cost.get(group(item), len(SLOW_KINDS)), *kinds])
    items.sort(key=lambda item: cost[group(item)])  # stable: each module keeps its own order
