"""How operations end: failure, expiry and cancel rates, and the failure reasons in a taxonomy."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from datetime import timedelta

import numpy as np
import pandas as pd

from .. import spec
from .common import (
    Filters,
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
from .stats import rates

#: The terminal statuses :func:`failure_reasons` looks at unless told otherwise.
FAILURE_STATUSES: tuple[str, ...] = ("failed", "expired")
OPERATION_GROUPS = ("network", "chain_selector", "channel_id", "address")

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


def latest_only_sql() -> str:
    """Chain selectors where only the latest stage is active: operations reach ``confirmed_latest`` and none ever
    reach ``confirmed_safe`` or ``confirmed``, on a network not listed as a mainnet."""
    return """
    SELECT l.chain_selector FROM operation_lifecycle l
    LEFT JOIN networks n ON n.chain_selector = l.chain_selector
    GROUP BY l.chain_selector
    HAVING count(l.confirmed_latest_at) > 0 AND count(l.confirmed_safe_at) = 0 AND count(l.confirmed_at) = 0
       AND coalesce(any_value(n.network_type), '') <> 'mainnet'
    """


def outcome_sql() -> str:
    """An operation's outcome: its terminal status, or ``confirmed`` for ``confirmed_latest`` on a latest-only
    network; NULL while in flight."""
    return """CASE WHEN terminal_status IS NOT NULL THEN terminal_status
         WHEN last_status = 'confirmed_latest' AND chain_selector IN (SELECT chain_selector FROM latest_only)
         THEN 'confirmed' END"""


@takes_filters("channel", "network", "since", "until")
def failure_rates(
    warehouse: WarehouseLike = None,
    *,
    where: Filters,
    by: Sequence[str] = ("network",),
    bucket: str | int | timedelta | None = None,
) -> pd.DataFrame:
    """Outcomes of operations created in the period: counts, and failure, expiry and cancel rates with 95% Wilson
    intervals.

    One row per group of ``by`` (any of ``network``, ``chain_selector``, ``channel_id``, ``address`` — the wallet)
    and per ``bucket`` of ``created_at``. ``terminal`` counts operations that reached an end: a terminal status, or
    ``confirmed_latest`` on a network where only the latest stage is active (counted as ``confirmed``);
    ``in_flight`` the others. Each rate is a share of ``terminal``, with ``<rate>_low``/``<rate>_high``.

    Returns the DataFrame (``bucket`` tz-aware UTC).
    """
    cols = grouping(by, OPERATION_GROUPS, "failure_rates")
    q = where.sql("created_at")
    bucket_expr = bucket_sql(q, "created_at", bucket)
    select, group = select_groups(cols, bucket_expr)
    sql = f"""
        WITH latest_only AS ({latest_only_sql()}),
        ops AS (SELECT *, {outcome_sql()} AS outcome FROM operation_lifecycle)
        SELECT {select}
            count(*) AS operations,
            count(outcome) AS terminal,
            count(*) FILTER (WHERE outcome = 'confirmed') AS confirmed,
            count(*) FILTER (WHERE outcome = 'failed') AS failed,
            count(*) FILTER (WHERE outcome = 'expired') AS expired,
            count(*) FILTER (WHERE outcome = 'cancelled') AS cancelled,
            count(*) - count(outcome) AS in_flight
        FROM ops
        {q.where()}
        GROUP BY {group}
    """
    df = run(warehouse, sql, q.params)
    df = rates(df, ("failed", "expired", "cancelled"), "terminal", ("failure_rate", "expiry_rate", "cancel_rate"))
    return sort_rows(bucket_to_time(df), [*cols, "bucket"])


@takes_filters("channel", "network", "status", "since", "until")
def failure_reasons(
    warehouse: WarehouseLike = None,
    *,
    where: Filters,
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
