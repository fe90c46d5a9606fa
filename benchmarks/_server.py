"""Start `chainops sandbox` in its own process (optionally pinned to one core) for benchmarks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KEY = "bench-key"

#: Source of ``peak_rss_mb()`` for the child scripts a benchmark runs (they print it when they end).
PEAK_RSS_MB = """
def peak_rss_mb():
    # VmHWM: this program's own peak. Linux carries ru_maxrss across exec, so for a process forked from a big
    # parent (a benchmark that has loaded data) it would report the parent's size instead.
    import resource
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""


@contextmanager
def line_server(
    cmd: list[str], what: str, *, core: int | None = None, cwd: Path | None = None
) -> Iterator[subprocess.Popen[str]]:
    """A helper server in its own process that prints ``serving on URL`` and then answers one-line commands on its
    standard input (see :func:`line_command`); yields it with ``.base_url`` set, and stops it by closing stdin."""

    def pin() -> None:
        if core is not None and hasattr(os, "sched_setaffinity") and core < (os.cpu_count() or 1):
            os.sched_setaffinity(0, {core})

    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=cwd, preexec_fn=pin)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("serving on "):
            raise RuntimeError(f"the {what} did not start: {line!r}")
        proc.base_url = line.split("serving on ", 1)[1].strip()  # type: ignore[attr-defined]
        yield proc
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=30)


def line_command(proc: subprocess.Popen[str], command: str) -> str:
    """Send a one-line command (``stats``, ``reset``) to a :func:`line_server`; its one-line answer."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


@contextmanager
def sandbox_process(*args: str, core: int | None = 1, timeout: float = 600) -> Iterator[str]:
    """Serve the sandbox in a subprocess; yields its base URL; stops it at the end."""
    with sandbox_server(*args, core=core, timeout=timeout) as (url, _):
        yield url


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has used so far (Linux; 0.0 where /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def sandbox_server(*args: str, core: int | None = 1, timeout: float = 600) -> Iterator[tuple[str, int]]:
    """Like :func:`sandbox_process`, yielding ``(base URL, process id)`` so a benchmark can read its CPU time."""

    def pin() -> None:
        if core is not None and hasattr(os, "sched_setaffinity") and core < os.cpu_count():
            os.sched_setaffinity(0, {core})

    cmd = [sys.executable, "-m", "toolkit", "sandbox", "--port", "0", "--org", KEY, "--speed", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, preexec_fn=pin)
    deadline = time.monotonic() + timeout
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("serving on ") or time.monotonic() > deadline:
            raise RuntimeError(f"the sandbox did not start: {line!r}")
        yield line.split("serving on ", 1)[1].strip(), proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def peak_rss_mb_of(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run a command; return (wall seconds, peak RSS in MB, stdout)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024, out.stdout
