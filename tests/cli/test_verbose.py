"""``chainops -v``: the sync's decisions (retries, commits with ``-vv``) on standard error, never the key; without
the flag, nothing is logged."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_KEY
from tests.support.cli import assert_no_key
from tests.support.cli import run_in_process as chainops  # main(argv) in this process

#: Real sockets or processes (hostile servers, the sandbox over HTTP, `chainops` as a process): the fast tier
#: skips them (docs/testing.md); `make test` runs them.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def flaky_server():
    from toolkit.sandbox import Sandbox

    # a fifth of the answers are 429s: every sync retries some requests. They say `Retry-After: 0`, so a retry
    # waits the client's floor (0.05 s), not a backoff from 0.25 s up: the log is the subject, not the waits
    sandbox = Sandbox(
        orgs=(TEST_KEY,), seed=3, days=1, operations_per_day=150, limit_rate=0.2, rate_limit_retry_after=0
    )
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


def sync_env(server, path) -> dict[str, str]:
    return {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": server.base_url, "CHAINOPS_WAREHOUSE": str(path)}


def test_v_shows_the_retries_and_vv_the_commits(flaky_server, tmp_path) -> None:
    out = chainops("-v", "sync", "--quiet", env=sync_env(flaky_server, tmp_path / "a.duckdb"))
    assert out.returncode == 0, out.stderr
    assert "INFO toolkit.api: retrying GET /" in out.stderr
    assert "DEBUG" not in out.stderr
    more = chainops("sync", "-vv", "--quiet", env=sync_env(flaky_server, tmp_path / "b.duckdb"))
    assert more.returncode == 0, more.stderr
    assert "DEBUG toolkit.loader: committed " in more.stderr
    assert_no_key(out.stdout, out.stderr, more.stdout, more.stderr)


def test_without_v_nothing_is_logged(flaky_server, tmp_path) -> None:
    out = chainops("sync", "--quiet", env=sync_env(flaky_server, tmp_path / "c.duckdb"))
    assert out.returncode == 0, out.stderr
    assert "retrying" not in out.stderr and "toolkit." not in out.stderr
    assert out.stderr.strip() == ""
