"""Import rules of DESIGN.md, enforced: what `import toolkit` loads, and who may import whom."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import toolkit

PACKAGE = Path(toolkit.__file__).parent

SYNC_WITH_MOCK_TRANSPORT = r"""
import sys, httpx, tempfile, os
import toolkit as tk

def handler(request):
    path = request.url.path
    if path.endswith("/networks") or path.endswith("/channels") or path.endswith("/wallets"):
        return httpx.Response(200, json={"data": [], "has_more": False})
    return httpx.Response(404, json={"type": "NOT_FOUND", "message": "no"})

client = tk.Client("http://127.0.0.1:9/v1", "k", transport=httpx.MockTransport(handler))
with tempfile.TemporaryDirectory() as d:
    tk.sync(client=client, warehouse=os.path.join(d, "w.duckdb"), quiet=True)
    tk.status_latency(os.path.join(d, "w.duckdb"))
heavy = ("toolkit.sandbox", "matplotlib", "ipywidgets", "uvicorn", "toolkit.presentation.figures")
loaded = [m for m in heavy if m in sys.modules]
print(",".join(loaded))
"""


def test_import_and_sync_load_no_sandbox_plotting_or_widgets() -> None:
    out = subprocess.run([sys.executable, "-c", SYNC_WITH_MOCK_TRANSPORT], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


#: Modules being built on other branches, known to the checker before their files exist here (the sync's package).
PLANNED_MODULES = {"toolkit.loader"}

#: The foundation every layer may use: the service's vocabulary, errors, settings, times, signals, file writing and
#: text for terminals. It imports nothing of the toolkit but itself.
FOUNDATION = ("toolkit.spec", "toolkit.errors", "toolkit.config", "toolkit.times", "toolkit.signals")
FOUNDATION_EXTRA = (
    "toolkit.atomic",
    "toolkit.streams",
    "toolkit.column_kinds",
    "toolkit.event_wire",
)
#: The toolkit's layers above the foundation, by package or module.
SYNC = ("toolkit.sync", "toolkit.loader")
#: The presentation (how values read, tables, files for people, figures, report, dashboards) and the old names of its
#: modules, kept as aliases for code outside the toolkit: nothing inside imports those.
PRESENTATION = "toolkit.presentation"
OLD_PRESENTATION = (
    "toolkit.present",
    "toolkit.display",
    "toolkit.report",
    "toolkit.plots",
    "toolkit.dashboard_app",
    "toolkit.dashboard_page",
)
#: The old names of the metrics' declarations and filter checks (toolkit.metrics.declarations, .known_values), kept as
#: aliases: the metrics never import them.
OLD_ANALYSIS = ("toolkit.registry", "toolkit.known_values")
ANALYSIS = ("toolkit.metrics", PRESENTATION, *OLD_PRESENTATION, *OLD_ANALYSIS)
ROOT = "toolkit"  # the package itself: its __init__ imports every layer, so importing it from below is importing them
TOP = ("toolkit.cli", "toolkit.__main__", "toolkit.sandbox")
#: DON proof verification: reads the warehouse, never the service; the analysis layer may read what it stored.
VERIFY = "toolkit.verify"

#: importer prefix -> imported prefixes it must never import (a prefix matches itself and what is under it).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "toolkit.api": (ROOT, "toolkit.warehouse", *SYNC, VERIFY, *ANALYSIS, "toolkit.export", "toolkit.spark", *TOP),
    "toolkit.warehouse": (ROOT, "toolkit.api", *SYNC, VERIFY, *ANALYSIS, "toolkit.export", "toolkit.spark", *TOP),
    "toolkit.sync": (ROOT, VERIFY, *ANALYSIS, "toolkit.export", "toolkit.spark", *TOP),
    "toolkit.loader": (ROOT, VERIFY, *ANALYSIS, "toolkit.export", "toolkit.spark", *TOP),
    VERIFY: (ROOT, "toolkit.api", *SYNC, *ANALYSIS, "toolkit.export", "toolkit.spark", *TOP),
    "toolkit.metrics": (ROOT, "toolkit.api", *SYNC, PRESENTATION, *OLD_PRESENTATION, *OLD_ANALYSIS, *TOP),
    PRESENTATION: (ROOT, "toolkit.api", *SYNC, *OLD_PRESENTATION, "toolkit.known_values", *TOP),
    "toolkit.export": (ROOT, "toolkit.api", *SYNC, VERIFY, *ANALYSIS, *TOP),
    "toolkit.spark": (ROOT, "toolkit.api", *SYNC, VERIFY, *ANALYSIS, *TOP),
    **{
        m: (ROOT, "toolkit.api", "toolkit.warehouse", *SYNC, VERIFY, *ANALYSIS, "toolkit.export", "toolkit.spark", *TOP)
        for m in (*FOUNDATION, *FOUNDATION_EXTRA)
    },
}
#: The sandbox (the emulator of the service) may import nothing of the toolkit but the vocabulary.
SANDBOX_MAY_IMPORT = ("toolkit.sandbox", "toolkit.spec")


def module_name(path: Path) -> str:
    """``toolkit.x.y`` of a file of the package (``toolkit.x`` for ``x/__init__.py``)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def known_modules() -> set[str]:
    """Every module of the package, and those planned on other branches."""
    return {module_name(p) for p in PACKAGE.rglob("*.py")} | PLANNED_MODULES


def imports_in(source: str, module: str, *, is_package: bool = False, modules: set[str] | None = None) -> set[str]:
    """The toolkit modules (and outside packages) a module's source imports, anywhere in it (function-level imports
    too). Relative imports are resolved against ``module``; ``from P import x`` names ``P.x`` when that is a module
    (``from toolkit import sync`` imports ``toolkit.sync``) and ``P`` otherwise (an attribute of P's ``__init__``)."""
    modules = known_modules() if modules is None else modules
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                child = f"{origin}.{alias.name}"
                names.add(child if child in modules else origin)
    return names


def imports_of(path: Path) -> set[str]:
    """What a file of the package imports (see :func:`imports_in`)."""
    return imports_in(path.read_text(encoding="utf-8"), module_name(path), is_package=path.name == "__init__.py")


def _under(name: str, prefix: str) -> bool:
    """Whether ``name`` is ``prefix`` or under it (the root ``toolkit`` stands for its ``__init__`` alone)."""
    return name == prefix or (prefix != ROOT and name.startswith(prefix + "."))


def violations(module: str, imported: set[str]) -> list[str]:
    """Each import of ``module`` that breaks a layer rule, as ``importer -> imported``."""
    found = []
    for name in sorted(imported):
        if name != ROOT and not name.startswith(ROOT + "."):
            continue  # not the toolkit
        if _under(module, "toolkit.sandbox"):
            if not any(_under(name, allowed) for allowed in SANDBOX_MAY_IMPORT):
                found.append(f"{module} -> {name}")
            continue
        for importer, forbidden in FORBIDDEN.items():
            if _under(module, importer) and any(_under(name, f) for f in forbidden if not _under(name, importer)):
                found.append(f"{module} -> {name}")
                break
    return found


def test_every_module_keeps_to_its_layer() -> None:
    broken = [v for path in sorted(PACKAGE.rglob("*.py")) for v in violations(module_name(path), imports_of(path))]
    assert broken == [], "imports across the layers (see docs/architecture.md):\n" + "\n".join(broken)


def test_only_the_cli_imports_the_sandbox() -> None:
    for path in PACKAGE.rglob("*.py"):
        if "sandbox" in path.parts or "cli" in path.relative_to(PACKAGE).parts[:1]:
            continue
        assert not any(n.startswith("toolkit.sandbox") for n in imports_of(path)), path


#: (importing module, is it a package's __init__, source) that must each be reported: one per rule and form.
BREAKING = [
    ("toolkit.sandbox.app", False, "from toolkit import sync"),
    ("toolkit.sandbox.app", False, "from toolkit import loader"),
    ("toolkit.sandbox.app", False, "import toolkit.api.client"),
    ("toolkit.sandbox.app", False, "from .. import errors"),
    ("toolkit.sandbox", True, "from ..warehouse import Warehouse"),
    ("toolkit.warehouse.store", False, "from toolkit import sync"),
    ("toolkit.warehouse.store", False, "from toolkit.loader import unit"),
    ("toolkit.warehouse.store", False, "from .. import cli"),
    ("toolkit.warehouse.store", False, "from ..metrics import status_latency"),
    ("toolkit.warehouse.store", False, "from ..api import Client"),
    ("toolkit.warehouse", True, "from .. import Warehouse"),
    ("toolkit.api.client", False, "import toolkit.sync"),
    ("toolkit.api.client", False, "from toolkit import loader"),
    ("toolkit.api.client", False, "def f():\n    from ..cli import main"),
    ("toolkit.api.client", False, "from toolkit.metrics import common"),
    ("toolkit.api.client", False, "from ..warehouse.store import Warehouse"),
    ("toolkit.metrics.common", False, "from ..api import Client"),
    ("toolkit.metrics.common", False, "from toolkit import sync"),
    ("toolkit.metrics.common", False, "from ..loader import run"),
    ("toolkit.metrics", True, "from ..sync import sync"),
    ("toolkit.presentation.report", False, "from toolkit.api import Client"),
    ("toolkit.presentation.report", False, "from .. import sync"),
    ("toolkit.presentation.figures", False, "from ..report import html_table"),
    ("toolkit.metrics.common", False, "from ..presentation import report"),
    ("toolkit.metrics.common", False, "def f():\n    from ..presentation.tables import use_in_notebook"),
    ("toolkit.metrics.latency", False, "from ..registry import BY_NAME"),
    ("toolkit.metrics.common", False, "def f():\n    from ..known_values import resolve_filters"),
    ("toolkit.presentation.report", False, "from ..known_values import nearest"),
    ("toolkit.presentation.report", False, "import toolkit.loader"),
    ("toolkit.spec", False, "from .warehouse import Warehouse"),
    ("toolkit.errors", False, "from . import api"),
    ("toolkit.sync", False, "from . import metrics"),
    ("toolkit.loader.unit", False, "from ..report import write_html_report"),
    ("toolkit.verify.run", False, "from ..api import Client"),
    ("toolkit.verify.run", False, "from toolkit import loader"),
    ("toolkit.verify.run", False, "from ..metrics import proof_coverage"),
    ("toolkit.verify.run", False, "from .. import cli"),
    ("toolkit.verify", True, "from .. import Warehouse"),
    ("toolkit.warehouse.store", False, "from ..verify import run"),
    ("toolkit.loader.unit", False, "from ..verify.run import verify_warehouse"),
    ("toolkit.api.client", False, "import toolkit.verify"),
    ("toolkit.spec", False, "from .verify import rules"),
    ("toolkit.metrics.common", False, "from ..cli.options import warehouse_option"),  # a module of the cli package
    ("toolkit.presentation.tables", False, "from ..cli import output"),
]


@pytest.mark.parametrize(("module", "is_package", "source"), BREAKING)
def test_each_rule_reports_a_file_that_breaks_it(module: str, is_package: bool, source: str) -> None:
    imported = imports_in(source, module, is_package=is_package)
    assert violations(module, imported), f"{module}: `{source}` passed the checker"


@pytest.mark.parametrize(
    ("module", "source"),
    [
        (
            "toolkit.sandbox.app",
            "from toolkit import spec\nfrom toolkit.spec import QUERY_STATUSES\nfrom .. import spec",
        ),
        (
            "toolkit.warehouse.store",
            "from .. import spec\nfrom ..errors import WarehouseError\nfrom .arrow import TABLES",
        ),
        ("toolkit.api.client", "from ..config import Settings\nfrom . import pages\nimport httpx"),
        ("toolkit.metrics.common", "from ..warehouse import Warehouse\nfrom .. import spec"),
        ("toolkit.sync", "from .api import Client\nfrom .warehouse import Warehouse\nfrom . import spec"),
        ("toolkit.cli", "from . import sync, metrics, report\nfrom .sandbox import Sandbox"),
        ("toolkit.verify.run", "from ..warehouse import Warehouse\nfrom .. import spec\nfrom ..errors import X"),
        ("toolkit.metrics.proofs", "from ..verify.run import TABLE"),
    ],
)
def test_imports_the_rules_allow_pass(module: str, source: str) -> None:
    assert violations(module, imports_in(source, module)) == []


def import_graph() -> dict[str, set[str]]:
    """Module -> the toolkit modules it imports (module-level and function-level imports alike; a package stands for
    its ``__init__``), for every module outside the sandbox."""
    modules = known_modules()
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = module_name(path)
        if not _under(name, "toolkit.sandbox"):
            graph[name] = {
                m for m in imports_of(path) if m in modules and m != name and not _under(m, "toolkit.sandbox")
            }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan): each is a circle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_circle_of_imports_outside_the_sandbox() -> None:
    circles = cycles(import_graph())
    assert circles == [], "circles of imports (break each; see docs/architecture.md):\n" + "\n".join(map(str, circles))


def test_the_circle_finder_finds_circles() -> None:
    """The check above cannot pass vacuously: a circle through a function-level import is found."""
    graph: dict[str, set[str]] = {"t.a": {"t.b"}, "t.b": {"t.c"}, "t.c": set(), "t.d": set()}
    assert cycles(graph) == []
    graph["t.c"] = imports_in("def f():\n    from . import a", "t.c", modules={"t.a", "t.b", "t.c"})
    assert cycles(graph) == [["t.a", "t.b", "t.c"]]
    assert import_graph()["toolkit.metrics.common"] >= {"toolkit.metrics.known_values", "toolkit.metrics.declare"}


def test_public_api_is_curated() -> None:
    assert sorted(toolkit.__all__) == sorted(set(toolkit.__all__))
    for name in toolkit.__all__:
        assert hasattr(toolkit, name), name
