"""Chain-query latency and outcomes."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .. import spec
from .common import (
    NO_FILTERS,
    Filters,
    WarehouseLike,
    grouping,
    latest_event_time,
    run,
    select_groups,
    sort_rows,
    status_categorical,
    takes_filters,
)
from .declarations import BY_NAME
from .inflight import Cohort, Ratio, age_bin_sql, project
from .survival import with_km_times

#: The columns it can group by, as declared (:mod:`.declarations`).
QUERY_GROUPS = BY_NAME["query-latency"].by
QUERY_OUTCOMES: tuple[str, ...] = (*(s for s in spec.QUERY_STATUSES if s in spec.QUERY_TERMINAL), "in_flight")

#: Each query time: (end, start, later stages). A query in flight that passed ``start`` but has neither ``end`` nor
#: a later stage is censored at the as-of time.
_QUERY_TIMES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "accepted_to_sending": ("sending_at", "accepted_at", ("sent_at", "terminal_at")),
    "sending_to_sent": ("sent_at", "sending_at", ("terminal_at",)),
    "sent_to_terminal": ("terminal_at", "sent_at", ()),
    "accepted_to_terminal": ("terminal_at", "coalesce(accepted_at, created_at)", ()),
}
QUERY_PERCENTILES = (0.5, 0.9)
_QUERY_EXPRS = {"outcome": "coalesce(terminal_status, 'in_flight')"}
_QUERY_COUNTS = ("queries", "completed", "failed", "expired")


@takes_filters()
def query_latency(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
    by: Sequence[str] = ("network", "outcome"),
) -> pd.DataFrame:
    """Chain-query latencies per stage (p50/p90 seconds) and expiry and failure rates.

    Queries created in the period, grouped by ``by`` (any of ``network``, ``chain_selector``, ``channel_id``,
    ``outcome`` — completed, failed, expired or in_flight). Times: ``accepted_to_sending``, ``sending_to_sent``,
    ``sent_to_terminal``, ``accepted_to_terminal``: Kaplan–Meier p50/p90 (:mod:`.survival`), a query in flight
    that has passed the start stage but not the end one censored at the as-of time (the newest event time;
    ``<time>_censored`` counts them), one that ended without the end stage not an observation of it; NULL below the
    sample-size rule (p50 from 2 observations, p90 from 10) or while the curve has not reached the level, with the
    reason in ``notes``. The outcome of a query is its terminal status with the latest
    event time (on equal times the later stage); one that expired and was answered afterwards is ``expired`` and
    counts in ``late_answers``. Rates (``failure_rate``, ``expiry_rate``, with ``<rate>_low``/``<rate>_high``, a
    95% interval) are computed over the group without its outcome, so the rows of one network share them, as do
    ``finished``, ``in_flight`` and ``late_answers``: each rate estimates the value the group will have once every
    query in it has finished, in-flight queries counting with the outcome probabilities of finished queries that
    were in the same status at the same age (:mod:`toolkit.metrics.inflight`). ``status`` filters on the query's
    status.

    Returns the DataFrame (``outcome`` an ordered categorical).
    """
    cols = grouping(by, QUERY_GROUPS, "query_latency")
    q = where.sql("created_at", status_column="status")
    select, group = select_groups(cols, exprs=_QUERY_EXPRS)
    inner = f"""
        SELECT {select}
            count(*) AS queries,
            count(*) FILTER (WHERE terminal_status = 'completed') AS completed,
            count(*) FILTER (WHERE terminal_status = 'failed') AS failed,
            count(*) FILTER (WHERE terminal_status = 'expired') AS expired
        FROM query_lifecycle
        {q.where()}
        GROUP BY {group}
    """
    df = run(warehouse, inner, q.params)
    df = with_km_times(
        df, _query_time_counts(warehouse, where, cols), cols, list(_QUERY_TIMES), QUERY_PERCENTILES, pending="in flight"
    )
    df = _query_rates(warehouse, where, df, [c for c in cols if c != "outcome"])
    if "outcome" in df.columns:
        df["outcome"] = status_categorical(df["outcome"], QUERY_OUTCOMES)
    return sort_rows(df, cols)


def _query_time_counts(warehouse: WarehouseLike, where: Filters, cols: list[str]) -> pd.DataFrame:
    """Per group of ``cols``, query time and distinct duration: ``events`` (the end stage was reached after that
    many seconds) and ``censored`` (in flight without it yet: censored at the as-of time) counts. A query that
    ended without the end stage (it expired or failed before it) is not an observation of that time."""
    q = where.sql("created_at", status_column="status")
    select, _ = select_groups(cols, exprs=_QUERY_EXPRS)
    as_of = latest_event_time(warehouse)
    as_of_ref = q.bind(None if as_of is None else as_of.to_pydatetime())
    key_list = "".join(f"{c}, " for c in cols)
    parts = []
    for i, (name, (end, _, later)) in enumerate(_QUERY_TIMES.items()):
        open_ = " AND ".join(["terminal_status IS NULL", *(f"{c} IS NULL" for c in later)])
        parts.append(f"""
        SELECT {key_list}'{name}' AS time,
            CASE WHEN {end} IS NOT NULL THEN epoch({end}) - epoch(_start{i})
                 ELSE epoch(CAST({as_of_ref} AS TIMESTAMPTZ)) - epoch(_start{i}) END AS duration,
            count(*) FILTER (WHERE {end} IS NOT NULL) AS events,
            count(*) FILTER (WHERE {end} IS NULL) AS censored
        FROM base
        WHERE _start{i} IS NOT NULL AND ({end} IS NOT NULL OR ({open_}))
        GROUP BY ALL""")
    starts = ", ".join(f"{start} AS _start{i}" for i, (_, start, _) in enumerate(_QUERY_TIMES.values()))
    sql = f"""
        WITH base AS (
            SELECT {select} terminal_status, sending_at, sent_at, terminal_at, {starts}
            FROM query_lifecycle
            {q.where()}
        )
        {" UNION ALL ".join(parts)}
    """
    return run(warehouse, sql, q.params)


_QUERY_RATES = (Ratio("failure_rate", "i_failed"), Ratio("expiry_rate", "i_expired"))


def _query_cohort(where: Filters, keys: list[str]) -> Cohort:
    """The queries of the period as a cohort for the in-flight projection (:mod:`toolkit.metrics.inflight`):
    indicators of failing and expiring; the reference is the time finished queries spent in each status before
    the next (accepted, sending, sent)."""
    q = where.sql("created_at", status_column="status")
    moving = [s for s in spec.QUERY_STATUSES if s not in spec.QUERY_TERMINAL]
    entered = " ".join(f"WHEN status = '{s}' THEN {s}_at" for s in moving)
    ctes = f"""
q_all AS (
    SELECT *, terminal_status IS NOT NULL AS finished,
        (terminal_status = 'failed')::INTEGER AS i_failed, (terminal_status = 'expired')::INTEGER AS i_expired,
        coalesce(CASE {entered} END, created_at) AS entered_at
    FROM query_lifecycle
)"""
    steps = []
    for i, s in enumerate(moving):
        later = ", ".join([*(f"{t}_at" for t in moving[i + 1 :]), "terminal_at"])
        steps.append(
            f"SELECT chain_selector, '{s}' AS status, epoch(least({later})) - epoch({s}_at) AS seconds, "
            f"i_failed, i_expired FROM q_all WHERE finished AND {s}_at IS NOT NULL"
        )
    counts = {"late_answers": "count(*) FILTER (WHERE late_answer)"}
    units = f"SELECT * FROM q_all {q.where()}"
    history = f"""
        SELECT chain_selector, status, {age_bin_sql("seconds")} AS bin, count(*) AS stays, i_failed, i_expired
        FROM ({" UNION ALL ".join(steps)}) AS stays
        WHERE seconds IS NOT NULL
        GROUP BY ALL"""
    return Cohort(units, history, [(k, k) for k in keys], ["i_failed", "i_expired"], counts, q.params, ctes)


def _query_rates(warehouse: WarehouseLike, where: Filters, df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Failure and expiry rates of the queries over the groups of ``keys`` (all rows when empty), accounting for
    the queries still in flight (``<rate>_low``/``<rate>_high`` a 95% interval), with ``finished``, ``in_flight``
    and ``late_answers`` (expired, then answered) of the group."""
    counts = ["completed", "failed", "expired"]
    if keys:
        totals = df.groupby(keys, dropna=False)[counts].transform("sum")
    else:
        totals = pd.DataFrame({c: df[c].sum() for c in counts}, index=df.index)
    df["finished"] = totals.sum(axis=1)
    projected = project(warehouse, _query_cohort(where, keys), _QUERY_RATES)
    if not len(df):
        return df.assign(**{c: pd.Series(dtype=float) for c in projected.columns if c not in keys})
    merged = df.merge(projected, on=keys, how="left") if keys else df.assign(**projected.iloc[0].to_dict())
    merged["in_flight"] = merged["in_flight"].fillna(0).astype("int64")
    merged["late_answers"] = merged["late_answers"].fillna(0).astype("int64")
    return merged
