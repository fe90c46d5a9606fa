"""A warehouse path that is not a regular file, and file-system limits that are not a full disk (issue 28 item 12):
a FIFO as --warehouse is refused at once by every command instead of hanging them; a loop of symbolic links and
too many open files are named as what they are, not as "the disk may be full". Real processes and real OSErrors."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_KEY
from toolkit.warehouse.failures import write_failure

#: Every command runs as a real process (a FIFO as the warehouse must not hang it).
pytestmark = pytest.mark.slow

UNREACHABLE = "http://127.0.0.1:9/v1"


def chainops(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    env |= {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": UNREACHABLE}
    # the timeout only guards the suite: before the fix, opening the FIFO waited forever
    return subprocess.run(
        [sys.executable, "-m", "toolkit", *argv], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["sync", "--quiet"],
        ["metrics", "status-latency"],
        ["sql", "select 1"],
        ["report", "--out", "{tmp}/r.html"],
        ["export", "--out", "{tmp}/export"],
    ],
    ids=lambda argv: argv[0],
)
def test_a_fifo_as_the_warehouse_is_refused_at_once(argv, tmp_path) -> None:
    fifo = tmp_path / "w.duckdb"
    os.mkfifo(fifo)
    done = chainops(*(a.format(tmp=tmp_path) for a in argv), "--warehouse", str(fifo))
    assert done.returncode == 1, done.stderr
    assert "FIFO" in done.stderr and "Traceback" not in done.stderr


def test_a_loop_of_symbolic_links_is_named_not_taken_for_a_full_disk(tmp_path) -> None:
    loop = tmp_path / "w.duckdb"
    loop.symlink_to(tmp_path / "other")
    (tmp_path / "other").symlink_to(loop)
    done = chainops("sync", "--quiet", "--warehouse", str(loop))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "disk" not in done.stderr, done.stderr
    assert "symbolic links" in done.stderr


def test_too_many_open_files_is_named_not_taken_for_a_full_disk(tmp_path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    opened: list[int] = []
    error: OSError | None = None
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 8, hard))
    try:
        for i in range(64):
            opened.append(os.open(tmp_path / f"f{i}", os.O_CREAT | os.O_WRONLY))
    except OSError as exc:  # the real error of a process out of file descriptors
        error = exc
    finally:
        for fd in opened:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert error is not None and error.errno == errno.EMFILE
    message = str(write_failure(Path(tmp_path / "w.duckdb"), error))
    assert "too many files open" in message and "disk" not in message, message
