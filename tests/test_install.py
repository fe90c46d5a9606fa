"""What each install pulls in, read from the installed package's own metadata (the requirements pip acts on, built
from pyproject.toml) and followed through every dependency that is installed here.

The core install must run every command and bring none of the test, browser, Spark, notebook or docs tools;
`[notebook]` brings JupyterLab, ipywidgets and Voilà; `[dev]` everything `make test` needs.
"""

from __future__ import annotations

from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

DIST = "chainops-toolkit"

#: Never part of the core install (each was in the demo's 1.5 GB venv).
NOT_IN_CORE = {
    "pyspark",
    "playwright",
    "pytest",
    "hypothesis",
    "schemathesis",
    "ruff",
    "voila",
    "jupyterlab",
    "ipywidgets",
    "mkdocs",
    "mkdocs-material",
    "notebook",
}


def direct(dist: str, extras: frozenset[str] = frozenset()) -> set[str]:
    """The names ``dist`` requires with these extras (markers evaluated for this interpreter)."""
    names = set()
    for text in metadata.requires(dist) or []:
        req = Requirement(text)
        environments = [{"extra": e} for e in extras] or [{"extra": ""}]
        if req.marker is None or any(req.marker.evaluate(env) for env in environments):
            names.add(canonicalize_name(req.name))
            for extra in req.extras:  # a self-reference such as chainops-toolkit[spark]
                if canonicalize_name(req.name) == canonicalize_name(dist):
                    names |= direct(dist, frozenset({extra}))
    return names


def closure(dist: str, extras: frozenset[str] = frozenset()) -> set[str]:
    """Every distribution the install of ``dist[extras]`` brings, following installed dependencies."""
    seen: set[str] = set()
    todo = list(direct(dist, extras) - {canonicalize_name(dist)})
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            todo.extend(direct(name) - seen)
        except metadata.PackageNotFoundError:  # a requirement for another platform, not installed here
            continue
    return seen


def test_the_core_install_brings_no_test_browser_spark_notebook_or_docs_tools() -> None:
    core = closure(DIST)
    assert {"httpx", "duckdb", "pyarrow", "pandas", "matplotlib", "uvicorn", "tqdm"} <= core
    assert not core & NOT_IN_CORE, sorted(core & NOT_IN_CORE)


def test_the_extras_bring_what_they_promise() -> None:
    assert {"jupyterlab", "ipywidgets", "voila"} <= direct(DIST, frozenset({"notebook"}))
    assert {"pyspark", "sqlglot"} <= direct(DIST, frozenset({"spark"}))
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= direct(DIST, frozenset({"docs"}))
    dev = direct(DIST, frozenset({"dev"}))
    assert {"pytest", "ruff", "pyspark", "jupyterlab", "voila", "mkdocs", "playwright"} <= dev
