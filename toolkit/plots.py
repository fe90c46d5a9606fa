"""Matplotlib figures for the metrics: readable defaults, titles and units.

Each function takes a DataFrame from :mod:`toolkit.metrics` and returns a :class:`matplotlib.figure.Figure`.
matplotlib is imported inside the functions, so ``import toolkit`` never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _figure(width: float = 10.0, height: float = 5.0) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def latency_by_status(durations: pd.DataFrame, *, title: str = "Time spent in each operation status") -> Figure:
    """Box plots of seconds in status, one box per status and network (log scale: stages span seconds to hours).

    ``durations`` has ``network``, ``status`` and ``seconds`` columns (:func:`toolkit.metrics.status_durations`).
    """
    fig = _figure()
    ax = fig.add_subplot()
    data = durations.dropna(subset=["seconds"])
    if data.empty:
        ax.text(0.5, 0.5, "no completed status transitions in range", ha="center", va="center")
        ax.set_axis_off()
        ax.set_title(title)
        return fig
    statuses = [s for s in data["status"].cat.categories if (data["status"] == s).any()]
    networks = sorted(data["network"].astype(str).unique())
    width = 0.8 / max(len(networks), 1)
    cmap = __import__("matplotlib").colormaps["tab10"]
    for j, network in enumerate(networks):
        sub = data[data["network"].astype(str) == network]
        series = [sub.loc[sub["status"] == s, "seconds"].clip(lower=0.5).to_numpy() for s in statuses]
        positions = [i + (j - (len(networks) - 1) / 2) * width for i in range(len(statuses))]
        keep = [(p, v) for p, v in zip(positions, series, strict=True) if len(v)]
        if not keep:
            continue
        box = ax.boxplot([v for _, v in keep], positions=[p for p, _ in keep], widths=width * 0.9,
                         patch_artist=True, showfliers=False, manage_ticks=False)
        for patch in box["boxes"]:
            patch.set_facecolor(cmap(j % 10))
            patch.set_alpha(0.7)
        ax.plot([], [], color=cmap(j % 10), linewidth=8, alpha=0.7, label=network)
    ax.set_xticks(range(len(statuses)), statuses, rotation=20, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("seconds in status (log scale; sub-second shown as 0.5 s)")
    ax.set_xlabel("status (time until the next status)")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="network", fontsize="small", ncols=2)
    return fig
