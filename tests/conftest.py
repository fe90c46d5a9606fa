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
