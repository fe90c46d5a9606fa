"""Report export: one self-contained HTML file (figures embedded as PNG), or the metric tables as CSV/Parquet.

Every value that came from the service is escaped before it reaches the HTML.
"""

from __future__ import annotations

import base64
import html
import io
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from . import metrics, plots
from .warehouse import Warehouse

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; color: #222; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 1rem 0; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: right; }
th { background: #f2f2f2; } td.text { text-align: left; }
img { max-width: 100%; }
.meta { color: #666; }
"""


def figure_png(fig: Figure) -> str:
    """A figure as a base64 PNG ``data:`` URI."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def html_table(df: pd.DataFrame, *, float_format: str = "{:,.1f}") -> str:
    """A DataFrame as an HTML table with every cell escaped."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for row in df.itertuples(index=False):
        cells = []
        for value in row:
            if isinstance(value, float):
                text, cls = ("" if pd.isna(value) else float_format.format(value)), ""
            elif isinstance(value, int):
                text, cls = f"{value:,}", ""
            else:
                text, cls = ("" if value is None or value is pd.NA else str(value)), ' class="text"'
            cells.append(f"<td{cls}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def write_html_report(
    warehouse: Warehouse | str | os.PathLike[str], out: str | os.PathLike[str], *, title: str = "Chain operations"
) -> Path:
    """Write the HTML report (latency per status table and plot) to ``out``; returns the path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with metrics._open(warehouse) as wh:  # one connection for every section
        latency = metrics.status_latency(wh)
        durations = metrics.status_durations(wh)
        freshness = wh.arrow(
            "SELECT max(finished_at) AS t FROM sync_runs WHERE outcome IN ('ok', 'partial')"
        ).column("t")[0].as_py()
    figure = plots.latency_by_status(durations)
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    synced = freshness.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if freshness else "never"
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title><style>{_CSS}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p class="meta">Generated {generated}; warehouse last synced {synced}.</p>
<h2>Time spent in each status</h2>
<img alt="Seconds in each operation status, per network" src="{figure_png(figure)}">
{html_table(latency)}
</body></html>
"""
    out.write_text(page, encoding="utf-8")
    return out
