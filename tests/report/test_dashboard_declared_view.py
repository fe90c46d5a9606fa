"""A view declared on a metric (``View`` in toolkit/metrics/declarations.py) is a tab of both dashboards from its
declaration alone: its metric's table with the filters it takes, no figure of its own, and the four drawn views as
they were. On the report tests' warehouse (failed operations on three networks, one operation stuck in ``sending``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx
import pandas as pd
import pytest

from toolkit import metrics
from toolkit.metrics import declarations
from toolkit.metrics.declare import View
from toolkit.presentation.dashboard_page import serving
from toolkit.presentation.dashboard_widgets import EMPTY, VIEWS, compute_views

NO_FILTERS = {"channel": None, "network": None, "since": None, "until": None}
#: Two metrics added with a tab each: one that takes a status and groups by network, one that takes no status.
REASONS = View("reasons", "Why operations failed", "No operation failed in this period with these filters.")
REVISITS = View("revisits", "Reorg revisits", "No revisit in this period with these filters.")


@pytest.fixture
def declared(monkeypatch: pytest.MonkeyPatch) -> None:
    """``failure-reasons-tab`` and ``revisits-tab`` declared beside the others, each with a ``View``."""
    extra = (
        dataclasses.replace(declarations.BY_NAME["failure-reasons"], name="failure-reasons-tab", view=REASONS),
        dataclasses.replace(declarations.BY_NAME["revisits"], name="revisits-tab", view=REVISITS),
    )
    monkeypatch.setattr(declarations, "METRICS", (*declarations.METRICS, *extra))
    monkeypatch.setattr(declarations, "BY_NAME", {**declarations.BY_NAME, **{m.name: m for m in extra}})


def _section(page: str, key: str) -> str:
    start = page.index(f'<section id="{key}">')
    return page[start : page.index("</section>", start)]


def test_a_declared_view_gets_its_metrics_table_from_the_filters_it_takes(warehouse: Path, declared: None) -> None:
    path = str(warehouse)
    assert list(VIEWS) == ["latency", "failure", "finality", "stuck", "reasons", "revisits"]
    tables, _ = compute_views(path, NO_FILTERS, None, "1d", draw=False)
    pd.testing.assert_frame_equal(tables["reasons"], metrics.failure_reasons(path, by=["network"]))
    pd.testing.assert_frame_equal(tables["revisits"], metrics.revisits(path, by=["network"]))
    assert len(tables["reasons"]) == 3  # a failure on each of the three networks

    mainnet = {**NO_FILTERS, "network": ["Ethereum Mainnet"]}
    tables, _ = compute_views(path, mainnet, ["failed"], "1d", draw=False)
    expected = metrics.failure_reasons(path, by=["network"], network=["Ethereum Mainnet"], status=["failed"])
    pd.testing.assert_frame_equal(tables["reasons"], expected)
    assert set(tables["reasons"]["network"]) == {"Ethereum Mainnet"}
    # the status goes only where it is declared: revisits takes none, and is not refused for it
    pd.testing.assert_frame_equal(
        tables["revisits"], metrics.revisits(path, by=["network"], network=["Ethereum Mainnet"])
    )
    tables, _ = compute_views(path, NO_FILTERS, ["sending"], "1d", draw=False)
    assert tables["reasons"].empty and not tables["revisits"].empty


def test_the_four_drawn_views_are_as_before_and_a_declared_view_has_no_figure(warehouse: Path, declared: None) -> None:
    path = str(warehouse)
    tables, figures = compute_views(path, NO_FILTERS, None, "1d")
    assert set(figures) == {"latency", "failure", "finality", "stuck"}
    pd.testing.assert_frame_equal(tables["latency"], metrics.status_latency(path, by=["network", "status"]))
    pd.testing.assert_frame_equal(tables["failure"], metrics.failure_rates(path, by=["network"]))
    pd.testing.assert_frame_equal(tables["finality"], metrics.finality_breakdown(path, by=["network"]))
    now = metrics.latest_event_time(path)
    pd.testing.assert_frame_equal(tables["stuck"], metrics.stuck_operations(path, now=now))
    assert list(tables["stuck"]["operation_id"]) == ["stuck-1"]


def test_the_page_shows_a_declared_views_tab_and_table_without_a_figure(warehouse: Path, declared: None) -> None:
    with serving(warehouse) as url:
        page = httpx.get(url, timeout=120).text
        assert '<a href="#reasons">Why operations failed</a>' in page
        assert "Status filters these views: Latency per status, Stuck operations, Why operations failed." in page
        reasons = _section(page, "reasons")
        assert reasons.startswith('<section id="reasons"><h2>Why operations failed</h2>')
        assert '<table class="chainops">' in reasons and "revert" in reasons and "<img" not in reasons
        assert '<table class="chainops">' in _section(page, "revisits")
        assert page.count('<table class="chainops">') == 6
        for key in ("latency", "failure", "finality", "stuck"):
            assert f'src="/figure/{key}.png?"' in _section(page, key)
        assert httpx.get(f"{url}figure/reasons.png", timeout=60).status_code == 404
        assert httpx.get(f"{url}figure/latency.png", timeout=120).content.startswith(b"\x89PNG")
        sending = httpx.get(url, params={"status": "sending"}, timeout=120).text
        assert EMPTY["reasons"] in _section(sending, "reasons") and "<table" not in _section(sending, "reasons")


def test_the_widget_dashboard_shows_a_declared_views_tab(warehouse: Path, declared: None) -> None:
    pytest.importorskip("ipywidgets")
    import toolkit as tk

    dash = tk.dashboard(str(warehouse))
    assert dash.error is None
    titles = [dash.tabs.get_title(i) for i in range(len(dash.tabs.children))]
    assert titles == ["Latency per status", "Failure rates", "Finality stages", "Stuck operations", REASONS.title,
                      REVISITS.title]  # fmt: skip
    assert "<table" in dash.html["reasons"].value and "revert" in dash.html["reasons"].value
    assert bytes(dash.images["reasons"].value) == b"" and dash.images["reasons"].layout.display == "none"
    assert bytes(dash.images["latency"].value).startswith(b"\x89PNG") and dash.images["latency"].layout.display is None
    assert f"{REASONS.title}:" in dash.to_text() and f"<h4>{REASONS.title}</h4>" in dash.to_html()


def test_an_empty_period_is_said_by_the_dashboard_not_warned_by_each_metric(warehouse: Path) -> None:
    """The warehouse's data is years old: ``since 2d`` counted back from now holds nothing. The dashboards say so in
    their own sentence; the metrics' EmptyPeriodWarning (one per metric call) stays off the server's stderr and off
    a notebook's cell."""
    import warnings

    recent = {**NO_FILTERS, "since": "2d"}
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        tables, _ = compute_views(str(warehouse), recent, None, "1d")
    assert all(t.empty for k, t in tables.items() if k != "stuck"), {k: len(t) for k, t in tables.items()}
    assert [w for w in said if issubclass(w.category, metrics.EmptyPeriodWarning)] == []
    with warnings.catch_warnings(record=True) as direct:  # the metric alone still warns, as a Python user expects
        warnings.simplefilter("always")
        metrics.failure_rates(str(warehouse), since="2d")
    assert any(issubclass(w.category, metrics.EmptyPeriodWarning) for w in direct)
