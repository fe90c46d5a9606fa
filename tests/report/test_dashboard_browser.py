"""The dashboard in a real browser: Voilà serves a notebook showing it, Debian's Chromium (driven by Playwright)
changes the network filter, and the four tabs redraw.

Needs ``/usr/bin/chromium`` (``apt-get install -y chromium``; ``.ci/run`` installs it). Without it the test is
skipped with that reason, which ``make test`` prints in its summary; under ``.ci/run``
(``CHAINOPS_REQUIRE_BROWSER=1``) a missing browser is an error instead. Playwright's own browser download is never
used. The server binds 127.0.0.1 and every request for anything else is blocked: none leaves the machine, and
any but the icon stylesheets Voilà's own template links fails the test.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import nbformat
import pytest

from tests.support.report_warehouse import SINCE, UNTIL
from toolkit.presentation.dashboard_widgets import EMPTY

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Links in Voilà's lab template (share/jupyter/voila/templates/lab/index.html.j2), blocked like any other.
VOILA_TEMPLATE_LINKS = ("https://cdn.jsdelivr.net/npm/@fortawesome/fontawesome-free@",)
TABS = ("Latency per status", "Failure rates", "Finality stages", "Stuck operations")

if not CHROMIUM.exists() and os.environ.get("CHAINOPS_REQUIRE_BROWSER"):  # set by .ci/run: CI never skips it
    raise RuntimeError("CHAINOPS_REQUIRE_BROWSER is set but /usr/bin/chromium is missing: apt-get install -y chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason=(
            "NOT RUN: the dashboard's browser test needs Debian's Chromium at /usr/bin/chromium "
            "(apt-get install -y chromium; .ci/run installs it)"
        ),
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def voila(warehouse: Path, tmp_path: Path) -> Iterator[str]:
    """Voilà serving a notebook whose only output is the dashboard over the test warehouse; yields its URL."""
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(f"import toolkit as tk\n\ntk.dashboard({str(warehouse)!r})")]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "dashboard.ipynb"
    nbformat.write(nb, path)
    port = _free_port()
    env = {**os.environ, "JUPYTER_PLATFORM_DIRS": "1", "MPLBACKEND": "Agg"}
    log = (tmp_path / "voila.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "voila",
            str(path),
            "--no-browser",
            f"--port={port}",
            "--Voila.ip=127.0.0.1",
            "--Voila.port_retries=0",
        ],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "voila/static/", timeout=1)  # any answer: the server is up
                break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail(f"Voilà did not start: {(tmp_path / 'voila.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _images(page) -> list[str]:
    """The src of each tab's figure (a fresh blob URL whenever the kernel sends a new PNG)."""
    return page.eval_on_selector_all(".widget-tab img", "imgs => imgs.map(i => i.src)")


def test_changing_the_network_redraws_the_four_tabs(voila: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    outside: list[str] = []

    def only_loopback(route) -> None:
        if urlsplit(route.request.url).hostname in ("127.0.0.1", None) or route.request.url.startswith(
            ("data:", "blob:")
        ):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.route("**/*", only_loopback)
            page.goto(voila, timeout=45_000)
            tabs = page.locator(".widget-tab .lm-TabBar-tab")
            tabs.first.wait_for(timeout=45_000)
            assert tabs.all_inner_texts() == list(TABS)
            page.wait_for_function(
                "() => document.querySelectorAll('.widget-tab img').length === 4"
                " && [...document.querySelectorAll('.widget-tab img')].every(i => i.src.startsWith('blob:'))",
                timeout=30_000,
            )
            before = _images(page)
            summary = page.locator(".widget-html", has_text="operations created")
            assert "<b>" not in summary.inner_text() and "33 operations created" in summary.inner_text()

            # "All" first and selected; the range written out in full, not clipped; the tables styled
            network = page.locator(".widget-select-multiple", has_text="Network").locator("select")
            assert network.locator("option").first.inner_text() == "All"
            assert network.evaluate("s => [...s.selectedOptions].map(o => o.text)") == ["All"]
            label = page.locator(".chainops-period")
            assert " to " in label.inner_text() and label.inner_text().endswith("UTC")
            assert label.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the period's text is clipped"
            header = page.locator(".widget-tab table.chainops th").first
            assert header.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(242, 242, 242)"

            # one plain click on a network: the kernel redraws, every tab with rows gets a new figure and table (the
            # stuck tab has none on Sepolia: it says so in text instead)
            network.select_option(label="Ethereum Sepolia")
            page.wait_for_function(
                "before => { const now = [...document.querySelectorAll('.widget-tab img')].map(i => i.src);"
                " return now.length === 4 && now.slice(0, 3).every((s, k) => s !== before[k] && s.startsWith('blob:'));"
                " }",
                arg=before,
                timeout=30_000,
            )
            page.wait_for_function(
                "() => [...document.querySelectorAll('.widget-html')].some(e => "
                "e.innerText.includes('10 operations created'))",
                timeout=30_000,
            )
            for k, title in enumerate(TABS):
                tabs.nth(k).click()
                panel = page.locator(".widget-tab .widget-vbox:visible")  # the shown tab: figure above table
                image = panel.locator("img")
                if title != "Stuck operations":
                    image.wait_for(state="visible")
                    assert panel.count() == 1 and image.count() == 1, title
                    assert image.evaluate("i => i.complete && i.naturalWidth > 400"), title
                    shown = panel.inner_text()
                    assert "Ethereum Sepolia" in shown and "Ethereum Mainnet" not in shown, title
                    assert panel.locator("table.chainops").count() >= 1, title
                else:  # Sepolia has none stuck: a sentence, no blank figure
                    panel.get_by_text(EMPTY["stuck"]).wait_for(state="visible")
                    assert image.is_hidden() and panel.locator("table.chainops").count() == 0
            tabs.nth(1).click()
            page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
        finally:
            browser.close()
    assert (tmp_path / "dashboard.png").stat().st_size > 20_000
    # every request beyond 127.0.0.1 was blocked, none left the machine; the only ones asked for are the icon font
    # stylesheets that Voilà's own page template links (the dashboard draws no icons)
    unexpected = [u for u in outside if not u.startswith(VOILA_TEMPLATE_LINKS)]
    assert unexpected == [], f"the page asked for something beyond this machine: {unexpected}"


# ---- the dashboard page and the report at 1280 px -----------------------------------------------------------------

#: Tables wider than their page, measured in the browser: each table's scrolling box must end inside the viewport.
_OVERFLOWING = """() => [...document.querySelectorAll('table.chainops')].filter(t => {
    const box = t.closest('div.chainops-scroll') || t;
    return box.getBoundingClientRect().right > window.innerWidth + 1;
}).length"""


#: Anything else on the page that runs past its right edge (a figure, a form, a line of text); what sits inside a
#: table's own scrolling box may, the box may not.
_PAST_THE_EDGE = """() => [...document.querySelectorAll('body *')].filter(el => {
    if (el.closest('div.chainops-scroll') && !el.matches('div.chainops-scroll')) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.right > window.innerWidth + 1;
}).map(el => `${el.tagName.toLowerCase()}.${el.className}`)"""
#: Open every folded <details> (the rows past the first ones), so that their tables are measured too.
_UNFOLD = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"


def _loopback_only(outside: list[str], inside: list[str] | None = None):
    def route(route) -> None:
        url = route.request.url
        if urlsplit(url).hostname == "127.0.0.1" or url.startswith(("data:", "blob:", "file:")):
            if inside is not None:
                inside.append(url)
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    return route


def test_the_dashboard_page_and_the_report_fit_1280_px(warehouse: Path, tmp_path: Path) -> None:
    """`chainops dashboard` serves a page that loads in Chromium with nothing fetched beyond 127.0.0.1; no table of
    it, nor of the HTML report, runs past a 1280 px wide window (a wide table scrolls inside its own box)."""
    from playwright.sync_api import sync_playwright

    from toolkit.presentation.report import write_report

    report = tmp_path / "report.html"
    write_report(str(warehouse), report, since=SINCE, until=UNTIL)
    server = subprocess.Popen(
        [sys.executable, "-m", "toolkit", "dashboard", "--warehouse", str(warehouse), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    outside: list[str] = []
    inside: list[str] = []
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split()[2]
        assert url.startswith("http://127.0.0.1:")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.route("**/*", _loopback_only(outside, inside))
                page.goto(url, timeout=120_000, wait_until="load")
                assert page.locator("section h2").all_inner_texts() == list(TABS)
                assert page.locator("table.chainops").count() >= 3
                assert page.evaluate("() => [...document.images].every(i => i.complete && i.naturalWidth > 400)")
                # the route saw the page and its four figures: the check on what it blocked is not vacuous
                assert sum("/figure/" in u for u in inside) == len(TABS), inside
                page.evaluate(_UNFOLD)
                assert page.evaluate(_OVERFLOWING) == 0
                assert page.evaluate(_PAST_THE_EDGE) == []
                assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280
                page.screenshot(path=str(tmp_path / "dashboard-page.png"), full_page=True)

                # a view with no rows says so in text, with no figure (nothing is stuck on Sepolia)
                page.goto(url + "?network=Ethereum+Sepolia", timeout=120_000, wait_until="load")
                stuck = page.locator("section#stuck")
                assert stuck.locator("p.empty").inner_text() == EMPTY["stuck"]
                assert stuck.locator("img").count() == 0 and stuck.locator("table").count() == 0
                assert page.locator("section#latency img").count() == 1
                assert page.evaluate(_PAST_THE_EDGE) == []

                page.goto(report.as_uri(), wait_until="load")
                assert page.locator("table.chainops").count() >= 5
                page.evaluate(_UNFOLD)
                assert page.evaluate(_OVERFLOWING) == 0
                assert page.evaluate(_PAST_THE_EDGE) == []
                assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280
            finally:
                browser.close()
    finally:  # stopped however the test ends: a dashboard left running outlived a whole run once
        server.terminate()
        try:
            server.communicate(timeout=120)
        finally:
            if server.poll() is None:
                server.kill()
                server.communicate()
    assert outside == [], f"the page asked for something beyond this machine: {outside}"
