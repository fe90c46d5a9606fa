"""How far relayed operations got through the finality stages, and how long each stage took."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .common import (
    Filters,
    WarehouseLike,
    grouping,
    run,
    select_groups,
    sort_rows,
    takes_filters,
)
from .inflight import Ratio, project
from .outcomes import latest_only_basis_sql, latest_only_sql, operation_cohort
from .stats import quantiles, with_quantiles

FINALITY_GROUPS = ("network", "chain_selector", "channel_id")

FINALITY_TIMES: dict[str, tuple[str, str]] = {
    "to_latest": ("confirmed_latest_at", "accepted_at"),
    "to_safe": ("confirmed_safe_at", "accepted_at"),
    "to_finalized": ("confirmed_at", "accepted_at"),
    "latest_to_safe": ("confirmed_safe_at", "confirmed_latest_at"),
    "safe_to_finalized": ("confirmed_at", "confirmed_safe_at"),
    "latest_to_finalized": ("confirmed_at", "confirmed_latest_at"),
}
_RELAYED = (
    "coalesce(accepted_at, sending_at, sent_at, broadcasting_at, confirmed_latest_at, confirmed_safe_at, "
    "confirmed_at, failed_at) IS NOT NULL"
)
_FINALITY_COUNTS = ("operations", "reached_latest", "reached_safe", "reached_finalized", "failed", "latest_only")


@takes_filters("channel", "network", "since", "until")
def finality_breakdown(
    warehouse: WarehouseLike = None,
    *,
    where: Filters,
    by: Sequence[str] = ("network",),
) -> pd.DataFrame:
    """How far relayed operations got through the finality stages, and how long each stage took.

    Operations created in the period that were accepted for relay, grouped by ``by`` (any of ``network``,
    ``chain_selector``, ``channel_id``). Counts: ``operations``, ``reached_latest``, ``reached_safe``,
    ``reached_finalized`` (a later stage implies the earlier ones, even when an event is missing), ``failed``, and
    ``in_flight`` (not ended by the newest event). Shares (``latest_share``, ``safe_share``, ``finalized_share``,
    ``failed_share``, each with ``<share>_low``/``<share>_high``, a 95% interval) estimate the value the group will
    have once every operation in it has finished: in-flight operations count with the outcome probabilities of
    finished operations that were in the same status at the same age (:mod:`toolkit.metrics.inflight`).
    Times (p50/p90 seconds): from ``accepted`` to each stage (``to_latest``, ``to_safe``,
    ``to_finalized``) and between stages (``latest_to_safe``, ``safe_to_finalized``, ``latest_to_finalized``),
    from the stages' own events. ``latest_only`` is True for networks where only the latest stage is active: the
    network's type decides (a mainnet never is; a testnet is unless an operation on it reached ``confirmed_safe``
    or ``confirmed``), and ``latest_only_basis`` says how (``testnet``; ``inferred`` for a network without a type,
    read from its operations; NULL for mainnets).

    Returns the DataFrame.
    """
    cols = grouping(by, FINALITY_GROUPS, "finality_breakdown")
    q = where.sql("created_at")
    q.clauses.append(_RELAYED)
    select, group = select_groups(cols)
    aggs, outer = [], []
    for name, (end, start) in FINALITY_TIMES.items():
        agg, out = quantiles(f"epoch({end}) - epoch({start})", name)
        aggs.append(agg)
        outer += out
    inner = f"""
        WITH latest_only AS ({latest_only_sql()})
        SELECT {select}
            count(*) AS operations,
            count(coalesce(confirmed_latest_at, confirmed_safe_at, confirmed_at)) AS reached_latest,
            count(coalesce(confirmed_safe_at, confirmed_at)) AS reached_safe,
            count(confirmed_at) AS reached_finalized,
            count(*) FILTER (WHERE terminal_status = 'failed') AS failed,
            bool_and(chain_selector IN (SELECT chain_selector FROM latest_only)) AS latest_only,
            {", ".join(aggs)}
        FROM operation_lifecycle
        {q.where()}
        GROUP BY {group}
    """
    df = run(warehouse, with_quantiles(inner, [*cols, *_FINALITY_COUNTS], outer), q.params)
    df["latest_only"] = df["latest_only"].astype(bool)
    df, shares = _projected_shares(warehouse, where, cols, df)
    df = df[[*cols, *_FINALITY_COUNTS[:5], *shares, "latest_only", *[c for c in df.columns if c.endswith("_s")]]]
    return sort_rows(df, cols)


#: The shares of :func:`finality_breakdown`: name -> indicator (SQL over an operation) of its final outcome.
_SHARES = {
    "latest_share": "coalesce(confirmed_latest_at, confirmed_safe_at, confirmed_at) IS NOT NULL",
    "safe_share": "coalesce(confirmed_safe_at, confirmed_at) IS NOT NULL",
    "finalized_share": "confirmed_at IS NOT NULL",
    "failed_share": "outcome = 'failed'",
}


def _projected_shares(
    warehouse: WarehouseLike, where: Filters, cols: list[str], df: pd.DataFrame
) -> tuple[pd.DataFrame, list[str]]:
    """Add the in-flight-aware shares of the finality stages (``<share>``, ``<share>_low``, ``<share>_high``),
    ``in_flight`` (relayed operations not ended) and ``latest_only_basis`` to the counts ``df``.

    Each share estimates the value the group will have once its operations have finished
    (:mod:`toolkit.metrics.inflight`). Returns the frame and the new columns in order.
    """
    q = where.sql("created_at")
    indicators = {f"i_{name}": sql for name, sql in _SHARES.items()}
    counts = {"latest_only_basis": latest_only_basis_sql()}
    cohort = operation_cohort(q, [(c, c) for c in cols], indicators, counts, scope=_RELAYED)
    ratios = [Ratio(name, f"i_{name}") for name in _SHARES]
    shares = project(warehouse, cohort, ratios)
    merged = df.merge(shares, on=cols, how="left") if cols else pd.concat([df, shares], axis=1)
    merged["in_flight"] = merged["in_flight"].fillna(0).astype("int64")
    new = [c for r in ratios for c in (r.name, f"{r.name}_low", f"{r.name}_high")]
    return merged, ["in_flight", *new, "latest_only_basis"]


@takes_filters("channel", "network", "since", "until")
def finality_times(
    warehouse: WarehouseLike = None,
    *,
    where: Filters,
) -> pd.DataFrame:
    """Per operation that reached a finality stage: network and the seconds of each stage time of
    :func:`finality_breakdown` (NaN when a stage's event is missing). The input of stage-time distribution plots.

    Arguments: the common filters (on ``created_at``). Returns one row per operation.
    """
    q = where.sql("created_at")
    q.clauses.append("coalesce(confirmed_latest_at, confirmed_safe_at, confirmed_at) IS NOT NULL")
    times = ", ".join(f"epoch({end}) - epoch({start}) AS {name}_s" for name, (end, start) in FINALITY_TIMES.items())
    sql = f"SELECT operation_id, network, {times} FROM operation_lifecycle {q.where()} ORDER BY network, operation_id"
    return run(warehouse, sql, q.params)
