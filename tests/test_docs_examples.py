"""Every ``chainops`` example in docs/ runs (issue 37, 5i): each command line of a fenced code block of every page,
against a demo warehouse, ends with exit 0, or with the exit code the example states in a comment (``# exit 3``).

Examples that cannot run here are named with the reason: a synopsis with placeholders (``PATH``, ``ORG``), a sync
(it needs the service and a key), a server that runs until stopped (``dashboard``), a command piped into another
program. The slow tier: it makes a demo warehouse and runs some twenty commands.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.support.cli import run_in_process

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
#: An argument that is a placeholder of a synopsis: PATH, ORG, 0xADDR, ADDR,..., [--option]
PLACEHOLDER = re.compile(r"^\[|\b(?:PATH|ORG|ADDR|FILE|NAME|DIR)\b|^0xADDR")
STATED_EXIT = re.compile(r"#.*\bexit(?:s)? (?:code )?(\d+)\b")
#: Commands that do not run here, by their first word after ``chainops``, and why.
NOT_RUN = {
    "sync": "needs the service and an API key (the sync has its own tests against the sandbox)",
    "dashboard": "serves until stopped (tests/report/test_dashboard_page*.py serve it over HTTP)",
    "sandbox": "serves until stopped",
    "demo": "is what made the warehouse these examples read",
}


def examples() -> list[tuple[str, int, str]]:
    """Each ``chainops`` command of a fenced block in docs/: (page, line, command text with any comment)."""
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            start = text[: block.start(1)].count("\n") + 1
            lines = block.group(1).splitlines()
            i = 0
            while i < len(lines):
                line, first = lines[i], i
                # a quoted argument may go on over lines (join until the quotes close), and a line ending in a
                # backslash goes on with the next (the shell's continuation)
                while (line.count('"') % 2 or line.rstrip().endswith("\\")) and i + 1 < len(lines):
                    i += 1
                    line = (
                        line.rstrip().removesuffix("\\") + " " + lines[i].strip()
                        if not line.count('"') % 2
                        else line + "\n" + lines[i]
                    )
                if re.match(r"^\s*(?:\.venv/bin/)?chainops ", line):
                    found.append((str(page.relative_to(ROOT)), start + first, line.strip()))
                i += 1
    return found


def why_not_run(words: list[str]) -> str | None:
    """The reason an example is not run here, or None."""
    if any(PLACEHOLDER.search(w) for w in words):
        return "a synopsis with placeholders"
    if any(op in words for op in ("&&", "|", "||", ";")):
        return "goes on into another program"
    return NOT_RUN.get(words[1]) if len(words) > 1 else "no command"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo warehouse at ``data/demo.duckdb`` under an empty directory outside the clone, as the examples name it
    (the demo's default seed and start: the dates the pages quote)."""
    home = tmp_path_factory.mktemp("docs-examples")
    ran = run_in_process("demo", "--quiet", "--warehouse", str(home / "data" / "demo.duckdb"), "--out",
                         str(home / "data" / "reports"))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return home


def test_the_report_picture_is_the_demos(demo: Path, tmp_path: Path) -> None:
    """docs/report.png is what `make docs` draws from the demo (docs/make_report_png.py): not another history's."""
    import runpy

    script = runpy.run_path(str(ROOT / "docs" / "make_report_png.py"))
    out = tmp_path / "report.png"
    script["main"](str(demo / "data" / "demo.duckdb"), out)
    assert out.read_bytes() == (ROOT / "docs" / "report.png").read_bytes(), "run make docs (docs/report.png)"


def test_the_pages_have_examples() -> None:
    commands = {shlex.split(text, comments=True)[1] for _, _, text in examples()}
    assert {"metrics", "sql", "report", "dashboard", "verify"} <= commands, commands


def runnable() -> list[tuple[str, int, str]]:
    """The examples this test runs: every one but those :func:`why_not_run` gives a reason for."""
    return [e for e in examples() if why_not_run(shlex.split(e[2], comments=True)) is None]


def test_only_examples_that_cannot_run_here_are_left_out() -> None:
    run_here = runnable()
    left_out = {
        (page, line): why_not_run(shlex.split(text, comments=True))
        for page, line, text in examples()
        if (page, line, text) not in run_here
    }
    assert set(left_out.values()) <= {"a synopsis with placeholders", "goes on into another program", *NOT_RUN.values()}
    assert len(run_here) > len(left_out), left_out  # most examples run


@pytest.mark.parametrize(("page", "line", "text"), runnable(), ids=lambda v: str(v)[:60])
def test_every_example_runs(demo: Path, monkeypatch: pytest.MonkeyPatch, page: str, line: int, text: str) -> None:
    words = shlex.split(text, comments=True)
    stated = STATED_EXIT.search(text)
    expected = int(stated.group(1)) if stated else 0
    work = demo / f"run-{Path(page).stem}-{line}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "data").mkdir(parents=True)
    (work / "data" / "demo.duckdb").symlink_to(demo / "data" / "demo.duckdb")
    monkeypatch.chdir(work)
    # an example without --warehouse reads the default warehouse: the demo's, as the pages tell the reader to set
    ran = run_in_process(*words[1:], env={"CHAINOPS_WAREHOUSE": str(demo / "data" / "demo.duckdb")})
    assert ran.returncode == expected, f"{page}:{line}: {text}\n{ran.stdout[-1500:]}\n{ran.stderr[-1500:]}"
