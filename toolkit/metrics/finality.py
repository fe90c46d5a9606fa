"""How far relayed operations got through the finality stages, and how long each stage took."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..warehouse.views import stage_relayed_sql
from .common import (
    NO_FILTERS,
    Filters,
    WarehouseLike,
    grouping,
    latest_event_time,
    run,
    select_groups,
    sort_rows,
    takes_filters,
)
from .declarations import BY_NAME
from .inflight import Ratio, project
from .outcomes import latest_only_basis_sql, latest_only_sql, operation_cohort, relayed_rates
from .revisits import revisits
from .survival import in_flight_operations_sql, with_km_times

#: The columns it can group by, as declared (:mod:`.declarations`).
FINALITY_GROUPS = BY_NAME["finality-breakdown"].by

FINALITY_TIMES: dict[str, tuple[str, str]] = {
    "to_latest": ("confirmed_latest_at", "accepted_at"),
    "to_safe": ("confirmed_safe_at", "accepted_at"),
    "to_finalized": ("confirmed_at", "accepted_at"),
    "latest_to_safe": ("confirmed_safe_at", "confirmed_latest_at"),
    "safe_to_finalized": ("confirmed_at", "confirmed_safe_at"),
    "latest_to_finalized": ("confirmed_at", "confirmed_latest_at"),
}
#: The percentiles of each finality time, and the finality stages' columns from weakest to strongest.
FINALITY_PERCENTILES = (0.5, 0.9)
_STAGE_COLUMNS = ("confirmed_latest_at", "confirmed_safe_at", "confirmed_at")
#: The cohort: operations with the time of a relay stage or of their failure.
_RELAYED = stage_relayed_sql()
_FINALITY_COUNTS = ("operations", "reached_latest", "reached_safe", "reached_finalized", "failed", "latest_only")


@takes_filters()
def finality_breakdown(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
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
    ``failed_share`` is :func:`~.outcomes.failure_rates`' ``failure_rate`` of the same group and period (one
    definition: the share of the operations relayed so far that fail).
    Times (p50/p90 seconds): from ``accepted`` to each stage (``to_latest``, ``to_safe``,
    ``to_finalized``) and between stages (``latest_to_safe``, ``safe_to_finalized``, ``latest_to_finalized``),
    from the stages' own events. ``latest_only`` is True for networks where only the latest stage is active: the
    network's type decides (a mainnet never is; a testnet is unless an operation on it reached ``confirmed_safe``
    or ``confirmed``), and ``latest_only_basis`` says how (``testnet``; ``inferred`` for a network without a type,
    read from its operations; NULL for mainnets). ``revisits`` and ``reorgs`` count statuses entered again and
    moves from a finality stage back to ``broadcasting`` or earlier (:func:`toolkit.metrics.revisits.revisits`).

    The times are Kaplan–Meier percentiles (:mod:`.survival`): an operation still in flight that has passed the
    start stage but not reached the end stage is right-censored at the as-of time (the newest event time), counted
    in ``<time>_censored``. An operation that ended (failed, expired, cancelled) without reaching the stage is not
    an observation of that time (a competing outcome, excluded rather than censored: it will never get there); nor
    is ``confirmed_safe``/``confirmed`` on a latest-only network. A percentile is NULL below the sample-size rule
    (p50 from 2 observations, p90 from 10) or while the curve has not reached its level, and ``notes`` says why.

    Returns the DataFrame.
    """
    cols = grouping(by, FINALITY_GROUPS, "finality_breakdown")
    q = where.sql("created_at")
    q.clauses.append(_RELAYED)
    select, group = select_groups(cols)
    inner = f"""
        WITH latest_only AS ({latest_only_sql()})
        SELECT {select}
            count(*) AS operations,
            count(coalesce(confirmed_latest_at, confirmed_safe_at, confirmed_at)) AS reached_latest,
            count(coalesce(confirmed_safe_at, confirmed_at)) AS reached_safe,
            count(confirmed_at) AS reached_finalized,
            count(*) FILTER (WHERE terminal_status = 'failed') AS failed,
            bool_and(chain_selector IN (SELECT chain_selector FROM latest_only)) AS latest_only
        FROM operation_lifecycle
        {q.where()}
        GROUP BY {group}
    """
    df = run(warehouse, inner, q.params)
    df["latest_only"] = df["latest_only"].astype(bool)
    df, shares = _projected_shares(warehouse, where, cols, df)
    df = df[[*cols, *_FINALITY_COUNTS[:5], *shares, "latest_only"]]
    df = _with_reorgs(df, warehouse, where, cols)
    df = _with_finality_times(df, warehouse, where, cols)
    return sort_rows(df, cols)


def _with_reorgs(df: pd.DataFrame, warehouse: WarehouseLike, where: Filters, cols: list[str]) -> pd.DataFrame:
    """``df`` with ``revisits`` and ``reorgs`` of each group (:func:`toolkit.metrics.revisits.revisits`)."""
    moves = revisits(warehouse, where=where, by=cols)[[*cols, "revisits", "reorgs"]]
    merged = df.merge(moves, on=cols, how="left") if cols else df.assign(**moves.iloc[0].to_dict()) if len(df) else df
    for col in ("revisits", "reorgs"):
        merged[col] = merged[col].fillna(0).astype("int64") if col in merged else pd.Series(dtype="int64")
    return merged


#: The shares of :func:`finality_breakdown`: name -> indicator (SQL over an operation) of its final outcome.
_SHARES = {"latest_share": "reached_latest", "safe_share": "reached_safe", "finalized_share": "reached_finalized"}


_FAILURE_RATE = ("failure_rate", "failure_rate_low", "failure_rate_high")
_FAILED_SHARE = ("failed_share", "failed_share_low", "failed_share_high")


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
    cohort = operation_cohort(q, [(c, c) for c in cols], indicators, counts, scope="stage_relayed")
    ratios = [Ratio(name, f"i_{name}") for name in _SHARES]
    shares = project(warehouse, cohort, ratios)
    # failed_share is failure_rates' failure_rate, one definition (docs/metrics.md, "One failure figure")
    failed = relayed_rates(warehouse, q, [(c, c) for c in cols])[[*cols, *_FAILURE_RATE]]
    failed = failed.rename(columns=dict(zip(_FAILURE_RATE, _FAILED_SHARE, strict=True)))
    shares = shares.merge(failed, on=cols, how="left") if cols else pd.concat([shares, failed], axis=1)
    merged = df.merge(shares, on=cols, how="left") if cols else pd.concat([df, shares], axis=1)
    merged["in_flight"] = merged["in_flight"].fillna(0).astype("int64")
    new = [c for r in ratios for c in (r.name, f"{r.name}_low", f"{r.name}_high")] + list(_FAILED_SHARE)
    return merged, ["in_flight", *new, "latest_only_basis"]


def _finality_time_counts(warehouse: WarehouseLike, where: Filters, cols: list[str]) -> pd.DataFrame:
    """Per group of ``cols``, finality time and distinct duration: the ``events`` (the stage was reached after
    that many seconds) and ``censored`` (in flight, the stage not reached yet: censored at the as-of time) counts.

    The observations of a time are the relayed operations of the period that reached its start stage and either
    reached its end stage or are still in flight without it (and without any later stage, whose event would then
    be missing). An operation that ended without reaching the end stage (failed, expired, cancelled: a competing
    outcome) is not an observation of it; nor are ``confirmed_safe``/``confirmed`` on a latest-only network.
    """
    q = where.sql("created_at")
    q.clauses.append(_RELAYED)
    select, _ = select_groups(cols)
    as_of = latest_event_time(warehouse)
    as_of_ref = q.bind(None if as_of is None else as_of.to_pydatetime())
    key_list = "".join(f"{c}, " for c in cols)
    parts = []
    for name, (end, start) in FINALITY_TIMES.items():
        later = _STAGE_COLUMNS[_STAGE_COLUMNS.index(end) + 1 :]
        open_ = " AND ".join(["open", *(f"{c} IS NULL" for c in later)])
        if end != "confirmed_latest_at":
            open_ += " AND NOT latest_only_network"
        parts.append(f"""
        SELECT {key_list}'{name}' AS time,
            CASE WHEN {end} IS NOT NULL THEN epoch({end}) - epoch({start})
                 ELSE epoch(CAST({as_of_ref} AS TIMESTAMPTZ)) - epoch({start}) END AS duration,
            count(*) FILTER (WHERE {end} IS NOT NULL) AS events,
            count(*) FILTER (WHERE {end} IS NULL) AS censored
        FROM base
        WHERE {start} IS NOT NULL AND ({end} IS NOT NULL OR ({open_}))
        GROUP BY ALL""")
    sql = f"""
        WITH latest_only AS ({latest_only_sql()}),
        in_flight AS ({in_flight_operations_sql()}),
        base AS (
            SELECT {select}
                accepted_at, {", ".join(_STAGE_COLUMNS)},
                operation_id IN (SELECT operation_id FROM in_flight) AS open,
                chain_selector IN (SELECT chain_selector FROM latest_only) AS latest_only_network
            FROM operation_lifecycle
            {q.where()}
        )
        {" UNION ALL ".join(parts)}
    """
    return run(warehouse, sql, q.params)


def _with_finality_times(df: pd.DataFrame, warehouse: WarehouseLike, where: Filters, cols: list[str]) -> pd.DataFrame:
    """``df`` (one row per group of ``cols``) with the Kaplan–Meier p50/p90 of every finality time
    (``<time>_p50_s``, ``<time>_p90_s``), how many were censored (``<time>_censored``) and ``notes``."""
    counts = _finality_time_counts(warehouse, where, cols)
    return with_km_times(df, counts, cols, list(FINALITY_TIMES), FINALITY_PERCENTILES, pending="not at the stage yet")


@takes_filters()
def finality_times(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
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
