"""The command line in an environment that is not the usual one (issue 28 item 11): a CREC_BASE_URL with a stray
``\\r`` or ``\\n``, a tab or a query string, and a standard output that is not UTF-8. Each gives a clear message or
escaped text, never a traceback. Real DuckDB files, servers on 127.0.0.1; the standard output that is not UTF-8 is a
real process's, and the base URLs (read from the environment, a message or a sync) run `chainops` through
``main(argv)`` in this process, with the setting in ``os.environ``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import TEST_KEY
from tests.support.cli import run_in_process
from tests.support.hostile import Defects, HostileServer
from toolkit.warehouse import Warehouse

#: Real sockets or processes (hostile servers, the sandbox over HTTP, `chainops` as a process): the fast tier
#: skips them (docs/testing.md); `make test` runs them.
pytestmark = pytest.mark.slow


def chainops(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_", "PYTHONIOENCODING"))}
    return subprocess.run(
        [sys.executable, "-m", "toolkit", *argv],
        env=base | env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=300,
    )


@pytest.mark.parametrize("tail", ["\r", "\n", "\r\n", " "])
def test_a_base_url_with_a_stray_line_end_is_used_without_it(tail, tmp_path) -> None:
    with HostileServer(TEST_KEY) as server:
        done = run_in_process(
            "sync",
            "--quiet",
            "--warehouse",
            str(tmp_path / "w.duckdb"),
            env={"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": server.base_url + tail},
        )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:9/v1\tx", "whitespace or a control character"),
        ("http://127.0.0.1:9/v\n1", "whitespace or a control character"),
        ("http://127.0.0.1:9/v1?x=1", "query string"),
        ("http://127.0.0.1:9/v1#frag", "query string or fragment"),
    ],
)
def test_a_base_url_that_cannot_be_used_is_refused_with_a_message(url, said, tmp_path) -> None:
    env = {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": url}
    done = run_in_process("sync", "--warehouse", str(tmp_path / "w.duckdb"), env=env)
    assert done.returncode == 1, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "w.duckdb").exists()


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_non_ascii_text_on_a_stdout_that_is_not_utf8_is_escaped(encoding, tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    env = {"PYTHONIOENCODING": encoding}
    done = chainops("sql", "select 'kanał ✓ – 東京' as name", "--warehouse", str(path), env=env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "kana\\u0142" in done.stdout and "\\u2713" in done.stdout and "\\u6771\\u4eac" in done.stdout

    # the sync's summary (a problem quoting the service's non-ASCII message), after its commit
    with HostileServer(TEST_KEY, Defects(channel_refused=frozenset({"queries"}))) as server:
        service = {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": server.base_url}
        done = chainops("sync", "--warehouse", str(path), env=env | service)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    assert "kana\\u0142" in done.stdout + done.stderr
