"""Every notebook runs top to bottom against the sandbox and shows its main table."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
#: What each notebook's main output must show.
MAIN_TABLE = {
    "01_quickstart.ipynb": "p50_s",
    "02_latency_per_status.ipynb": "since_created_p50_s",
    "03_failure_rates.ipynb": "failure rate %",  # with its 95% interval beside it, as everywhere
    "04_finality_stages.ipynb": "finalized share %",
    "05_queries_and_watchers.ipynb": "terminal p90 (",  # one unit for the column, named in its header
    "06_ad_hoc_sql.ipynb": "avg_seconds_in_status",
    "07_dashboard.ipynb": "Worst network by failure rate",
}


def test_every_notebook_is_checked() -> None:
    assert NOTEBOOKS, "no notebooks found"
    assert {p.name for p in NOTEBOOKS} == set(MAIN_TABLE)


def test_notebooks_are_stored_without_outputs() -> None:
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), path.name


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINOPS_NOTEBOOK_WAREHOUSE", str(tmp_path / "nb.duckdb"))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = "\n".join(
        str(out.get("data", {}).get("text/html", "")) + str(out.get("data", {}).get("text/plain", ""))
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )
    assert MAIN_TABLE[path.name] in shown
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, "the notebook shows no plot"


@pytest.mark.notebooks
def test_notebooks_run_from_notebooks_use_the_repository_data_folder(tmp_path: Path) -> None:
    """Started from notebooks/ (docs/guides/notebooks.md), each notebook's warehouse lands in the repository's data/."""
    repo = tmp_path / "clone"
    (repo / "toolkit").mkdir(parents=True)
    (repo / "toolkit" / "__init__.py").write_text("")
    (repo / "pyproject.toml").write_text("[project]\nname = 'chainops-toolkit'\n")
    (repo / "notebooks").mkdir()
    setup_cells = []
    for path in NOTEBOOKS:
        first = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        setup_cells += [first, nbformat.v4.new_code_cell(f"print({path.name!r}, WAREHOUSE.resolve())")]
    nb = nbformat.v4.new_notebook(cells=setup_cells)
    env_free = {"metadata": {"path": str(repo / "notebooks")}}
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("CHAINOPS_NOTEBOOK_WAREHOUSE", raising=False)
        NotebookClient(nb, timeout=120, kernel_name="python3", resources=env_free).execute()
    # one line per notebook; a kernel may send a line's text in several stream messages, so they are joined first
    stdout = "".join(o["text"] for c in nb.cells for o in c.get("outputs", []) if o.get("name") == "stdout")
    printed = stdout.strip().splitlines()
    expected = str((repo / "data" / "notebook.duckdb").resolve())
    assert printed == [f"{p.name} {expected}" for p in NOTEBOOKS]
    assert not (repo / "notebooks" / "data").exists()
