"""Chain-query latency and outcomes."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .. import spec
from .common import (
    Filters,
    WarehouseLike,
    grouping,
    run,
    select_groups,
    sort_rows,
    status_categorical,
    takes_filters,
)
from .stats import quantiles, rates, with_quantiles

QUERY_GROUPS = ("network", "chain_selector", "channel_id", "outcome")
QUERY_OUTCOMES: tuple[str, ...] = (*(s for s in spec.QUERY_STATUSES if s in spec.QUERY_TERMINAL), "in_flight")

_QUERY_TIMES = {
    "accepted_to_sending": "epoch(sending_at) - epoch(accepted_at)",
    "sending_to_sent": "epoch(sent_at) - epoch(sending_at)",
    "sent_to_terminal": "epoch(terminal_at) - epoch(sent_at)",
    "accepted_to_terminal": "seconds_accepted_to_terminal",
}
_QUERY_COUNTS = ("queries", "completed", "failed", "expired")


@takes_filters("channel", "network", "status", "since", "until")
def query_latency(
    warehouse: WarehouseLike = None,
    *,
    where: Filters,
    by: Sequence[str] = ("network", "outcome"),
) -> pd.DataFrame:
    """Chain-query latencies per stage (p50/p90 seconds) and expiry and failure rates.

    Queries created in the period, grouped by ``by`` (any of ``network``, ``chain_selector``, ``channel_id``,
    ``outcome`` — completed, failed, expired or in_flight). Times: ``accepted_to_sending``, ``sending_to_sent``,
    ``sent_to_terminal``, ``accepted_to_terminal``. Rates (shares of the ``finished`` queries, with 95% Wilson
    intervals) are computed over the group without its outcome, so the rows of one network share them. ``status``
    filters on the query's status.

    Returns the DataFrame (``outcome`` an ordered categorical).
    """
    cols = grouping(by, QUERY_GROUPS, "query_latency")
    q = where.sql("created_at", status_column="status")
    select, group = select_groups(cols, exprs={"outcome": "coalesce(terminal_status, 'in_flight')"})
    aggs, outer = [], []
    for name, expr in _QUERY_TIMES.items():
        agg, out = quantiles(expr, name)
        aggs.append(agg)
        outer += out
    inner = f"""
        SELECT {select}
            count(*) AS queries,
            count(*) FILTER (WHERE terminal_status = 'completed') AS completed,
            count(*) FILTER (WHERE terminal_status = 'failed') AS failed,
            count(*) FILTER (WHERE terminal_status = 'expired') AS expired,
            {", ".join(aggs)}
        FROM query_lifecycle
        {q.where()}
        GROUP BY {group}
    """
    df = run(warehouse, with_quantiles(inner, [*cols, *_QUERY_COUNTS], outer), q.params)
    df = _query_rates(df, [c for c in cols if c != "outcome"])
    if "outcome" in df.columns:
        df["outcome"] = status_categorical(df["outcome"], QUERY_OUTCOMES)
    return sort_rows(df, cols)


def _query_rates(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Failure and expiry rates of finished queries over the groups of ``keys`` (all rows when empty)."""
    counts = ["completed", "failed", "expired"]
    if keys:
        totals = df.groupby(keys, dropna=False)[counts].transform("sum")
    else:
        totals = pd.DataFrame({c: df[c].sum() for c in counts}, index=df.index)
    df["finished"] = totals.sum(axis=1)
    df["_failed"], df["_expired"] = totals["failed"], totals["expired"]
    df = rates(df, ("_failed", "_expired"), "finished", ("failure_rate", "expiry_rate"))
    return df.drop(columns=["_failed", "_expired"])
