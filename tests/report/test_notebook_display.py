"""A metric's result as a Jupyter cell's value reads as every surface shows it (rates with their intervals, one
unit per column), without calling ``tk.show``; other DataFrames keep pandas' own look."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from tests.support.report_warehouse import SINCE, UNTIL
from toolkit.presentation.tables import NOTEBOOK_ROWS, use_in_notebook


@pytest.fixture
def shell() -> Iterator[object]:
    """An IPython shell in this process (as a kernel runs one), removed afterwards."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        yield shell
    finally:
        InteractiveShell.clear_instance()


def _html(shell, value: object) -> str:
    data, _ = shell.display_formatter.format(value)
    return data.get("text/html", "")


def test_outside_ipython_nothing_is_registered() -> None:
    assert use_in_notebook() is False


def test_a_metric_result_shows_as_tk_show_shows_it(shell, warehouse: Path) -> None:
    df = tk.metrics.failure_rates(str(warehouse), by=["network"], since=SINCE, until=UNTIL)
    shown = _html(shell, df)
    assert shown == tk.show(df)._repr_html_()  # the one presentation model, 50 rows or fewer: nothing folded
    assert '<table class="chainops">' in shown and 'class="dataframe"' not in shown
    # each network's rate as a percentage of three significant digits, its interval beside it, not 0.0xyz
    for rate in df["failure_rate"]:
        text = "0" if rate == 0 else f"{100 * rate:#.3g}".rstrip(".")  # trailing zeros kept: 1.40, 10.0
        assert f">{text}% (" in shown, rate
        assert f">{rate}<" not in shown
    assert df["failure_rate"].between(0, 1).all()  # the data stays as it was: shares in [0, 1]


def test_other_frames_keep_pandas_look(shell, warehouse: Path) -> None:
    tk.metrics.failure_rates(str(warehouse), since=SINCE, until=UNTIL)  # registers the formatter
    plain = pd.DataFrame({"failure_rate": [0.5]})
    assert 'class="dataframe"' in _html(shell, plain) and "50%" not in _html(shell, plain)
    big = pd.DataFrame({"failure_rate": [0.5] * (NOTEBOOK_ROWS + 1)})
    big.attrs["metric"] = "failure-rates"
    assert 'class="dataframe"' in _html(shell, big)  # too long to lay out whole: pandas shows head and tail
