"""Killing a ``chainops sync`` process at a chosen request rather than after a guessed time: the sync talks to the
service through a :class:`~benchmarks.support.latency_proxy.LatencyProxy` that holds every request after the ``n``-th;
once one is held the process is mid-run (it waits for that answer while its writer thread may still be committing), and
the signal goes then. How fast the machine is changes when that happens, never where in the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.support.latency_proxy import LatencyProxy
from tests.conftest import TEST_KEY


def start_sync(base_url: str, path: Path | str, flags: Sequence[str] = ()) -> subprocess.Popen:
    """``chainops sync --quiet FLAGS`` as a process, with ``TEST_KEY``, ``base_url`` and the warehouse ``path`` as
    its only settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    env |= {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": base_url, "CHAINOPS_WAREHOUSE": str(path)}
    return subprocess.Popen(
        [sys.executable, "-m", "toolkit", "sync", "--quiet", *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_held(proxy: LatencyProxy, proc: subprocess.Popen) -> bool:
    """True once the proxy holds one of ``proc``'s requests; False if ``proc`` ends first (it needed no more)."""
    while not proxy.held.wait(0.05):
        if proc.poll() is not None:
            return False
    return True


def signal_at_request(
    proxy: LatencyProxy,
    start: Callable[[], subprocess.Popen],
    after: int,
    signum: int = signal.SIGKILL,
    *,
    matching: str = "",
    wait: bool = True,
) -> tuple[bool, subprocess.Popen]:
    """Start a process with ``start`` (its requests going through ``proxy``) and send it ``signum`` when it makes
    its request number ``after + 1`` among those whose request line contains ``matching``; returns whether it was
    signalled (False: it ended first) and the process. The held requests are let through afterwards; with ``wait``
    the process is reaped."""
    proxy.hold_after(after, matching)
    proc = start()
    try:
        signalled = wait_until_held(proxy, proc)
        if signalled:
            proc.send_signal(signum)
    finally:
        proxy.release()
    if wait:
        proc.communicate(timeout=300)
    return signalled, proc
