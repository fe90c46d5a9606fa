"""Plumbing shared by every metric: the filter object, bound SQL, grouping, time buckets and result tidying."""

from __future__ import annotations

import functools
import inspect
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, TypeVar

import pandas as pd

from .. import spec
from ..config import Settings
from ..times import DurationLike, Period, parse_duration
from ..warehouse import Warehouse
from .declare import ENGINE_KEYWORDS, FILTER_NAMES, RESULT_HOOKS, docstring_of, signature_of
from .engine import QueryEngine

WarehouseLike = Warehouse | QueryEngine | str | os.PathLike[str] | None
#: The engines a metric runs on.
ENGINES = ("duckdb", "spark")
Values = str | Sequence[str] | None

#: Buckets are aligned on Monday 1970-01-05 00:00 UTC (so days start at midnight and weeks on Monday).
_BUCKET_ORIGIN_US = 4 * 86_400 * 1_000_000


def _values(value: Values) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(v) for v in value]


@dataclass(frozen=True)
class Filters:
    """What a metric looks at: channels, networks (names or chain selectors), statuses and the period
    ``[since, until)``. Each list is None for "all". Build one with :meth:`of`; pass it to any metric as ``where``.
    """

    channel: tuple[str, ...] | None = None
    network: tuple[str, ...] | None = None
    status: tuple[str, ...] | None = None
    since: pd.Timestamp | None = None
    until: pd.Timestamp | None = None
    #: Where the warehouse's event window starts (set from its coverage, never by a caller): operations created
    #: before it have incomplete histories and are left out (see :mod:`toolkit.metrics.coverage`).
    window_start: pd.Timestamp | None = None
    #: The period as parsed once from what the caller gave (:class:`toolkit.times.Period`; ``since``/``until`` are
    #: its bounds, the warehouse's coverage may clip ``since``): what the result's ``attrs`` carry back.
    period: Period | None = field(default=None, compare=False)

    @classmethod
    def of(cls, where: Filters | None = None, **filters: Any) -> Filters:
        """Filters from keywords (``channel``, ``network``, ``status``, ``since``, ``until``) over ``where``.

        ``since``/``until`` are parsed once into a :class:`~toolkit.times.Period` (an age in ``since`` counts back
        from ``until`` when it is given); a ``where`` without new ones keeps its period as it is. Raises
        ``TypeError`` for an unknown keyword, ``ValueError`` for a bad time.
        """
        unknown = sorted(set(filters) - set(FILTER_NAMES))
        if unknown:
            raise TypeError(f"unknown filter {unknown}; filters are {list(FILTER_NAMES)}")
        base = where or cls()
        lists = {k: filters[k] for k in ("channel", "network", "status") if k in filters}
        period, since, until = base.period, base.since, base.until
        if "since" in filters or "until" in filters or (period is None and (since is not None or until is not None)):
            was = base.period
            period = Period.parse(
                filters.get("since", was.since if was is not None else base.since),
                filters.get("until", was.until if was is not None else base.until),
            )
            since, until = period.start, period.end
        return cls(
            channel=_tuple(lists["channel"]) if "channel" in lists else base.channel,
            network=_tuple(lists["network"]) if "network" in lists else base.network,
            status=_tuple(lists["status"]) if "status" in lists else base.status,
            since=since,
            until=until,
            window_start=base.window_start,
            period=period,
        )

    def given(self) -> list[str]:
        """The names of the filters that are set."""
        return [name for name in FILTER_NAMES if getattr(self, name) is not None]

    def sql(self, time_column: str, *, alias: str = "", status_column: str | None = None) -> Sql:
        """Bound WHERE clauses over the relation ``alias``: channel, network (``network`` or ``chain_selector``),
        status (on ``status_column``) and the period on ``time_column``."""
        a = f"{alias}." if alias else ""
        q = Sql().one_of(self.channel, f"{a}channel_id")
        q.one_of(self.network, f"{a}network", f"{a}chain_selector")
        if status_column is not None:
            q.one_of(self.status, status_column)
        return q.period(time_column, self.since, self.until)

    def events_sql(self) -> Sql:
        """Channel, network and period filters on raw events ``e``; a network name is resolved through
        ``networks`` (a tiny table) so the events themselves need no join."""
        q = Sql().one_of(self.channel, "e.channel_id")
        if self.network is not None:
            ref = q.bind(list(self.network))
            q.clauses.append(
                f"(list_contains({ref}, e.chain_selector) OR e.chain_selector IN "
                f"(SELECT chain_selector FROM networks WHERE list_contains({ref}, name)))"
            )
        return q.period("e.ts", self.since, self.until)


#: No filter at all: the default ``where`` of every metric.
NO_FILTERS = Filters()
#: The types of the engine keywords every metric takes (see :func:`engine_for`).
Engine = str | None
ParquetPath = str | os.PathLike[str] | None


def _tuple(value: Values) -> tuple[str, ...] | None:
    values = _values(value)
    return None if values is None else tuple(values)


F = TypeVar("F", bound=Callable[..., pd.DataFrame])


class EmptyPeriodWarning(UserWarning):
    """A metric found nothing in a period counted back from the wall clock because the data ends before it (the
    demo's history, or a warehouse not synced lately); the message names the newest event and the ``until`` to
    give. The command line prints the same sentence."""


def takes_filters(*names: str) -> Callable[[F], F]:
    """Make a metric's public function from its ``def`` and its declaration (:mod:`.declarations`, or ``names`` for
    a function declared nowhere else): the ``def`` takes ``warehouse``, ``where`` (one :class:`Filters`) and its own
    keywords (``by``, ``bucket``, ...); the public function also takes the declared filters and
    ``engine``/``parquet``/``spark``, as keywords listed in its signature and docstring (one block, built here).

    It checks what the command line checks, with the same words: a filter the metric does not take (``TypeError``),
    a ``by`` column it cannot group by and a filter value the warehouse does not know (``UnknownValueError``, a
    ``ValueError``, naming the nearest); parses the period once; clips it to what the warehouse holds; adds channel
    names and the period (a :class:`~toolkit.times.Period` in ``attrs["period"]``) to the result; and warns
    (:class:`EmptyPeriodWarning`) when a period counted back from now finds nothing because the data ends before
    it. The accepted names are kept on the function as ``filter_names``."""
    bad = set(names) - set(FILTER_NAMES)
    if bad:
        raise ValueError(f"not filters: {sorted(bad)}")

    def decorate(func: F) -> F:
        from .declarations import by_function

        declared = by_function(func.__name__)
        accepted = tuple(names) or (declared.filters if declared is not None else ())
        if not accepted:
            raise ValueError(f"{func.__name__} is not declared (toolkit/metrics/declarations.py)")
        own = inspect.signature(func)
        listed = [n for n in (*FILTER_NAMES, *ENGINE_KEYWORDS) if n in own.parameters]
        if listed:
            raise TypeError(f"{func.__name__}: the filters and engine keywords come from the declaration, not {listed}")
        groups = declared.by if declared is not None and declared.function == func.__name__ else ()

        @functools.wraps(func)
        def metric(
            warehouse: WarehouseLike = None,
            *args: Any,
            where: Filters | None = None,
            engine: str | None = None,
            parquet: str | os.PathLike[str] | None = None,
            spark: Any = None,
            **kwargs: Any,
        ):
            given = {k: kwargs.pop(k) for k in FILTER_NAMES if k in kwargs}
            refused = sorted(k for k, v in given.items() if v is not None and k not in accepted)
            if refused:
                raise TypeError(f"{func.__name__} does not filter by {refused}; it takes {list(accepted)}")
            if where is not None and (extra := [k for k in where.given() if k not in accepted]):
                raise TypeError(f"{func.__name__} does not filter by {extra}; it takes {list(accepted)}")
            if groups and kwargs.get("by") is not None:
                declared.check_by(kwargs["by"])  # type: ignore[union-attr]
            filters = Filters.of(where, **{k: v for k, v in given.items() if v is not None})
            warehouse = engine_for(warehouse, engine=engine, parquet=parquet, spark=spark)
            # the period and event types the warehouse holds (toolkit.metrics.coverage): clipped or refused
            from .coverage import clip_to_coverage, coverage_of

            with open_warehouse(warehouse) as wh:
                filters = known_filters(wh, func.__name__, filters)
                filters, attrs = clip_to_coverage(func.__name__, filters, coverage_of(wh))
                result = func(wh, *args, where=filters, **kwargs)
                if isinstance(result, pd.DataFrame):
                    result = with_channel_names(wh, result)
                    attrs.update(described(wh, func.__name__, filters))
            if isinstance(result, pd.DataFrame):
                result.attrs.update(attrs)
                _warn_if_before_the_data(result, func.__name__)
                for hook in RESULT_HOOKS:
                    hook(result)
            return result

        metric.__signature__ = signature_of(accepted, own)  # type: ignore[attr-defined]
        metric.__doc__ = docstring_of(func.__doc__, accepted, groups)
        metric.filter_names = tuple(accepted)  # type: ignore[attr-defined]
        return metric  # type: ignore[return-value]

    return decorate


def _warn_if_before_the_data(result: pd.DataFrame, function: str) -> None:
    """Warn (:class:`EmptyPeriodWarning`) when ``result`` is empty because its period, counted back from now, starts
    after the newest event."""
    period = result.attrs.get("period")
    if not result.empty or not isinstance(period, Period):
        return
    from .known_values import older_than_data

    said = older_than_data(period)
    if said:
        warnings.warn(f"{function}: {said}", EmptyPeriodWarning, stacklevel=3)


def known_filters(wh: Warehouse | QueryEngine, function: str, filters: Filters) -> Filters:
    """``filters`` with their network, channel and status values as the warehouse knows them (a network name in any
    case, a channel's name as its id). Raises :class:`~.declare.UnknownValueError` (a ``ValueError``) naming the
    known values and the nearest one, the same words on the command line, rather than answer an empty table."""
    if filters.network is None and filters.channel is None and filters.status is None:
        return filters
    from .known_values import resolve_filters

    lists = {
        k: list(v) if v is not None else None
        for k, v in (("network", filters.network), ("channel", filters.channel), ("status", filters.status))
    }
    known = resolve_filters(wh, function, prefix="", **lists)  # type: ignore[arg-type]
    return replace(filters, **{k: tuple(v) if v is not None else None for k, v in known.items()})


def with_channel_names(wh: Warehouse | QueryEngine, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each channel's name (``channel``) beside its ``channel_id`` when it has ids and no names; a
    channel the warehouse does not name shows its id."""
    if "channel_id" not in df.columns or "channel" in df.columns:
        return df
    names = wh.query("SELECT CAST(channel_id AS VARCHAR) AS channel_id, name FROM channels")
    lookup = dict(zip(names["channel_id"].astype(str), names["name"], strict=True))
    ids = df["channel_id"]
    named = [None if i is None or i != i else lookup.get(str(i), str(i)) for i in ids.tolist()]
    position = list(df.columns).index("channel_id") + 1
    out = df.copy()
    out.insert(position, "channel", pd.Series(named, index=df.index, dtype=object))
    return out


def described(wh: Warehouse | QueryEngine, function: str, filters: Filters) -> dict[str, Any]:
    """What a result is about, for its ``attrs``: the declared ``metric`` name, ``period`` (a
    :class:`~toolkit.times.Period`: the bounds used, the period as given, and ``as_of``, the newest event time, on a
    warehouse; another engine is not asked, each query there costs a job), and the same bounds and as-of as ISO
    8601 text under ``since``, ``until`` and ``as_of`` (the keys results carried before)."""
    from .declarations import by_function

    found = by_function(function)
    as_of = latest_event_time(wh) if isinstance(wh, Warehouse) else None
    given = filters.period or Period()
    period = Period(filters.since, filters.until, given.since, given.until, as_of)
    out: dict[str, Any] = {"metric": found.name if found is not None else function, "period": period}
    out.update(period.to_attrs())
    if not isinstance(wh, Warehouse):
        del out["as_of"]
    return out


def engine_for(
    warehouse: WarehouseLike,
    *,
    engine: str | None = None,
    parquet: str | os.PathLike[str] | None = None,
    spark: Any = None,
) -> WarehouseLike:
    """What a metric runs on: ``warehouse`` as given, or (``engine="spark"``, or ``parquet``/``spark`` given) the
    Parquet export ``parquet`` read by Spark (``spark``: a SparkSession, a ``SparkWarehouse``, or None for the
    active or a local session). Raises ``ValueError`` for an unknown engine or a missing export."""
    if engine is not None and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {list(ENGINES)}")
    if engine == "duckdb" or (engine is None and parquet is None and spark is None):
        if parquet is not None or spark is not None:
            raise ValueError("parquet= and spark= are for engine='spark'")
        return warehouse
    from ..spark import SparkWarehouse, spark_warehouse  # pyspark only when asked for

    if isinstance(spark, SparkWarehouse):
        return spark
    if isinstance(warehouse, SparkWarehouse):
        return warehouse
    if parquet is None:
        raise ValueError("engine='spark' reads a Parquet export: give parquet='DIR' (write one with chainops export)")
    return spark_warehouse(parquet, spark)


@contextmanager
def open_warehouse(warehouse: WarehouseLike) -> Iterator[Warehouse | QueryEngine]:
    """The given warehouse (or engine), or the path (default: the configured one) opened read-only for the block."""
    if isinstance(warehouse, QueryEngine):  # a Warehouse, or an engine such as Spark over an export
        yield warehouse
        return
    path = warehouse if warehouse is not None else Settings.load().warehouse
    with Warehouse(path, read_only=True) as wh:
        yield wh


def status_categorical(values: pd.Series, order: Sequence[str] = spec.OPERATION_STATUSES) -> pd.Series:
    """Statuses as an ordered categorical in lifecycle order; unknown values are kept, after the known ones.

    Arguments: ``values`` the statuses, ``order`` the known ones in order. Returns the categorical.
    """
    present = [v for v in pd.unique(values.dropna()) if v not in order]
    return pd.Categorical(values, categories=[*order, *sorted(present)], ordered=True)  # type: ignore[return-value]


def bucket_seconds(bucket: DurationLike) -> int:
    """The width in seconds of a time bucket given as ``15m``, ``1h``, ``1d``, ``1w``, seconds or a timedelta.

    Arguments: ``bucket``. Returns whole seconds (at least 1). Raises ``ValueError`` for anything else.
    """
    return parse_duration(bucket)


@dataclass
class Sql:
    """WHERE clauses and named parameters of one statement: every value is bound (``$p0``, ...), never pasted."""

    clauses: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def bind(self, value: Any) -> str:
        """Keep ``value`` as a named parameter; returns its placeholder."""
        name = f"p{len(self.params)}"
        self.params[name] = value
        return f"${name}"

    def one_of(self, value: Values, *columns: str) -> Sql:
        """Require one of ``columns`` to be one of ``value`` (no filter when None); returns self."""
        values = _values(value)
        if values is not None:
            ref = self.bind(values)
            self.clauses.append("(" + " OR ".join(f"list_contains({ref}, {c})" for c in columns) + ")")
        return self

    def period(self, column: str, start: pd.Timestamp | None, end: pd.Timestamp | None) -> Sql:
        """Require ``column`` in ``[start, end)`` (each bound optional); returns self."""
        if start is not None:
            self.clauses.append(f"{column} >= {self.bind(start.to_pydatetime())}")
        if end is not None:
            self.clauses.append(f"{column} < {self.bind(end.to_pydatetime())}")
        return self

    def where(self, keyword: str = "WHERE") -> str:
        """The clauses joined by AND after ``keyword``; returns "" when there are none."""
        return f"{keyword} " + " AND ".join(self.clauses) if self.clauses else ""


def grouping(by: Sequence[str] | str | None, allowed: Sequence[str], metric: str) -> list[str]:
    """The grouping columns of ``by``, checked against the metric's allow-list (``ValueError`` names them)."""
    cols = [by] if isinstance(by, str) else list(by or [])
    bad = [c for c in cols if c not in allowed]
    if bad:
        raise ValueError(f"cannot group {metric} by {bad}; choose from {list(allowed)}")
    return list(dict.fromkeys(cols))


def bucket_sql(q: Sql, column: str, bucket: str | int | timedelta | None) -> str:
    """SQL for the start of ``column``'s bucket in epoch microseconds (an integer: grouping stays cheap)."""
    if bucket is None:
        return ""
    width = q.bind(bucket_seconds(bucket) * 1_000_000)
    origin = q.bind(_BUCKET_ORIGIN_US)
    return f"((epoch_us({column}) - {origin}) // {width}) * {width} + {origin}"


def bucket_to_time(df: pd.DataFrame) -> pd.DataFrame:
    """The ``bucket`` column (epoch microseconds) as tz-aware UTC timestamps."""
    if "bucket" in df.columns:
        df["bucket"] = pd.to_datetime(df["bucket"].astype("Int64"), unit="us", utc=True)
    return df


def select_groups(cols: Sequence[str], bucket: str = "", exprs: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(select list prefix, GROUP BY list) of the grouping columns (``exprs`` maps a column to its SQL) and the
    optional bucket. Column names come from a metric's allow-list."""
    exprs = exprs or {}
    pairs = [(exprs.get(c, c), c) for c in cols] + ([(bucket, "bucket")] if bucket else [])
    select = "".join(f"{e} AS {name}, " for e, name in pairs)
    return select, (", ".join(e for e, _ in pairs) if pairs else "()")


def sort_rows(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """``df`` sorted by the ``keys`` it has (missing values last), with a fresh index."""
    keys = [k for k in keys if k in df.columns]
    if keys and len(df):
        df = df.sort_values(keys, kind="stable", na_position="last")
    return df.reset_index(drop=True)


def params_in(sql: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The named parameters of ``params`` that ``sql`` binds (``$p1``, not ``$p10``): a statement built from part of
    a metric's clauses is run with only its own (DuckDB refuses a value it has no placeholder for)."""
    return {k: v for k, v in params.items() if re.search(rf"\${re.escape(k)}\b", sql)}


def deadlines_sql(ids: str) -> str:
    """SQL of the deadline of each operation whose id ``ids`` (SQL giving one column of ids) gives: columns
    ``operation_id`` and ``deadline_at``, one row an operation (an id listed in two channels has a row in each), read
    only for those ids rather than the whole operations table grouped."""
    return (
        "SELECT operation_id, any_value(deadline_at) AS deadline_at FROM operations "
        f"WHERE operation_id IN ({ids}) GROUP BY operation_id"
    )


def run(warehouse: WarehouseLike, sql: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Run one bound statement on the warehouse; returns its result."""
    with open_warehouse(warehouse) as wh:
        return wh.query(sql, dict(params or {}))


def latest_event_time(warehouse: WarehouseLike = None) -> pd.Timestamp | None:
    """The newest event time in the warehouse: the time the data is as of (ages and censoring are measured to it).

    Arguments: ``warehouse``. Returns a UTC timestamp, or None for a warehouse without events.
    """
    df = run(warehouse, "SELECT max(ts) AS ts FROM events")
    value = df["ts"].iloc[0] if len(df) else None
    return None if value is None or pd.isna(value) else pd.Timestamp(value).tz_convert("UTC")
