"""Metrics: SQL over the warehouse's modelled views, returned as pandas DataFrames.

Every function takes the warehouse (a :class:`~toolkit.warehouse.Warehouse` or a path; default: the configured
one), optional filters and a grouping, and returns a DataFrame with tz-aware UTC times and statuses as ordered
categoricals in lifecycle order. Filter values are bound as SQL parameters, never pasted into the SQL text; grouping
columns come from a fixed allow-list per metric.

Common arguments:

- ``channel``, ``network`` (a name or a chain selector), ``status``: one value or a list of values;
- ``since``/``until``: the period ``[since, until)``, as datetimes, ISO strings or ages such as ``7d`` or ``12h``;
- ``by``: grouping columns (each metric lists the ones it accepts);
- ``bucket``: a time-bucket width such as ``1h``, ``1d`` or ``1w`` (buckets start at UTC midnight, weeks on
  Monday) for the metrics measured over time.

:data:`METRICS` maps the kebab-case names of ``chainops metrics NAME`` to these functions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from . import spec
from .config import Settings
from .warehouse import Warehouse

TimeLike = datetime | str | pd.Timestamp | None
WarehouseLike = Warehouse | str | os.PathLike[str] | None
Values = str | Sequence[str] | None

#: z of a two-sided 95% interval.
Z95 = 1.959963984540054

STATUS_LATENCY_GROUPS = ("network", "chain_selector", "channel_id", "status")
OPERATION_GROUPS = ("network", "chain_selector", "channel_id", "address")
FINALITY_GROUPS = ("network", "chain_selector", "channel_id")
QUERY_GROUPS = ("network", "chain_selector", "channel_id", "outcome")
STUCK_GROUPS = ("network", "chain_selector", "channel_id", "address", "status")
PROOF_GROUPS = ("type", "status", "network", "chain_selector", "channel_id")
WATCHER_GROUPS = ("watcher_id", "channel_id", "network", "chain_selector")

#: Failure taxonomy, in display order.
FAILURE_CATEGORIES: tuple[str, ...] = ("revert", "gas", "nonce", "chain_unavailable", "deadline", "other")
#: First matching rule wins; a reason matching none is ``other``. Patterns are matched case-insensitively.
FAILURE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("deadline", re.compile(r"deadline|time[- ]to[- ]live|\bttl\b|expired", re.I)),
    ("chain_unavailable", re.compile(r"chain unavailable|unavailable|\brpc\b|timeout|timed out|connection", re.I)),
    ("nonce", re.compile(r"nonce|replacement transaction|already known", re.I)),
    ("revert", re.compile(r"revert", re.I)),
    ("gas", re.compile(r"gas|fee|insufficient funds|underpriced", re.I)),
)
QUERY_OUTCOMES: tuple[str, ...] = (*(s for s in spec.QUERY_STATUSES if s in spec.QUERY_TERMINAL), "in_flight")

_BUCKET_RE = re.compile(r"^\s*(\d+)\s*(s|m|min|h|d|w)\s*$", re.I)
_BUCKET_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86_400, "w": 604_800}
#: Buckets are aligned on Monday 1970-01-05 00:00 UTC (so days start at midnight and weeks on Monday).
_BUCKET_ORIGIN_US = 4 * 86_400 * 1_000_000


# ---- plumbing ----------------------------------------------------------------------------------------------------


@contextmanager
def _open(warehouse: WarehouseLike) -> Iterator[Warehouse]:
    if isinstance(warehouse, Warehouse):
        yield warehouse
        return
    path = warehouse if warehouse is not None else Settings.load().warehouse
    with Warehouse(path, read_only=True) as wh:
        yield wh


def to_utc(value: TimeLike) -> pd.Timestamp | None:
    """A tz-aware UTC timestamp from a datetime, an ISO string, or a relative age such as ``7d`` or ``12h``.

    Arguments: ``value`` (None gives None). Returns a ``pd.Timestamp`` in UTC.
    """
    if value is None:
        return None
    if isinstance(value, str) and value[:-1].isdigit() and value[-1:] in "smhdw":
        unit = {"s": "s", "m": "min", "h": "h", "d": "D", "w": "W"}[value[-1]]
        return pd.Timestamp.now(tz="UTC").floor("s") - pd.Timedelta(int(value[:-1]), unit=unit)
    ts = pd.Timestamp(value)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def status_categorical(values: pd.Series, order: Sequence[str] = spec.OPERATION_STATUSES) -> pd.Series:
    """Statuses as an ordered categorical in lifecycle order; unknown values are kept, after the known ones.

    Arguments: ``values`` the statuses, ``order`` the known ones in order. Returns the categorical.
    """
    present = [v for v in pd.unique(values.dropna()) if v not in order]
    return pd.Categorical(values, categories=[*order, *sorted(present)], ordered=True)  # type: ignore[return-value]


def bucket_seconds(bucket: str | int | timedelta | pd.Timedelta) -> int:
    """The width in seconds of a time bucket given as ``15m``, ``1h``, ``1d``, ``1w``, seconds or a timedelta.

    Arguments: ``bucket``. Returns whole seconds (at least 1). Raises ``ValueError`` for anything else.
    """
    if isinstance(bucket, bool):
        raise ValueError(f"not a bucket width: {bucket!r}")
    if isinstance(bucket, int):
        seconds = bucket
    elif isinstance(bucket, timedelta | pd.Timedelta):
        seconds = int(pd.Timedelta(bucket).total_seconds())
    elif isinstance(bucket, str) and (m := _BUCKET_RE.match(bucket)):
        seconds = int(m.group(1)) * _BUCKET_UNITS[m.group(2).lower()]
    else:
        raise ValueError(f"not a bucket width: {bucket!r}; use e.g. '15m', '1h', '1d', '1w'")
    if seconds < 1:
        raise ValueError(f"bucket width must be at least one second, not {bucket!r}")
    return seconds


def wilson_interval(successes: Any, trials: Any, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion (95% by default), vectorised.

    Arguments: ``successes`` and ``trials`` (scalars or arrays), ``z``. Returns ``(low, high)`` arrays; NaN where
    ``trials`` is 0.
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1 + z * z / n
        center = (p + z * z / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
        low = np.where(n > 0, np.clip(center - half, 0, 1), np.nan)
        high = np.where(n > 0, np.clip(center + half, 0, 1), np.nan)
    return low, high


def classify_failure(reason: str | None, status: str | None = None) -> str:
    """The taxonomy category of a failure: revert, gas, nonce, chain_unavailable, deadline or other.

    Arguments: ``reason`` the raw ``status_reason``; ``status`` the terminal status (``expired`` is always
    ``deadline``). Returns the category name.
    """
    if status == spec.OperationStatus.EXPIRED:
        return "deadline"
    for category, pattern in FAILURE_RULES:
        if reason and pattern.search(reason):
            return category
    return "other"


def _values(value: Values) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(v) for v in value]


@dataclass
class _Sql:
    """WHERE clauses and named parameters of one statement: every value is bound (``$p0``, ...), never pasted."""

    clauses: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def bind(self, value: Any) -> str:
        """Keep ``value`` as a named parameter; returns its placeholder."""
        name = f"p{len(self.params)}"
        self.params[name] = value
        return f"${name}"

    def one_of(self, value: Values, *columns: str) -> _Sql:
        """Require one of ``columns`` to be one of ``value`` (no filter when None); returns self."""
        values = _values(value)
        if values is not None:
            ref = self.bind(values)
            self.clauses.append("(" + " OR ".join(f"list_contains({ref}, {c})" for c in columns) + ")")
        return self

    def period(self, column: str, since: TimeLike, until: TimeLike) -> _Sql:
        """Require ``column`` in ``[since, until)`` (each bound optional); returns self."""
        if (start := to_utc(since)) is not None:
            self.clauses.append(f"{column} >= {self.bind(start.to_pydatetime())}")
        if (end := to_utc(until)) is not None:
            self.clauses.append(f"{column} < {self.bind(end.to_pydatetime())}")
        return self

    def where(self, keyword: str = "WHERE") -> str:
        """The clauses joined by AND after ``keyword``; returns "" when there are none."""
        return f"{keyword} " + " AND ".join(self.clauses) if self.clauses else ""


def _common(
    channel: Values,
    network: Values,
    since: TimeLike,
    until: TimeLike,
    time_column: str,
    *,
    alias: str = "",
) -> _Sql:
    """Channel, network (name or selector) and period filters on the columns of the relation ``alias``."""
    a = f"{alias}." if alias else ""
    q = _Sql().one_of(channel, f"{a}channel_id")
    q.one_of(network, f"{a}network", f"{a}chain_selector")
    return q.period(time_column, since, until)


def _event_filters(channel: Values, network: Values, since: TimeLike, until: TimeLike) -> _Sql:
    """Channel, network and period filters on raw events ``e``; a network name is resolved through ``networks``
    (a tiny table) so the events themselves need no join."""
    q = _Sql().one_of(channel, "e.channel_id")
    names = _values(network)
    if names is not None:
        ref = q.bind(names)
        q.clauses.append(
            f"(list_contains({ref}, e.chain_selector) OR e.chain_selector IN "
            f"(SELECT chain_selector FROM networks WHERE list_contains({ref}, name)))"
        )
    return q.period("e.ts", since, until)


def _grouping(by: Sequence[str] | str | None, allowed: Sequence[str], metric: str) -> list[str]:
    cols = [by] if isinstance(by, str) else list(by or [])
    bad = [c for c in cols if c not in allowed]
    if bad:
        raise ValueError(f"cannot group {metric} by {bad}; choose from {list(allowed)}")
    return list(dict.fromkeys(cols))


def _bucket_sql(q: _Sql, column: str, bucket: str | int | timedelta | None) -> str:
    """SQL for the start of ``column``'s bucket in epoch microseconds (an integer: grouping stays cheap)."""
    if bucket is None:
        return ""
    width = q.bind(bucket_seconds(bucket) * 1_000_000)
    origin = q.bind(_BUCKET_ORIGIN_US)
    return f"((epoch_us({column}) - {origin}) // {width}) * {width} + {origin}"


def _bucket_to_time(df: pd.DataFrame) -> pd.DataFrame:
    if "bucket" in df.columns:
        df["bucket"] = pd.to_datetime(df["bucket"].astype("Int64"), unit="us", utc=True)
    return df


def _select_groups(
    cols: Sequence[str], bucket_sql: str = "", exprs: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """(select list prefix, GROUP BY list) of the grouping columns (``exprs`` maps a column to its SQL) and the
    optional bucket. Column names come from a metric's allow-list."""
    exprs = exprs or {}
    pairs = [(exprs.get(c, c), c) for c in cols] + ([(bucket_sql, "bucket")] if bucket_sql else [])
    select = "".join(f"{e} AS {name}, " for e, name in pairs)
    return select, (", ".join(e for e, _ in pairs) if pairs else "()")


def _sort(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    keys = [k for k in keys if k in df.columns]
    if keys and len(df):
        df = df.sort_values(keys, kind="stable", na_position="last")
    return df.reset_index(drop=True)


def _run(warehouse: WarehouseLike, sql: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    with _open(warehouse) as wh:
        return wh.query(sql, dict(params or {}))


def _latest_only_sql() -> str:
    """Chain selectors where only the latest stage is active: operations reach ``confirmed_latest`` and none ever
    reach ``confirmed_safe`` or ``confirmed``, on a network not listed as a mainnet."""
    return """
    SELECT l.chain_selector FROM operation_lifecycle l
    LEFT JOIN networks n ON n.chain_selector = l.chain_selector
    GROUP BY l.chain_selector
    HAVING count(l.confirmed_latest_at) > 0 AND count(l.confirmed_safe_at) = 0 AND count(l.confirmed_at) = 0
       AND coalesce(any_value(n.network_type), '') <> 'mainnet'
    """


def _outcome_sql() -> str:
    """An operation's outcome: its terminal status, or ``confirmed`` for ``confirmed_latest`` on a latest-only
    network; NULL while in flight."""
    return """CASE WHEN terminal_status IS NOT NULL THEN terminal_status
         WHEN last_status = 'confirmed_latest' AND chain_selector IN (SELECT chain_selector FROM latest_only)
         THEN 'confirmed' END"""


def _quantiles(expr: str, name: str, probs: Sequence[float] = (0.5, 0.9)) -> tuple[str, list[str]]:
    """An aggregate computing several quantiles of ``expr`` at once (``_q_<name>``, a list), and the outer-query
    columns ``<name>_p50_s``, ... that pick them out."""
    probs_sql = ", ".join(repr(float(p)) for p in probs)
    outer = [f"_q_{name}[{i + 1}] AS {name}_p{round(p * 100)}_s" for i, p in enumerate(probs)]
    return f"quantile_cont({expr}, [{probs_sql}]) AS _q_{name}", outer


def _with_quantiles(inner: str, keep: Sequence[str], outer: Sequence[str]) -> str:
    """Wrap an aggregate query: keep the columns ``keep`` and spread its quantile lists into plain columns."""
    return f"SELECT {', '.join([*keep, *outer])} FROM ({inner}) AS inner_q"


def _rates(df: pd.DataFrame, counts: Sequence[str], total: str, names: Sequence[str]) -> pd.DataFrame:
    """Add ``<name>`` = count / total with its Wilson 95% interval ``<name>_low``/``<name>_high`` per count."""
    n = df[total].to_numpy(dtype=float)
    for count, name in zip(counts, names, strict=True):
        k = df[count].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            df[name] = np.where(n > 0, k / n, np.nan)
        df[f"{name}_low"], df[f"{name}_high"] = wilson_interval(k, n)
    return df


# ---- status latency ----------------------------------------------------------------------------------------------

_LATENCY_COUNTS = ("entered", "n", "mean_s")


def status_latency(
    warehouse: WarehouseLike = None,
    *,
    by: Sequence[str] = ("network", "status"),
    channel: Values = None,
    network: Values = None,
    status: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
    bucket: str | int | timedelta | None = None,
) -> pd.DataFrame:
    """Seconds spent in each status: n, mean, p50, p90, p99, max, and the time from creation to reaching it.

    One row per group of ``by`` (any of ``network``, ``chain_selector``, ``channel_id``, ``status``), and per time
    bucket of ``entered_at`` when ``bucket`` is given (column ``bucket``). ``entered`` counts operations that
    entered the status; ``n`` those that have left it (so their time in it is known). Filters select transitions by
    channel, network (name or selector), status, and ``entered_at`` in ``[since, until)``.

    Returns the DataFrame (``status`` an ordered categorical, ``bucket`` tz-aware UTC).

    >>> status_latency("data/demo.duckdb", by=["network", "status"], bucket="1d")  # doctest: +SKIP
    """
    cols = _grouping(by, STATUS_LATENCY_GROUPS, "status_latency")
    q = _common(channel, network, since, until, "entered_at").one_of(status, "status")
    bucket_sql = _bucket_sql(q, "entered_at", bucket)
    select, group = _select_groups(cols, bucket_sql)
    q_in, out_in = _quantiles("seconds_in_status", "in", (0.5, 0.9, 0.99))
    q_created, out_created = _quantiles("seconds_since_created", "created")
    inner = f"""
        SELECT {select}
            count(*) AS entered,
            count(seconds_in_status) AS n,
            avg(seconds_in_status) AS mean_s,
            max(seconds_in_status) AS max_s,
            {q_in},
            {q_created}
        FROM operation_transitions
        {q.where()}
        GROUP BY {group}
    """
    keys = [*cols, *(["bucket"] if bucket_sql else [])]
    outer = [*out_in, "max_s", *out_created]
    df = _run(warehouse, _with_quantiles(inner, [*keys, *_LATENCY_COUNTS], outer), q.params)
    df = df.rename(
        columns={
            "in_p50_s": "p50_s",
            "in_p90_s": "p90_s",
            "in_p99_s": "p99_s",
            "created_p50_s": "since_created_p50_s",
            "created_p90_s": "since_created_p90_s",
        }
    )
    if "status" in df.columns:
        df["status"] = status_categorical(df["status"])
    return _sort(_bucket_to_time(df), keys)


def status_durations(
    warehouse: WarehouseLike = None,
    *,
    channel: Values = None,
    network: Values = None,
    status: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
) -> pd.DataFrame:
    """Raw seconds-in-status per transition (network, status, seconds): the input of distribution plots.

    Arguments: the common filters (on ``entered_at``). Returns one row per transition that has ended.
    """
    q = _common(channel, network, since, until, "entered_at").one_of(status, "status")
    q.clauses.append("seconds_in_status IS NOT NULL")
    sql = f"""
        SELECT network, status, seconds_in_status AS seconds
        FROM operation_transitions {q.where()}
        ORDER BY network, stage_rank
    """
    df = _run(warehouse, sql, q.params)
    df["status"] = status_categorical(df["status"])
    return df


# ---- failure rates and reasons -----------------------------------------------------------------------------------


def failure_rates(
    warehouse: WarehouseLike = None,
    *,
    by: Sequence[str] = ("network",),
    channel: Values = None,
    network: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
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
    cols = _grouping(by, OPERATION_GROUPS, "failure_rates")
    q = _common(channel, network, since, until, "created_at")
    bucket_sql = _bucket_sql(q, "created_at", bucket)
    select, group = _select_groups(cols, bucket_sql)
    sql = f"""
        WITH latest_only AS ({_latest_only_sql()}),
        ops AS (SELECT *, {_outcome_sql()} AS outcome FROM operation_lifecycle)
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
    df = _run(warehouse, sql, q.params)
    df = _rates(df, ("failed", "expired", "cancelled"), "terminal", ("failure_rate", "expiry_rate", "cancel_rate"))
    return _sort(_bucket_to_time(df), [*cols, "bucket"])


def failure_reasons(
    warehouse: WarehouseLike = None,
    *,
    by: Sequence[str] = (),
    channel: Values = None,
    network: Values = None,
    status: Values = ("failed", "expired"),
    since: TimeLike = None,
    until: TimeLike = None,
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
    cols = _grouping(by, OPERATION_GROUPS, "failure_reasons")
    q = _common(channel, network, since, until, "created_at").one_of(status, "terminal_status")
    q.clauses.append("terminal_status IS NOT NULL")
    select, _ = _select_groups(cols)
    sql = f"""
        SELECT {select} terminal_status AS status, coalesce(status_reason, '') AS reason, count(*) AS operations
        FROM operation_lifecycle
        {q.where()}
        GROUP BY {", ".join([*cols, "terminal_status", "coalesce(status_reason, '')"])}
    """
    return _reason_table(_run(warehouse, sql, q.params), cols, top)


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


# ---- finality ----------------------------------------------------------------------------------------------------

#: Stage times of :func:`finality_breakdown`: name -> (end, start) timestamps of the operation lifecycle.
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


def finality_breakdown(
    warehouse: WarehouseLike = None,
    *,
    by: Sequence[str] = ("network",),
    channel: Values = None,
    network: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
) -> pd.DataFrame:
    """How far relayed operations got through the finality stages, and how long each stage took.

    Operations created in the period that were accepted for relay, grouped by ``by`` (any of ``network``,
    ``chain_selector``, ``channel_id``). Counts: ``operations``, ``reached_latest``, ``reached_safe``,
    ``reached_finalized`` (a later stage implies the earlier ones, even when an event is missing), ``failed``, and
    their shares. Times (p50/p90 seconds): from ``accepted`` to each stage (``to_latest``, ``to_safe``,
    ``to_finalized``) and between stages (``latest_to_safe``, ``safe_to_finalized``, ``latest_to_finalized``),
    from the stages' own events. ``latest_only`` is True for networks where only the latest stage is active.

    Returns the DataFrame.
    """
    cols = _grouping(by, FINALITY_GROUPS, "finality_breakdown")
    q = _common(channel, network, since, until, "created_at")
    q.clauses.append(_RELAYED)
    select, group = _select_groups(cols)
    aggs, outer = [], []
    for name, (end, start) in FINALITY_TIMES.items():
        agg, out = _quantiles(f"epoch({end}) - epoch({start})", name)
        aggs.append(agg)
        outer += out
    inner = f"""
        WITH latest_only AS ({_latest_only_sql()})
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
    df = _run(warehouse, _with_quantiles(inner, [*cols, *_FINALITY_COUNTS], outer), q.params)
    total = df["operations"].where(df["operations"] > 0)
    for stage in ("latest", "safe", "finalized"):
        df[f"{stage}_share"] = df[f"reached_{stage}"] / total
    df["failed_share"] = df["failed"] / total
    df["latest_only"] = df["latest_only"].astype(bool)
    shares = ["latest_share", "safe_share", "finalized_share", "failed_share"]
    df = df[[*cols, *_FINALITY_COUNTS[:5], *shares, "latest_only", *[c for c in df.columns if c.endswith("_s")]]]
    return _sort(df, cols)


def finality_times(
    warehouse: WarehouseLike = None,
    *,
    channel: Values = None,
    network: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
) -> pd.DataFrame:
    """Per operation that reached a finality stage: network and the seconds of each stage time of
    :func:`finality_breakdown` (NaN when a stage's event is missing). The input of stage-time distribution plots.

    Arguments: the common filters (on ``created_at``). Returns one row per operation.
    """
    q = _common(channel, network, since, until, "created_at")
    q.clauses.append("coalesce(confirmed_latest_at, confirmed_safe_at, confirmed_at) IS NOT NULL")
    times = ", ".join(f"epoch({end}) - epoch({start}) AS {name}_s" for name, (end, start) in FINALITY_TIMES.items())
    sql = f"SELECT operation_id, network, {times} FROM operation_lifecycle {q.where()} ORDER BY network, operation_id"
    return _run(warehouse, sql, q.params)


# ---- queries -----------------------------------------------------------------------------------------------------

_QUERY_TIMES = {
    "accepted_to_sending": "epoch(sending_at) - epoch(accepted_at)",
    "sending_to_sent": "epoch(sent_at) - epoch(sending_at)",
    "sent_to_terminal": "epoch(terminal_at) - epoch(sent_at)",
    "accepted_to_terminal": "seconds_accepted_to_terminal",
}
_QUERY_COUNTS = ("queries", "completed", "failed", "expired")


def query_latency(
    warehouse: WarehouseLike = None,
    *,
    by: Sequence[str] = ("network", "outcome"),
    channel: Values = None,
    network: Values = None,
    status: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
) -> pd.DataFrame:
    """Chain-query latencies per stage (p50/p90 seconds) and expiry and failure rates.

    Queries created in the period, grouped by ``by`` (any of ``network``, ``chain_selector``, ``channel_id``,
    ``outcome`` — completed, failed, expired or in_flight). Times: ``accepted_to_sending``, ``sending_to_sent``,
    ``sent_to_terminal``, ``accepted_to_terminal``. Rates (shares of the ``finished`` queries, with 95% Wilson
    intervals) are computed over the group without its outcome, so the rows of one network share them. ``status``
    filters on the query's status.

    Returns the DataFrame (``outcome`` an ordered categorical).
    """
    cols = _grouping(by, QUERY_GROUPS, "query_latency")
    q = _common(channel, network, since, until, "created_at").one_of(status, "status")
    select, group = _select_groups(cols, exprs={"outcome": "coalesce(terminal_status, 'in_flight')"})
    aggs, outer = [], []
    for name, expr in _QUERY_TIMES.items():
        agg, out = _quantiles(expr, name)
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
    df = _run(warehouse, _with_quantiles(inner, [*cols, *_QUERY_COUNTS], outer), q.params)
    df = _query_rates(df, [c for c in cols if c != "outcome"])
    if "outcome" in df.columns:
        df["outcome"] = status_categorical(df["outcome"], QUERY_OUTCOMES)
    return _sort(df, cols)


def _query_rates(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Failure and expiry rates of finished queries over the groups of ``keys`` (all rows when empty)."""
    counts = ["completed", "failed", "expired"]
    if keys:
        totals = df.groupby(keys, dropna=False)[counts].transform("sum")
    else:
        totals = pd.DataFrame({c: df[c].sum() for c in counts}, index=df.index)
    df["finished"] = totals.sum(axis=1)
    df["_failed"], df["_expired"] = totals["failed"], totals["expired"]
    df = _rates(df, ("_failed", "_expired"), "finished", ("failure_rate", "expiry_rate"))
    return df.drop(columns=["_failed", "_expired"])


# ---- stuck operations --------------------------------------------------------------------------------------------

STUCK_COLUMNS = (
    "operation_id",
    "channel_id",
    "chain_selector",
    "network",
    "address",
    "status",
    "entered_at",
    "age_s",
    "threshold_s",
    "network_p90_s",
)


def latest_event_time(warehouse: WarehouseLike = None) -> pd.Timestamp | None:
    """The newest event time in the warehouse (the default ``now`` of :func:`stuck_operations`).

    Arguments: ``warehouse``. Returns a UTC timestamp, or None for a warehouse without events.
    """
    df = _run(warehouse, "SELECT max(ts) AS ts FROM events")
    value = df["ts"].iloc[0] if len(df) else None
    return None if value is None or pd.isna(value) else pd.Timestamp(value).tz_convert("UTC")


def stuck_operations(
    warehouse: WarehouseLike = None,
    *,
    by: Sequence[str] | None = None,
    channel: Values = None,
    network: Values = None,
    status: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
    now: TimeLike = None,
    multiple: float = 3.0,
    min_seconds: float = 60.0,
    thresholds: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Operations sitting in a non-terminal status for longer than a threshold, as of ``now``.

    ``now`` defaults to the newest event time in the warehouse, so results are reproducible. The threshold of a
    status is ``thresholds[status]`` when given, else ``multiple`` x the p90 of the time operations on that network
    spent in that status (transitions that ended by ``now``), at least ``min_seconds``; a status with no history
    on its network has no threshold. ``confirmed_latest`` on a network where only the latest stage is active is
    final, never stuck. Filters: channel, network, status (the status the operation is in) and ``created_at`` in
    ``[since, until)``.

    Returns one row per stuck operation (``age_s``, ``threshold_s``, ``network_p90_s``), the most overdue first;
    with ``by`` (any of ``network``, ``chain_selector``, ``channel_id``, ``address``, ``status``), one row per
    group with the count and the median and maximum age.
    """
    cols = _grouping(by, STUCK_GROUPS, "stuck_operations") if by else []
    with _open(warehouse) as wh:
        at = to_utc(now) or latest_event_time(wh)
        df = (
            pd.DataFrame(columns=list(STUCK_COLUMNS))
            if at is None
            else _stuck_rows(
                wh,
                at,
                _common(channel, network, since, until, "l.created_at", alias="c").one_of(status, "c.status"),
                multiple,
                min_seconds,
                thresholds or {},
            )
        )
    df["status"] = status_categorical(df["status"])
    if not cols:
        return df
    grouped = df.groupby(cols, observed=True, dropna=False)["age_s"]
    summary = grouped.agg(stuck="count", median_age_s="median", max_age_s="max").reset_index()
    return _sort(summary, cols)


def _stuck_rows(
    wh: Warehouse, at: pd.Timestamp, q: _Sql, multiple: float, min_seconds: float, thresholds: Mapping[str, float]
) -> pd.DataFrame:
    now = q.bind(at.to_pydatetime())
    thr_status, thr_seconds = q.bind(list(thresholds)), q.bind([float(v) for v in thresholds.values()])
    terminal = q.bind(sorted(spec.OPERATION_TERMINAL))
    sql = f"""
        WITH latest_only AS ({_latest_only_sql()}),
        p90 AS (
            SELECT chain_selector, status, quantile_cont(seconds_in_status, 0.9) AS p90_s
            FROM operation_transitions
            WHERE seconds_in_status IS NOT NULL AND exited_at <= {now}
            GROUP BY chain_selector, status
        ),
        explicit AS (SELECT unnest({thr_status}::VARCHAR[]) AS status, unnest({thr_seconds}::DOUBLE[]) AS seconds),
        current AS (
            SELECT t.operation_id, t.channel_id, t.chain_selector, t.network, t.address, t.status, t.entered_at,
                epoch({now}) - epoch(t.entered_at) AS age_s
            FROM operation_transitions t
            WHERE t.entered_at <= {now} AND (t.exited_at IS NULL OR t.exited_at > {now})
              AND NOT list_contains({terminal}, t.status)
              AND NOT (t.status = 'confirmed_latest' AND t.chain_selector IN (SELECT chain_selector FROM latest_only))
        ),
        judged AS (
            SELECT cur.*, p.p90_s AS network_p90_s,
                coalesce(x.seconds, CASE WHEN p.p90_s IS NOT NULL
                    THEN greatest({q.bind(float(multiple))} * p.p90_s, {q.bind(float(min_seconds))}) END)
                    AS threshold_s
            FROM current cur
            LEFT JOIN p90 p ON p.chain_selector IS NOT DISTINCT FROM cur.chain_selector AND p.status = cur.status
            LEFT JOIN explicit x ON x.status = cur.status
        )
        SELECT {", ".join(f"c.{col}" for col in STUCK_COLUMNS)}
        FROM judged c
        JOIN operation_lifecycle l ON l.operation_id = c.operation_id
        WHERE c.age_s > c.threshold_s AND NOT coalesce(l.terminal_at <= {now}, false)
            {q.where("AND")}
        ORDER BY c.age_s / c.threshold_s DESC, c.operation_id
    """
    return wh.query(sql, q.params)


# ---- proofs ------------------------------------------------------------------------------------------------------

_PROOF_COLUMNS = (
    "events",
    "must_have_proof",
    "with_proof",
    "missing_proof",
    "coverage",
    "coverage_low",
    "coverage_high",
    "min_signatures",
    "enough_signatures",
    "too_few_signatures",
    "signatures_min",
    "signatures_p50",
    "signatures_max",
    "unexpected_proofs",
)


def proof_coverage(
    warehouse: WarehouseLike = None,
    *,
    by: Sequence[str] = ("type",),
    channel: Values = None,
    network: Values = None,
    status: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
) -> pd.DataFrame:
    """Events that must carry DON proofs (:func:`toolkit.spec.event_requires_proof`) and do, and their signatures.

    Events with ``ts`` in the period, grouped by ``by`` (any of ``type``, ``status``, ``network``,
    ``chain_selector``, ``channel_id``). Columns: ``events``, ``must_have_proof``, ``with_proof`` (of those),
    ``missing_proof``, ``coverage`` with its 95% Wilson interval, the ``min_signatures`` a verifier requires
    (:data:`toolkit.spec.PROOF_MIN_SIGNATURES`), ``enough_signatures`` and ``too_few_signatures`` among the proofs,
    ``signatures_min``/``signatures_p50``/``signatures_max``, and ``unexpected_proofs`` (on events that need none).

    Returns the DataFrame.
    """
    cols = _grouping(by, PROOF_GROUPS, "proof_coverage")
    q = _event_filters(channel, network, since, until).one_of(status, "e.status")
    keys = list(dict.fromkeys(["type", "status", *cols]))
    exprs = {"network": "coalesce(n.name, e.chain_selector)"}
    join = "LEFT JOIN networks n ON n.chain_selector = e.chain_selector" if "network" in keys else ""
    select, group = _select_groups(keys, exprs={k: exprs.get(k, f"e.{k}") for k in keys})
    sql = f"""
        SELECT {select} coalesce(e.proof_count, 0) > 0 AS has_proof, e.signature_count, count(*) AS n
        FROM events e {join}
        {q.where()}
        GROUP BY {group}, coalesce(e.proof_count, 0) > 0, e.signature_count
    """
    return _proof_table(_run(warehouse, sql, q.params), cols)


def _proof_table(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Fold (type, status, proof?, signatures, n) rows into the coverage table, judging each pair with the spec."""
    pairs = {(t, s) for t, s in zip(df["type"], df["status"], strict=True)}
    need = {(t, s): spec.event_requires_proof(t, None if s is None or s is pd.NA or s != s else s) for t, s in pairs}
    must = pd.Series([need[(t, s)] for t, s in zip(df["type"], df["status"], strict=True)], index=df.index, dtype=bool)
    proof = df["has_proof"].astype(bool)
    enough = (df["signature_count"].astype("Float64") >= spec.PROOF_MIN_SIGNATURES).fillna(False).astype(bool)
    n = df["n"].astype("int64")
    df = df.assign(
        events=n,
        must_have_proof=n.where(must, 0),
        with_proof=n.where(must & proof, 0),
        enough_signatures=n.where(must & proof & enough, 0),
        unexpected_proofs=n.where(~must & proof, 0),
        _all=0,
    )
    keys = cols or ["_all"]
    counted = ["events", "must_have_proof", "with_proof", "enough_signatures", "unexpected_proofs"]
    out = df.groupby(keys, dropna=False)[counted].sum()
    stats = _signature_stats(df[must & proof], keys)
    out = out.join(stats, how="left").reset_index()
    out["missing_proof"] = out["must_have_proof"] - out["with_proof"]
    out["too_few_signatures"] = out["with_proof"] - out["enough_signatures"]
    out = _rates(out, ("with_proof",), "must_have_proof", ("coverage",))
    out["min_signatures"] = spec.PROOF_MIN_SIGNATURES
    return _sort(out[[*cols, *_PROOF_COLUMNS]], cols)


def _signature_stats(proved: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Min, median and max signature count per group, from (signature_count, n) rows (n = how many events)."""
    rows = []
    proved = proved.dropna(subset=["signature_count"])
    for key, g in proved.groupby(keys, dropna=False) if len(proved) else []:
        g = g.sort_values("signature_count")
        cum = g["n"].cumsum().to_numpy()
        values = g["signature_count"].to_numpy(dtype=float)
        middle = np.searchsorted(cum, [(cum[-1] - 1) // 2 + 1, cum[-1] // 2 + 1])  # the two middle positions
        median = float(values[middle].mean())
        rows.append((*(key if isinstance(key, tuple) else (key,)), values[0], median, values[-1]))
    names = ["signatures_min", "signatures_p50", "signatures_max"]
    return pd.DataFrame(rows, columns=[*keys, *names]).set_index(keys)


# ---- watchers ----------------------------------------------------------------------------------------------------


def watcher_status_history(
    warehouse: WarehouseLike = None,
    *,
    by: Sequence[str] | None = None,
    channel: Values = None,
    network: Values = None,
    status: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
) -> pd.DataFrame:
    """Each watcher's status history from ``watcher.status`` events: status, entered_at, exited_at, seconds.

    Filters: channel, network, status and ``entered_at`` in ``[since, until)``; ``by`` is accepted for a uniform
    command line and may only be ``watcher_id``. Returns one row per status a watcher entered, in order
    (``status`` an ordered categorical in the vocabulary's order).
    """
    _grouping(by, ("watcher_id",), "watcher_status_history")
    q = _common(channel, network, since, until, "h.entered_at", alias="h").one_of(status, "h.status")
    rank = (
        "CASE e.status "
        + " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(spec.WATCHER_STATUSES))
        + " ELSE 1000 END"
    )
    sql = f"""
        WITH moves AS (
            SELECT e.watcher_id, e.status, e.ts AS entered_at, {rank} AS stage_rank,
                any_value(e.channel_id) AS channel_id, any_value(e.chain_selector) AS chain_selector,
                any_value(e.status_reason) AS status_reason
            FROM events e
            WHERE e.type = 'watcher.status' AND e.watcher_id IS NOT NULL AND e.status IS NOT NULL AND e.ts IS NOT NULL
            GROUP BY e.watcher_id, e.status, e.ts
        ),
        history AS (
            SELECT m.watcher_id, w.name, coalesce(w.channel_id, m.channel_id) AS channel_id,
                coalesce(w.chain_selector, m.chain_selector) AS chain_selector, m.status, m.entered_at,
                lead(m.entered_at) OVER win AS exited_at, lead(m.status) OVER win AS next_status,
                epoch(lead(m.entered_at) OVER win) - epoch(m.entered_at) AS seconds_in_status, m.status_reason,
                m.stage_rank
            FROM moves m LEFT JOIN watchers w USING (watcher_id)
            WINDOW win AS (PARTITION BY m.watcher_id ORDER BY m.entered_at, m.stage_rank)
        ),
        h AS (
            SELECT history.*, coalesce(n.name, history.chain_selector) AS network
            FROM history LEFT JOIN networks n ON n.chain_selector = history.chain_selector
        )
        SELECT h.watcher_id, h.name, h.channel_id, h.chain_selector, h.network, h.status, h.entered_at, h.exited_at,
            h.next_status, h.seconds_in_status, h.status_reason
        FROM h
        {q.where()}
        ORDER BY h.watcher_id, h.entered_at, h.stage_rank
    """
    df = _run(warehouse, sql, q.params)
    for col in ("status", "next_status"):
        df[col] = status_categorical(df[col], spec.WATCHER_STATUSES)
    return df


def watcher_activity(
    warehouse: WarehouseLike = None,
    *,
    by: Sequence[str] = ("watcher_id",),
    channel: Values = None,
    network: Values = None,
    since: TimeLike = None,
    until: TimeLike = None,
    bucket: str | int | timedelta = "1h",
) -> pd.DataFrame:
    """``watcher.event`` counts per watcher and hour (or another ``bucket``), with the watcher's status then.

    Events with ``ts`` in the period, grouped by ``by`` (any of ``watcher_id``, ``channel_id``, ``network``,
    ``chain_selector``) and bucket. Columns: ``events``, ``with_proof``; grouped by ``watcher_id``, also the
    watcher's ``name`` and ``status`` (its status at the end of the bucket, from its status history).

    Returns the DataFrame (``bucket`` tz-aware UTC, ``status`` an ordered categorical).
    """
    cols = _grouping(by, WATCHER_GROUPS, "watcher_activity")
    network_expr = "coalesce(n.name, e.chain_selector)"
    q = _event_filters(channel, network, since, until)
    q.clauses.append("e.type = 'watcher.event'")
    bucket_sql = _bucket_sql(q, "e.ts", bucket)
    exprs = {
        "watcher_id": "e.watcher_id",
        "channel_id": "e.channel_id",
        "chain_selector": "e.chain_selector",
        "network": network_expr,
    }
    select, group = _select_groups(cols, bucket_sql, exprs)
    sql = f"""
        SELECT {select} count(*) AS events, count(*) FILTER (WHERE coalesce(e.proof_count, 0) > 0) AS with_proof
        FROM events e {"LEFT JOIN networks n ON n.chain_selector = e.chain_selector" if "network" in cols else ""}
        {q.where()}
        GROUP BY {group}
    """
    with _open(warehouse) as wh:
        df = _bucket_to_time(wh.query(sql, q.params))
        if "watcher_id" in cols:
            df = _with_watcher_status(watcher_status_history(wh), df, bucket_seconds(bucket))
    return _sort(df, [*cols, "bucket"])


def _with_watcher_status(history: pd.DataFrame, df: pd.DataFrame, width: int) -> pd.DataFrame:
    """Add each watcher's name and the status in effect at the end of each bucket (an as-of join on history)."""
    names = history.drop_duplicates("watcher_id", keep="last")[["watcher_id", "name"]]
    df = df.merge(names, on="watcher_id", how="left")
    df["_end"] = df["bucket"] + pd.Timedelta(seconds=width)
    right = history[["watcher_id", "entered_at", "status"]].assign(status=lambda h: h["status"].astype(object))
    if df.empty or right.empty:
        df["status"] = None
    else:
        df = pd.merge_asof(
            df.sort_values("_end"),
            right.sort_values("entered_at"),
            left_on="_end",
            right_on="entered_at",
            by="watcher_id",
            allow_exact_matches=False,
            direction="backward",
        )
        df = df.drop(columns=["entered_at"])
    df["status"] = status_categorical(df["status"], spec.WATCHER_STATUSES)
    return df.drop(columns=["_end"])


#: Every metric by its ``chainops metrics NAME`` name.
METRICS: dict[str, Callable[..., pd.DataFrame]] = {
    "status-latency": status_latency,
    "failure-rates": failure_rates,
    "failure-reasons": failure_reasons,
    "finality-breakdown": finality_breakdown,
    "query-latency": query_latency,
    "stuck-operations": stuck_operations,
    "proof-coverage": proof_coverage,
    "watcher-activity": watcher_activity,
    "watcher-status-history": watcher_status_history,
}
