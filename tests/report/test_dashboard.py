"""The dashboard driven from Python: set its filter widgets, check what each view drew (figures, tables, images)."""

from __future__ import annotations

import html
import subprocess
import sys

import pandas as pd
import pytest

import toolkit as tk
from tests.support.report_warehouse import SCRIPT_CHANNEL, SCRIPT_NETWORK
from toolkit.presentation.dashboard_widgets import ALL, EMPTY

PNG = b"\x89PNG\r\n\x1a\n"


def texts(fig) -> str:
    """Every piece of text a figure shows (titles, labels, legends, messages)."""
    from matplotlib.text import Text

    return "\n".join(t.get_text() for t in fig.findobj(Text))


@pytest.fixture(scope="module")
def board(warehouse):
    """One dashboard for the module (a first draw costs seconds), and how many times it had drawn when built."""
    built = tk.dashboard(str(warehouse))
    return built, built.redraws


@pytest.fixture
def dash(board):
    """The module's dashboard with every filter back to "All" (:meth:`Dashboard.reset`; the views of that setting
    are kept, so the reset draws nothing again)."""
    built, _ = board
    built.reset()
    assert built.error is None and built.filters["network"] is None and built.filters["channel"] is None
    return built


def test_first_draw_shows_every_view(dash, board) -> None:
    assert board[1] == 1 and dash.error is None
    assert set(dash.figures) == set(dash.tables) == {"latency", "failure", "finality", "stuck"}
    for key, image in dash.images.items():
        assert bytes(image.value).startswith(PNG), key
        assert '<table class="chainops">' in dash.html[key].value, key
    assert set(dash.tables["failure"]["network"]) == {"Ethereum Mainnet", "Ethereum Sepolia", SCRIPT_NETWORK}
    assert "Time spent in each operation status" in texts(dash.figures["latency"])
    assert list(dash.tables["stuck"]["operation_id"]) == ["stuck-1"]
    # the page's sentence, word for word (one value reads the same on both dashboards)
    from toolkit.presentation.dashboard_widgets import summary_sentence

    assert "1 operation stuck as of" in dash.summary.value and "failure rate" in dash.summary.value
    assert html.unescape(dash.summary.value) == summary_sentence(dash.tables)


def test_options_come_from_the_warehouse(dash) -> None:
    networks = dict(dash.network.options)
    assert networks.pop("All") is ALL and set(networks) == {"Ethereum Mainnet", "Ethereum Sepolia", SCRIPT_NETWORK}
    assert dict(dash.channel.options)[f"{SCRIPT_CHANNEL} (ch-evil)"] == "ch-evil"
    assert "sending" in dict(dash.status.options)
    # "All" comes first and is what is selected at first: one plain click on a value filters, no ctrl-click
    for control in (dash.channel, dash.network, dash.status):
        assert control.options[0] == ("All", ALL) and control.value == (ALL,)
    since, until = dash.period.value
    assert since.tzinfo is not None and since < until


def test_network_filter_redraws_every_view(dash) -> None:
    before = {k: bytes(img.value) for k, img in dash.images.items()}
    redraws = dash.redraws
    dash.network.value = ("Ethereum Sepolia",)
    assert dash.redraws == redraws + 1
    for key in ("latency", "failure", "finality"):
        assert set(dash.tables[key]["network"]) == {"Ethereum Sepolia"}, key
        assert bytes(dash.images[key].value) != bytes(before[key]), key
    assert "Ethereum Mainnet" not in texts(dash.figures["latency"])
    assert "Ethereum Sepolia" in texts(dash.figures["finality"])
    assert dash.tables["failure"]["failed"].sum() == 1 and dash.tables["failure"]["terminal"].sum() == 10
    assert dash.tables["stuck"].empty and "no stuck operations" in texts(dash.figures["stuck"])
    dash.network.value = ()
    assert len(set(dash.tables["failure"]["network"])) == 3
    dash.network.value = ("Ethereum Sepolia",)
    dash.network.value = (ALL,)
    assert len(set(dash.tables["failure"]["network"])) == 3 and dash.filters["network"] is None
    dash.network.value = (ALL, "Ethereum Sepolia")  # All with a value still means all
    assert dash.filters["network"] is None


def test_an_empty_tab_says_so_in_text(dash) -> None:
    """A view with no rows shows a sentence, not a blank figure; it comes back when the filter brings rows."""
    assert bytes(dash.images["stuck"].value).startswith(PNG)
    dash.network.value = ("Ethereum Sepolia",)  # nothing stuck on Sepolia
    assert dash.tables["stuck"].empty
    assert bytes(dash.images["stuck"].value) == b"" and dash.images["stuck"].layout.display == "none"
    assert EMPTY["stuck"] in dash.html["stuck"].value and "<table" not in dash.html["stuck"].value
    for key in ("latency", "failure", "finality"):  # the tabs with rows keep their figure and table
        assert bytes(dash.images[key].value).startswith(PNG) and "<table" in dash.html[key].value, key
    dash.network.value = (ALL,)
    assert bytes(dash.images["stuck"].value).startswith(PNG) and dash.images["stuck"].layout.display is None
    assert '<table class="chainops">' in dash.html["stuck"].value


def test_stuck_ages_are_in_one_unit_everywhere(dash) -> None:
    """The age column takes the unit in which its median is at least 2, in the table and the figure alike."""
    stuck = dash.tables["stuck"]
    median = float(stuck["age_s"].median())
    unit, size, word = next(
        (u, s, w)
        for u, s, w in (("d", 86400, "days"), ("h", 3600, "hours"), ("min", 60, "minutes"), ("s", 1, "seconds"))
        if median >= 2 * s or u == "s"
    )
    age = float(stuck["age_s"].iloc[0]) / size
    digits = f"{age:.3g}" if age < 1000 else f"{age:,.0f}"
    assert f"<th>age ({unit})</th>" in dash.html["stuck"].value and f">{digits}</td>" in dash.html["stuck"].value
    assert "age_s" not in dash.html["stuck"].value
    assert f"{word} in the status" in texts(dash.figures["stuck"])


def test_the_period_is_written_out_in_full(dash) -> None:
    since, until = dash.period.value
    assert dash.period.readout is False  # the slider's own readout box clips the two times
    assert dash.period_label.value == f"<b>{since:%Y-%m-%d %H:%M}</b> to <b>{until:%Y-%m-%d %H:%M}</b> UTC"
    options = [value for _, value in dash.period.options]
    dash.period.value = (options[1], options[3])
    assert f"{options[1]:%Y-%m-%d %H:%M}" in dash.period_label.value


def test_a_static_render_shows_a_snapshot(dash) -> None:
    """nbconvert (and GitHub) cannot run the widget: the output falls back to HTML with the views, and text."""
    import nbformat
    from nbconvert import HTMLExporter

    dash.network.value = ("Ethereum Sepolia",)
    bundle = dash._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # the live widget where Jupyter runs
    text = bundle["text/plain"]
    assert "network: Ethereum Sepolia" in text and "Failure rates:" in text and "Stuck operations:" in text
    assert "Ethereum Mainnet" not in text
    cell = nbformat.v4.new_code_cell("tk.dashboard(WAREHOUSE)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    page, _ = HTMLExporter().from_notebook_node(nbformat.v4.new_notebook(cells=[cell]))
    # the stuck tab has no rows on Sepolia: it says so in text, with no figure
    assert bundle["text/html"].count("data:image/png;base64,") == 3
    assert "operations created" in page and page.count("data:image/png;base64,") >= 3
    assert html.escape(EMPTY["stuck"]) in page and EMPTY["stuck"] in text
    assert "Ethereum Sepolia" in page and '<table class="chainops">' in page


def test_status_filter_applies_to_latency_and_stuck(dash) -> None:
    dash.status.value = ("sending",)
    assert set(dash.tables["latency"]["status"].astype(str)) == {"sending"}
    assert list(dash.tables["stuck"]["operation_id"]) == ["stuck-1"]
    dash.status.value = ("accepted",)
    assert dash.tables["stuck"].empty
    assert set(dash.tables["failure"]["network"]) == {"Ethereum Mainnet", "Ethereum Sepolia", SCRIPT_NETWORK}


def test_channel_filter_and_escaping(dash) -> None:
    dash.channel.value = ("ch-evil",)
    failure = dash.tables["failure"]
    assert list(failure["network"]) == [SCRIPT_NETWORK] and failure["failed"].sum() == 1
    shown = dash.html["failure"].value
    assert "<img src=x" not in shown and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in shown


def test_time_range_filter(dash) -> None:
    options = [value for _, value in dash.period.options]
    first_two_hours = (options[0], options[2])
    dash.period.value = first_two_hours
    created = dash.tables["failure"]["operations"].sum()
    assert 0 < created < 33
    dash.period.value = (options[0], options[-1])
    assert dash.tables["failure"]["operations"].sum() == 33  # every operation, the day before too
    assert dash.filters["since"] == options[0] and isinstance(dash.filters["until"], pd.Timestamp)


def test_import_toolkit_loads_no_widgets_and_the_name_stays_a_function() -> None:
    code = (
        "import sys, types, toolkit as tk; assert 'ipywidgets' not in sys.modules and 'matplotlib' not in sys.modules;"
        "import toolkit.presentation.dashboard_widgets as m; assert isinstance(tk.dashboard, types.FunctionType);"
        "assert type(m) is types.ModuleType and not callable(m); print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
    assert "dashboard" in tk.__all__ and callable(tk.dashboard)


def test_reset_brings_back_every_filter_with_one_redraw(dash) -> None:
    first = dash.tables["failure"].copy()
    dash.network.value = ("Ethereum Sepolia",)
    dash.status.value = ("sending",)
    options = [value for _, value in dash.period.options]
    dash.period.value = (options[1], options[3])
    assert len(dash.tables["failure"]) < len(first)
    redraws = dash.redraws
    dash.reset()
    assert dash.redraws == redraws + 1
    assert all(control.value == (ALL,) for control in (dash.channel, dash.network, dash.status))
    assert dash.period.value == (options[0], options[-1])
    assert dash.period_label.value.startswith(f"<b>{options[0]:%Y-%m-%d %H:%M}</b>")
    pd.testing.assert_frame_equal(dash.tables["failure"], first)


def test_kept_views_are_shown_again_until_the_warehouse_file_changes(dash, warehouse) -> None:
    """Going back to a filter shows the views drawn for it (the same objects); once the file changes they are
    computed again."""
    import os

    from toolkit.presentation.dashboard_widgets import data_stamp

    drawn = dash.tables["failure"]
    dash.network.value = ("Ethereum Sepolia",)
    dash.network.value = (ALL,)
    assert dash.tables["failure"] is drawn
    stat = os.stat(warehouse)
    stamp = data_stamp(str(warehouse))
    try:
        os.utime(warehouse, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        assert data_stamp(str(warehouse)) != stamp
        redraws = dash.redraws
        dash.redraw()  # the same filters: drawn again from the warehouse, not taken from what was kept
        assert dash.redraws == redraws + 1 and dash.tables["failure"] is not drawn
        pd.testing.assert_frame_equal(dash.tables["failure"], drawn)
    finally:
        os.utime(warehouse, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert data_stamp(str(warehouse)) != stamp  # put back as it was, it is still a change (its ctime says so)
    assert data_stamp(str(warehouse) + ".missing") is None
