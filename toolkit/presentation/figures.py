"""Matplotlib figures for the metrics: readable defaults, titles and units.

Each function takes a DataFrame from :mod:`toolkit.metrics` and returns a :class:`matplotlib.figure.Figure` (no
pyplot state: safe in scripts, servers and notebooks). matplotlib is imported inside the functions, so
``import toolkit`` never loads it. :func:`figure_for` draws the figure of a metric by its ``chainops metrics`` name
straight from a warehouse.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .tables import network_colour, unit_for

_UNIT_WORDS = {"s": "seconds", "min": "minutes", "h": "hours", "d": "days"}

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Colours of the failure categories (tab10 entries), in taxonomy order.
_CATEGORY_COLOURS = {"revert": 3, "gas": 1, "nonce": 4, "chain_unavailable": 0, "deadline": 7, "other": 5}


def png_bytes(fig: Figure, *, dpi: int = 90) -> bytes:
    """``fig`` as PNG bytes, with no software stamp in the file: the same figure gives the same bytes (the report,
    the dashboard page and the widgets all encode through here)."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def _figure(width: float = 10.0, height: float = 5.0) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _colour(i: int) -> Any:
    import matplotlib

    return matplotlib.colormaps["tab10"](i % 10)


def _group_colour(group: str | None, name: object, i: int) -> Any:
    """A network's own colour (:func:`.tables.network_colour`: the same in every figure, whatever the
    filter) when the groups are networks; else the ``i``-th colour."""
    return network_colour(name) if group == "network" else _colour(i)


#: A failure-rate band sets the figure's scale only when its bucket has at least this many finished operations.
BAND_MIN_FINISHED = 100


def _empty(fig: Figure, title: str, message: str) -> Figure:
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, message, ha="center", va="center")
    ax.set_axis_off()
    ax.set_title(title)
    return fig


def _present(values: pd.Series) -> list[Any]:
    """Categories of a categorical that occur, in category order (plain values in sorted order otherwise)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return [c for c in values.cat.categories if (values == c).any()]
    return sorted(values.dropna().astype(str).unique())


# ---- status latency ----------------------------------------------------------------------------------------------


def _boxes(ax: Any, stats: list[dict], positions: list[float], width: float, colour: Any) -> None:
    """Draw precomputed box statistics as ``Axes.boxplot(..., patch_artist=True, showfliers=False)`` draws them."""
    box = ax.bxp(
        stats,
        positions=positions,
        widths=width,
        patch_artist=True,
        showfliers=False,
        manage_ticks=False,
        boxprops={"linestyle": "solid"},  # what boxplot passes with patch_artist
    )
    for patch in box["boxes"]:
        patch.set_facecolor(colour)
        patch.set_alpha(0.7)


def latency_by_status(durations: pd.DataFrame, *, title: str = "Time spent in each operation status") -> Figure:
    """Box plots of seconds in status, one box per status and network (log scale: stages span seconds to hours).

    Arguments: ``durations`` with ``network``, ``status`` and ``seconds``: one row per transition
    (:func:`toolkit.metrics.status_durations`), or with a ``count`` column, one row per distinct duration
    (:func:`toolkit.metrics.distributions.status_duration_counts`: the same figure from a few thousand rows, not
    millions). The boxes are matplotlib's ``boxplot`` statistics without fliers, computed from the counts
    (:func:`toolkit.metrics.distributions.box_stats`). Returns the figure.
    """
    from ..metrics.distributions import grouped_box_stats, value_counts

    fig = _figure()
    data = durations.dropna(subset=["seconds"])
    if "count" in data.columns:
        data = data[data["count"] > 0]
    if data.empty:
        return _empty(fig, title, "no completed status transitions in range")
    ax = fig.add_subplot()
    statuses = _present(data["status"])
    data = data.assign(network=data["network"].astype(str))
    networks = sorted(data["network"].unique())
    stats = grouped_box_stats(value_counts(data, ["network", "status"], "seconds"), ["network", "status"], lower=0.5)
    width = 0.8 / max(len(networks), 1)
    for j, network in enumerate(networks):
        positions = [i + (j - (len(networks) - 1) / 2) * width for i in range(len(statuses))]
        keep = [(p, stats[(network, s)]) for p, s in zip(positions, statuses, strict=True) if (network, s) in stats]
        if not keep:
            continue
        _boxes(ax, [b for _, b in keep], [p for p, _ in keep], width * 0.9, network_colour(network))
        ax.plot([], [], color=network_colour(network), linewidth=8, alpha=0.7, label=network)
    ax.set_xticks(range(len(statuses)), statuses, rotation=20, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("seconds in status (log scale)")  # the whole label fits the axis's height
    ax.set_xlabel("status (time until the next status); a sub-second stay is drawn at 0.5 s")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="network", fontsize="small", ncols=2)
    return fig


def latency_ecdf(durations: pd.DataFrame, *, title: str = "Distribution of the time spent in each status") -> Figure:
    """Empirical CDFs of seconds in status, one line per status (all networks pooled; log scale).

    Arguments: ``durations`` as for :func:`latency_by_status`. Returns the figure.
    """
    fig = _figure()
    data = durations.dropna(subset=["seconds"])
    if data.empty:
        return _empty(fig, title, "no completed status transitions in range")
    ax = fig.add_subplot()
    for i, status in enumerate(_present(data["status"])):
        values = np.sort(data.loc[data["status"] == status, "seconds"].clip(lower=0.5).to_numpy())
        ax.step(
            values,
            np.arange(1, len(values) + 1) / len(values),
            where="post",
            color=_colour(i),
            label=f"{status} (n={len(values):,})",
        )
    ax.set_xscale("log")
    ax.set_xlabel("seconds in status (log scale; sub-second shown as 0.5 s)")
    ax.set_ylabel("share of transitions at or below")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return fig


# ---- failures ----------------------------------------------------------------------------------------------------


def partial_buckets(
    buckets: pd.Series, width: pd.Timedelta, period: tuple[pd.Timestamp, pd.Timestamp] | None
) -> pd.Series:
    """Which buckets the period covers only in part (the first may start before it, the last end after it).

    Arguments: ``buckets`` (start times), ``width`` of a bucket, ``period`` ``(start, end)`` the data covers (None:
    none is partial). Returns a boolean Series aligned with ``buckets``.
    """
    if period is None:
        return pd.Series(False, index=buckets.index)
    start, end = (pd.Timestamp(t) for t in period)
    return (buckets < start) | (buckets + width > end)


def _percent(rates: pd.Series) -> np.ndarray:
    """Rates as plain float percentages (nullable dtypes hold pd.NA, which matplotlib cannot draw)."""
    return pd.to_numeric(rates, errors="coerce").astype(float).to_numpy() * 100


def _bucket_width(buckets: pd.Series, bucket: str | pd.Timedelta | None) -> pd.Timedelta | None:
    if bucket is not None:
        from ..times import parse_duration  # the metrics' own reading of "6h", "1d", "1w" (pandas deprecates "1d")

        return pd.Timedelta(seconds=parse_duration(bucket))
    steps = pd.Series(sorted(buckets.unique())).diff().dropna()
    return steps.min() if len(steps) else None


def failure_rate_over_time(
    rates: pd.DataFrame,
    *,
    group: str | None = None,
    max_lines: int = 12,
    bucket: str | pd.Timedelta | None = None,
    period: tuple[pd.Timestamp, pd.Timestamp] | None = None,
    title: str = "Failure rate over time",
) -> Figure:
    """The failure rate per time bucket with its 95% interval as a band: one panel per group (small multiples on
    shared axes, so bands never overlap), or one panel for ungrouped rates.

    A bucket that the period covers only in part (``period``: the ``(start, end)`` the data covers, such as the
    report's period ending at the newest event) holds fewer operations and its rate jumps about: it is drawn as a
    hollow marker without a band, apart from the line, and the figure says so.

    Arguments: ``rates`` from :func:`toolkit.metrics.failure_rates` with a ``bucket``; ``group`` the column that
    separates panels (default: the first grouping column present, else one panel); ``max_lines`` panels at most
    (the groups with most finished operations); ``bucket`` the bucket width (default: inferred from the buckets);
    ``period`` as above. Returns the figure.
    """
    data = rates.dropna(subset=["failure_rate"]) if "bucket" in rates.columns else rates.iloc[0:0]
    if data.empty:
        return _empty(_figure(), title, "no finished operations in range (or no `bucket` column)")
    group = group or next((c for c in ("network", "channel_id", "address", "chain_selector") if c in data), None)
    parts = list(data.groupby(group, sort=True, observed=True)) if group else [("all operations", data)]
    if len(parts) > max_lines:  # the largest groups only: a panel per tiny group is noise
        parts = sorted(parts, key=lambda p: -p[1]["terminal"].sum())[:max_lines]
        title = f"{title} ({max_lines} largest of {data[group].nunique()} {group} groups)"
    parts = sorted(parts, key=lambda p: str(p[0]))
    ncols = 1 if len(parts) == 1 else 2 if len(parts) <= 4 else 3
    nrows = -(-len(parts) // ncols)
    fig = _figure(10, 1.2 + 2.3 * nrows) if len(parts) > 1 else _figure()
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False).ravel()
    width = _bucket_width(data["bucket"], bucket)
    any_partial = False
    top = 5.0  # percent: the scale the panels share, at least 0-5%
    for i, (name, part) in enumerate(parts):
        ax = axes[i]
        part = part.sort_values("bucket")
        partial = (
            partial_buckets(part["bucket"], width, period) if width is not None else part["bucket"] != part["bucket"]
        )
        whole, cut = part[~partial], part[partial]
        any_partial = any_partial or len(cut) > 0
        # the scale follows the rates (with room above), and the bands only of buckets with many finished
        # operations: the 95% band of a bucket of a few operations reaches 50-80% and would flatten every line of
        # 0-10% onto the axis; such a band runs off the top instead
        settled = whole[whole["terminal"] >= BAND_MIN_FINISHED] if "terminal" in whole else whole
        top = max(
            top,
            1.3 * float(np.nanmax(_percent(part["failure_rate"]), initial=0.0)),
            float(np.nanmax(_percent(settled["failure_rate_high"]), initial=0.0)),
        )
        colour = _group_colour(group, name, i)
        if len(whole):
            ax.fill_between(
                whole["bucket"],
                _percent(whole["failure_rate_low"]),
                _percent(whole["failure_rate_high"]),
                color=colour,
                alpha=0.25,
                linewidth=0,
            )
            ax.plot(whole["bucket"], _percent(whole["failure_rate"]), marker="o", markersize=3, color=colour)
            if len(whole) == 1:  # a band needs two buckets: one alone gets its interval as an error bar
                rate = _percent(whole["failure_rate"])
                ax.errorbar(
                    whole["bucket"],
                    rate,
                    yerr=[rate - _percent(whole["failure_rate_low"]), _percent(whole["failure_rate_high"]) - rate],
                    color=colour,
                    alpha=0.5,
                    capsize=4,
                    linestyle="none",
                )
        if len(cut):
            ax.plot(
                cut["bucket"],
                _percent(cut["failure_rate"]),
                linestyle="none",
                marker="o",
                markersize=5,
                markerfacecolor="white",
                markeredgecolor=colour,
            )
        n = int(part["terminal"].sum())
        ax.set_title(f"{name} (n={n:,})", fontsize="small")
        ax.grid(alpha=0.3)
        if i % ncols == 0:
            ax.set_ylabel("% failed")
    for k, ax in enumerate(axes[len(parts) :], start=len(parts)):
        ax.set_axis_off()
        if k >= ncols:  # the panel above an empty slot is the last of its column: it shows the times
            axes[k - ncols].tick_params(axis="x", labelbottom=True)
    for ax in axes[: len(parts)]:
        ax.tick_params(axis="x", labelrotation=30, labelsize="x-small")
    axes[0].set_ylim(0, top * 1.05)  # shared by every panel
    if width is not None:  # one bucket alone would otherwise get an axis spanning years
        first, last = data["bucket"].min(), data["bucket"].max()
        axes[0].set_xlim(first - width / 2, last + width / 2)
    note = (
        "line: failed % of finished relayed operations per bucket (UTC); band: 95% interval\n"
        f"the axis follows the rates; a band sets it only for buckets with {BAND_MIN_FINISHED}+ finished operations"
    )
    if any_partial:
        note += "; hollow: partial bucket, no band"
    fig.suptitle(title)
    fig.supxlabel(note, fontsize="small")
    return fig


def failure_reason_bars(
    reasons: pd.DataFrame, *, top: int = 15, title: str = "Most frequent failure reasons"
) -> Figure:
    """Horizontal bars of the most frequent raw failure reasons, coloured by taxonomy category.

    Arguments: ``reasons`` from :func:`toolkit.metrics.failure_reasons`; ``top`` bars at most. Returns the figure.
    """
    fig = _figure(10, 1.5 + 0.35 * min(top, max(len(reasons), 1)))
    if reasons.empty:
        return _empty(fig, title, "no failed or expired operations in range")
    ax = fig.add_subplot()
    totals = reasons.groupby(["category", "reason"], observed=True)["operations"].sum().reset_index()
    data = totals.sort_values("operations", ascending=False).head(top).iloc[::-1]
    colours = [_colour(_CATEGORY_COLOURS.get(str(c), 5)) for c in data["category"]]
    labels = [r if len(r) <= 60 else r[:57] + "..." for r in data["reason"].astype(str)]
    ax.barh(range(len(data)), data["operations"], color=colours)
    ax.set_yticks(range(len(data)), labels, fontsize="small")
    for category in _present(data["category"]):
        ax.barh([0], [0], color=_colour(_CATEGORY_COLOURS.get(str(category), 5)), label=str(category))
    ax.set_xlabel("operations")
    ax.set_ylabel("raw reason (status_reason)")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(title="category", fontsize="small", loc="lower right")
    return fig


# ---- finality ----------------------------------------------------------------------------------------------------


def finality_funnel(breakdown: pd.DataFrame, *, title: str = "How far operations get through finality") -> Figure:
    """Per network, the share of relayed operations that reached latest, safe and finalized confirmation.

    Arguments: ``breakdown`` from :func:`toolkit.metrics.finality_breakdown` (grouped by network). Networks where
    only the latest stage is active are marked. Returns the figure.
    """
    fig = _figure(10, 5.5)
    if breakdown.empty:
        return _empty(fig, title, "no relayed operations in range")
    ax = fig.add_subplot()
    label_col = next((c for c in ("network", "chain_selector", "channel_id") if c in breakdown), None)
    labels = breakdown[label_col].astype(str).tolist() if label_col else ["all"] * len(breakdown)
    labels = [f"{lab}\n(latest only)" if lo else lab for lab, lo in zip(labels, breakdown["latest_only"], strict=True)]
    x = np.arange(len(breakdown))
    stages = (("latest_share", "latest"), ("safe_share", "safe"), ("finalized_share", "finalized"))
    for i, (col, name) in enumerate(stages):
        ax.bar(x + (i - 1) * 0.27, breakdown[col] * 100, width=0.27, color=_colour(i), label=name)
    for xi, n in zip(x, breakdown["operations"], strict=True):
        ax.text(xi, 101, f"n={n:,}", ha="center", va="bottom", fontsize="x-small")
    ax.set_xticks(x, labels, rotation=20, ha="right", fontsize="small")
    ax.set_ylabel("relayed operations that reached the stage, %")
    ax.set_ylim(0, 110)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="confirmation", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))  # off the bars
    return fig


def finality_stage_times(times: pd.DataFrame, *, title: str = "Time to each finality stage") -> Figure:
    """Per network, box plots of the seconds from ``accepted`` to latest, safe and finalized confirmation.

    Arguments: ``times`` from :func:`toolkit.metrics.finality_times` (one row per operation), or its counts from
    :func:`toolkit.metrics.distributions.finality_time_counts` (``network``, ``time``, ``seconds``, ``count``: the
    same figure from a few rows per network). Returns the figure (log scale).
    """
    from ..metrics.distributions import grouped_box_stats

    fig = _figure(10, 5.5)
    columns = (("to_latest", "latest"), ("to_safe", "safe"), ("to_finalized", "finalized"))
    if times.empty:
        return _empty(fig, title, "no operation reached a finality stage in range")
    if "count" in times.columns:
        counts = times[times["count"] > 0]
    else:  # one row per operation, a column per time: the same counts
        long = [times[["network"]].assign(time=col, seconds=times[f"{col}_s"]) for col, _ in columns]
        counts = pd.concat(long, ignore_index=True).assign(count=1)
    ax = fig.add_subplot()
    counts = counts.assign(network=counts["network"].astype(str), time=counts["time"].astype(str))
    networks = sorted(times["network"].astype(str).unique())
    stats = grouped_box_stats(counts, ["network", "time"], lower=0.5)
    for i, (col, name) in enumerate(columns):
        positions = [k + (i - 1) * 0.27 for k in range(len(networks))]
        keep = [(p, stats[(n, col)]) for p, n in zip(positions, networks, strict=True) if (n, col) in stats]
        if keep:
            _boxes(ax, [b for _, b in keep], [p for p, _ in keep], 0.24, _colour(i))
        ax.plot([], [], color=_colour(i), linewidth=8, alpha=0.7, label=name)
    ax.set_xticks(range(len(networks)), networks, rotation=20, ha="right", fontsize="small")
    ax.set_yscale("log")
    ax.set_ylabel("seconds from accepted (log scale)")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="stage reached", fontsize="small")
    return fig


# ---- queries, stuck operations, proofs, watchers -----------------------------------------------------------------


def query_latency_bars(latency: pd.DataFrame, *, title: str = "Chain-query latency per stage") -> Figure:
    """Per network, the p50 (bar) and p90 (tick) seconds of each query stage of completed queries.

    Arguments: ``latency`` from :func:`toolkit.metrics.query_latency` (by network and outcome). Returns the figure.
    """
    fig = _figure()
    data = latency[latency["outcome"] == "completed"] if "outcome" in latency else latency
    if data.empty or "network" not in data:
        return _empty(fig, title, "no completed queries in range (group by network and outcome)")
    ax = fig.add_subplot()
    stages = ("accepted_to_sending", "sending_to_sent", "sent_to_terminal")
    x = np.arange(len(data))
    for i, stage in enumerate(stages):
        pos = x + (i - 1) * 0.27
        ax.bar(pos, data[f"{stage}_p50_s"], width=0.27, color=_colour(i), label=stage.replace("_", " "))
        ax.scatter(pos, data[f"{stage}_p90_s"], marker="_", s=200, color="black", zorder=3)
    ax.scatter([], [], marker="_", s=200, color="black", label="p90")
    ax.set_xticks(x, data["network"].astype(str), rotation=20, ha="right", fontsize="small")
    ax.set_ylabel("seconds (bar: p50)")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the bars, over no p90 mark
    return fig


def stuck_ages(stuck: pd.DataFrame, *, title: str = "Operations stuck in a status") -> Figure:
    """Each stuck operation's age against its threshold, per status (log scale).

    Arguments: ``stuck`` from :func:`toolkit.metrics.stuck_operations` (one row per operation). Returns the figure.
    """
    fig = _figure()
    if stuck.empty or "age_s" not in stuck:
        return _empty(fig, title, "no stuck operations")
    ax = fig.add_subplot()
    statuses = _present(stuck["status"])
    networks = sorted(stuck["network"].astype(str).unique())
    unit, size = unit_for(stuck["age_s"].tolist())  # the unit of the age column in every table
    rng = np.random.default_rng(0)
    for network in networks:
        sub = stuck[stuck["network"].astype(str) == network]
        xs = [statuses.index(s) + rng.uniform(-0.25, 0.25) for s in sub["status"]]
        colour = network_colour(network)
        # each operation's own threshold (they differ by network), joined to its age
        ax.vlines(xs, sub["threshold_s"] / size, sub["age_s"] / size, colors=[colour], alpha=0.35)
        ax.scatter(xs, sub["threshold_s"] / size, s=60, marker="_", color="black", linewidths=1.2)
        ax.scatter(xs, sub["age_s"] / size, s=18, color=colour, alpha=0.8, label=network)
    ax.scatter([], [], s=60, marker="_", color="black", label="its threshold")
    ax.set_xticks(range(len(statuses)), statuses, rotation=20, ha="right")
    ax.set_xlim(-0.6, len(statuses) - 0.4)
    ax.set_yscale("log")
    _plain_log_labels(ax)
    ax.set_ylabel(f"{_UNIT_WORDS[unit]} in the status")
    ax.set_title(f"{title} ({len(stuck):,})")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="network", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def _plain_log_labels(ax: Any) -> None:
    """Log-axis labels as plain numbers (``30``, ``0.5``), not ``3×10^1``: an axis within a decade or two reads
    at a glance."""
    from matplotlib.ticker import LogFormatter

    ax.yaxis.set_major_formatter(LogFormatter(labelOnlyBase=False))
    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def proof_coverage_bars(coverage: pd.DataFrame, *, title: str = "Events carrying the DON proofs they must") -> Figure:
    """Per event type, the share of events that must carry a proof and do (95% interval as error bars), and the
    share of their proofs with fewer signatures than the minimum.

    Arguments: ``coverage`` from :func:`toolkit.metrics.proof_coverage` (by type). Returns the figure.
    """
    fig = _figure()
    data = coverage[coverage["must_have_proof"] > 0] if "must_have_proof" in coverage else coverage.iloc[0:0]
    if data.empty:
        return _empty(fig, title, "no events that must carry proofs in range")
    ax = fig.add_subplot()
    label_col = next((c for c in ("type", "network", "channel_id", "status") if c in data), None)
    labels = data[label_col].astype(str).tolist() if label_col else ["all"]
    x = np.arange(len(data))
    cov = data["coverage"] * 100
    # bounds can round a hair past the estimate (coverage 1.0 with an upper bound of 0.9999...): never negative
    err = np.clip(np.vstack([cov - data["coverage_low"] * 100, data["coverage_high"] * 100 - cov]), 0, None)
    ax.bar(x - 0.2, cov, width=0.4, yerr=err, capsize=3, color=_colour(2), label="carry a proof")
    few = data["too_few_signatures"] / data["with_proof"].where(data["with_proof"] > 0) * 100
    ax.bar(
        x + 0.2,
        few.fillna(0),
        width=0.4,
        color=_colour(3),
        label=f"proofs with fewer than {int(data['min_signatures'].iloc[0])} signatures",
    )
    for xi, n in zip(x, data["must_have_proof"], strict=True):
        ax.text(xi, 101, f"n={n:,}", ha="center", va="bottom", fontsize="x-small")
    ax.set_xticks(x, labels)
    ax.set_ylabel("% of events that must carry a proof")
    ax.set_ylim(0, 110)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="center right")
    return fig


def watcher_activity_heatmap(activity: pd.DataFrame, *, title: str = "Observed contract events per watcher") -> Figure:
    """A heat map of ``watcher.event`` counts: one row per watcher, one column per time bucket.

    Arguments: ``activity`` from :func:`toolkit.metrics.watcher_activity`. Returns the figure.
    """
    fig = _figure(11, 5)
    if activity.empty:
        return _empty(fig, title, "no watcher events in range")
    ax = fig.add_subplot()
    label = (
        "name"
        if "name" in activity
        else next(c for c in ("watcher_id", "network", "channel_id", "chain_selector") if c in activity)
    )
    rows = activity[label].fillna(activity.get("watcher_id", activity[label])).astype(str)
    grid = activity.assign(_row=rows).pivot_table(
        index="_row", columns="bucket", values="events", aggfunc="sum", fill_value=0
    )
    image = ax.imshow(grid.to_numpy(), aspect="auto", interpolation="nearest", cmap="viridis")
    ax.set_yticks(range(len(grid.index)), grid.index, fontsize="x-small")
    step = max(len(grid.columns) // 8, 1)
    ticks = list(range(0, len(grid.columns), step))
    ax.set_xticks(
        ticks, [grid.columns[i].strftime("%m-%d %H:%M") for i in ticks], rotation=30, ha="right", fontsize="x-small"
    )
    ax.set_xlabel("bucket start (UTC)")
    ax.set_ylabel("watcher")
    fig.colorbar(image, ax=ax, label="events per bucket")
    ax.set_title(title)
    return fig


# ---- by metric name ----------------------------------------------------------------------------------------------


def _finality(warehouse: Any, **kwargs: Any) -> Figure:
    from .. import metrics

    return finality_funnel(metrics.finality_breakdown(warehouse, **kwargs))


def _simple(
    data: Callable[..., pd.DataFrame], draw: Callable[[pd.DataFrame], Figure], **defaults: Any
) -> Callable[..., Figure]:
    def make(warehouse: Any, **kwargs: Any) -> Figure:
        """Query the metric and draw it; returns the figure."""
        return draw(data(warehouse, **{**defaults, **kwargs}))

    return make


def _registry() -> dict[str, Callable[..., Figure]]:
    from .. import metrics as m
    from ..metrics.distributions import finality_time_counts, status_duration_counts  # counts, not every row

    return {
        "status-latency": _simple(status_duration_counts, latency_by_status),
        "failure-rates": _simple(m.failure_rates, failure_rate_over_time, bucket="1d"),
        "failure-reasons": _simple(m.failure_reasons, failure_reason_bars, top=None),
        "finality-breakdown": _finality,
        "finality-times": _simple(finality_time_counts, finality_stage_times),
        "query-latency": _simple(m.query_latency, query_latency_bars),
        "stuck-operations": _simple(m.stuck_operations, stuck_ages),
        "proof-coverage": _simple(m.proof_coverage, proof_coverage_bars),
        "watcher-activity": _simple(m.watcher_activity, watcher_activity_heatmap),
    }


#: Names :func:`figure_for` draws: every metric of :data:`toolkit.metrics.METRICS` but the watcher history, plus
#: ``finality-times``.
FIGURES: tuple[str, ...] = (
    "status-latency",
    "failure-rates",
    "failure-reasons",
    "finality-breakdown",
    "finality-times",
    "query-latency",
    "stuck-operations",
    "proof-coverage",
    "watcher-activity",
)


def figure_for(name: str, warehouse: str | os.PathLike[str] | Any = None, **filters: Any) -> Figure:
    """The figure of a metric by its ``chainops metrics`` name, drawn from the warehouse.

    Arguments: ``name`` one of :data:`FIGURES`; ``warehouse``; ``filters`` passed to the metric (``since``,
    ``channel``, ...). Returns the figure. Raises ``ValueError`` for an unknown name.
    """
    registry = _registry()
    if name not in registry:
        raise ValueError(f"no figure for {name!r}; choose from {list(FIGURES)}")
    return registry[name](warehouse, **filters)
