"""An ipywidgets dashboard over the metrics: filters for channel, network, time range and status that redraw the
latency, failure, finality and stuck-operation views.

>>> import toolkit as tk
>>> tk.dashboard("data/demo.duckdb")   # doctest: +SKIP

Each view is a PNG image widget (drawn by :mod:`toolkit.plots`, so it shows the same in JupyterLab, VS Code and
classic notebooks) above its table (HTML, every value escaped). The :class:`Dashboard` object keeps what it drew
last (:attr:`Dashboard.figures`, :attr:`Dashboard.tables`), so code and tests can drive the filters and check the
views. ipywidgets and matplotlib are imported inside the functions: ``import toolkit`` never loads them.
"""

from __future__ import annotations

import io
import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from . import metrics, plots, spec
from .report import html_table, interval_safe

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The views, in tab order: key -> tab title.
VIEWS: dict[str, str] = {
    "latency": "Latency per status",
    "failure": "Failure rates",
    "finality": "Finality stages",
    "stuck": "Stuck operations",
}
_TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "latency": ("network", "status", "entered", "n", "censored", "mean_s", "p50_s", "p90_s", "p99_s", "max_s"),
    "failure": (
        "network",
        "operations",
        "terminal",
        "failed",
        "expired",
        "cancelled",
        "failure_rate",
        "failure_rate_low",
        "failure_rate_high",
    ),
    "finality": (
        "network",
        "operations",
        "reached_latest",
        "reached_safe",
        "reached_finalized",
        "latest_share",
        "safe_share",
        "finalized_share",
        "latest_only",
        "to_latest_p50_s",
        "to_finalized_p50_s",
    ),
    "stuck": ("operation_id", "channel_id", "network", "status", "entered_at", "age_s", "threshold_s"),
}


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def _step(span: pd.Timedelta) -> pd.Timedelta:
    if span <= pd.Timedelta(days=2):
        return pd.Timedelta(hours=1)
    if span <= pd.Timedelta(days=14):
        return pd.Timedelta(hours=6)
    return pd.Timedelta(days=1)


class Dashboard:
    """The widgets and what they show. Build it with :func:`dashboard`; display it as the cell's last value.

    Attributes: ``channel``, ``network``, ``status`` (``SelectMultiple``: nothing selected means all), ``period``
    (a ``SelectionRangeSlider`` of UTC times), ``images`` and ``html`` per view, ``figures`` and ``tables`` per view
    as last drawn, ``redraws`` (how many times it redrew), and ``widget`` (the whole dashboard).
    """

    def __init__(self, warehouse: metrics.WarehouseLike = None, *, bucket: str | None = None) -> None:
        import ipywidgets as w

        self.warehouse = warehouse
        self.figures: dict[str, Figure] = {}
        self.tables: dict[str, pd.DataFrame] = {}
        self.redraws = 0
        self.error: str | None = None
        with metrics._open(warehouse) as wh:
            channels = wh.query("SELECT channel_id, coalesce(name, channel_id) AS name FROM channels ORDER BY name")
            networks = wh.query(
                "SELECT DISTINCT coalesce(n.name, o.chain_selector) AS name FROM operations o "
                "LEFT JOIN networks n ON n.chain_selector = o.chain_selector WHERE o.chain_selector IS NOT NULL "
                "ORDER BY name"
            )
            span = wh.query("SELECT min(created_at) AS first, max(created_at) AS last FROM operations")
            latest = metrics.latest_event_time(wh)
        first, last = span["first"].iloc[0], span["last"].iloc[0]
        if pd.isna(first):
            first = last = pd.Timestamp.now(tz="UTC")
        last = max(pd.Timestamp(last), latest) if latest is not None else pd.Timestamp(last)
        step = _step(last - first)
        start, end = pd.Timestamp(first).floor(step), pd.Timestamp(last).floor(step) + step
        times = list(pd.date_range(start, end, freq=step))
        self.bucket = bucket or ("6h" if end - start <= pd.Timedelta(days=3) else "1d")
        layout = w.Layout(width="auto")
        self.channel = w.SelectMultiple(
            options=[
                (f"{n} ({c})" if n != c else c, c)
                for c, n in zip(channels["channel_id"], channels["name"], strict=True)
            ],
            description="Channel",
            rows=4,
            layout=layout,
        )
        self.network = w.SelectMultiple(options=list(networks["name"]), description="Network", rows=4, layout=layout)
        self.status = w.SelectMultiple(
            options=list(spec.OPERATION_STATUSES), description="Status", rows=4, layout=layout
        )
        self.period = w.SelectionRangeSlider(
            options=[(t.strftime("%Y-%m-%d %H:%M"), t) for t in times],
            index=(0, len(times) - 1),
            description="UTC time",
            continuous_update=False,
            layout=w.Layout(width="95%"),
        )
        self.summary = w.HTML()
        self.images = {key: w.Image(format="png", layout=w.Layout(max_width="100%")) for key in VIEWS}
        self.html = {key: w.HTML() for key in VIEWS}
        tabs = w.Tab(children=[w.VBox([self.images[k], self.html[k]]) for k in VIEWS])
        for i, title in enumerate(VIEWS.values()):
            tabs.set_title(i, title)
        self.tabs = tabs
        note = w.HTML("<small>Nothing selected means all. Status filters the latency and stuck views.</small>")
        filters = w.HBox([self.channel, self.network, self.status])
        self.widget = w.VBox([filters, self.period, note, self.summary, tabs])
        for control in (self.channel, self.network, self.status, self.period):
            control.observe(self._on_change, names="value")
        self.redraw()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def _on_change(self, _change: dict[str, Any]) -> None:
        self.redraw()

    @property
    def filters(self) -> dict[str, Any]:
        """The current filters as metric arguments: channel, network, since, until (None for "all")."""
        since, until = self.period.value
        return {
            "channel": list(self.channel.value) or None,
            "network": list(self.network.value) or None,
            "since": since,
            "until": until,
        }

    def redraw(self) -> None:
        """Recompute the four views from the warehouse with the current filters, and redraw them."""
        f = self.filters
        statuses: Sequence[str] | None = list(self.status.value) or None
        try:
            with metrics._open(self.warehouse) as wh:
                latest = metrics.latest_event_time(wh)
                now = min(f["until"], latest) if latest is not None else f["until"]
                tables = {
                    "latency": metrics.status_latency(wh, by=["network", "status"], status=statuses, **f),
                    "failure": metrics.failure_rates(wh, by=["network"], **f),
                    "finality": metrics.finality_breakdown(wh, by=["network"], **f),
                    "stuck": metrics.stuck_operations(
                        wh, channel=f["channel"], network=f["network"], status=statuses, now=now
                    ),
                }
                durations = metrics.status_durations(wh, status=statuses, **f)
                over_time = metrics.failure_rates(wh, by=["network"], bucket=self.bucket, **f)
        except Exception as exc:  # shown in the dashboard, not raised into the widget callback
            self.error = f"{type(exc).__name__}: {exc}"
            import html

            self.summary.value = f'<b style="color:#a00">Could not redraw: {html.escape(self.error)}</b>'
            return
        self.error = None
        figures = {
            "latency": plots.latency_by_status(durations),
            "failure": plots.failure_rate_over_time(interval_safe(over_time, "failure_rate")),
            "finality": plots.finality_funnel(tables["finality"]),
            "stuck": plots.stuck_ages(tables["stuck"]),
        }
        for key in VIEWS:
            self.images[key].value = _png(figures[key])
            self.html[key].value = html_table(tables[key], _TABLE_COLUMNS[key], max_rows=30)
        self.figures, self.tables = figures, tables
        self.redraws += 1
        self.summary.value = self._summary_html(tables)

    def _summary_html(self, tables: dict[str, pd.DataFrame]) -> str:
        import html

        rates = tables["failure"]
        ops, terminal, failed = (int(rates[c].sum()) if len(rates) else 0 for c in ("operations", "terminal", "failed"))
        rate = f"{failed / terminal:.1%}" if terminal else "no finished operations"
        since, until = self.period.value
        return (
            f"<b>{ops:,}</b> operations created {html.escape(f'{since:%Y-%m-%d %H:%M}')} to "
            f"{html.escape(f'{until:%Y-%m-%d %H:%M}')} UTC; failure rate <b>{html.escape(rate)}</b>; "
            f"<b>{len(tables['stuck']):,}</b> stuck now."
        )


def dashboard(warehouse: metrics.WarehouseLike = None, *, bucket: str | None = None) -> Dashboard:
    """An ipywidgets dashboard over ``warehouse`` (a path or :class:`~toolkit.warehouse.Warehouse`; default: the
    configured one): channel, network, time-range and status filters redrawing latency, failure, finality and
    stuck-operation views.

    Arguments: ``warehouse``; ``bucket`` the failure-rate time bucket (default 6h for up to 3 days, else 1d).
    Returns the :class:`Dashboard` (display it as a cell's last value).
    """
    return Dashboard(warehouse, bucket=bucket)


class _CallableModule(types.ModuleType):
    """``toolkit.dashboard`` is both this module and the function: importing the module rebinds the package's
    attribute, so the module forwards calls to :func:`dashboard`."""

    def __call__(self, warehouse: metrics.WarehouseLike = None, **options: Any) -> Dashboard:
        return dashboard(warehouse, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["VIEWS", "Dashboard", "dashboard"]
