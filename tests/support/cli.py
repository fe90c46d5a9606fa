"""``chainops`` run the two ways the tests need: in this process through ``main(argv)`` (the default: no Python
start, no second import of pandas and DuckDB), and as a real process for the few smoke tests that prove the
installed command, its exit status and its streams work end to end."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import TEST_KEY

#: The prefixes of the settings a run must not inherit from the developer's environment.
SETTINGS_PREFIXES = ("CREC_", "CHAINOPS_")


@dataclass(frozen=True)
class Ran:
    """What a run of the command left: its exit status and what it wrote on each stream (as
    :class:`subprocess.CompletedProcess` has them, so a test reads either kind of run the same way)."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def settings_environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """``os.environ`` without any ``CREC_``/``CHAINOPS_`` setting but those in ``env``, restored afterwards."""
    saved = dict(os.environ)
    try:
        for name in [n for n in os.environ if n.startswith(SETTINGS_PREFIXES)]:
            del os.environ[name]
        os.environ.update(env or {})
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_in_process(*args: str, env: Mapping[str, str] | None = None) -> Ran:
    """Run ``chainops ARGS`` in this process with ``env`` as its only settings; a usage error's ``SystemExit``
    (argparse) becomes its exit status, as a process would report it."""
    from toolkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with settings_environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # as the interpreter ends a process: a message goes to stderr with status 1
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
    return Ran(code, out.getvalue(), err.getvalue())


def run_process(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m toolkit ARGS`` as a real process with ``env`` as its only settings."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIXES)}
    return subprocess.run(
        [sys.executable, "-m", "toolkit", *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def assert_no_key(*outputs: str) -> None:
    """Fail if the tests' API key appears in any of ``outputs`` (a run's streams, a file's text)."""
    for text in outputs:
        assert TEST_KEY not in text
