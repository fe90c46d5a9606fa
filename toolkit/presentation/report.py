"""Scheduled reports: one self-contained HTML file (figures embedded as PNG), or the metric tables as CSV/Parquet.

:func:`build_report` computes every metric table of a period ``[since, until)``, the previous period of the same
length (for the failure-rate change), the sync freshness from ``sync_runs``, a short list of findings and the
summary values that ``--fail-on`` thresholds test (:data:`SUMMARY_VALUES`). :meth:`Report.write` writes it as
HTML, or as one CSV/Parquet file per table in a directory. Writing is idempotent: the same warehouse and period
give the same bytes, and each file is replaced atomically.

Every value that came from the service (channel names, status reasons, network names, ids) is escaped before it
reaches the HTML. Thresholds are parsed by a regular expression, never evaluated.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import metrics
from ..atomic import atomic_dir, atomic_file, check_output_place
from ..column_kinds import hours_stem, kind_by_name
from ..metrics import proofs as proof_metrics
from ..metrics.common import with_channel_names
from ..metrics.coverage import NotHeldError, coverage_of
from ..metrics.distributions import status_duration_counts
from ..metrics.stats import difference_interval, two_proportion_p
from ..registry import ReportTable, report_tables
from ..times import now_utc, parse_period
from ..warehouse import Warehouse
from .figures import png_bytes
from .files import write_table
from .safe import frame_for_terminal
from .tables import (
    TABLE_CSS,
    Display,
    clean_for_terminal,
    format_duration,
    format_percent,
    hide_rows,
    plural,
    present,
    shorten,
    to_html,
)
from .values import format_count, format_significant, unit_named

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = ("html", "csv", "parquet")

#: The values a ``--fail-on`` threshold may test, with what each means.
SUMMARY_VALUES: dict[str, str] = {
    "operations": "operations created in the period",
    "terminal": "of those, relayed operations that reached an end",
    "failure_rate": (
        "failed / relayed operations created in the period, the ones still in flight estimated (docs/metrics.md)"
    ),
    "expiry_rate": "expired / relayed operations created in the period, the ones still in flight estimated",
    "cancel_rate": "cancelled / relayed operations created in the period, the ones still in flight estimated",
    "previous_failure_rate": "the failure rate of the previous period of equal length",
    "failure_rate_change": (
        "failure_rate - previous_failure_rate (NaN when either is unknown); a --fail-on threshold on it breaches "
        "only when its whole 95% interval lies past the limit (> or >=: the low end; < or <=: the high end)"
    ),
    "failure_rate_change_low": "low end of the change's 95% interval (Newcombe's hybrid score interval)",
    "failure_rate_change_high": "high end of the change's 95% interval (Newcombe's hybrid score interval)",
    "failure_rate_change_p": (
        "two-sided p-value of the change (pooled two-proportion z-test on the finished relayed operations)"
    ),
    "worst_failure_rate": (
        "the failure rate of the worst network: among networks with at least 20 operations, the highest lower "
        "bound of the 95% interval"
    ),
    "stuck": "operations stuck in a status at the end of the period",
    "overdue_queries": "chain queries past their expires_at with no terminal status, as of the newest event",
    "reorgs": "moves back from a finality stage to broadcasting or earlier, operations created in the period",
    "query_failure_rate": "failed / chain queries created in the period, the ones in flight estimated",
    "query_expiry_rate": "expired / chain queries created in the period, the ones in flight estimated",
    "proof_coverage": "share of the events that must carry a DON proof and do",
    "proof_verified": "share of the events that must carry a DON proof whose proof chainops verify verified "
    "(not verified yet counts as not verified)",
    "proof_invalid": "events that must carry a DON proof whose proof chainops verify found invalid",
    "slowest_p90_s": "the highest p90 seconds spent in one status on one network (rows with n >= 10)",
    "sync_age_h": "hours from the last successful sync to the end of the period when given, else to now (infinite "
    "when none succeeded)",
}

#: Summary values with a 95% interval (``<name>_low``/``<name>_high``) that a threshold judges by the interval.
INTERVAL_VALUES: frozenset[str] = frozenset({"failure_rate_change"})
#: Headlines use only groups at least this large: operations for a network's failure rate, ``n`` for a p90.
HEADLINE_MIN_OPERATIONS = 20
HEADLINE_MIN_N_P90 = 10

_THRESHOLD_RE = re.compile(
    r"^\s*([a-z_][a-z0-9_]*)\s*(>=|<=|==|!=|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)"
    r"\s*(%?)\s*$",
    re.I,
)
_COMPARE = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


@dataclass(frozen=True)
class Threshold:
    """A ``--fail-on`` condition such as ``failure_rate>0.05``: breached when ``value OP limit`` holds."""

    name: str
    op: str
    limit: float

    def __str__(self) -> str:
        return f"{self.name}{self.op}{self.limit:g}"

    def breached(self, summary: Mapping[str, float]) -> bool:
        """Whether the condition holds for ``summary`` (an unknown value, NaN, never breaches).

        A value with an interval (:data:`INTERVAL_VALUES`, the failure-rate change) breaches an ordering only
        when the whole interval lies past the limit: ``>``/``>=`` test its low end, ``<``/``<=`` its high end, so
        a change that may be noise never alerts.
        """
        value = summary.get(self.name)
        if self.name in INTERVAL_VALUES and self.op in (">", ">=", "<", "<="):
            value = summary.get(f"{self.name}_{'low' if self.op.startswith('>') else 'high'}")
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return False
        return bool(_COMPARE[self.op](float(value), self.limit))


def parse_threshold(text: str) -> Threshold:
    """Parse ``NAME OP NUMBER`` (OP one of ``> >= < <= == !=``; a trailing ``%`` divides by 100), without eval.

    Arguments: ``text``. Returns the :class:`Threshold`. Raises ``ValueError`` naming the accepted values.
    """
    m = _THRESHOLD_RE.match(text)
    if not m:
        raise ValueError(f"not a threshold: {text!r}; write NAME OP NUMBER, e.g. 'failure_rate>0.05' or 'stuck>0'")
    name, op, number, percent = m.group(1).lower(), m.group(2), float(m.group(3)), m.group(4)
    if name not in SUMMARY_VALUES:
        from ..metrics.declare import nearest

        close = nearest(name, SUMMARY_VALUES)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise ValueError(f"unknown value {name!r} in {text!r}{hint}; choose from {', '.join(SUMMARY_VALUES)}")
    return Threshold(name, op, number / 100 if percent else number)


# ---- building ----------------------------------------------------------------------------------------------------


@dataclass(repr=False)
class Report:
    """Everything a report shows: the period, freshness, metric tables, summary values and findings."""

    title: str
    since: pd.Timestamp
    until: pd.Timestamp
    previous_since: pd.Timestamp
    synced_at: pd.Timestamp | None
    last_run: dict[str, Any] | None
    tables: dict[str, pd.DataFrame]
    summary: dict[str, float]
    findings: list[str]
    #: The seconds in status of the period's ended transitions as counts (network, status, seconds, count:
    #: :func:`toolkit.metrics.distributions.status_duration_counts`), what the latency figure draws.
    durations: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    rates_over_time: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    activity: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    thresholds: list[Threshold] = field(default_factory=list)
    #: The failure rate's time bucket, and where the data ends (the end of the period or the newest event, the
    #: earlier): a bucket past it is partial.
    bucket: str = "1d"
    data_until: pd.Timestamp | None = None
    #: What the warehouse holds (:meth:`toolkit.warehouse.coverage.Coverage.to_attrs`), and what the report left
    #: out or clipped because of it (the period, metrics whose event types are not held).
    coverage: dict[str, Any] | None = None
    coverage_notes: list[str] = field(default_factory=list)
    #: The time the data is as of (the newest event), and whether the period's end was counted from it (no
    #: ``until`` given) rather than given.
    as_of: pd.Timestamp | None = None
    until_from_data: bool = False

    @property
    def breaches(self) -> list[Threshold]:
        """The thresholds that are breached."""
        return [t for t in self.thresholds if t.breached(self.summary)]

    def to_html(self, *, figures: bool = True) -> str:
        """The report as one self-contained HTML page (figures as PNG ``data:`` URIs unless ``figures=False``)."""
        return _render_html(self, figures=figures)

    def __repr__(self) -> str:
        return (
            f"Report({self.title!r}, {self.since:%Y-%m-%d %H:%M} to {self.until:%Y-%m-%d %H:%M} UTC, "
            f"{len(self.tables)} tables, {len(self.findings)} findings, {len(self.breaches)} thresholds breached)"
        )

    def _repr_html_(self) -> str:
        return _render_html(self, figures=False, full_page=False)

    def write(self, out: str | os.PathLike[str], fmt: str = "html") -> list[Path]:
        """Write the report: ``html`` to the file ``out``; ``csv``/``parquet`` one file per table (and
        ``summary``) into the directory ``out``. Returns the paths written."""
        out = Path(out)
        if fmt == "html":
            out.parent.mkdir(parents=True, exist_ok=True)
            page = self.to_html().encode("utf-8")
            with atomic_file(out) as tmp:
                tmp.write_bytes(page)
            return [out]
        if fmt not in FORMATS:
            raise ValueError(f"unknown report format {fmt!r}; choose from {FORMATS}")
        frames = {**self.tables, "summary": self.summary_frame()}
        # every file is written into a staging directory first: a failure leaves the old files, or no directory
        with atomic_dir(out) as staging:
            for name, df in frames.items():
                path = staging / f"{name}.{fmt}"
                write_table(df, path, fmt)  # the one writer of data files (toolkit.presentation.files)
        return [out / f"{name}.{fmt}" for name in frames]

    def summary_frame(self) -> pd.DataFrame:
        """The summary values as a (name, value, meaning) table, with the period."""
        rows = [
            ("since", self.since.isoformat(), "start of the period"),
            ("until", self.until.isoformat(), "end of the period (exclusive)"),
            ("as_of", "" if self.as_of is None else self.as_of.isoformat(), "the newest event: the data's as-of time"),
            ("synced_at", "" if self.synced_at is None else self.synced_at.isoformat(), "the last sync that ended ok"),
        ]
        rows += [(k, _plain(v), SUMMARY_VALUES[k]) for k, v in self.summary.items()]
        return pd.DataFrame(rows, columns=["name", "value", "meaning"]).astype({"value": str})


def _plain(value: float) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else repr(float(value))


def _period(
    since: metrics.TimeLike, until: metrics.TimeLike, as_of: pd.Timestamp | None = None
) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The report's period: ``until`` defaults to the data's as-of time ``as_of`` (the newest event; the minute
    after it, so that it is inside the period), else now (to the minute); ``since`` to 7 days before ``until``."""
    default_end = (as_of + pd.Timedelta(minutes=1)).floor("min") if as_of is not None else now_utc().floor("min")
    start, end = parse_period(since, until if until is not None else default_end)
    assert end is not None
    if start is None:
        start = end - pd.Timedelta(days=7)
    return start, end


def _freshness(wh: Warehouse) -> tuple[pd.Timestamp | None, dict[str, Any] | None]:
    ok = wh.query("SELECT max(finished_at) AS t FROM sync_runs WHERE outcome IN ('ok', 'partial')")["t"]
    synced = None if ok.empty or pd.isna(ok.iloc[0]) else pd.Timestamp(ok.iloc[0]).tz_convert("UTC")
    last = wh.query(
        "SELECT started_at, finished_at, outcome, message FROM sync_runs ORDER BY started_at DESC NULLS LAST LIMIT 1"
    )
    return synced, (last.iloc[0].to_dict() if len(last) else None)


def _rate_row(df: pd.DataFrame) -> pd.Series | None:
    return df.iloc[0] if len(df) else None


def _value(row: pd.Series | None, col: str) -> float:
    if row is None or col not in row or pd.isna(row[col]):
        return float("nan")
    return float(row[col])


def build_report(
    warehouse: metrics.WarehouseLike = None,
    *,
    since: metrics.TimeLike = "7d",
    until: metrics.TimeLike = None,
    title: str = "Chain operations",
    thresholds: Sequence[Threshold | str] = (),
) -> Report:
    """Compute the report of the period ``[since, until)`` (default: the last 7 days up to the data's as-of time,
    the newest event in the warehouse, so that a warehouse not synced lately still shows its last week).

    Arguments: ``warehouse``; ``since``/``until`` as datetimes, ISO strings or ages (``7d``, counted back from
    ``until``); ``title``; ``thresholds`` (:class:`Threshold` or ``--fail-on`` text) to judge. ``sync_age_h`` is
    measured to ``until`` when given, else to now. Returns the :class:`Report`.
    """
    checks = [t if isinstance(t, Threshold) else parse_threshold(t) for t in thresholds]
    with metrics._open(warehouse) as wh:
        latest = metrics.latest_event_time(wh)
        start, end = _period(since, until, latest)
        clock = end if until is not None else now_utc()
        # the period and event types the warehouse holds: the report covers no more (toolkit.metrics.coverage)
        coverage = coverage_of(wh)
        notes: list[str] = []
        if coverage is not None and coverage.since is not None and coverage.since > start:
            if coverage.since >= end:
                raise NotHeldError(
                    f"the report's period ends {_when(end)}, before the warehouse's events start "
                    f"({_when(coverage.since)}); sync the older part with `chainops sync --since TIME`"
                )
            notes.append(
                f"the period starts at {_when(coverage.since)}, not {_when(start)}: the warehouse holds no more"
            )
            start = coverage.since
        previous = start - (end - start)
        period = {"since": start, "until": end}
        held = _Held(notes)
        synced, last_run = _freshness(wh)
        latency = held(metrics.status_latency, wh, by=["network", "status"], **period)
        # the figure's distribution as counts per distinct duration, not one row per transition (millions)
        durations = held(status_duration_counts, wh, **period)
        rates = held(metrics.failure_rates, wh, by=["network"], **period)
        overall = _rate_row(held(metrics.failure_rates, wh, by=[], **period))
        before = _rate_row(held(metrics.failure_rates, wh, by=[], since=previous, until=start, instead=_NO_PREVIOUS))
        bucket = "6h" if end - start <= pd.Timedelta(days=3) else "1d"
        over_time = held(metrics.failure_rates, wh, by=["network"], bucket=bucket, **period)
        by_channel = _with_channel_names(wh, held(metrics.failure_rates, wh, by=["channel_id"], **period))
        reasons = held(metrics.failure_reasons, wh, by=[], top=15, **period)
        finality = held(metrics.finality_breakdown, wh, by=["network"], **period)
        queries = held(metrics.query_latency, wh, by=["network", "outcome"], **period)
        query_all = _rate_row(held(metrics.query_latency, wh, by=[], **period))
        at = min(end, latest) if latest is not None else end
        stuck = held(metrics.stuck_operations, wh, now=at)
        overdue = held(metrics.overdue_queries, wh, now=at)
        revisits = held(metrics.revisits, wh, by=["network"], **period)
        proofs = held(metrics.proof_coverage, wh, by=["type"], **period)
        proof_all = _rate_row(held(metrics.proof_coverage, wh, by=[], **period))
        invalid_proofs = held(proof_metrics.invalid_proofs, wh, **period)
        span = end - start
        heat = "1h" if span <= pd.Timedelta(days=3) else "6h" if span <= pd.Timedelta(days=14) else "1d"
        activity = held(metrics.watcher_activity, wh, by=["watcher_id"], bucket=heat, **period)
        tables = {
            "status_latency": latency,
            "failure_rates": rates,
            "failure_by_channel": by_channel,
            "failure_reasons": reasons,
            "finality": finality,
            "query_latency": queries,
            "stuck_operations": stuck,
            "overdue_queries": overdue,
            "revisits": revisits,
            "proof_coverage": proofs,
            "invalid_proofs": invalid_proofs,
            "watcher_activity": activity,
        }
        # a metric declared with a report table and computed nowhere above: its table over the period
        missing = [(m, t) for m, t in report_tables() if t.key not in tables]
        tables.update({t.key: held(getattr(metrics, m.function), wh, **period) for m, t in missing})
    timed = _eligible_latency(latency)
    change, change_low, change_high = difference_interval(
        *(_value(overall, c) for c in ("failure_rate", "failure_rate_low", "failure_rate_high")),
        *(_value(before, c) for c in ("failure_rate", "failure_rate_low", "failure_rate_high")),
    )
    worst = _worst_network(rates)
    summary = {
        "operations": _value(overall, "operations") if overall is not None else 0.0,
        "terminal": _value(overall, "terminal") if overall is not None else 0.0,
        "failure_rate": _value(overall, "failure_rate"),
        "expiry_rate": _value(overall, "expiry_rate"),
        "cancel_rate": _value(overall, "cancel_rate"),
        "previous_failure_rate": _value(before, "failure_rate"),
        "failure_rate_change": float(change),
        "failure_rate_change_low": float(change_low),
        "failure_rate_change_high": float(change_high),
        "failure_rate_change_p": float(two_proportion_p(*_finished_failures(overall), *_finished_failures(before))),
        "worst_failure_rate": _value(worst, "failure_rate"),
        "stuck": float(len(stuck)),
        "overdue_queries": float(len(overdue)),
        "reorgs": float(revisits["reorgs"].sum()) if len(revisits) else 0.0,
        "query_failure_rate": _value(query_all, "failure_rate"),
        "query_expiry_rate": _value(query_all, "expiry_rate"),
        "proof_coverage": _value(proof_all, "coverage"),
        "proof_verified": _value(proof_all, "verified_share"),
        "proof_invalid": _value(proof_all, "invalid"),
        "slowest_p90_s": float(timed["p90_s"].max()) if len(timed) else float("nan"),
        # never synced successfully is the worst staleness: infinite, so `sync_age_h>24` fires
        "sync_age_h": max((clock - synced).total_seconds(), 0.0) / 3600 if synced is not None else float("inf"),
    }
    report = Report(
        title=title,
        since=start,
        until=end,
        previous_since=previous,
        synced_at=synced,
        last_run=last_run,
        tables=tables,
        summary=summary,
        findings=[],
        durations=durations,
        rates_over_time=over_time,
        activity=activity,
        thresholds=checks,
        bucket=bucket,
        data_until=at,
        coverage=None if coverage is None else coverage.to_attrs(),
        coverage_notes=notes,
        as_of=latest,
        until_from_data=until is None and latest is not None,
    )
    report.findings = _findings(report, stuck_at=at)
    if coverage is not None and not coverage.whole:  # first: every number below is about this part only
        report.findings[:0] = [f"Events held: {coverage.describe()}", *(n[0].upper() + n[1:] for n in notes)]
    return report


_NO_PREVIOUS = "the previous period is not held, so no change is computed against it"


class _Held:
    """Runs the report's metrics over what the warehouse holds: a metric whose events are not held (a type not
    synced, the comparison period before the window) gives its table with no rows, and a note says why."""

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes

    def __call__(self, metric: Any, wh: Any, *, instead: str | None = None, **kwargs: Any) -> pd.DataFrame:
        try:
            return metric(wh, **kwargs)
        except NotHeldError as exc:
            note = instead or str(exc).split(": ", 1)[-1]  # without the metric's name: several share a note
            if note not in self.notes:
                self.notes.append(note)
            return metric(wh, **{**kwargs, "channel": []})  # the table's columns, no rows


def _finished_failures(row: pd.Series | None) -> tuple[float, float]:
    """(failed, finished relayed operations) of a failure-rate row: the counts of the change's z-test."""
    if row is None:
        return 0.0, 0.0
    finished = _value(row, "terminal") - sum(
        v for c in ("draft_expired", "draft_cancelled", "unknown") if not math.isnan(v := _value(row, c))
    )
    return _value(row, "failed"), finished


def _eligible_latency(latency: pd.DataFrame) -> pd.DataFrame:
    """Rows of the status latency with a p90 from at least :data:`HEADLINE_MIN_N_P90` observations."""
    return latency[latency["p90_s"].notna() & (latency["n"] >= HEADLINE_MIN_N_P90)]


def _worst_network(rates: pd.DataFrame) -> pd.Series | None:
    """The worst network by failure rate: among networks with at least :data:`HEADLINE_MIN_OPERATIONS` operations,
    the highest lower bound of the 95% interval (then the highest rate, then the name: deterministic)."""
    rows = rates[rates["failure_rate_low"].notna() & (rates["operations"] >= HEADLINE_MIN_OPERATIONS)]
    if not len(rows):
        return None
    rows = rows.assign(_name=rows["network"].astype(str))
    order = rows.sort_values(
        ["failure_rate_low", "failure_rate", "_name"], ascending=[False, False, True], kind="stable"
    )
    return order.iloc[0]


def _with_channel_names(wh: Warehouse, df: pd.DataFrame) -> pd.DataFrame:
    """The per-channel table with the channel's name first (the metrics put it beside the id)."""
    df = with_channel_names(wh, df)
    return df[["channel", *[c for c in df.columns if c != "channel"]]]


def _pct(value: float) -> str:
    return "unknown" if value is None or math.isnan(value) else format_percent(value)


def _duration(seconds: float) -> str:
    """A duration in prose as the tables read it: in seconds as the tables' ``(s)`` columns show it, with the unit
    that reads best beside it when that is not seconds: ``90.0 s``, ``18,288 s = 5.08 h``."""
    if seconds is None or math.isnan(seconds):
        return "unknown"
    readable = format_duration(seconds)
    in_seconds = format_duration(seconds, unit_named("s"))
    return in_seconds if readable == in_seconds else f"{in_seconds} = {readable}"


def _points(value: float) -> str:
    return "unknown" if value is None or math.isnan(value) else f"{value * 100:+.1f} pp"


def _short(value: Any) -> str:
    """A value from the service as it reads in a finding: one line long whatever its length, its control
    characters written out (``\\x1b``) as the tables show them."""
    return shorten(clean_for_terminal(str(value)), 80)


def _findings(report: Report, *, stuck_at: pd.Timestamp) -> list[str]:
    """Plain-text findings (escaped when rendered): slowest status, worst network, failure-rate change, stuck."""
    s, t = report.summary, report.tables
    out = []
    latency = _eligible_latency(t["status_latency"])
    if len(latency):
        order = latency.assign(_net=latency["network"].astype(str), _st=latency["status"].astype(str))
        row = order.sort_values(["p90_s", "n", "_net", "_st"], ascending=[False, False, True, True]).iloc[0]
        out.append(
            f"Slowest status: {_short(row['status'])} on {_short(row['network'])}, "
            f"p90 {_duration(row['p90_s'])} (p50 {_duration(row['p50_s'])}, n={int(row['n']):,})."
        )
    else:
        out.append(f"Slowest status: no status on a network has a p90 from n >= {HEADLINE_MIN_N_P90} in the period.")
    row = _worst_network(t["failure_rates"])
    if row is not None:
        out.append(
            f"Worst network by failure rate: {_short(row['network'])}, {_pct(row['failure_rate'])} "
            f"(95% interval {_pct(row['failure_rate_low'])} to {_pct(row['failure_rate_high'])}, "
            f"n={int(row['operations']):,} operations), ranked by the interval's lower bound."
        )
    else:
        out.append(
            f"Worst network by failure rate: no network has {HEADLINE_MIN_OPERATIONS} or more operations with a "
            "failure rate in the period."
        )
    now, before = s["failure_rate"], s["previous_failure_rate"]
    previous = f"the previous period ({report.previous_since:%Y-%m-%d %H:%M} to {report.since:%Y-%m-%d %H:%M} UTC)"
    if math.isnan(now) or math.isnan(before):
        out.append(f"Failure rate {_pct(now)} in this period, {_pct(before)} in {previous}: no change can be computed.")
    else:
        change = (now - before) * 100
        word = "up" if change > 0 else "down" if change < 0 else "unchanged"
        low, high, p = s["failure_rate_change_low"], s["failure_rate_change_high"], s["failure_rate_change_p"]
        sure = "" if math.isnan(low) or low > 0 or high < 0 else "; the interval includes no change"
        p_text = "unknown" if math.isnan(p) else f"{p:.3g}"
        out.append(
            f"Failure rate {_pct(now)}, {word} {abs(change):.1f} percentage points from {_pct(before)} "
            f"in {previous} (95% interval {_points(low)} to {_points(high)}, p={p_text}{sure})."
        )
    stuck = t["stuck_operations"]
    if len(stuck):
        row = stuck.iloc[0]
        out.append(
            f"{plural(len(stuck), 'operation')} stuck as of {stuck_at:%Y-%m-%d %H:%M} UTC; the most overdue, "
            f"{_short(row['operation_id'])} on {_short(row['network'])}, has been {_short(row['status'])} for "
            f"{_duration(row['age_s'])}; its threshold is {_duration(row['threshold_s'])}."
        )
    else:
        out.append(f"No stuck operations as of {stuck_at:%Y-%m-%d %H:%M} UTC.")
    return out


# ---- HTML --------------------------------------------------------------------------------------------------------

_CSS = (
    """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222; padding: 0 1rem; }
figure { margin: 1rem 0; } figcaption { color: #555; font-size: 0.85rem; }
img { max-width: 100%; }
.meta { color: #555; }
.breach { color: #a00; font-weight: bold; } .ok { color: #070; }
"""
    + TABLE_CSS
)

_MAX_ROWS = 50


def figure_png(fig: Figure) -> str:
    """A figure as a base64 PNG ``data:`` URI (no timestamp in the file: the same figure gives the same bytes)."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(fig, dpi=100)).decode("ascii")


def html_table(
    df: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    max_rows: int | None = None,
    metric: str | bool = True,
) -> str:
    """A DataFrame as an HTML table, as every surface shows it (:mod:`toolkit.presentation.tables`: rates with their
    intervals, one duration unit per column, UTC times, every header and cell escaped), inside a box that scrolls
    when the table is wider than the page.

    Arguments: ``df``; ``columns`` to show (those present, in this order; default all); ``max_rows`` shown at
    first: the other rows follow in a folded ``<details>`` element, so none is left out; ``metric`` the registry
    name whose column kinds apply (default: the metrics' naming conventions). Returns the HTML (style it with
    :data:`TABLE_CSS`).
    """
    return to_html(present(df, metric=metric, columns=columns), max_rows=max_rows)


class Table(Display):
    """A metric table shown as the report shows it (:class:`.tables.Display`): in a notebook as a styled
    HTML table, as aligned text elsewhere. The numbers stay in ``frame`` at full precision."""


def table(df: pd.DataFrame, columns: Sequence[str] | None = None, *, max_rows: int | None = None) -> Table:
    """``df`` for reading in a notebook: rates and shares as percentages with their intervals (see :class:`Table`).

    Arguments: ``df``; ``columns`` to show (default all); ``max_rows`` shown before the rest is folded away.
    Returns the :class:`Table`.
    """
    return Table(df, df.attrs.get("metric", True), columns, max_rows)


def display_frame(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """A metric table as the report and dashboard show it: stuck operations' ``age_s`` and ``threshold_s`` also
    in minutes (``age_min``, ``threshold_min``), the unit of the stuck finding and figure. Other tables as they are.
    """
    if name in ("stuck_operations", "stuck") and {"age_s", "threshold_s"} <= set(df.columns):
        return df.assign(age_min=df["age_s"] / 60, threshold_min=df["threshold_s"] / 60)
    return df


def interval_safe(df: pd.DataFrame, rate: str = "coverage") -> pd.DataFrame:
    """A copy where ``<rate>_low <= <rate> <= <rate>_high`` holds exactly (rounding can break it by 1e-16 at 0 or
    1, and matplotlib rejects negative error bars).

    Arguments: ``df`` with the three columns; ``rate`` their stem. Returns the copy.
    """
    df = df.copy()
    if {rate, f"{rate}_low", f"{rate}_high"} <= set(df.columns):
        df[f"{rate}_low"] = np.fmin(df[f"{rate}_low"], df[rate])
        df[f"{rate}_high"] = np.fmax(df[f"{rate}_high"], df[rate])
    return df


def _figures(report: Report) -> dict[str, tuple[Figure, str]]:
    from . import figures as plots

    # labels drawn from names of any length: matplotlib lays out every character of a label (a 1 MB channel name
    # took minutes and a gigabyte), so the figures get copies with every text value shortened and its control
    # characters written out (no font has glyphs for them)
    t = {name: frame_for_terminal(df, 60) for name, df in report.tables.items()}
    report = dataclasses.replace(
        report,
        tables=t,
        durations=frame_for_terminal(report.durations, 60),
        rates_over_time=frame_for_terminal(report.rates_over_time, 60),
        activity=frame_for_terminal(report.activity, 60),
    )
    return {
        "status_latency": (plots.latency_by_status(report.durations), "Seconds in each operation status, per network"),
        "failure_rates": (
            plots.failure_rate_over_time(
                interval_safe(report.rates_over_time, "failure_rate"),
                group="network",
                bucket=report.bucket,
                period=(report.since, report.data_until if report.data_until is not None else report.until),
                title="Failure rate over time, per network",
            ),
            "Failure rate over time with its 95% interval, one panel per network; a partial bucket is hollow. The "
            "axis follows the rates (and the bands of buckets with at least "
            f"{plots.BAND_MIN_FINISHED} finished operations): the wide band of a bucket of a few operations runs off "
            "the top rather than flatten the lines",
        ),
        "failure_reasons": (plots.failure_reason_bars(t["failure_reasons"]), "Most frequent failure reasons"),
        "finality": (plots.finality_funnel(t["finality"]), "Share of relayed operations reaching each stage"),
        "query_latency": (plots.query_latency_bars(t["query_latency"]), "Chain-query latency per stage"),
        "stuck_operations": (plots.stuck_ages(t["stuck_operations"]), "Stuck operations' ages against thresholds"),
        "proof_coverage": (
            plots.proof_coverage_bars(interval_safe(t["proof_coverage"])),
            "Events carrying required DON proofs",
        ),
        "watcher_activity": (plots.watcher_activity_heatmap(report.activity), "Watcher events per time bucket"),
    }


def _sections() -> list[tuple[str | bool, ReportTable, list[tuple[str | bool, ReportTable]]]]:
    """The report's sections from the registry, in order: each table of its own (with the registry name whose
    column kinds apply, or True for the naming conventions) and the tables shown inside it."""
    tables = [(m.name if t.kinds else True, t) for m, t in report_tables()]
    return [
        (kinds, t, [inner for inner in tables if inner[1].within == t.key]) for kinds, t in tables if t.within is None
    ]


def _when(ts: pd.Timestamp | None) -> str:
    return "never" if ts is None or pd.isna(ts) else pd.Timestamp(ts).tz_convert("UTC").strftime("%Y-%m-%d %H:%M UTC")


def _render_html(report: Report, *, figures: bool = True, full_page: bool = True) -> str:
    e = html.escape
    parts = [f"<h1>{e(report.title)}</h1>"]
    counted = " (counted back from the data's as-of time, not the clock)" if report.until_from_data else ""
    parts.append(
        f'<p class="meta">Period: {e(_when(report.since))} to {e(_when(report.until))}{counted}; compared with the '
        f"previous period of the same length, {e(_when(report.previous_since))} to {e(_when(report.since))}.</p>"
    )
    fresh = f"Warehouse last synced {e(_when(report.synced_at))}"
    if report.synced_at is not None and report.until_from_data:
        fresh += f" ({format_duration(report.summary['sync_age_h'] * 3600)} ago)"
    elif report.synced_at is not None and report.synced_at >= report.until:
        fresh += " (after the end of the period)"
    elif report.synced_at is not None:
        fresh += f" ({format_duration(report.summary['sync_age_h'] * 3600)} before the end of the period)"
    fresh += f"; data as of {e(_when(report.as_of))} (the newest event)"
    if report.last_run:
        fresh += (
            f"; last sync run: {e(str(report.last_run.get('outcome')))} "
            f"(started {e(_when(report.last_run.get('started_at')))})"
        )
    parts.append(f'<p class="meta" id="freshness">{fresh}.</p>')
    if report.coverage is not None:  # what the warehouse holds, and what the report left out because of it
        held = f"Events held: {e(report.coverage['text'])}"
        if report.coverage_notes:
            held += "; " + "; ".join(e(n) for n in report.coverage_notes)
        parts.append(f'<p class="meta" id="coverage">{held}.</p>')
    parts.append('<h2 id="findings">Findings</h2><ul>' + "".join(f"<li>{e(f)}</li>" for f in report.findings) + "</ul>")
    if report.thresholds:
        items = []
        for t in report.thresholds:
            bad = t.breached(report.summary)
            value = report.summary.get(t.name, float("nan"))
            items.append(
                f'<li class="{"breach" if bad else "ok"}">{e(str(t))}: value {e(_plain(value) or "unknown")}'
                f" — {'BREACHED' if bad else 'ok'}</li>"
            )
        parts.append('<h2 id="thresholds">Thresholds</h2><ul>' + "".join(items) + "</ul>")
    parts.append(
        '<h2 id="summary">Summary</h2>' + to_html(present(_summary_display(report), metric=False, limit=_MEANING_LIMIT))
    )
    drawn = _figures(report) if figures else {}
    for kinds, section, inner in _sections():
        key = section.key
        parts.append(f'<h2 id="{key}">{e(section.heading)}</h2>')
        if key in drawn:
            fig, alt = drawn[key]
            image = f'<img alt="{e(alt)}" src="{figure_png(fig)}">'
            parts.append(f"<figure>{image}<figcaption>{e(alt)}</figcaption></figure>")
        if section.note:
            parts.append(f'<p class="meta note">{e(section.note)}</p>')
        if section.columns:
            shown, hidden = hide_rows(report.tables[key], kinds, shown_by="the CSV tables hold them")
            parts.append(html_table(shown, section.columns, max_rows=_MAX_ROWS, metric=kinds))
            parts += [f'<p class="meta">{e(n)}</p>' for n in hidden]
        for sub_kinds, sub in inner:
            if sub.key in report.tables:
                parts.append(f'<h3 id="{sub.key}">{e(sub.heading)}</h3>')
                parts.append(
                    html_table(report.tables[sub.key], sub.columns or None, max_rows=_MAX_ROWS, metric=sub_kinds)
                )
    body = "\n".join(parts)
    if not full_page:
        return f"<div><style>{TABLE_CSS}</style>{body}</div>"
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{e(report.title)}</title>'
        f"<style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


#: Characters of a summary value's meaning shown whole (our own text, not the service's: none is cut short).
_MEANING_LIMIT = max(len(meaning) for meaning in SUMMARY_VALUES.values())
#: Summary values that are shares in [0, 1] but whose names do not end in ``rate`` or ``coverage``.
_SUMMARY_SHARES = frozenset({"proof_verified"})


def _summary_display(report: Report) -> pd.DataFrame:
    """The summary as people read it: each value in the unit its name promises (``_s`` seconds, ``_h`` hours,
    ``_rate``/``coverage`` percent, ``_change`` percentage points), numbers as the tables show them."""
    rows = []
    for name, value in report.summary.items():
        kind = kind_by_name(name)
        if value is None or math.isnan(value):
            text = "unknown"
        elif kind == "proportion" or name in _SUMMARY_SHARES:
            text = format_percent(value)
        elif name.endswith(("change", "change_low", "change_high")):
            text = _points(value)
        elif name.endswith("_p"):
            text = format_significant(value)
        elif kind == "duration":
            text = format_duration(value, unit_named("s"))
        elif hours_stem(name):
            text = "never synced" if math.isinf(value) else format_duration(value * 3600, unit_named("h"))
        else:
            text = format_count(round(value))
        rows.append((name, text, SUMMARY_VALUES[name]))
    return pd.DataFrame(rows, columns=["name", "value", "meaning"])


# ---- one call ----------------------------------------------------------------------------------------------------


def write_report(
    warehouse: metrics.WarehouseLike,
    out: str | os.PathLike[str],
    *,
    fmt: str = "html",
    since: metrics.TimeLike = "7d",
    until: metrics.TimeLike = None,
    title: str = "Chain operations",
    thresholds: Sequence[Threshold | str] = (),
) -> Report:
    """Build the report of ``[since, until)`` and write it to ``out`` (see :meth:`Report.write`).

    Returns the :class:`Report` (its ``breaches`` are the thresholds that failed).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; choose from {FORMATS}")
    # a place the output cannot go (a directory named as the HTML file, a path under a file, a read-only
    # directory) is refused before the report is built
    check_output_place(out, directory=fmt != "html")
    report = build_report(warehouse, since=since, until=until, title=title, thresholds=thresholds)
    report.write(out, fmt)
    return report


def write_html_report(
    warehouse: metrics.WarehouseLike,
    out: str | os.PathLike[str],
    *,
    title: str = "Chain operations",
    since: metrics.TimeLike = None,
    until: metrics.TimeLike = None,
) -> Path:
    """Write the HTML report to ``out``; returns the path.

    Without ``since``, the period covers the warehouse's whole history (from its first operation or event).
    """
    if since is None:
        since = _first_time(warehouse)
        if until is None:
            until = _last_time(warehouse)
    write_report(warehouse, out, since=since, until=until, title=title)
    return Path(out)


def _first_time(warehouse: metrics.WarehouseLike) -> pd.Timestamp:
    with metrics._open(warehouse) as wh:
        t = wh.query("SELECT least(min(created_at), (SELECT min(ts) FROM events)) AS t FROM operations")["t"]
    value = t.iloc[0] if len(t) else None
    if value is None or pd.isna(value):
        return pd.Timestamp.now(tz="UTC").floor("min") - pd.Timedelta(days=7)
    return pd.Timestamp(value).tz_convert("UTC").floor("D")


def _last_time(warehouse: metrics.WarehouseLike) -> pd.Timestamp | None:
    latest = metrics.latest_event_time(warehouse)
    return None if latest is None else (latest + pd.Timedelta(minutes=1)).ceil("min")


#: The findings of a report and its summary as the table it shows, under public names (notebooks and tests use them).
findings_of = _findings
summary_table = _summary_display

__all__ = [
    "FORMATS",
    "SUMMARY_VALUES",
    "TABLE_CSS",
    "Report",
    "Table",
    "Threshold",
    "build_report",
    "display_frame",
    "figure_png",
    "findings_of",
    "html_table",
    "parse_threshold",
    "summary_table",
    "table",
    "write_html_report",
    "write_report",
]
