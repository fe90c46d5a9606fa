"""The ipywidgets dashboard over the metrics: filters for channel, network, time range and status that redraw every
declared view (a metric's ``view`` in :mod:`toolkit.metrics.declarations`: latency, failure, finality, stuck
operations, and any other declared). ``tk.dashboard(...)`` (:func:`toolkit.dashboard`) builds one.

>>> import toolkit as tk
>>> tk.dashboard("data/demo.duckdb")   # doctest: +SKIP

Each view is a PNG image widget (drawn by :mod:`toolkit.plots`, so it shows the same in JupyterLab, VS Code and
classic notebooks; none for a view declared with no figure of its own) above its table (HTML, every value
escaped, styled by its own CSS). Each list starts with an explicit "All" (selected at first); a static render of
the notebook (nbconvert, GitHub) shows a snapshot of the views as HTML and text instead of an empty widget. The
:class:`Dashboard` object keeps what it drew last (:attr:`Dashboard.figures`, :attr:`Dashboard.tables`), so code
and tests can drive the filters and check the views. ipywidgets and matplotlib are imported inside the functions:
``import toolkit`` never loads them.
"""

from __future__ import annotations

import base64
import html
import os
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .. import metrics, spec
from ..errors import ChainopsError
from ..metrics import declarations
from ..metrics.declare import Metric, View
from ..metrics.distributions import status_duration_counts
from ..times import Period
from . import figures as plots
from .report import TABLE_CSS, html_table, interval_safe
from .tables import format_time, hide_rows, plural
from .values import format_percent

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class _Declared(Mapping[str, Any]):
    """One fact of every declared view, key -> value, in tab order, read from the declarations at each use (so a
    view declared after import, or in a test, is on the dashboards too)."""

    def __init__(self, fact: Callable[[Metric, View], Any]) -> None:
        self._fact = fact

    def _now(self) -> dict[str, Any]:
        return {v.key: self._fact(m, v) for m, v in declarations.views()}

    def __getitem__(self, key: str) -> Any:
        return self._now()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._now())

    def __len__(self) -> int:
        return len(self._now())

    def __repr__(self) -> str:
        return repr(self._now())


#: The views, in tab order: key -> tab title (each declared metric's ``view``, :mod:`toolkit.metrics.declarations`).
VIEWS: Mapping[str, str] = _Declared(lambda m, v: v.title)
#: The metric behind each view: its default columns are the view's table.
VIEW_METRICS: Mapping[str, str] = _Declared(lambda m, v: m.name)
#: What a view without rows says, in place of an empty figure.
EMPTY: Mapping[str, str] = _Declared(lambda m, v: v.empty)
_TABLE_COLUMNS: Mapping[str, tuple[str, ...]] = _Declared(lambda m, v: m.default)


def status_note() -> str:
    """Which views the status filter narrows (those whose metric takes ``status``), as a sentence."""
    titles = [v.title for m, v in declarations.views() if "status" in m.filters]
    return f"Status filters these views: {', '.join(titles)}." if titles else "Status filters no view."


#: The views drawn as a figure above their table (see :func:`compute_views`); any other declared view shows its table
#: alone.
FIGURED: tuple[str, ...] = ("latency", "failure", "finality", "stuck")
#: Table rows shown before the rest is folded away (none is left out).
_MAX_ROWS = 30
#: Filter settings whose drawn views a dashboard keeps, so that going back to one (All again) redraws at once.
_KEPT_VIEWS = 8


class _All:
    """The "All" entry of a filter list: selected (or nothing selected) means no filter on that column."""

    def __repr__(self) -> str:
        return "ALL"


#: The value of each filter's "All" option.
ALL = _All()


def file_identity(warehouse: str | Path) -> tuple[tuple[int, ...], ...] | None:
    """What changes whenever the warehouse file does, or is replaced by another: the device, inode, size,
    modification and change times of the file and of its write-ahead log (when there is one); None when the file
    cannot be looked at (gone, say), whose pages are then never reused."""
    stamp = []
    for file in (str(warehouse), f"{warehouse}.wal"):
        try:
            st = os.stat(file)
        except FileNotFoundError:
            if file.endswith(".wal"):
                continue
            return None
        except OSError:
            return None
        stamp.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(stamp)


def data_stamp(warehouse: metrics.WarehouseLike) -> tuple[tuple[int, ...], ...] | None:
    """The :func:`file_identity` of ``warehouse`` (a path or an open warehouse); None when it is not a file on disk
    (an engine, the configured default), whose views are then never reused."""
    path = getattr(warehouse, "path", None) if not isinstance(warehouse, (str, os.PathLike)) else warehouse
    return None if path is None else file_identity(path)


def summary_sentence(tables: Mapping[str, pd.DataFrame]) -> str:
    """One English sentence (plain text) on what the views computed by :func:`compute_views` show: the operations
    created in the period, their failure rate (or why there is none), the stuck operations, and where the data
    ends. Both dashboards say it, so one value reads the same in each."""
    rates = tables["failure"]
    ops, terminal, failed = (int(rates[c].sum()) if len(rates) else 0 for c in ("operations", "terminal", "failed"))
    found = Period.of(rates.attrs)  # the period the metric read, as an object
    since, until, as_of = found.start, found.end, found.as_of
    start = f"{format_time(since, seconds=False)} UTC" if since is not None else "the first operation"
    end = f"{format_time(until, seconds=False)} UTC" if until is not None else "the newest event"
    period = f"from {start} to {end}"
    created = f"{plural(ops, 'operation')} created {period}" if ops else f"No operation was created {period}"
    if as_of is None:
        ends = "the warehouse holds no events yet"
    else:
        ends = f"the data ends {format_time(as_of, seconds=False)} UTC"
        if since is not None and since > as_of:
            ends += ", before this period starts: choose an earlier one"
    if terminal:
        rate = f"failure rate {format_percent(failed / terminal)}: {failed:,} failed of {terminal:,} finished relayed "
        rate += "operation" if terminal == 1 else "operations"
    elif ops:
        rate = "none has finished yet, so there is no failure rate"
    else:
        rate = "there is no failure rate to show"
    stuck_at = min(until, as_of) if until is not None and as_of is not None else as_of  # as compute_views counts
    stuck = plural(len(tables["stuck"]), "operation") + " stuck"
    stuck += f" as of {format_time(stuck_at, seconds=False)} UTC" if stuck_at is not None else ""
    return f"{created} ({ends}); {rate}; {stuck}."


def _step(span: pd.Timedelta) -> pd.Timedelta:
    if span <= pd.Timedelta(days=2):
        return pd.Timedelta(hours=1)
    if span <= pd.Timedelta(days=14):
        return pd.Timedelta(hours=6)
    return pd.Timedelta(days=1)


def _declared_table(wh: Any, metric: Metric, where: metrics.Filters, statuses: Sequence[str] | None) -> pd.DataFrame:
    """A declared view's table: its metric's public function (``tk.metrics.<function>``) with the dashboard's filters
    that the metric takes, grouped by network when it can be."""
    takes = metric.filters
    kept = metrics.Filters(
        channel=where.channel if "channel" in takes else None,
        network=where.network if "network" in takes else None,
        status=tuple(statuses) if statuses and "status" in takes else None,
        since=where.since if "since" in takes else None,
        until=where.until if "until" in takes else None,
        period=where.period if "since" in takes and "until" in takes else None,
    )
    extra: dict[str, Any] = {"by": ["network"]} if "network" in metric.by else {}
    return getattr(metrics, metric.function)(wh, where=kept, **extra)


def compute_views(
    warehouse: metrics.WarehouseLike,
    filters: dict[str, Any],
    statuses: Sequence[str] | None,
    bucket: str,
    *,
    draw: bool = True,
    tables: dict[str, pd.DataFrame] | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, Figure]]:
    """Every declared view's table, and the figures of those drawn as one (:data:`FIGURED`; ``draw=False``: tables
    only), for ``filters`` (channel, network, since, until) and ``statuses``: what the widget dashboard and the
    dashboard page (:mod:`toolkit.presentation.dashboard_page`) show. A view declared with no figure of its own gets
    its metric's result with the filters it takes (by network when it groups by it). ``tables`` computed before for
    the same filters are drawn without computing them again. Raises what the metrics raise (an unknown filter value,
    a bad period)."""
    f = filters
    declared = dict((v.key, m) for m, v in declarations.views())
    # an empty period is said once, by the dashboards' own sentence, not warned by each metric on the server's
    # stderr or under a notebook's cell
    with warnings.catch_warnings(), metrics._open(warehouse) as wh:
        warnings.simplefilter("ignore", metrics.EmptyPeriodWarning)
        latest = metrics.latest_event_time(wh)
        # the filters and the period parsed once (the page's filters are text, "2026-11-20" or "7d"; the widget's
        # times) and given to every metric as one Filters
        where = metrics.Filters.of(**{k: v for k, v in f.items() if v is not None})
        start, until = where.since, where.until
        now = min(until, latest) if latest is not None and until is not None else (latest or until)
        if not tables:
            tables = {
                "latency": metrics.status_latency(wh, by=["network", "status"], status=statuses, where=where),
                "failure": metrics.failure_rates(wh, by=["network"], where=where),
                "finality": metrics.finality_breakdown(wh, by=["network"], where=where),
                "stuck": metrics.stuck_operations(
                    wh, channel=f["channel"], network=f["network"], status=statuses, now=now
                ),
            }
            for key, metric in declared.items():
                if key not in tables:
                    tables[key] = _declared_table(wh, metric, where, statuses)
        if not draw:
            return tables, {}
        durations = status_duration_counts(wh, status=statuses, where=where)  # counts, not a row per transition
        over_time = metrics.failure_rates(wh, by=["network"], bucket=bucket, where=where)
    figures = {
        "latency": plots.latency_by_status(durations),
        "failure": plots.failure_rate_over_time(
            interval_safe(over_time, "failure_rate"),
            group="network",
            bucket=bucket,
            period=(start, now) if start is not None and now is not None else None,
            title="Failure rate over time, per network",
        ),
        "finality": plots.finality_funnel(tables["finality"]),
        "stuck": plots.stuck_ages(tables["stuck"]),
    }
    return tables, figures


class Dashboard:
    """The widgets and what they show. Build it with :func:`dashboard`; display it as the cell's last value.

    Attributes: ``channel``, ``network``, ``status`` (``SelectMultiple`` lists whose first option is "All",
    :data:`ALL`; it, or nothing, selected means all), ``period`` (a ``SelectionRangeSlider`` of UTC times, its
    range written out in full by ``period_label``), ``images`` and ``html`` per view, ``figures`` and ``tables``
    per view as last drawn, ``redraws`` (how many times it redrew), and ``widget`` (the whole dashboard).
    :meth:`reset` puts every filter back to "All"; the views of the last few filter settings are kept while the
    warehouse file is unchanged (:meth:`redraw`).
    """

    def __init__(self, warehouse: metrics.WarehouseLike = None, *, bucket: str | None = None) -> None:
        try:
            import ipywidgets as w
        except ImportError:
            raise ChainopsError(
                "the dashboard needs ipywidgets, which the core install leaves out: "
                "pip install 'chainops-toolkit[notebook]'"
            ) from None

        self.warehouse = warehouse
        self.figures: dict[str, Figure] = {}
        self.tables: dict[str, pd.DataFrame] = {}
        self.redraws = 0
        self.error: str | None = None
        # filters (and the warehouse file's stamp) -> the tables, figures and PNGs drawn for them
        self._kept: OrderedDict[tuple[Any, ...], tuple[dict, dict, dict[str, bytes]]] = OrderedDict()
        self._holding = False
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
        everything = [("All", ALL)]
        self.channel = w.SelectMultiple(
            options=everything
            + [
                (f"{n} ({c})" if n != c else c, c)
                for c, n in zip(channels["channel_id"], channels["name"], strict=True)
            ],
            value=(ALL,),
            description="Channel",
            rows=5,
            layout=layout,
        )
        self.network = w.SelectMultiple(
            options=everything + [(n, n) for n in networks["name"]],
            value=(ALL,),
            description="Network",
            rows=5,
            layout=layout,
        )
        self.status = w.SelectMultiple(
            options=everything + [(s, s) for s in spec.OPERATION_STATUSES],
            value=(ALL,),
            description="Status",
            rows=5,
            layout=layout,
        )
        # the slider's own readout sits in a fixed-width box that clips "2026-11-20 00:00 – 2026-11-23 00:00":
        # the range is written out beside it instead
        self.period = w.SelectionRangeSlider(
            options=[(t.strftime("%Y-%m-%d %H:%M"), t) for t in times],
            index=(0, len(times) - 1),
            description="UTC time",
            continuous_update=False,
            readout=False,
            layout=w.Layout(flex="1 1 auto", min_width="200px"),
        )
        self.period_label = w.HTML(layout=w.Layout(flex="0 0 auto"))
        self.period_label.add_class("chainops-period")
        self.summary = w.HTML()
        self.views = dict(VIEWS)  # the declared views as the dashboard is built: its tabs
        self.images = {key: w.Image(format="png", layout=w.Layout(max_width="100%")) for key in self.views}
        self.html = {key: w.HTML() for key in self.views}
        tabs = w.Tab(children=[w.VBox([self.images[k], self.html[k]]) for k in self.views])
        for i, title in enumerate(self.views.values()):
            tabs.set_title(i, title)
        self.tabs = tabs
        note = w.HTML(
            "<small>All (or nothing) selected means every value; click one value to see only it, ctrl/cmd-click or "
            f"shift-click to pick several. {html.escape(status_note())}</small>"
        )
        filters = w.HBox([self.channel, self.network, self.status])
        period = w.HBox([self.period, self.period_label], layout=w.Layout(width="100%"))
        self.widget = w.VBox([filters, period, note, self.summary, tabs])
        self._show_period()
        for control in (self.channel, self.network, self.status, self.period):
            control.observe(self._on_change, names="value")
        self.redraw()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # the live widget for Jupyter, and a snapshot for renderers without the widget's state (nbconvert, GitHub)
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = self.to_text()
        bundle["text/html"] = self.to_html()
        return bundle

    def _on_change(self, _change: dict[str, Any]) -> None:
        if self._holding:
            return
        if _change.get("owner") is self.period:
            self._show_period()
        self.redraw()

    def reset(self) -> None:
        """Every filter back to "All" and the period to the whole range, with one redraw (not one per filter)."""
        self._holding = True
        try:
            for control in (self.channel, self.network, self.status):
                control.value = (ALL,)
            self.period.index = (0, len(self.period.options) - 1)
        finally:
            self._holding = False
        self._show_period()
        self.redraw()

    def _show_period(self) -> None:
        since, until = self.period.value
        self.period_label.value = f"<b>{since:%Y-%m-%d %H:%M}</b> to <b>{until:%Y-%m-%d %H:%M}</b> UTC"

    @staticmethod
    def _chosen(values: Sequence[Any]) -> list[Any] | None:
        picked = [v for v in values if v is not ALL]
        return None if not picked or len(picked) < len(values) else picked

    @property
    def filters(self) -> dict[str, Any]:
        """The current filters as metric arguments: channel, network, since, until (None for "all": "All" or
        nothing selected)."""
        since, until = self.period.value
        return {
            "channel": self._chosen(self.channel.value),
            "network": self._chosen(self.network.value),
            "since": since,
            "until": until,
        }

    def redraw(self) -> None:
        """Recompute the declared views from the warehouse with the current filters, and redraw them.

        The views of the last few filter settings are kept while the warehouse file is unchanged (its
        :func:`data_stamp`): going back to one, such as "All" after a look at one network, shows them again at once.
        """
        f = self.filters
        statuses: Sequence[str] | None = self._chosen(self.status.value)
        stamp = data_stamp(self.warehouse)
        chosen = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in f.items())
        setting = (stamp, chosen, statuses and tuple(statuses))
        kept = self._kept.get(setting) if stamp is not None else None
        try:
            tables, figures, pngs = kept or self._draw(f, statuses)
        except Exception as exc:  # shown in the dashboard, not raised into the widget callback
            self.error = f"{type(exc).__name__}: {exc}"
            self.summary.value = f'<b style="color:#a00">Could not redraw: {html.escape(self.error)}</b>'
            return
        if stamp is not None:
            self._kept[setting] = (tables, figures, pngs)
            self._kept.move_to_end(setting)
            while len(self._kept) > _KEPT_VIEWS:
                self._kept.popitem(last=False)
        self.error = None
        for key in self.views:
            if tables[key].empty:  # said in text, as the dashboard page says it: an empty figure tells nothing
                self.images[key].value = b""
                self.images[key].layout.display = "none"
                self.html[key].value = f'<p class="chainops-empty">{html.escape(EMPTY[key])}</p>'
                continue
            self.images[key].value = pngs.get(key, b"")  # a view with no figure of its own: its table alone
            self.images[key].layout.display = None if key in pngs else "none"
            rows, _ = hide_rows(tables[key], VIEW_METRICS[key])  # final statuses carry no time in them
            shown = html_table(rows, _TABLE_COLUMNS[key], max_rows=_MAX_ROWS, metric=VIEW_METRICS[key])
            self.html[key].value = f"<style>{TABLE_CSS}</style>{shown}"
        self.figures, self.tables = figures, tables
        self.redraws += 1
        self.summary.value = html.escape(summary_sentence(tables))

    def _draw(
        self, f: dict[str, Any], statuses: Sequence[str] | None
    ) -> tuple[dict[str, pd.DataFrame], dict[str, Figure], dict[str, bytes]]:
        tables, figures = compute_views(self.warehouse, f, statuses, self.bucket)
        return tables, figures, {key: plots.png_bytes(fig) for key, fig in figures.items() if not tables[key].empty}

    def to_text(self) -> str:
        """What the dashboard shows, as plain text: filters, summary and each view's table (a static fallback)."""
        if self.error is not None:
            return f"Dashboard: could not redraw: {self.error}"
        since, until = self.period.value
        lines = [
            f"Dashboard over {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M} UTC "
            f"(channel: {self._filter_text(self.channel.value)}; network: {self._filter_text(self.network.value)}; "
            f"status: {self._filter_text(self.status.value)}). Run the notebook in Jupyter to change the filters.",
            html.unescape(self.summary.value),
        ]
        from .report import table

        for key, title in self.views.items():
            df = self.tables.get(key, pd.DataFrame())
            shown = EMPTY[key] if df.empty else repr(table(df, _TABLE_COLUMNS[key], max_rows=_MAX_ROWS))
            lines += ["", f"{title}:", shown]
        return "\n".join(lines)

    def to_html(self) -> str:
        """A static snapshot of the dashboard: summary, then each view's figure (PNG) and table."""
        parts = [
            f'<style>{TABLE_CSS}</style><div class="chainops-dashboard">',
            f"<p>{html.escape(self.to_text().splitlines()[0])}</p>",
            f"<p>{self.summary.value}</p>",
        ]
        for key, title in self.views.items():
            parts.append(f"<h4>{html.escape(title)}</h4>")
            image = bytes(self.images[key].value or b"")
            if image:
                uri = "data:image/png;base64," + base64.b64encode(image).decode("ascii")
                parts.append(f'<img alt="{html.escape(title)}" style="max-width:100%" src="{uri}">')
            parts.append(self.html[key].value)
        return "".join(parts) + "</div>"

    def _filter_text(self, values: Sequence[Any]) -> str:
        chosen = self._chosen(values)
        return "all" if chosen is None else ", ".join(str(v) for v in chosen)


def dashboard(warehouse: metrics.WarehouseLike = None, *, bucket: str | None = None) -> Dashboard:
    """An ipywidgets dashboard over ``warehouse`` (a path or :class:`~toolkit.warehouse.Warehouse`; default: the
    configured one): channel, network, time-range and status filters redrawing latency, failure, finality and
    stuck-operation views.

    Arguments: ``warehouse``; ``bucket`` the failure-rate time bucket (default 6h for up to 3 days, else 1d).
    Returns the :class:`Dashboard` (display it as a cell's last value).
    """
    return Dashboard(warehouse, bucket=bucket)


__all__ = [
    "ALL",
    "EMPTY",
    "FIGURED",
    "VIEWS",
    "VIEW_METRICS",
    "Dashboard",
    "compute_views",
    "dashboard",
    "data_stamp",
    "file_identity",
    "summary_sentence",
]
