"""The dashboard page that `chainops dashboard` serves: over real HTTP on 127.0.0.1, on the report tests' warehouse
(one operation stuck on Ethereum Mainnet, none on Ethereum Sepolia)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from toolkit.dashboard_app import VIEWS
from toolkit.dashboard_page import EMPTY, serving


@pytest.fixture(scope="module")
def url(warehouse: Path):
    with serving(warehouse) as running:
        yield running


def test_the_page_shows_every_view_with_its_table(url: str) -> None:
    page = httpx.get(url, timeout=60)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    text = page.text
    for key, title in VIEWS.items():
        assert f'<section id="{key}"><h2>{title}</h2>' in text
        assert f'src="/figure/{key}.png?"' in text
    assert text.count('<table class="chainops">') == 4
    assert "stuck-1" in text  # the stuck operation's id, in the stuck view's table
    # nothing is fetched from beyond the server: every link and source is relative (or an anchor)
    assert re.findall(r'(?:src|href)="(?![/#?])', text) == []


def test_an_empty_view_says_so_in_text(url: str) -> None:
    page = httpx.get(url, params={"network": "Ethereum Sepolia"}, timeout=60).text
    stuck = page[page.index('<section id="stuck">') :]
    stuck = stuck[: stuck.index("</section>")]
    assert EMPTY["stuck"] in stuck and "<img" not in stuck
    assert "Ethereum Sepolia" in page[page.index('<section id="failure">') :]


def test_a_filter_value_it_does_not_know_is_named_with_the_nearest(url: str) -> None:
    page = httpx.get(url, params={"network": "ethereum"}, timeout=60).text
    assert 'class="error"' in page and "did you mean &#x27;Ethereum Mainnet&#x27;" in page


def test_figures_are_png_and_unknown_paths_are_404(url: str) -> None:
    for key in VIEWS:
        answer = httpx.get(f"{url}figure/{key}.png", timeout=120)
        assert answer.status_code == 200 and answer.content.startswith(b"\x89PNG\r\n\x1a\n"), key
    assert httpx.get(f"{url}figure/nope.png", timeout=10).status_code == 404


def test_figures_of_a_period_typed_in_the_form_are_drawn(url: str) -> None:
    """The form sends the period as text (a date, an age): the figures read it as the metrics do (they compared
    the text with times and answered 500)."""
    for period in ({"since": "2023-11-14", "until": "2023-11-16"}, {"until": "2023-11-16"}, {"since": "2d"}):
        page = httpx.get(url, params=period, timeout=60)
        assert page.status_code == 200 and 'id="error"' not in page.text, period
        for key in VIEWS:
            answer = httpx.get(f"{url}figure/{key}.png", params=period, timeout=120)
            assert answer.status_code == 200 and answer.content.startswith(b"\x89PNG\r\n\x1a\n"), (period, key)


def test_chainops_dashboard_prints_its_url_on_loopback(warehouse: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "toolkit", "dashboard", "--warehouse", str(warehouse), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        m = re.match(r"dashboard on (http://127\.0\.0\.1:\d+/) ", line)
        assert m, line
        assert httpx.get(m.group(1), timeout=60).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_missing_warehouse_is_a_clear_error(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "toolkit", "dashboard", "--warehouse", str(tmp_path / "none.duckdb"), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "chainops sync" in out.stderr and "Traceback" not in out.stderr
