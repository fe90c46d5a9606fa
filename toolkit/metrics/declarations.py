"""Every metric, declared once (:class:`~.declare.Metric`): its names, the module that computes it, the filters,
``by`` columns and options it takes, the event type it needs, its columns (kind, short header, description, whether
a value), the columns an analyst reads first, the rows it hides by default, what it means, its report tables and its
dashboard tab.

The public functions' signatures and docstrings (:func:`toolkit.metrics.common.takes_filters`), the command line
(names, help, arguments, default columns), the presentation (a column's kind and header), the report and the
dashboards (the columns they show), the coverage check (the event type a metric needs) and the docs
(``docs/metric-columns.md``, written by ``python -m toolkit.metrics.declarations``) read it. It imports only
:mod:`toolkit.spec` and :mod:`.declare`, so the command line reads it without loading pandas or DuckDB.
``toolkit.registry`` is this module under its old name.
"""

from __future__ import annotations

from .. import spec
from .declare import FILTER_NAMES, Column, Metric, ReportTable, View

#: Columns many metrics share: name -> (kind, header, description); a metric's own text names them alone.
_SHARED: dict[str, tuple[str, str, str]] = {
    "network": ("text", "network", "the network's name (its chain selector when the warehouse does not name it)"),
    "chain_selector": ("text", "chain selector", "the network's chain selector"),
    "channel_id": ("id", "channel id", "the channel's id"),
    "channel": ("text", "channel", "the channel's name (its id when the warehouse does not name it)"),
    "bucket": ("time", "bucket", "start of the time bucket (UTC; days start at midnight, weeks on Monday)"),
    "notes": ("text", "notes", "why a value is empty, and what else the row needs said"),
    "address": ("id", "address", "the wallet address"),
}


def _cols(text: str) -> tuple[Column, ...]:
    """Columns from lines ``name kind | header | description`` (a line starting ``+`` goes on with the description
    above); a kind ending ``*`` marks one of the metric's own values; a line holding a name alone is the shared
    column of that name (:data:`_SHARED`)."""
    out: list[Column] = []
    for line in text.strip().splitlines():
        if line.lstrip().startswith("+ "):
            last = out.pop()
            out.append(Column(last.name, last.kind, last.header, f"{last.description} {line.strip()[2:]}", last.value))
            continue
        head, _, rest = line.partition("|")
        words = head.split()
        if len(words) == 1 and not rest:
            kind, header, description = _SHARED[words[0]]
            out.append(Column(words[0], kind, header, description))
            continue
        name, kind = words
        header, _, description = (part.strip() for part in rest.partition("|"))
        out.append(Column(name, kind.rstrip("*"), header, description, value=kind.endswith("*")))
    return tuple(out)


_ALL = FILTER_NAMES
_NO_STATUS = tuple(f for f in FILTER_NAMES if f != "status")
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
        module="latency",
        by=("network", "chain_selector", "channel_id", "status"),
        options=("bucket",),
        title="Time spent in each operation status",
        definition=(
            "Seconds operations spent in each status (entered to the next status), per network and status: "
            "Kaplan–Meier percentiles (an operation still in a status is censored at the newest event); p50 from "
            "n ≥ 2, p90 from n ≥ 10, p99 from n ≥ 100, unless final (no stay still open can change it). A final "
            "status has no time in it."
        ),
        period="by the time the status was entered",
        filters=_ALL,
        needs="operation.status",
        columns=_cols(
            """
            network
            status text | status | the operation status whose time is measured
            entered count | entered | operations that entered the status in the period
            n count | n | those that have left it (their time in it is known)
            mean_s duration* | mean | mean seconds in the status, of the ended stays (not censoring-aware)
            p50_s duration* | p50 | median seconds in the status (Kaplan–Meier; from n ≥ 2 or final)
            p90_s duration* | p90 | 90th percentile of seconds in the status (Kaplan–Meier; n ≥ 10 or final)
            p99_s duration* | p99 | 99th percentile of seconds in the status (Kaplan–Meier; n ≥ 100 or final)
            max_s duration* | max | longest ended stay in the status
            since_created_p50_s duration* | since created p50 | median seconds from the operation's creation to
            + entering the status
            since_created_p90_s duration* | since created p90 | 90th percentile of seconds from creation to entering
            + the status
            censored count | censored | operations still in the status as of the newest event (right-censored)
            reentered count | re-entered | operations of the row that entered the status again after a later one
            notes
            """
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
                "it is read, else empty with the reason in notes; n is beside each. A percentile no open stay can "
                "change is final and shown whatever the group's size (its note says so).",
            ),
        ),
        view=View("latency", "Latency per status", "No operation entered a status in this period with these filters."),
    ),
    Metric(
        name="failure-rates",
        function="failure_rates",
        module="outcomes",
        by=("network", "chain_selector", "channel_id", "address"),
        options=("bucket",),
        title="Failure, expiry and cancel rates",
        definition=(
            "Outcomes of relayed operations: failed, expired and cancelled over relayed operations, the ones still "
            "in flight projected from finished ones (docs/metrics.md), each with its 95% interval."
        ),
        period="by creation: " + _BY_CREATION,
        filters=_NO_STATUS,
        needs="operation.status",
        columns=_cols(
            """
            network
            channel_id
            channel
            bucket
            operations count | operations | operations created in the period
            relayed count | relayed | operations relayed (drafts once relayed)
            terminal count | terminal | operations that reached a final status
            confirmed count | confirmed | operations confirmed
            failed count | failed | operations failed
            expired count | expired | operations expired
            cancelled count | cancelled | operations cancelled
            draft_expired count | draft expired | drafts that expired before being relayed
            draft_cancelled count | draft cancelled | drafts cancelled before being relayed
            unknown count | unknown | operations that ended in a status the toolkit does not know
            in_flight count | in flight | operations not finished as of the newest event (projected into the rates)
            failure_rate proportion* | failure rate | share of relayed operations that fail, in-flight ones projected
            failure_rate_low proportion | failure rate low | lower bound of the failure rate's 95% interval
            failure_rate_high proportion | failure rate high | upper bound of the failure rate's 95% interval
            expiry_rate proportion* | expiry rate | share of relayed operations that expire, in-flight ones projected
            expiry_rate_low proportion | expiry rate low | lower bound of the expiry rate's 95% interval
            expiry_rate_high proportion | expiry rate high | upper bound of the expiry rate's 95% interval
            cancel_rate proportion* | cancel rate | share of relayed operations cancelled, in-flight ones projected
            cancel_rate_low proportion | cancel rate low | lower bound of the cancel rate's 95% interval
            cancel_rate_high proportion | cancel rate high | upper bound of the cancel rate's 95% interval
            draft_expiry_rate proportion* | draft expiry rate | share of operations that expired as drafts, the waiting
            + drafts projected
            draft_expiry_rate_low proportion | draft expiry low | lower bound of the draft expiry rate's 95% interval
            draft_expiry_rate_high proportion | draft expiry high | upper bound of the draft expiry rate's 95% interval
            draft_cancel_rate proportion* | draft cancel rate | share of operations cancelled as drafts, the waiting
            + drafts at the median count of their cancellations
            draft_cancel_rate_low proportion | draft cancel low | lower bound of the draft cancel rate's 95% interval
            draft_cancel_rate_high proportion | draft cancel high | upper bound of the draft cancel rate's 95% interval
            """
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
        module="outcomes",
        by=("network", "chain_selector", "channel_id", "address"),
        options=("top",),
        title="Failure reasons",
        definition=(
            "The most frequent reasons of failed and expired operations, in categories (the first matching rule, "
            "a revert's own message first; docs/metrics.md, Failure reasons)."
        ),
        period="by creation: operations created in the period that failed or expired",
        filters=_ALL,
        needs="operation.status",
        columns=_cols(
            """
            network
            channel_id
            channel
            category text | category | the reason's category (the first matching rule)
            reason text | reason | the failure reason as the service gave it
            status text | status | the final status (failed or expired)
            operations count* | operations | operations that ended with this reason
            share proportion* | share | this reason's share of the failed and expired operations of the group
            category_operations count | category operations | operations of the reason's category
            category_share proportion | category share | the category's share of the group's failed and expired
            + operations
            rank count | rank | the reason's rank in its group (1: the most frequent)
            """
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
        module="finality",
        by=("network", "chain_selector", "channel_id"),
        title="Finality stages",
        definition=(
            "Per network: the share of relayed operations reaching the latest, safe and finalized stages (95% "
            "intervals), and Kaplan–Meier times to each stage and between stages."
        ),
        period="by creation: " + _BY_CREATION,
        filters=_NO_STATUS,
        needs="operation.status",
        columns=_cols(
            """
            network
            channel_id
            channel
            operations count | operations | relayed operations created in the period
            reached_latest count | reached latest | operations that reached the latest stage
            reached_safe count | reached safe | operations that reached the safe stage
            reached_finalized count | reached finalized | operations that reached the finalized stage
            failed count | failed | operations that failed
            in_flight count | in flight | operations not finished as of the newest event (projected into the shares)
            latest_share proportion* | latest share | share of relayed operations that reach the latest stage,
            + in-flight ones projected
            latest_share_low proportion | latest share low | lower bound of the latest share's 95% interval
            latest_share_high proportion | latest share high | upper bound of the latest share's 95% interval
            safe_share proportion* | safe share | share of relayed operations that reach the safe stage, in-flight ones
            + projected
            safe_share_low proportion | safe share low | lower bound of the safe share's 95% interval
            safe_share_high proportion | safe share high | upper bound of the safe share's 95% interval
            finalized_share proportion* | finalized share | share of relayed operations that reach the finalized stage,
            + in-flight ones projected
            finalized_share_low proportion | finalized share low | lower bound of the finalized share's 95% interval
            finalized_share_high proportion | finalized share high | upper bound of the finalized share's 95% interval
            failed_share proportion* | failed share | share of relayed operations that fail, in-flight ones projected
            failed_share_low proportion | failed share low | lower bound of the failed share's 95% interval
            failed_share_high proportion | failed share high | upper bound of the failed share's 95% interval
            latest_only_basis text | latest-only basis | why the network is taken as latest-only (it has no safe or
            + finalized stage)
            latest_only flag | latest only | whether the network confirms at the latest stage only
            revisits count | revisits | status entries again after a later status
            reorgs count | reorgs | moves back from a finality stage to broadcasting or earlier
            to_latest_p50_s duration* | to latest p50 | median seconds from creation to the latest stage (Kaplan–Meier)
            to_latest_p90_s duration* | to latest p90 | 90th percentile of seconds from creation to the latest stage
            + (Kaplan–Meier)
            to_safe_p50_s duration* | to safe p50 | median seconds from creation to the safe stage (Kaplan–Meier)
            to_safe_p90_s duration* | to safe p90 | 90th percentile of seconds from creation to the safe stage
            + (Kaplan–Meier)
            to_finalized_p50_s duration* | to finalized p50 | median seconds from creation to the finalized stage
            + (Kaplan–Meier)
            to_finalized_p90_s duration* | to finalized p90 | 90th percentile of seconds from creation to the finalized
            + stage (Kaplan–Meier)
            latest_to_safe_p50_s duration* | latest→safe p50 | median seconds from the latest stage to the safe stage
            + (Kaplan–Meier)
            latest_to_safe_p90_s duration* | latest→safe p90 | 90th percentile of seconds from the latest stage to the
            + safe stage (Kaplan–Meier)
            safe_to_finalized_p50_s duration* | safe→finalized p50 | median seconds from the safe stage to the
            + finalized stage (Kaplan–Meier)
            safe_to_finalized_p90_s duration* | safe→finalized p90 | 90th percentile of seconds from the safe stage to
            + the finalized stage (Kaplan–Meier)
            latest_to_finalized_p50_s duration* | latest→finalized p50 | median seconds from the latest stage to the
            + finalized stage (Kaplan–Meier)
            latest_to_finalized_p90_s duration* | latest→finalized p90 | 90th percentile of seconds from the latest
            + stage to the finalized stage (Kaplan–Meier)
            to_latest_censored count | to latest censored | operations still on the way from creation to the latest
            + stage (right-censored)
            to_safe_censored count | to safe censored | operations still on the way from creation to the safe stage
            + (right-censored)
            to_finalized_censored count | to finalized censored | operations still on the way from creation to the
            + finalized stage (right-censored)
            latest_to_safe_censored count | latest→safe censored | operations still on the way from the latest stage to
            + the safe stage (right-censored)
            safe_to_finalized_censored count | safe→finalized censored | operations still on the way from the safe
            + stage to the finalized stage (right-censored)
            latest_to_finalized_censored count | latest→finalized cens. | operations still on the way from the latest
            + stage to the finalized stage (right-censored)
            notes
            """
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
        module="queries",
        by=("network", "chain_selector", "channel_id", "outcome"),
        title="Chain queries",
        definition=(
            "Chain-query latency per stage (accepted, sending, sent, terminal; Kaplan–Meier percentiles) and "
            "failure and expiry rates with the in-flight estimate and 95% intervals."
        ),
        period="by creation: queries created in the period",
        filters=_ALL,
        needs="query.status",
        columns=_cols(
            """
            network
            channel_id
            channel
            outcome text | outcome | how the queries ended (completed, failed, expired, in flight)
            queries count | queries | chain queries created in the period
            completed count | completed | queries completed
            failed count | failed | queries failed
            expired count | expired | queries expired
            accepted_to_sending_p50_s duration* | accepted→sending p50 | median seconds from accepted to sending
            + (Kaplan–Meier)
            accepted_to_sending_p90_s duration* | accepted→sending p90 | 90th percentile of seconds from accepted to
            + sending (Kaplan–Meier)
            sending_to_sent_p50_s duration* | sending→sent p50 | median seconds from sending to sent (Kaplan–Meier)
            sending_to_sent_p90_s duration* | sending→sent p90 | 90th percentile of seconds from sending to sent
            + (Kaplan–Meier)
            sent_to_terminal_p50_s duration* | sent→terminal p50 | median seconds from sent to a final status
            + (Kaplan–Meier)
            sent_to_terminal_p90_s duration* | sent→terminal p90 | 90th percentile of seconds from sent to a final
            + status (Kaplan–Meier)
            accepted_to_terminal_p50_s duration* | accepted→terminal p50 | median seconds from accepted to a final
            + status (Kaplan–Meier)
            accepted_to_terminal_p90_s duration* | accepted→terminal p90 | 90th percentile of seconds from accepted to
            + a final status (Kaplan–Meier)
            accepted_to_sending_censored count | accepted→sending cens. | queries still on the way from accepted to
            + sending (right-censored)
            sending_to_sent_censored count | sending→sent censored | queries still on the way from sending to sent
            + (right-censored)
            sent_to_terminal_censored count | sent→terminal censored | queries still on the way from sent to a final
            + status (right-censored)
            accepted_to_terminal_censored count | accepted→terminal cens. | queries still on the way from accepted to a
            + final status (right-censored)
            notes
            finished count | finished | queries in a final status
            late_answers count | late answers | queries answered after their expires_at
            in_flight count | in flight | queries not finished as of the newest event (projected into the rates)
            failure_rate proportion* | failure rate | share of queries that fail, in-flight ones projected
            failure_rate_low proportion | failure rate low | lower bound of the failure rate's 95% interval
            failure_rate_high proportion | failure rate high | upper bound of the failure rate's 95% interval
            expiry_rate proportion* | expiry rate | share of queries that expire, in-flight ones projected
            expiry_rate_low proportion | expiry rate low | lower bound of the expiry rate's 95% interval
            expiry_rate_high proportion | expiry rate high | upper bound of the expiry rate's 95% interval
            """
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
        module="stuck",
        by=("network", "chain_selector", "channel_id", "address", "status"),
        options=("now",),
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
            """
            operation_id id | operation id | the stuck operation's id
            channel_id
            channel
            chain_selector
            network
            address
            status text | status | the status the operation is stuck in
            entered_at time | entered at | when the operation entered its status (UTC)
            age_s duration* | age | seconds in the status as of the newest event (or now=)
            threshold_s duration | threshold | seconds past which the operation counts as stuck
            threshold_basis text | threshold basis | where the threshold comes from (the network's p90, others', or the
            + default)
            network_p90_s duration | network p90 | the network's p90 of ended stays in the status
            """
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
        module="revisits",
        by=("network", "chain_selector", "channel_id"),
        title="Revisits and reorgs",
        definition=(
            "Operations that entered a status again, and reorgs: moves back from a finality stage to broadcasting "
            "or earlier (duplicated events are not revisits)."
        ),
        period="by creation: " + _BY_CREATION,
        filters=_NO_STATUS,
        needs="operation.status",
        columns=_cols(
            """
            network
            channel_id
            channel
            operations count | operations | operations created in the period
            operations_revisited count* | operations revisited | operations that entered a status again after a later
            + one
            revisits count* | revisits | status entries again after a later status
            operations_reorged count* | operations reorged | operations moved back from a finality stage
            reorgs count* | reorgs | moves back from a finality stage to broadcasting or earlier
            """
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
        module="queries_overdue",
        by=("network", "chain_selector", "channel_id", "status"),
        options=("now",),
        title="Overdue queries",
        definition="Chain queries past their expires_at with no terminal status, as of the newest event.",
        period="as of the newest event or --now; created in the period",
        filters=_NO_STATUS,
        needs="query.status",
        columns=_cols(
            """
            query_id id | query id | the overdue query's id
            channel_id
            channel
            chain_selector
            network
            status text | status | the query's status as of the newest event
            created_at time | created at | when the query was created (UTC)
            expires_at time | expires at | when the query was due (UTC)
            overdue_s duration* | overdue | seconds past expires_at as of the newest event (or now=)
            """
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
        module="proofs",
        by=("type", "status", "network", "chain_selector", "channel_id"),
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
            """
            type text | type | the event type
            network
            channel_id
            channel
            events count | events | events in the period
            must_have_proof count | must have proof | events that must carry a DON proof
            with_proof count | with proof | of those, the events that carry one
            missing_proof count | missing proof | events that must carry a proof and do not
            coverage proportion* | coverage | share of the events that must carry a proof and do
            coverage_low proportion | coverage low | lower bound of the coverage's 95% interval
            coverage_high proportion | coverage high | upper bound of the coverage's 95% interval
            min_signatures count | min signatures | the minimum number of signatures a proof needs
            enough_signatures count | enough signatures | proofs with at least the minimum of signatures
            too_few_signatures count | too few signatures | proofs with fewer signatures than the minimum
            signatures_min number | signatures min | fewest signatures on a proof
            signatures_p50 number | signatures p50 | median number of signatures on a proof
            signatures_max number | signatures max | most signatures on a proof
            unexpected_proofs count | unexpected proofs | proofs on events that need none
            verified count | verified | proofs chainops verify found valid
            invalid count* | invalid | proofs chainops verify found invalid
            verified_share proportion* | verified share | share of the events that must carry a proof whose proof
            + verified
            verified_share_low proportion | verified share low | lower bound of the verified share's 95% interval
            verified_share_high proportion | verified share high | upper bound of the verified share's 95% interval
            """
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
        module="watchers",
        by=("watcher_id", "channel_id", "network", "chain_selector"),
        options=("bucket",),
        title="Watcher activity",
        definition="Watcher events (and those with a proof) per watcher and time bucket.",
        period="by event time",
        filters=_NO_STATUS,
        needs="watcher.event",
        columns=_cols(
            """
            watcher_id id | watcher id | the watcher's id
            channel_id
            channel
            network
            bucket
            events count* | events | watcher events in the bucket
            with_proof count* | with proof | of those, the events that carry a DON proof
            name text | name | the watcher's name
            status text | status | the watcher's status (from its watcher.status events) in the bucket
            """
        ),
        default=("watcher_id", "name", "bucket", "events", "with_proof", "status"),
        report=(ReportTable("watcher_activity", "Watchers", note="Period: by event time."),),
    ),
    Metric(
        name="watcher-status-history",
        function="watcher_status_history",
        module="watchers",
        by=("watcher_id",),
        title="Watcher status history",
        definition="Each status a watcher entered, when, for how long, and why.",
        period="by the time the status was entered",
        filters=_ALL,
        needs="watcher.status",
        columns=_cols(
            """
            watcher_id id | watcher id | the watcher's id
            name text | name | the watcher's name
            channel_id
            channel
            chain_selector
            network
            status text | status | the status the watcher entered
            entered_at time | entered at | when the watcher entered the status (UTC)
            exited_at time | exited at | when it left the status (empty: still in it)
            next_status text | next status | the status it entered next
            seconds_in_status duration* | time in status | seconds in the status (to the next one, or none while still
            + in it)
            status_reason text | status reason | why the status was entered, as the service said
            """
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
    """``docs/metric-columns.md``: every metric with its definition, period, filters, groupings, needed events,
    default and all columns with their kinds, headers and descriptions (written by ``python -m
    toolkit.metrics.declarations``; a test keeps the file equal)."""
    lines = [
        "# Metrics: names, filters, columns and units",
        "",
        "Generated from `toolkit/metrics/declarations.py` by `python -m toolkit.metrics.declarations`; do not edit "
        "by hand. What each number means in full is in [metrics.md](metrics.md); how values are shown in "
        "[analyst-surface.md](analyst-surface.md).",
        "",
        "Kinds: `proportion` (a share in [0, 1], shown as a percentage with its `_low`/`_high` 95% interval), "
        "`duration` (seconds, shown in one unit per column), `count`, `number`, `time` (UTC), `id`, `text`, `flag`. "
        "A value column is one of the metric's own values (a narrow table keeps it).",
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
            f"- Grouping (`by`): {', '.join(f'`{c}`' for c in m.by) if m.by else 'none'}",
        ]
        if m.options:
            lines.append(f"- Options: {', '.join(f'`{o}`' for o in m.options)}")
        lines += [
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
        lines += [
            "",
            "| column | kind | header | value | description |",
            "|---|---|---|---|---|",
            *(
                f"| `{c.name}` | {c.kind} | {c.label()} | {'yes' if c.value else ''} | {c.description} |"
                for c in m.columns
            ),
        ]
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
    "write_docs",
]


def write_docs() -> str:
    """Write ``docs/metric-columns.md`` from the declarations; returns its path."""
    from pathlib import Path

    target = Path(__file__).resolve().parents[2] / "docs" / "metric-columns.md"
    target.write_text(markdown(), encoding="utf-8")
    return str(target)


if __name__ == "__main__":  # pragma: no cover
    print(f"wrote {write_docs()}")
