"""Every metric's facts, declared once: its names, the filters it takes, the event type it needs, its columns with
their kinds (units), the columns an analyst reads first, the rows it hides by default, and what it means.

The command line (names, help, default columns), the presentation (:mod:`toolkit.presentation.values`: a column's
kind), the report and the dashboard (the columns they show), the coverage check (the event type a metric needs) and
the docs (``docs/analyst-surface.md``) read it. It imports only :mod:`toolkit.spec` and
:mod:`toolkit.column_kinds`, so the command line can read it without loading pandas or DuckDB.

Column kinds are those of :data:`toolkit.column_kinds.KINDS` (a bare name in the shorthand takes the kind
:func:`toolkit.column_kinds.kind_by_name` gives it, the rule the presentation uses): ``proportion`` (a value in
[0, 1] shown as a percentage, with its ``_low``/``_high`` 95% interval when present), ``duration`` (seconds, shown
in one unit per column), ``count``, ``number``, ``time`` (UTC), ``id``, ``text``, ``flag``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import spec
from .column_kinds import kind_by_name


@dataclass(frozen=True)
class Column:
    """One column of a metric's result: its ``name`` and ``kind`` (its unit: ``duration`` is seconds, ``proportion``
    a share in [0, 1]); ``header``, the short label a table shows, keeping the statistic but not the unit (the
    presentation adds the unit it shows the column in; empty: derived from the name by :meth:`label`);
    ``description``, one line on what it holds; ``value``: whether it is one of the metric's own values (what a
    narrow table keeps last), rather than a descriptor such as a group or a count."""

    name: str
    kind: str
    header: str = ""
    description: str = ""
    value: bool = False

    def label(self) -> str:
        """The short header: ``header`` if declared, else the name without its unit suffix, words spaced
        (``since_created_p50_s`` -> ``since created p50``)."""
        if self.header:
            return self.header
        return self.name.removesuffix("_s").replace("_", " ")


@dataclass(frozen=True)
class ReportTable:
    """A table of the report that holds a metric's result: ``key`` (the table's name: its CSV/Parquet file and the
    HTML anchor), ``heading``, ``columns`` the HTML shows (the files hold every column; none: the section shows
    its figure and note only), ``note`` (how the period selects the rows and how the numbers are computed),
    ``within``: the key of the section it sits in under a sub-heading (None: a section of its own), and ``kinds``:
    whether the metric's column kinds apply (False: a table of other columns, shown by the naming conventions)."""

    key: str
    heading: str
    columns: tuple[str, ...] = ()
    note: str = ""
    within: str | None = None
    kinds: bool = True


@dataclass(frozen=True)
class View:
    """A tab of the dashboards (``tk.dashboard`` and ``chainops dashboard``): ``key``, ``title``, and what the tab
    says in place of a figure when the metric has no rows (``empty``). Its table shows the metric's default
    columns."""

    key: str
    title: str
    empty: str


@dataclass(frozen=True)
class Metric:
    """One metric: ``name`` (``chainops metrics NAME``), ``function`` (``tk.metrics.<function>``), ``title``,
    ``definition`` (one paragraph), ``period`` (how the period selects rows), ``filters`` it takes, the event
    type it ``needs`` (None: none in particular), ``columns`` (all of them, in order), ``default`` (the columns a
    terminal shows first), ``hidden`` (column -> values whose rows are not shown by default, with ``hidden_why``),
    ``companions``: other public functions computed from the same events, ``report``: the report's tables that
    show it, and ``view``: its dashboard tab (None: not on the dashboards)."""

    name: str
    function: str
    title: str
    definition: str
    period: str
    filters: tuple[str, ...]
    needs: str | None
    columns: tuple[Column, ...]
    default: tuple[str, ...]
    hidden: dict[str, frozenset[str]] = field(default_factory=dict)
    hidden_why: str = ""
    companions: tuple[str, ...] = ()
    report: tuple[ReportTable, ...] = ()
    view: View | None = None

    @property
    def column_names(self) -> tuple[str, ...]:
        """Every column's name, in order."""
        return tuple(c.name for c in self.columns)

    def kinds(self) -> dict[str, str]:
        """Column name -> kind."""
        return {c.name: c.kind for c in self.columns}


def _cols(spec_text: str) -> tuple[Column, ...]:
    """Columns from ``name=kind`` words; a bare name takes the kind its name says
    (:func:`toolkit.column_kinds.kind_by_name`: ``_s`` a duration, ``_rate``/``_share``/``coverage`` and their
    ``_low``/``_high`` a proportion, ``_censored``/``_operations`` a count)."""
    out = []
    for word in spec_text.split():
        name, _, kind = word.partition("=")
        kind = kind or kind_by_name(name) or ""
        if not kind:
            raise ValueError(f"column {name!r} needs a kind")
        out.append(Column(name, kind))
    return tuple(out)


_ALL = ("channel", "network", "status", "since", "until")
_NO_STATUS = ("channel", "network", "since", "until")
_BY_CREATION = "operations created in the period, observed up to the newest event (as of)"
#: The report's note on the tables of operations selected by creation.
_PERIOD_BY_CREATION = (
    "Period: operations created in it, observed up to the newest event in the warehouse. Operations still in "
    "flight are projected from finished ones that were in the same status at the same age (see docs/metrics.md), "
    "so each rate estimates the cohort's final value; in_flight says how many were projected."
)

METRICS: tuple[Metric, ...] = (
    Metric(
        name="status-latency",
        function="status_latency",
        title="Time spent in each operation status",
        definition=(
            "Seconds operations spent in each status (entered to the next status), per network and status: "
            "Kaplan–Meier percentiles (an operation still in a status is censored at the newest event); p50 from "
            "n ≥ 2, p90 from n ≥ 10, p99 from n ≥ 100. A final status has no time in it."
        ),
        period="by the time the status was entered",
        filters=_ALL,
        needs="operation.status",
        columns=_cols(
            "network=text status=text entered=count n=count mean_s p50_s p90_s p99_s max_s since_created_p50_s "
            "since_created_p90_s censored=count reentered=count notes=text"
        ),
        default=("network", "status", "n", "p50_s", "p90_s", "censored"),
        hidden={"status": spec.OPERATION_TERMINAL},
        hidden_why="final statuses (an operation spends no time in them)",
        companions=("status_durations",),
        report=(
            ReportTable(
                "status_latency",
                "Time spent in each status",
                ("network", "status", "entered", "n", "censored", "mean_s", "p50_s", "p90_s", "p99_s", "max_s"),
                "Period: by the time the status was entered. Percentiles are Kaplan–Meier estimates (an operation "
                "still in a status is censored at the newest event; see docs/metrics.md): p50 from n ≥ 2, p90 from "
                "n ≥ 10, p99 from n ≥ 100, and only where at least max(2, n × (1 − q) / 2) are still at risk where "
                "it is read, else empty with the reason in notes; n is beside each.",
            ),
        ),
        view=View("latency", "Latency per status", "No operation entered a status in this period with these filters."),
    ),
    Metric(
        name="failure-rates",
        function="failure_rates",
        title="Failure, expiry and cancel rates",
        definition=(
            "Outcomes of relayed operations: failed, expired and cancelled over relayed operations, the ones still "
            "in flight projected from finished ones (docs/metrics.md), each with its 95% interval."
        ),
        period="by creation: " + _BY_CREATION,
        filters=_NO_STATUS,
        needs="operation.status",
        columns=_cols(
            "network=text channel_id=id channel=text bucket=time operations=count relayed=count terminal=count "
            "confirmed=count failed=count expired=count cancelled=count draft_expired=count draft_cancelled=count "
            "unknown=count in_flight=count failure_rate failure_rate_low failure_rate_high expiry_rate "
            "expiry_rate_low expiry_rate_high cancel_rate cancel_rate_low cancel_rate_high draft_expiry_rate "
            "draft_expiry_rate_low draft_expiry_rate_high draft_cancel_rate draft_cancel_rate_low "
            "draft_cancel_rate_high"
        ),
        default=(
            "network",
            "channel",
            "bucket",
            "operations",
            "failed",
            "in_flight",
            "failure_rate",
            "expiry_rate",
        ),
        report=(
            ReportTable(
                "failure_rates",
                "Failure rates per network",
                (
                    "network",
                    "operations",
                    "terminal",
                    "confirmed",
                    "failed",
                    "expired",
                    "cancelled",
                    "in_flight",
                    "failure_rate",
                    "failure_rate_low",
                    "failure_rate_high",
                    "expiry_rate",
                ),
                _PERIOD_BY_CREATION
                + " Failure, expiry and cancel rates count the operations relayed so far (a draft joins when it is "
                "relayed; the finality table's failed share is the same figure); drafts still waiting are projected "
                "on their deadline's clock; 95% intervals.",
            ),
            ReportTable(
                "failure_by_channel",
                "Failure rates per channel",
                (
                    "channel",
                    "channel_id",
                    "operations",
                    "terminal",
                    "failed",
                    "expired",
                    "failure_rate",
                    "failure_rate_low",
                    "failure_rate_high",
                ),
                _PERIOD_BY_CREATION,
            ),
        ),
        view=View("failure", "Failure rates", "No operation was created in this period with these filters."),
    ),
    Metric(
        name="failure-reasons",
        function="failure_reasons",
        title="Failure reasons",
        definition=(
            "The most frequent reasons of failed and expired operations, in categories (the first matching rule, "
            "a revert's own message first; docs/metrics.md, Failure reasons)."
        ),
        period="by creation: operations created in the period that failed or expired",
        filters=_ALL,
        needs="operation.status",
        columns=_cols(
            "network=text channel_id=id channel=text category=text reason=text status=text operations=count share "
            "category_operations=count category_share rank=count"
        ),
        default=("category", "reason", "status", "operations", "share"),
        report=(
            ReportTable(
                "failure_reasons",
                "Failure reasons",
                ("category", "reason", "status", "operations", "share"),
                "Period: operations created in it that failed or expired. Categories: first matching rule, a "
                "revert's own message first (docs/metrics.md, Failure reasons).",
            ),
        ),
    ),
    Metric(
        name="finality-breakdown",
        function="finality_breakdown",
        title="Finality stages",
        definition=(
            "Per network: the share of relayed operations reaching the latest, safe and finalized stages (95% "
            "intervals), and Kaplan–Meier times to each stage and between stages."
        ),
        period="by creation: " + _BY_CREATION,
        filters=_NO_STATUS,
        needs="operation.status",
        columns=_cols(
            "network=text channel_id=id channel=text operations=count reached_latest=count reached_safe=count "
            "reached_finalized=count failed=count in_flight=count latest_share latest_share_low latest_share_high "
            "safe_share safe_share_low safe_share_high finalized_share finalized_share_low finalized_share_high "
            "failed_share failed_share_low failed_share_high latest_only_basis=text latest_only=flag "
            "revisits=count reorgs=count to_latest_p50_s to_latest_p90_s to_safe_p50_s to_safe_p90_s "
            "to_finalized_p50_s to_finalized_p90_s latest_to_safe_p50_s latest_to_safe_p90_s "
            "safe_to_finalized_p50_s safe_to_finalized_p90_s latest_to_finalized_p50_s latest_to_finalized_p90_s "
            "to_latest_censored to_safe_censored to_finalized_censored latest_to_safe_censored "
            "safe_to_finalized_censored latest_to_finalized_censored notes=text"
        ),
        default=("network", "operations", "latest_share", "finalized_share", "to_latest_p50_s", "to_finalized_p50_s"),
        companions=("finality_times",),
        report=(
            ReportTable(
                "finality",
                "Finality stages",
                (
                    "network",
                    "operations",
                    "reached_latest",
                    "reached_safe",
                    "reached_finalized",
                    "latest_share",
                    "safe_share",
                    "finalized_share",
                    "failed_share",
                    "latest_only",
                    "to_latest_p50_s",
                    "to_finalized_p50_s",
                    "to_finalized_p90_s",
                    "to_finalized_censored",
                ),
                _PERIOD_BY_CREATION
                + " Times to each stage are Kaplan–Meier estimates (an operation that ended in an unknown status is "
                "not censored). Reorgs: moves back from a finality stage to broadcasting or earlier (duplicated "
                "events are not revisits).",
            ),
        ),
        view=View("finality", "Finality stages", "No relayed operation was created in this period with these filters."),
    ),
    Metric(
        name="query-latency",
        function="query_latency",
        title="Chain queries",
        definition=(
            "Chain-query latency per stage (accepted, sending, sent, terminal; Kaplan–Meier percentiles) and "
            "failure and expiry rates with the in-flight estimate and 95% intervals."
        ),
        period="by creation: queries created in the period",
        filters=_ALL,
        needs="query.status",
        columns=_cols(
            "network=text channel_id=id channel=text outcome=text queries=count completed=count failed=count "
            "expired=count accepted_to_sending_p50_s accepted_to_sending_p90_s sending_to_sent_p50_s "
            "sending_to_sent_p90_s sent_to_terminal_p50_s sent_to_terminal_p90_s accepted_to_terminal_p50_s "
            "accepted_to_terminal_p90_s accepted_to_sending_censored sending_to_sent_censored "
            "sent_to_terminal_censored accepted_to_terminal_censored notes=text finished=count late_answers=count "
            "in_flight=count failure_rate failure_rate_low failure_rate_high expiry_rate expiry_rate_low "
            "expiry_rate_high"
        ),
        default=("network", "outcome", "queries", "accepted_to_terminal_p50_s", "accepted_to_terminal_p90_s"),
        report=(
            ReportTable(
                "query_latency",
                "Chain queries",
                (
                    "network",
                    "outcome",
                    "queries",
                    "accepted_to_terminal_p50_s",
                    "accepted_to_terminal_p90_s",
                    "accepted_to_terminal_censored",
                    "failure_rate",
                    "expiry_rate",
                ),
                "Period: queries created in it. Rates include the in-flight estimate; latencies are Kaplan–Meier "
                "estimates. Overdue: past their expires_at with no terminal status as of the newest event.",
            ),
        ),
    ),
    Metric(
        name="stuck-operations",
        function="stuck_operations",
        title="Stuck operations",
        definition=(
            "Operations in a status longer than 3 × the network's p90 for it (at least 60 s), as of the newest "
            "event; a status nobody on the network has left yet takes the other networks' p90, else the state "
            "machine's default (threshold_basis)."
        ),
        period="as of the newest event or --now, not the period",
        filters=_ALL,
        needs="operation.status",
        columns=_cols(
            "operation_id=id channel_id=id channel=text chain_selector=text network=text address=id status=text "
            "entered_at=time age_s threshold_s threshold_basis=text network_p90_s"
        ),
        default=("operation_id", "network", "status", "age_s", "threshold_s", "entered_at"),
        report=(
            ReportTable(
                "stuck_operations",
                "Stuck operations",
                (
                    "operation_id",
                    "channel_id",
                    "network",
                    "status",
                    "entered_at",
                    "age_s",
                    "threshold_s",
                    "threshold_basis",
                ),
                "As of the newest event (not the period): operations in a status longer than 3 × the network's p90 "
                "of the stays that ended (at least 60 s; not the censored p90 above: the open stays are the ones "
                "judged); a status nobody on the network has left yet takes the other networks' p90, else the state "
                "machine's default (threshold_basis).",
            ),
        ),
        view=View(
            "stuck", "Stuck operations", "No stuck operations: none has been in a status longer than its threshold."
        ),
    ),
    Metric(
        name="revisits",
        function="revisits",
        title="Revisits and reorgs",
        definition=(
            "Operations that entered a status again, and reorgs: moves back from a finality stage to broadcasting "
            "or earlier (duplicated events are not revisits)."
        ),
        period="by creation: " + _BY_CREATION,
        filters=_NO_STATUS,
        needs="operation.status",
        columns=_cols(
            "network=text channel_id=id channel=text operations=count operations_revisited=count revisits=count "
            "operations_reorged=count reorgs=count"
        ),
        default=("network", "operations", "operations_revisited", "revisits", "operations_reorged", "reorgs"),
        report=(
            ReportTable(
                "revisits",
                "Revisits and reorgs per network",
                ("network", "operations", "operations_revisited", "revisits", "operations_reorged", "reorgs"),
                within="finality",
            ),
        ),
    ),
    Metric(
        name="overdue-queries",
        function="overdue_queries",
        title="Overdue queries",
        definition="Chain queries past their expires_at with no terminal status, as of the newest event.",
        period="as of the newest event or --now; created in the period",
        filters=_NO_STATUS,
        needs="query.status",
        columns=_cols(
            "query_id=id channel_id=id channel=text chain_selector=text network=text status=text created_at=time "
            "expires_at=time overdue_s"
        ),
        default=("query_id", "network", "status", "expires_at", "overdue_s"),
        report=(
            ReportTable(
                "overdue_queries",
                "Overdue queries",
                ("query_id", "channel_id", "network", "status", "created_at", "expires_at", "overdue_s"),
                within="query_latency",
            ),
        ),
    ),
    Metric(
        name="proof-coverage",
        function="proof_coverage",
        title="DON proofs",
        definition=(
            "Events that must carry a DON proof and do (coverage, with its 95% interval), signature counts "
            "against the minimum, and what chainops verify found: verified and invalid proofs, and the verified "
            "share (with its 95% interval; an event not verified yet counts as not verified)."
        ),
        period="by event time",
        filters=_ALL,
        needs=None,
        columns=_cols(
            "type=text network=text channel_id=id channel=text events=count must_have_proof=count with_proof=count "
            "missing_proof=count coverage coverage_low coverage_high min_signatures=count enough_signatures=count "
            "too_few_signatures=count signatures_min=number signatures_p50=number signatures_max=number "
            "unexpected_proofs=count verified=count invalid=count verified_share verified_share_low "
            "verified_share_high"
        ),
        default=("type", "must_have_proof", "coverage", "verified_share", "invalid", "missing_proof", "events"),
        report=(
            ReportTable(
                "proof_coverage",
                "DON proofs",
                (
                    "type",
                    "events",
                    "must_have_proof",
                    "with_proof",
                    "missing_proof",
                    "coverage",
                    "too_few_signatures",
                    "unexpected_proofs",
                    "verified",
                    "invalid",
                    "verified_share",
                ),
                "Period: by event time. verified and invalid are what chainops verify stored (the official SDK's "
                "rules: one OCR proof, the event hash, the workflow owner, at least 4 distinct trusted signers; "
                "docs/verify.md); an event not verified yet counts against verified_share.",
            ),
            ReportTable(
                "invalid_proofs",
                "Invalid DON proofs (chainops verify), with the rule that failed",
                ("event_id", "type", "status", "network", "ts", "reason"),
                within="proof_coverage",
                kinds=False,
            ),
        ),
    ),
    Metric(
        name="watcher-activity",
        function="watcher_activity",
        title="Watcher activity",
        definition="Watcher events (and those with a proof) per watcher and time bucket.",
        period="by event time",
        filters=_NO_STATUS,
        needs="watcher.event",
        columns=_cols(
            "watcher_id=id channel_id=id channel=text network=text bucket=time events=count with_proof=count "
            "name=text status=text"
        ),
        default=("watcher_id", "name", "bucket", "events", "with_proof", "status"),
        report=(ReportTable("watcher_activity", "Watchers", note="Period: by event time."),),
    ),
    Metric(
        name="watcher-status-history",
        function="watcher_status_history",
        title="Watcher status history",
        definition="Each status a watcher entered, when, for how long, and why.",
        period="by the time the status was entered",
        filters=_ALL,
        needs="watcher.status",
        columns=_cols(
            "watcher_id=id name=text channel_id=id channel=text chain_selector=text network=text status=text "
            "entered_at=time exited_at=time next_status=text seconds_in_status=duration status_reason=text"
        ),
        default=("watcher_id", "name", "status", "entered_at", "seconds_in_status", "status_reason"),
    ),
)

#: Metrics by their ``chainops metrics NAME`` name.
BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}
#: The names, as ``chainops metrics`` lists them.
METRIC_NAMES: tuple[str, ...] = tuple(sorted(BY_NAME))


def metric(name: str) -> Metric:
    """The metric called ``name`` (``status-latency`` or ``status_latency``). Raises ``KeyError`` naming the
    known ones."""
    key = name.replace("_", "-")
    if key in BY_NAME:
        return BY_NAME[key]
    raise KeyError(f"unknown metric {name!r}; known: {', '.join(METRIC_NAMES)}")


def by_function(function: str) -> Metric | None:
    """The metric whose ``tk.metrics`` function (or a companion) is ``function``, or None."""
    for m in METRICS:
        if function == m.function or function in m.companions:
            return m
    return None


def declared_kinds(name: str) -> dict[str, str]:
    """Column name -> kind of the metric ``name`` (empty for a name the registry does not know)."""
    try:
        return metric(name).kinds()
    except KeyError:
        return {}


def required_types() -> dict[str, str]:
    """Function name -> the event type it needs, for every metric function and companion that needs one."""
    out: dict[str, str] = {}
    for m in METRICS:
        if m.needs is not None:
            for function in (m.function, *m.companions):
                out[function] = m.needs
    return out


def report_tables() -> tuple[tuple[Metric, ReportTable], ...]:
    """Every table of the report with its metric, in the report's order (the metrics' order, each metric's tables
    in theirs)."""
    return tuple((m, t) for m in METRICS for t in m.report)


def views() -> tuple[tuple[Metric, View], ...]:
    """The dashboards' tabs with their metrics, in tab order."""
    return tuple((m, m.view) for m in METRICS if m.view is not None)


def markdown() -> str:
    """``docs/metric-columns.md``: every metric with its definition, period, filters, needed events, default and
    all columns with their kinds (written by ``python -m toolkit.registry``; a test keeps the file equal)."""
    lines = [
        "# Metrics: names, filters, columns and units",
        "",
        "Generated from `toolkit/registry.py` by `python -m toolkit.registry`; do not edit by hand. What each number "
        "means in full is in [metrics.md](metrics.md); how values are shown in [analyst-surface.md]"
        "(analyst-surface.md).",
        "",
        "Kinds: `proportion` (a share in [0, 1], shown as a percentage with its `_low`/`_high` 95% interval), "
        "`duration` (seconds, shown in one unit per column), `count`, `number`, `time` (UTC), `id`, `text`, `flag`.",
    ]
    for m in METRICS:
        lines += [
            "",
            f"## `{m.name}` — {m.title}",
            "",
            m.definition,
            "",
            f"- Python: `tk.metrics.{m.function}(...)`; command line: `chainops metrics {m.name}`",
            f"- Period: {m.period}",
            f"- Filters: {', '.join(f'`{f}`' for f in m.filters)}",
            f"- Needs events: {f'`{m.needs}`' if m.needs else 'none in particular'}",
            f"- Shown first on a terminal: {', '.join(f'`{c}`' for c in m.default)}",
        ]
        if m.hidden:
            lines.append(f"- Rows not shown by default (`--wide` shows them): {m.hidden_why}")
        for t in m.report:
            shown = ", ".join(f"`{c}`" for c in t.columns) if t.columns else "its figure only"
            lines.append(f"- In the report: {t.heading} (`{t.key}`): {shown}")
        if m.view is not None:
            lines.append(f"- On the dashboards: the {m.view.title} tab")
        lines += ["", "| column | kind |", "|---|---|", *(f"| `{c.name}` | {c.kind} |" for c in m.columns)]
    return "\n".join(lines) + "\n"


__all__ = [
    "BY_NAME",
    "METRICS",
    "METRIC_NAMES",
    "Column",
    "Metric",
    "ReportTable",
    "View",
    "by_function",
    "declared_kinds",
    "markdown",
    "metric",
    "report_tables",
    "required_types",
    "views",
]


if __name__ == "__main__":  # pragma: no cover
    from pathlib import Path

    target = Path(__file__).resolve().parent.parent / "docs" / "metric-columns.md"
    target.write_text(markdown(), encoding="utf-8")
    print(f"wrote {target}")
