"""The dashboard page that `chainops dashboard` serves: over real HTTP on 127.0.0.1, on the report tests' warehouse
(one operation stuck on Ethereum Mainnet, none on Ethereum Sepolia)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

from toolkit.presentation.dashboard_page import EMPTY, serving
from toolkit.presentation.dashboard_widgets import VIEWS


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


@contextmanager
def _dashboard(warehouse: Path) -> Iterator[subprocess.Popen[str]]:
    """`chainops dashboard` as a process on a free port, killed when the block ends if it still runs (a failing
    test leaves nothing behind: one outlived a whole `make test` by over an hour)."""
    server = subprocess.Popen(
        # faulthandler: a hung one is sent SIGABRT and prints every thread's stack (see _terminate)
        [
            sys.executable,
            "-X",
            "faulthandler",
            "-m",
            "toolkit",
            "dashboard",
            "--warehouse",
            str(warehouse),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield server
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate()


def _url(server: subprocess.Popen[str]) -> str:
    assert server.stdout is not None
    line = server.stdout.readline()
    m = re.match(r"dashboard on (http://127\.0\.0\.1:\d+/) ", line)
    assert m, line
    return m.group(1)


def _terminate(server: subprocess.Popen[str]) -> tuple[int, str, str]:
    """SIGTERM, then the exit code and what it wrote. Waiting has a bound only so that a dashboard that ignores the
    signal fails the test instead of hanging the run (and :func:`_dashboard` kills it)."""
    server.send_signal(signal.SIGTERM)
    try:
        out, err = server.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        server.send_signal(signal.SIGABRT)  # faulthandler writes where each thread is
        try:
            out, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            out, err = "", "(no answer to SIGABRT either)"
        pytest.fail(f"chainops dashboard did not end on SIGTERM; where it was:\n{err}\n{out}")
    return server.returncode, out, err


def _clean(err: str) -> bool:
    return not any(s in err for s in ("Traceback", "Fatal Python error", "terminate called", "Exception ignored"))


def test_chainops_dashboard_prints_its_url_on_loopback(warehouse: Path) -> None:
    """It failed under load: after SIGTERM it waited 30 s for the process, which hung as Python exited with the
    warm-up thread still in DuckDB or matplotlib (or aborted, SIGABRT); a hung one ignored further SIGTERMs."""
    with _dashboard(warehouse) as server:
        assert httpx.get(_url(server), timeout=60).status_code == 200
        code, out, err = _terminate(server)
    assert code == 0 and "dashboard stopped" in out and _clean(err), (code, out, err)


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["starting", "importing", "warming", "answering"])
def test_chainops_dashboard_stops_cleanly_on_sigterm_at_any_moment(warehouse: Path, moment: str) -> None:
    """SIGTERM 0.1-2 s after start ended 2 runs in 16 with SIGABRT (exit 134), once with a traceback, and one hung.
    Now: exit 0 and `dashboard stopped`, or, before Python has set up its handler, the signal's own end (-15);
    never a traceback or an abort. The pauses only place the signal; nothing here is timed."""
    with _dashboard(warehouse) as server:
        if moment == "importing":
            time.sleep(0.3)
        elif moment in ("warming", "answering"):
            url = _url(server)  # the warm-up thread has just started computing the first page and figures
            if moment == "answering":
                threading.Thread(target=_ask_quietly, args=(f"{url}figure/stuck.png?since=2d",), daemon=True).start()
        code, out, err = _terminate(server)
    assert _clean(err), err
    assert (code == 0 and "dashboard stopped" in out) or (moment == "starting" and code == -signal.SIGTERM), (
        code,
        out,
        err,
    )


def _ask_quietly(url: str) -> None:
    with suppress(httpx.HTTPError):  # the stop may cut the connection
        httpx.get(url, timeout=60)


def test_a_missing_warehouse_is_a_clear_error(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "toolkit", "dashboard", "--warehouse", str(tmp_path / "none.duckdb"), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "chainops sync" in out.stderr and "Traceback" not in out.stderr


def test_an_empty_period_says_where_the_data_ends(url: str) -> None:
    page = httpx.get(url, params={"since": "2100-01-01"}, timeout=120).text
    sentence = re.search(r'<p id="summary">(.*?)</p>', page).group(1)
    assert sentence.startswith("No operation was created from 2100-01-01 00:00 UTC"), sentence
    assert "before this period starts: choose an earlier one" in sentence, sentence
