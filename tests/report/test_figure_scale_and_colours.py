"""The failure-rate figure reads at a glance (near-empty buckets do not set its scale) and a network keeps its
colour whatever else is drawn beside it."""

from __future__ import annotations

import matplotlib.colors as mcolors
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from matplotlib.text import Text

from toolkit.presentation import figures as plots
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


def test_stuck_figure_marks_each_operations_own_threshold_in_plain_numbers() -> None:
    """Two operations stuck in one status with different thresholds (per network): each gets its own threshold
    mark, the axis reads in plain numbers (no 3×10^1) and the label fits the figure."""
    stuck = pd.DataFrame(
        {
            "operation_id": ["a", "b"],
            "network": ["Polygon", "Ethereum Sepolia"],
            "status": ["pending_signature", "pending_signature"],
            "age_s": [34.4 * 3600, 14.5 * 3600],
            "threshold_s": [13 * 3600, 7.67 * 3600],
        }
    )
    fig = plots.stuck_ages(stuck)
    fig.draw_without_rendering()
    ax = fig.axes[0]
    points = {round(float(y), 2) for c in ax.collections if isinstance(c, PathCollection) for _, y in c.get_offsets()}
    assert points == {34.4, 14.5, 13.0, 7.67}  # both ages and both thresholds, in hours
    labels = [t.get_text() for t in (*ax.get_yticklabels(), *ax.get_yticklabels(minor=True)) if t.get_text()]
    assert labels and not any("times" in t or "^" in t for t in labels), labels
    assert ax.get_ylabel() == "hours in the status"
    assert "its threshold" in [t.get_text() for t in ax.get_legend().get_texts()]


def _legend_beside(fig) -> bool:
    fig.draw_without_rendering()
    ax = fig.axes[0]
    return ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1  # right of the plot, over no bar


def test_query_latency_legend_sits_beside_the_bars() -> None:
    row = {f"{stage}_p{q}_s": 2.0 * q for stage in ("accepted_to_sending", "sending_to_sent", "sent_to_terminal")
           for q in (50, 90)}  # fmt: skip
    latency = pd.DataFrame([{"network": "Base", "outcome": "completed", **row}])
    assert _legend_beside(plots.query_latency_bars(latency))


def test_finality_legend_sits_beside_the_bars() -> None:
    rows = pd.DataFrame(
        {
            "network": ["Base", "Polygon"],
            "operations": [100, 100],
            "latest_share": [0.97, 0.94],
            "safe_share": [0.97, 0.94],
            "finalized_share": [0.97, 0.94],
            "latest_only": [False, False],
        }
    )
    assert _legend_beside(plots.finality_funnel(rows))
