"""Import rules of DESIGN.md, enforced: what `import toolkit` loads, and who may import whom."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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
loaded = [m for m in ("toolkit.sandbox", "matplotlib", "ipywidgets", "uvicorn", "toolkit.plots") if m in sys.modules]
print(",".join(loaded))
"""


def test_import_and_sync_load_no_sandbox_plotting_or_widgets() -> None:
    out = subprocess.run([sys.executable, "-c", SYNC_WITH_MOCK_TRANSPORT], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def imports_of(path: Path) -> set[str]:
    """Absolute module names imported by a file (relative imports resolved against the package)."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module.removesuffix(".__init__")
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                names.add(target)
                names.update(f"{target}.{a.name}" for a in node.names)
            else:
                names.add(node.module or "")
    return names


def test_sandbox_imports_only_spec_of_the_toolkit() -> None:
    for path in (PACKAGE / "sandbox").rglob("*.py"):
        names = imports_of(path)
        toolkit_imports = {n for n in names if n.startswith("toolkit") and not n.startswith("toolkit.sandbox")}
        assert toolkit_imports <= {"toolkit", "toolkit.spec"}, (path.name, toolkit_imports)


def test_only_the_cli_imports_the_sandbox() -> None:
    for path in PACKAGE.rglob("*.py"):
        if "sandbox" in path.parts or path.name == "cli.py":
            continue
        assert not any(n.startswith("toolkit.sandbox") for n in imports_of(path)), path


def test_api_and_warehouse_never_import_each_other() -> None:
    for path in (PACKAGE / "api").rglob("*.py"):
        assert not any(n.startswith("toolkit.warehouse") for n in imports_of(path)), path
    for path in (PACKAGE / "warehouse").rglob("*.py"):
        assert not any(n.startswith("toolkit.api") for n in imports_of(path)), path


def test_public_api_is_curated() -> None:
    assert sorted(toolkit.__all__) == sorted(set(toolkit.__all__))
    for name in toolkit.__all__:
        assert hasattr(toolkit, name), name
