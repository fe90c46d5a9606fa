"""Distributions as counts (toolkit.metrics.distributions): the counts hold exactly the rows of status_durations and
finality_times, and the box statistics from the counts are matplotlib's own boxplot_stats of the raw values (ties,
groups of one to three values, sub-second values clipped at 0.5 as the figures clip them, several networks), and the
figures drawn from counts are the figures matplotlib's boxplot draws from the raw values, pixel for pixel."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from tests.support.builders import SEPOLIA, build, ladder, refresh
from toolkit import metrics
from toolkit.metrics.distributions import (
    box_stats,
    finality_time_counts,
    grouped_box_stats,
    status_duration_counts,
    value_counts,
)
from toolkit.presentation import figures as plots

FULL = ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed")
#: The statistics bxp draws (and the notch bounds): equal to matplotlib's bit for bit.
EXACT = ("q1", "med", "q3", "iqr", "whislo", "whishi", "cilo", "cihi")


def reference(raw: np.ndarray) -> dict:
    """matplotlib's statistics of the raw values (what Axes.boxplot draws)."""
    from matplotlib.cbook import boxplot_stats

    return boxplot_stats(raw)[0]


def assert_same(ours: dict, theirs: dict) -> None:
    for key in EXACT:
        assert ours[key] == theirs[key] or (np.isnan(ours[key]) and np.isnan(theirs[key])), (key, ours, theirs)
    assert ours["mean"] == pytest.approx(theirs["mean"], rel=1e-12)


def counted(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, counts = np.unique(raw, return_counts=True)
    return values, counts


CASES = {
    "one value": [7.0],
    "two values": [3.0, 11.0],
    "three values": [1.0, 2.0, 50.0],
    "three ties": [4.0, 4.0, 4.0],
    "two and a tie": [1.0, 9.0, 9.0],
    "all ties but one far": [2.0] * 20 + [900.0],
    "ties at the quartiles": [1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 40.0],
    "whisker exactly at the fence": [0.0, 10.0, 10.0, 20.0, 35.0],  # q3 + 1.5 IQR = 35
    "fliers both sides": [-100.0, 5.0, 6.0, 6.0, 7.0, 8.0, 9.0, 300.0],
    "sub-second clipped": list(np.clip([0.0, 0.0, 0.1, 0.3, 0.49, 0.5, 0.7, 1.0, 2.0, 2.5], 0.5, None)),
    "zero iqr with an outlier": [5.0] * 7 + [6.0],
    # numpy interpolates from the upper neighbour when the weight is 0.5 or more: 54.26 + 91.46 * 0.5 would be
    # 99.99000000000001, numpy's median is 99.99
    "median from the upper neighbour": [4.26, 54.26, 145.72, 195.72],
}


@pytest.mark.parametrize("name", list(CASES))
def test_box_stats_from_counts_are_matplotlibs(name: str) -> None:
    raw = np.asarray(CASES[name], dtype=float)
    assert_same(box_stats(*counted(raw)), reference(raw))


@pytest.mark.parametrize("seed", range(40))
def test_box_stats_of_random_samples_are_matplotlibs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    kind = seed % 4
    if kind == 0:  # whole seconds with many ties, as the service's timestamps give
        raw = rng.integers(0, 30, n).astype(float)
    elif kind == 1:  # heavy tail: a few stays of hours
        raw = np.round(rng.lognormal(2, 1.5, n), 3)
    elif kind == 2:  # sub-second stays clipped at 0.5 as the figures draw them
        raw = np.clip(np.round(rng.exponential(1.0, n), 2), 0.5, None)
    else:  # continuous, no ties
        raw = rng.normal(100, 30, n)
    assert_same(box_stats(*counted(raw)), reference(raw))


def test_box_stats_take_counts_unsorted_repeated_and_zero() -> None:
    raw = np.array([3.0, 1.0, 1.0, 8.0, 3.0, 3.0, 2.0])
    values, counts = np.array([8.0, 3.0, 1.0, 3.0, 2.0, 5.0]), np.array([1, 2, 2, 1, 1, 0])
    assert_same(box_stats(values, counts), reference(raw))
    assert np.isnan(box_stats([], [])["med"])


def test_grouped_box_stats_per_network_and_status_clip_like_the_figure() -> None:
    rng = np.random.default_rng(7)
    rows = []
    for network, size in (("Ethereum Mainnet", 200), ("Polygon", 3), ("Arbitrum One", 1)):
        for status in ("accepted", "sending", "confirmed_latest"):
            seconds = rng.integers(0, 5, size) * rng.choice([0.25, 1.0, 10.0], size)
            rows += [(network, status, s) for s in seconds]
    raw = pd.DataFrame(rows, columns=["network", "status", "seconds"])
    stats = grouped_box_stats(value_counts(raw, ["network", "status"], "seconds"), ["network", "status"], lower=0.5)
    assert len(stats) == 9
    for (network, status), part in raw.groupby(["network", "status"]):
        assert_same(stats[(network, status)], reference(part["seconds"].clip(lower=0.5).to_numpy()))


# ---- the counts hold the same observations as the row-per-observation functions ----------------------------------


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    events = []
    for i in range(12):  # ties on purpose: several operations with the same stays
        t = i * 1800
        stays = (0, 1 + i % 3, 1, 2 + i % 2, 10 + (i % 4) * 5, 300 + i % 2 * 100, 600)
        events += ladder(f"e{i}", FULL, [t + sum(stays[: k + 1]) for k in range(len(FULL))])
    for i in range(3):  # a small group on another network
        t = i * 3600 + 60
        events += ladder(f"s{i}", FULL[:5], (t, t, t + 2, t + 3, t + 12 + i), chain=SEPOLIA)
    events += ladder("f", ("accepted", "sending", "failed"), (0, 1, 5), reason="execution reverted: nope")
    return refresh(build(tmp_path_factory.mktemp("dist") / "w.duckdb", events=events))


def _expanded(counts: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    rows = counts.loc[counts.index.repeat(counts["count"])]
    return rows[[*keys, "seconds"]].astype({k: str for k in keys}).sort_values([*keys, "seconds"], ignore_index=True)


@pytest.mark.parametrize(
    "filters",
    [{}, {"network": "Ethereum Mainnet"}, {"status": ["sending", "confirmed_latest"]}, {"since": "2023-11-14T23:00Z"}],
)
def test_status_duration_counts_hold_the_rows_of_status_durations(warehouse, filters) -> None:
    raw = metrics.status_durations(warehouse, **filters)
    counts = status_duration_counts(warehouse, **filters)
    assert list(counts.columns) == ["network", "status", "seconds", "count"]
    assert len(raw) and counts["count"].sum() == len(raw)
    assert len(counts) < len(raw)  # the ties were counted, not repeated
    keys = ["network", "status"]
    expected = raw[[*keys, "seconds"]].astype({k: str for k in keys})
    pd.testing.assert_frame_equal(_expanded(counts, keys), expected.sort_values([*keys, "seconds"], ignore_index=True))
    assert counts["status"].dtype == raw["status"].dtype  # the same ordered categorical


def test_finality_time_counts_hold_the_times_of_finality_times(warehouse) -> None:
    raw = metrics.finality_times(warehouse)
    counts = finality_time_counts(warehouse)
    for time in metrics.FINALITY_TIMES:
        ours = _expanded(counts[counts["time"] == time], ["network"])
        theirs = raw[["network", f"{time}_s"]].dropna().rename(columns={f"{time}_s": "seconds"})
        theirs = theirs.astype({"network": str}).sort_values(["network", "seconds"], ignore_index=True)
        pd.testing.assert_frame_equal(ours, theirs, check_dtype=False)


# ---- the figures: drawn from counts, the same pixels as matplotlib's boxplot of every row -------------------------


def _png(fig) -> np.ndarray:
    import matplotlib.image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=60)
    buffer.seek(0)
    return matplotlib.image.imread(buffer)


def _boxplot_reference(durations: pd.DataFrame, title: str):
    """The latency figure drawn as it was before the counts: Axes.boxplot of every clipped raw value."""
    from matplotlib.figure import Figure

    from toolkit.presentation.tables import network_colour

    fig = Figure(figsize=(10.0, 5.0), layout="constrained")
    ax = fig.add_subplot()
    data = durations.dropna(subset=["seconds"])
    statuses = [c for c in data["status"].cat.categories if (data["status"] == c).any()]
    networks = sorted(data["network"].astype(str).unique())
    width = 0.8 / max(len(networks), 1)
    for j, network in enumerate(networks):
        sub = data[data["network"].astype(str) == network]
        series = [sub.loc[sub["status"] == s, "seconds"].clip(lower=0.5).to_numpy() for s in statuses]
        positions = [i + (j - (len(networks) - 1) / 2) * width for i in range(len(statuses))]
        keep = [(p, v) for p, v in zip(positions, series, strict=True) if len(v)]
        box = ax.boxplot(
            [v for _, v in keep],
            positions=[p for p, _ in keep],
            widths=width * 0.9,
            patch_artist=True,
            showfliers=False,
            manage_ticks=False,
        )
        for patch in box["boxes"]:
            patch.set_facecolor(network_colour(network))
            patch.set_alpha(0.7)
        ax.plot([], [], color=network_colour(network), linewidth=8, alpha=0.7, label=network)
    ax.set_xticks(range(len(statuses)), statuses, rotation=20, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("seconds in status (log scale)")
    ax.set_xlabel("status (time until the next status); a sub-second stay is drawn at 0.5 s")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="network", fontsize="small", ncols=2)
    return fig


def test_the_latency_figure_from_counts_is_matplotlibs_boxplot_of_the_rows(warehouse) -> None:
    raw = metrics.status_durations(warehouse)
    title = "Time spent in each operation status"
    expected = _png(_boxplot_reference(raw, title))
    from_counts = _png(plots.latency_by_status(status_duration_counts(warehouse), title=title))
    from_rows = _png(plots.latency_by_status(raw, title=title))
    assert np.array_equal(from_counts, expected)
    assert np.array_equal(from_rows, expected)


def test_the_finality_times_figure_is_the_same_from_rows_and_from_counts(warehouse) -> None:
    from_rows = _png(plots.finality_stage_times(metrics.finality_times(warehouse)))
    from_counts = _png(plots.finality_stage_times(finality_time_counts(warehouse)))
    assert np.array_equal(from_rows, from_counts)
