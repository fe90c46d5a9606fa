"""The failure-rate figure reads at a glance (near-empty buckets do not set its scale) and a network keeps its
colour whatever else is drawn beside it."""

from __future__ import annotations

import matplotlib.colors as mcolors
import pandas as pd
import pytest
from matplotlib.text import Text

from toolkit import plots
from toolkit.spec import KNOWN_NETWORKS

BUCKETS = pd.date_range("2026-11-20", periods=4, freq="1D", tz="UTC")


def _rates(network: str, rows: list[tuple[int, float, float, float]]) -> pd.DataFrame:
    """(finished, rate, low, high) per daily bucket."""
    return pd.DataFrame(
        {
            "network": network,
            "bucket": BUCKETS[: len(rows)],
            "terminal": [r[0] for r in rows],
            "failure_rate": [r[1] for r in rows],
            "failure_rate_low": [r[2] for r in rows],
            "failure_rate_high": [r[3] for r in rows],
        }
    )


def test_a_near_empty_bucket_does_not_set_the_scale() -> None:
    steady = [(500, 0.02, 0.011, 0.035), (480, 0.03, 0.018, 0.048), (510, 0.025, 0.015, 0.04)]
    lonely = [(2, 0.0, 0.0, 0.80)]  # one bucket of two operations: its 95% band reaches 80%
    rates = pd.concat([_rates("Base", steady), _rates("Polygon", [*lonely, *steady[:2]])], ignore_index=True)
    fig = plots.failure_rate_over_time(rates, group="network", bucket="1d")
    # the scale, computed here: the highest of 5%, 1.3 x the highest rate, the bands of buckets with 100+ operations
    top = max(
        5.0,
        1.3 * 100 * rates["failure_rate"].max(),
        100 * rates.loc[rates["terminal"] >= 100, "failure_rate_high"].max(),
    )
    assert fig.axes[0].get_ylim()[1] == pytest.approx(top * 1.05)
    assert fig.axes[0].get_ylim()[1] < 80
    caption = "\n".join(t.get_text() for t in fig.findobj(Text))
    assert "the axis follows the rates" in caption and "100+ finished operations" in caption


def _line_colours(fig) -> dict[str, str]:
    return {ax.get_title().split(" (")[0]: mcolors.to_hex(ax.lines[0].get_color()) for ax in fig.axes if ax.lines}


def test_a_network_keeps_its_colour_whatever_the_filter() -> None:
    a, b = KNOWN_NETWORKS[0].name, KNOWN_NETWORKS[5].name
    rows = [(200, 0.02, 0.01, 0.04), (200, 0.03, 0.02, 0.05)]
    both = plots.failure_rate_over_time(pd.concat([_rates(a, rows), _rates(b, rows)]), group="network", bucket="1d")
    alone = plots.failure_rate_over_time(_rates(b, rows), group="network", bucket="1d")
    colours = _line_colours(both)
    assert colours[b] == _line_colours(alone)[b]
    assert colours[a] != colours[b]
