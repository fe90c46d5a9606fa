"""Which modules a ``-m`` expression skips without importing them (``tests/conftest.py``): only those whose every test
it would deselect, whatever marks the tests add; the selection is the same as with every module imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SLOW_KINDS, module_marks, pytest_ignore_collect

ROOT = Path(__file__).resolve().parents[1]
FAST = f"not ({' or '.join(SLOW_KINDS)})"


class _Config:
    def __init__(self, markexpr: str) -> None:
        self.markexpr = markexpr

    def getoption(self, name: str, default: object = None) -> object:
        return self.markexpr if name == "markexpr" else default


@pytest.fixture
def module(tmp_path):
    def write(text: str) -> Path:
        path = tmp_path / "test_x.py"
        path.write_text(text)
        return path

    return write


def test_the_marks_a_module_gives_all_its_tests(module) -> None:
    assert module_marks(module("import pytest\n\npytestmark = pytest.mark.slow\n")) == {"slow"}
    assert module_marks(module("pytestmark = [pytest.mark.spark, pytest.mark.slow]\n")) == {"spark", "slow"}
    assert module_marks(module("def test_a():\n    pytestmark = pytest.mark.slow\n")) == set()  # not at the start
    assert module_marks(module("@pytest.mark.slow\ndef test_a(): ...\n")) == set()  # one test's mark


@pytest.mark.parametrize(
    ("markexpr", "text", "skipped"),
    [
        (FAST, "pytestmark = pytest.mark.slow\n", True),
        (FAST, "pytestmark = pytest.mark.spark\n", True),
        (FAST, "@pytest.mark.slow\ndef test_a(): ...\n", False),  # its other tests may be fast
        ("kill", "pytestmark = pytest.mark.slow\n", False),  # a test in it may be marked kill
        ("slow", "pytestmark = pytest.mark.slow\n", False),
        ("not kill", "pytestmark = pytest.mark.slow\n", False),
        ("", "pytestmark = pytest.mark.slow\n", False),  # no -m: everything
        ("not (slow or", "pytestmark = pytest.mark.slow\n", False),  # pytest reports the bad expression itself
    ],
)
def test_a_module_is_skipped_only_when_every_test_in_it_is_deselected(module, markexpr, text, skipped) -> None:
    assert (pytest_ignore_collect(module(text), _Config(markexpr)) is True) is skipped


def _selected(markexpr: str, *options: str, env: dict[str, str] | None = None) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", markexpr, *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return sorted(line for line in out.stdout.splitlines() if "::" in line)


#: A plugin that collects every module the conftest would skip (it answers first).
COLLECT_EVERYTHING = """
import pytest

from tests.conftest import module_marks


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path):
    if collection_path.suffix == ".py" and module_marks(collection_path):
        return False
"""


@pytest.mark.slow  # collects twice, as processes
def test_the_fast_tier_selects_the_same_tests_as_with_every_module_imported(tmp_path) -> None:
    """Over two folders holding modules marked whole in two ways (schemathesis against the sandbox and the report's
    as-of over HTTP, slow; the browser) beside modules with single slow tests (the hostile strings)."""
    (tmp_path / "collect_everything.py").write_text(COLLECT_EVERYTHING)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    folders = ("tests/sandbox", "tests/report")
    skipping = _selected(FAST, *folders)
    everything = _selected(FAST, *folders, "-p", "collect_everything", env=env)
    assert skipping == everything and len(skipping) > 200
