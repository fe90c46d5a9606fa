"""docs/architecture.md follows the code: its module map names every module of the package, and no path the guide
names (outside "Renamed modules", which records the old names on purpose) is one that no longer exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "toolkit"
PACKAGES = ("api", "warehouse", "loader", "metrics", "verify", "spark", "sandbox")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n#", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def _module_map_paths(text: str) -> set[str]:
    """The files the "Module map" tree names, as paths under the repository: a ``*.py`` on a line belongs to the
    directory opened on that line, else to the innermost one opened at a smaller indent."""
    block = _section(text, "## Module map").split("```")[1]
    stack: list[tuple[int, str]] = []
    named: set[str] = set()
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        first = line.split()[0]
        while stack and stack[-1][0] >= indent and first.endswith("/"):
            stack.pop()
        while stack and stack[-1][0] > indent:
            stack.pop()
        if first.endswith("/"):
            stack = [s for s in stack if s[0] < indent] + [(indent, first.rstrip("/"))]
            here = "/".join(d for _, d in stack)
        else:
            here = "/".join(d for i, d in stack if i < indent)
        named.update(f"{here}/{name}" for name in re.findall(r"\b(\w+\.py)\b", line))
    return named


def _modules() -> set[str]:
    """Every module of the package (a subpackage's ``__init__.py`` is named by its directory)."""
    found = {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    return {m for m in found if not m.endswith("/__init__.py") or m == "toolkit/__init__.py"}


def test_the_module_map_names_every_module_and_only_modules_that_exist() -> None:
    named = _module_map_paths(DOC.read_text(encoding="utf-8"))
    missing = sorted(_modules() - named)
    assert not missing, f"docs/architecture.md's module map does not name {missing}: add each with what it is for"
    stale = sorted(p for p in named if p.startswith("toolkit/") and not (ROOT / p).exists())
    assert not stale, f"docs/architecture.md's module map names modules that do not exist: {stale}"


def test_no_path_the_guide_names_is_gone() -> None:
    text = DOC.read_text(encoding="utf-8")
    renamed = _section(text, "### Renamed modules")
    rest = text.replace(renamed, "")
    paths = set(re.findall(r"`(toolkit/[\w/]+\.py)`", rest))
    paths |= {f"toolkit/{p}" for p in re.findall(rf"`((?:{'|'.join(PACKAGES)})/[\w/]+\.py)`", rest)}
    paths |= {f"toolkit/loader/{p}" for p in re.findall(r"\| `([\w/]+\.py)` \|", _section(text, "### Module map of"))}
    assert len(paths) > 30  # the guide names modules throughout
    gone = sorted(p for p in paths if not (ROOT / p).exists())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"
    assert "toolkit/sync.py" not in rest and "becoming" not in rest


def test_the_parser_places_files_in_their_directories() -> None:
    tree = "toolkit/\n  a.py   x\n  sub/\n    b.py, c.py   y\n                 z d.py\n  e.py\n"
    expected = {"toolkit/a.py", "toolkit/sub/b.py", "toolkit/sub/c.py", "toolkit/sub/d.py", "toolkit/e.py"}
    assert _module_map_paths(f"## Module map\n\n```\n{tree}```\n") == expected
