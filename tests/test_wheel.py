"""The wheel built from the project carries what the code reads (issue 37, item 6): every file under toolkit/ that is
not Python (Spark's logging configuration) is in it, and, in the slow tier, the wheel installed in a fresh venv runs
``chainops demo`` from an empty directory.

The wheel is built from a copy of the tracked files (nothing is written into the checkout), offline: without build
isolation, with the setuptools the dev install put in the venv (pyproject.toml's ``dev`` extra), so pip asks no
package index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line]


def data_files() -> list[str]:
    """Every tracked file under toolkit/ that is not Python: what the code reads beside its modules."""
    return sorted(p for p in _tracked() if p.startswith("toolkit/") and not p.endswith(".py"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in _tracked():
        if name.startswith(("toolkit/", "pyproject.toml", "README.md", "LICENSE")):
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    built = subprocess.run([*pip, "-w", str(out), str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    (found,) = out.glob("chainops_toolkit-*.whl")
    return found


def test_the_wheel_holds_every_file_the_code_reads(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "toolkit/spark/log4j2.properties" in data_files()  # what the check covers, at least
    missing = [p for p in data_files() if p not in names]
    assert missing == [], f"not in the wheel: {missing} (pyproject.toml's [tool.setuptools.package-data])"
    modules = [p for p in _tracked() if p.startswith("toolkit/") and p.endswith(".py")]
    assert [p for p in modules if p not in names] == []


@pytest.mark.slow
def test_the_installed_wheel_runs_the_demo_from_an_empty_directory(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # the dependencies come from this venv's site-packages (offline, nothing downloaded), added as a plain path:
    # its .pth files (this checkout's editable install among them) are not run, so only the wheel gives `toolkit`
    target = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(target, "parent_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index", "--no-deps",
         str(wheel)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-2000:]
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHAINOPS_", "CREC_", "PYTHON"))}
    where = subprocess.run(
        [str(python), "-c", "import toolkit, pathlib; print(pathlib.Path(toolkit.__file__).parent)"],
        cwd=empty, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert Path(where).is_relative_to(Path(target)), where  # the wheel's copy, not this checkout
    assert Path(where, "spark", "log4j2.properties").is_file()
    ran = subprocess.run(
        [str(venv / "bin" / "chainops"), "demo", "--days", "1"], cwd=empty, env=env, capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert ran.returncode == 0, (ran.stdout[-2000:], ran.stderr[-2000:])
    assert (empty / "data" / "demo.duckdb").is_file(), sorted(p.name for p in empty.rglob("*"))
