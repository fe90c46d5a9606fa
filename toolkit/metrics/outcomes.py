"""How operations end: failure, expiry and cancel rates, and the failure reasons in a taxonomy."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from datetime import timedelta

import numpy as np
import pandas as pd

from .. import spec
from ..warehouse.views import operation_attributes
from .common import (
    NO_FILTERS,
    Filters,
    Sql,
    WarehouseLike,
    bucket_sql,
    bucket_to_time,
    grouping,
    run,
    select_groups,
    sort_rows,
    status_categorical,
    takes_filters,
)
from .declarations import BY_NAME
from .drafts import draft_expiry_rates
from .inflight import Cohort, Ratio, cohort_counts, project

#: The terminal statuses :func:`failure_reasons` looks at unless told otherwise.
FAILURE_STATUSES: tuple[str, ...] = ("failed", "expired")
#: The columns it can group by, as declared (:mod:`.declarations`).
OPERATION_GROUPS = BY_NAME["failure-rates"].by

#: Failure taxonomy, in display order.
FAILURE_CATEGORIES: tuple[str, ...] = ("revert", "gas", "nonce", "chain_unavailable", "deadline", "other")
#: First matching rule wins; a reason matching none is ``other``. Patterns are matched case-insensitively.
#:
#: The order is the taxonomy's definition (docs/metrics.md, "Failure reasons"):
#:
#: 1. ``revert``: the chain executed the call and the contract refused it. Its own message wins over every word in
#:    it: ``execution reverted: UniswapV2Router: EXPIRED`` is the contract's deadline check, a revert, not ours.
#: 2. ``chain_unavailable``: the node or the link to it did not answer (``context deadline exceeded`` is Go's
#:    client timeout, ``dial tcp ...: i/o timeout``, 502/503, rate limits), before ``deadline`` and ``gas``.
#: 3. ``gas``: gas limit, price or fee, and funds to pay them: ``out of gas`` (the limit was too low),
#:    ``intrinsic gas too low``, ``insufficient funds for gas * price + value``, ``max fee per gas less than block
#:    base fee``, and ``replacement transaction underpriced`` (a fee too low to replace a pending transaction: the
#:    fix is a higher fee, not another nonce).
#: 4. ``nonce``: ``nonce too low/high``, ``already known``, ``known transaction``, an invalid nonce.
#: 5. ``deadline``: our own deadline or time-to-live (``deadline elapsed before the draft was signed``).
FAILURE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("revert", re.compile(r"revert", re.I)),
    (
        "chain_unavailable",
        re.compile(
            r"chain unavailable|unavailable|\brpc\b|context deadline exceeded|i/o timeout|dial tcp|timeout|timed out"
            r"|connection (?:refused|reset|closed)|\bconnection\b|no such host|network is unreachable|\beof\b"
            r"|bad gateway|gateway time|too many requests|\b50[234]\b|\b429\b",
            re.I,
        ),
    ),
    (
        "gas",
        re.compile(
            r"\bgas\b|\bfees?\b|insufficient funds|underpriced|fee cap|tip cap|base ?fee",
            re.I,
        ),
    ),
    ("nonce", re.compile(r"nonce|already known|known transaction", re.I)),
    ("deadline", re.compile(r"deadline|time[- ]to[- ]live|\bttl\b|expired", re.I)),
)


def classify_failure(reason: str | None, status: str | None = None) -> str:
    """The taxonomy category of a failure: revert, gas, nonce, chain_unavailable, deadline or other.

    Arguments: ``reason`` the raw ``status_reason``; ``status`` the terminal status (``expired`` is always
    ``deadline``). The first of :data:`FAILURE_RULES` that matches wins (a revert's own message before any other
    word in it). Returns the category name.
    """
    if status == spec.OperationStatus.EXPIRED:
        return "deadline"
    for category, pattern in FAILURE_RULES:
        if reason and pattern.search(reason):
            return category
    return "other"


_S = spec.OperationStatus
#: Every outcome of an operation (``docs/metrics.md``), in display order; NULL is in flight.
OPERATION_OUTCOMES: tuple[str, ...] = (
    "confirmed",
    "failed",
    "expired",
    "cancelled",
    "draft_expired",
    "draft_cancelled",
    "unknown",
)


def _lit(value: str) -> str:
    """A vocabulary value (never user input) as an SQL literal."""
    if not re.fullmatch(r"[a-z_]+", value):
        raise ValueError(f"not a vocabulary value: {value!r}")
    return f"'{value}'"


def _lits(values: Sequence[str]) -> str:
    return ", ".join(_lit(v) for v in values)


def latest_only_sql() -> str:
    """Chain selectors where only the latest stage is active, with the ``basis`` of that decision.

    The network's ``type`` decides: a ``mainnet`` never is; a ``testnet`` is unless an operation on it ever reached
    ``confirmed_safe`` or ``confirmed`` (``basis = 'testnet'``); without a type (optional in 0.8) the same
    inference, on a network where operations reached ``confirmed_latest`` (``basis = 'inferred'``).
    """
    return f"""
    SELECT l.chain_selector,
        CASE WHEN any_value(n.network_type) = {_lit(spec.ChainEnvironment.TESTNET)} THEN 'testnet' ELSE 'inferred' END
            AS basis
    FROM operation_lifecycle l
    LEFT JOIN networks n ON n.chain_selector = l.chain_selector
    GROUP BY l.chain_selector
    HAVING count(l.confirmed_safe_at) = 0 AND count(l.confirmed_at) = 0
       AND count(*) FILTER (WHERE l.terminal_status = {_lit(_S.CONFIRMED)}) = 0
       AND CASE coalesce(any_value(n.network_type), '')
           WHEN {_lit(spec.ChainEnvironment.MAINNET)} THEN false
           WHEN {_lit(spec.ChainEnvironment.TESTNET)} THEN true
           ELSE count(l.confirmed_latest_at) > 0 END
    """


def latest_only_basis_sql(network_type: str = "network_type") -> str:
    """An aggregate: how a group's latest-only reading was decided: ``'inferred'`` when a network in it has no
    known type, ``'testnet'`` when one is a testnet, NULL when all are mainnets (never latest-only)."""
    known = _lits([spec.ChainEnvironment.MAINNET, spec.ChainEnvironment.TESTNET])
    return f"""CASE WHEN bool_or(coalesce({network_type}, '') NOT IN ({known})) THEN 'inferred'
        WHEN bool_or({network_type} = {_lit(spec.ChainEnvironment.TESTNET)}) THEN 'testnet' END"""


def outcome_sql() -> str:
    """An operation's outcome (``docs/metrics.md``): confirmed, failed, expired, cancelled, draft_expired,
    draft_cancelled or unknown; NULL while in flight. Reads ``relayed`` and the CTE ``latest_only``."""
    ended = _lits([_S.CONFIRMED, _S.FAILED])
    return f"""CASE WHEN terminal_status IN ({ended}) THEN terminal_status
         WHEN terminal_status IS NOT NULL THEN CASE WHEN relayed THEN terminal_status
                                                    ELSE 'draft_' || terminal_status END
         WHEN last_status = {_lit(_S.CONFIRMED_LATEST)}
              AND chain_selector IN (SELECT chain_selector FROM latest_only) THEN {_lit(_S.CONFIRMED)}
         WHEN last_status IS NOT NULL AND last_status NOT IN ({_lits(spec.OPERATION_STATUSES)}) THEN 'unknown'
         END"""


def operation_cohort(
    q: Sql,
    keys: Sequence[tuple[str, str]],
    indicators: Mapping[str, str],
    counts: Mapping[str, str],
    scope: str = "TRUE",
) -> Cohort:
    """The operations of a metric as a :class:`~toolkit.metrics.inflight.Cohort` for the in-flight projection.

    Arguments: ``q`` the filters' clauses (on ``operation_lifecycle`` columns); ``keys`` (SQL, name) of the
    grouping; ``indicators`` name -> 0/1 SQL over an operation's outcome attributes (``outcome``, ``terminal_status``,
    ``last_status``, ``network_type`` and those of :func:`~toolkit.warehouse.views.operation_attributes`:
    ``relayed``, ``stage_relayed``, ``reached_latest``, ...); ``counts`` exact aggregates over the operations;
    ``scope`` a condition over the same attributes on both the cohort and its reference history (for example only
    relayed operations). The units are the operations of ``operation_lifecycle``; the history is
    ``operation_stay_reference`` (the stays of every operation, counted), read with the same attributes, so the two
    agree by construction. Returns the cohort.
    """
    inds = "".join(f"({sql})::INTEGER AS {name}, " for name, sql in indicators.items())
    attrs = "".join(f"{sql} AS {name}, " for name, sql in operation_attributes("l").items())
    ctes = f"""
latest_only AS ({latest_only_sql()}),
ops_base AS (
    SELECT {attrs}l.*, n.network_type
    FROM operation_lifecycle l LEFT JOIN networks n ON n.chain_selector = l.chain_selector
),
ops_all AS (
    SELECT *, outcome IS NOT NULL AS finished FROM (SELECT *, {outcome_sql()} AS outcome FROM ops_base) AS o
),
ops_ind AS (SELECT {inds} * FROM ops_all WHERE {scope})"""
    units = f"SELECT *, last_status AS status, last_status_at AS entered_at FROM ops_ind {q.where()}"
    # the reference's stays, each read as its operation: the operation's network decides its outcome
    history = f"""
        SELECT stay_chain_selector AS chain_selector, stay_status AS status, bin, stays, {", ".join(indicators)}
        FROM (
            SELECT {inds} * FROM (
                SELECT *, {outcome_sql()} AS outcome FROM (
                    SELECT r.* EXCLUDE (chain_selector, op_chain_selector, status),
                        r.chain_selector AS stay_chain_selector, r.status AS stay_status,
                        r.op_chain_selector AS chain_selector, n.network_type
                    FROM operation_stay_reference r LEFT JOIN networks n ON n.chain_selector = r.op_chain_selector
                ) AS r0
            ) AS r1
            WHERE outcome IS NOT NULL AND {scope}
        ) AS r2"""
    return Cohort(units, history, keys, list(indicators), counts, q.params, ctes)


#: The rates over the operations relayed so far (shares of that cohort), shared with ``finality_breakdown``.
RELAYED_RATES = (
    Ratio("failure_rate", "failed"),
    Ratio("expiry_rate", "expired"),
    Ratio("cancel_rate", "cancelled"),
)
#: Their order in :func:`failure_rates`' output.
_RATE_ORDER = ("failure_rate", "expiry_rate", "cancel_rate", "draft_expiry_rate", "draft_cancel_rate")


def relayed_rates(warehouse: WarehouseLike, q: Sql, keys: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """``failure_rate``, ``expiry_rate`` and ``cancel_rate`` (each with ``_low``/``_high``) per group of ``keys``:
    shares of the operations of ``q`` relayed so far, with their in-flight projection (:mod:`.inflight`).

    A draft still waiting for its signature is not in this cohort: it enters it when it is relayed. The one
    definition behind ``failure_rates``' ``failure_rate`` and ``finality_breakdown``'s ``failed_share``, so that
    the two agree (docs/metrics.md, "One failure figure"). Returns one row per group with relayed operations.
    """
    indicators = {r.numerator: f"outcome = {_lit(r.numerator)}" for r in RELAYED_RATES}
    cohort = operation_cohort(q, keys, indicators, {}, scope="relayed")
    return project(warehouse, cohort, RELAYED_RATES).drop(columns=["in_flight"])


def _rate_counts() -> dict[str, str]:
    counts = {
        "operations": "count(*)",
        "relayed": "count(*) FILTER (WHERE relayed)",
        "terminal": "count(*) FILTER (WHERE relayed AND finished)",
    }
    counts |= {o: f"count(*) FILTER (WHERE outcome = {_lit(o)})" for o in OPERATION_OUTCOMES}
    return counts


@takes_filters()
def failure_rates(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
    by: Sequence[str] = ("network",),
    bucket: str | int | timedelta | None = None,
) -> pd.DataFrame:
    """Outcomes of operations created in the period (``docs/metrics.md``), and failure, expiry and cancel rates
    that account for the operations still in flight, with 95% intervals.

    One row per group of ``by`` (any of ``network``, ``chain_selector``, ``channel_id``, ``address`` — the wallet)
    and per ``bucket`` of ``created_at``. Counts (exact, of what has happened by the newest event):
    ``operations``; ``relayed`` (reached ``accepted`` or later); ``terminal`` (relayed and ended); one per outcome:
    ``confirmed`` (``confirmed``, or ``confirmed_latest`` on a latest-only network), ``failed``, ``expired``,
    ``cancelled`` (relayed only), ``draft_expired``, ``draft_cancelled`` (ended while ``pending_signature``),
    ``unknown`` (last status not in the vocabulary: its own outcome, never in flight); ``in_flight`` the others.

    Rates: ``failure_rate``, ``expiry_rate``, ``cancel_rate`` are shares of the operations *relayed so far* (a
    draft still waiting for its signature enters the cohort when it is relayed; the same figure as
    ``finality_breakdown``'s ``failed_share``); ``draft_expiry_rate`` and ``draft_cancel_rate`` of all operations.
    ``draft_expiry_rate`` and ``draft_cancel_rate`` project the drafts still waiting on their own clock (:mod:`.drafts`:
    the product-limit estimate of staying a draft over the share of the deadline window passed, or the seconds
    waited without a deadline, with the share of the exits that were cancellations; drafts still waiting censored). Each
    estimates the value the group will have once every operation in it has finished: in-flight operations count with the
    outcome probabilities of finished operations that were in the same status at the same age
    (:mod:`toolkit.metrics.inflight`), and ``<rate>_low``/``<rate>_high`` is a 95% interval that includes that
    projection's uncertainty (the plain Wilson interval when nothing is in flight).

    Returns the DataFrame (``bucket`` tz-aware UTC).
    """
    cols = grouping(by, OPERATION_GROUPS, "failure_rates")
    q = where.sql("created_at")
    bucket_expr = bucket_sql(q, "created_at", bucket)
    keys = [(c, c) for c in cols] + ([(bucket_expr, "bucket")] if bucket_expr else [])
    cohort = operation_cohort(q, keys, {}, _rate_counts())
    # the counts and in_flight; the relayed rates are projected apart, both draft rates on the drafts' own clock
    df = cohort_counts(warehouse, cohort)
    names = [name for _, name in keys]
    relayed = relayed_rates(warehouse, q, keys)
    drafts = draft_expiry_rates(warehouse, cohort.ctes, cohort.units, keys, cohort.params)
    for extra in (relayed, drafts):
        df = df.merge(extra, on=names, how="left") if names else pd.concat([df, extra], axis=1)
    order = ["operations", "relayed", "terminal", *OPERATION_OUTCOMES, "in_flight"]
    rates = [c for r in _RATE_ORDER for c in (r, f"{r}_low", f"{r}_high")]
    df = df[[*(name for _, name in keys), *order, *rates]]
    return sort_rows(bucket_to_time(df), [*cols, "bucket"])


@takes_filters()
def failure_reasons(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
    by: Sequence[str] = (),
    top: int | None = 10,
) -> pd.DataFrame:
    """The most frequent failure reasons, in a taxonomy (revert, gas, nonce, chain_unavailable, deadline, other)
    that keeps the raw text.

    Operations created in the period whose terminal status is in ``status`` (default failed and expired), grouped
    by ``by`` (any of ``network``, ``chain_selector``, ``channel_id``, ``address``). One row per group, category
    and raw reason: ``operations``, ``share`` of the group's failures, the category's total and share, and the
    reason's ``rank`` in the group; only the ``top`` reasons of each group are kept (None keeps all).

    Returns the DataFrame (``category`` and ``status`` ordered categoricals).
    """
    cols = grouping(by, OPERATION_GROUPS, "failure_reasons")
    if where.status is None:
        where = dataclasses.replace(where, status=FAILURE_STATUSES)
    q = where.sql("created_at", status_column="terminal_status")
    q.clauses.append("terminal_status IS NOT NULL")
    select, _ = select_groups(cols)
    sql = f"""
        SELECT {select} terminal_status AS status, coalesce(status_reason, '') AS reason, count(*) AS operations
        FROM operation_lifecycle
        {q.where()}
        GROUP BY {", ".join([*cols, "terminal_status", "coalesce(status_reason, '')"])}
    """
    return _reason_table(run(warehouse, sql, q.params), cols, top)


def _reason_table(df: pd.DataFrame, cols: list[str], top: int | None) -> pd.DataFrame:
    pairs = df[["reason", "status"]].drop_duplicates()
    category = {(r, s): classify_failure(r, s) for r, s in pairs.itertuples(index=False)}
    df["category"] = [category[(r, s)] for r, s in zip(df["reason"], df["status"], strict=True)]
    if cols:
        group_total = df.groupby(cols, dropna=False)["operations"].transform("sum")
    else:
        group_total = pd.Series(df["operations"].sum(), index=df.index)
    df["share"] = df["operations"] / group_total
    df["category_operations"] = df.groupby([*cols, "category"], dropna=False)["operations"].transform("sum")
    df["category_share"] = df["category_operations"] / group_total
    df = df.sort_values([*cols, "operations", "reason"], ascending=[True] * len(cols) + [False, True], kind="stable")
    df["rank"] = df.groupby(cols, dropna=False).cumcount() + 1 if cols else np.arange(1, len(df) + 1)
    if top is not None:
        df = df[df["rank"] <= top].copy()
    df["category"] = pd.Categorical(df["category"], categories=FAILURE_CATEGORIES, ordered=True)
    df["status"] = status_categorical(df["status"])
    out = df[
        [*cols, "category", "reason", "status", "operations", "share", "category_operations", "category_share", "rank"]
    ]
    return out.reset_index(drop=True)
