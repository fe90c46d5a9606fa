"""The documentation site: it builds with `mkdocs build --strict` (a broken link fails it), its generated
command-line reference is current, and the README stays a short front page."""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=config_dir,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin", "HOME": str(site.parent)},
        timeout=600,
    )


def nav_pages(nav: list[object]) -> list[str]:
    pages: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages += nav_pages(value) if isinstance(value, list) else [str(value)]
    return pages


@pytest.fixture(scope="module")
def config() -> dict[str, object]:
    class Loader(yaml.SafeLoader):  # mkdocs.yml may carry !ENV and python tags; none matter here
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)


@pytest.mark.slow  # mkdocs as a process (~2 CPU-s); `make test` builds the site too
def test_the_site_builds_strictly_with_every_page_of_the_nav(tmp_path, config) -> None:
    out = build(ROOT, tmp_path / "site")
    assert out.returncode == 0, out.stderr
    pages = nav_pages(config["nav"])  # type: ignore[arg-type]
    assert {"metrics.md", "warehouse.md", "reliability.md", "architecture.md", "reference/cli.md"} <= set(pages)
    for page in pages:  # directory URLs: guides/sql.md is guides/sql/index.html, contributing/index.md stays
        folder = page.removesuffix("index.md") if page.endswith("index.md") else page.removesuffix(".md")
        assert (tmp_path / "site" / folder / "index.html").is_file(), page
    api = (tmp_path / "site" / "reference" / "python" / "index.html").read_text()
    assert "Seconds spent in each status" in api  # status_latency's docstring, read by mkdocstrings
    assert "https://fonts.googleapis.com" not in (tmp_path / "site" / "index.html").read_text()


@pytest.mark.slow  # mkdocs as a process on a copy of the project
def test_a_broken_link_fails_the_build(tmp_path) -> None:
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "docs", copy / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copytree(ROOT / "toolkit", copy / "toolkit", ignore=shutil.ignore_patterns("__pycache__"))
    page = copy / "docs" / "guides" / "sql.md"
    page.write_text(page.read_text() + "\nSee [the old page](no-such-page.md).\n")
    out = build(copy, tmp_path / "site")
    assert out.returncode != 0
    assert "no-such-page.md" in out.stderr


def test_the_cli_reference_is_generated_from_the_current_parser() -> None:
    generator = runpy.run_path(str(ROOT / "docs" / "gen_cli_reference.py"))
    committed = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert committed == generator["render"](), "stale: run python docs/gen_cli_reference.py"
    from toolkit.cli import build_parser

    parser = build_parser()
    for action in parser._subparsers._group_actions[0].choices["report"]._actions:  # type: ignore[union-attr]
        for flag in action.option_strings if action.dest != "help" else ():
            assert f"`{flag}`" in committed


def test_the_readme_is_a_short_front_page_linking_into_the_site() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    for link in ("docs/getting-started/demo.md", "docs/reference/cli.md", "docs/metrics.md", "docs/architecture.md"):
        assert f"]({link})" in readme and (ROOT / link).exists()
