"""Metrics: SQL over the warehouse's modelled views, returned as pandas DataFrames.

Every function takes the warehouse (a :class:`~toolkit.warehouse.Warehouse` or a path; default: the configured
one), filters and a grouping, and returns a DataFrame with tz-aware UTC times and statuses as ordered categoricals
in lifecycle order. Filter values are bound as SQL parameters, never pasted into the SQL text; grouping columns come
from a fixed allow-list per metric.

Filters (each metric says which it takes; all of them in one :class:`Filters` object, passed as ``where``, or as
keywords):

- ``channel``, ``network`` (a name or a chain selector), ``status``: one value or a list of values;
- ``since``/``until``: the period ``[since, until)``, as datetimes, ISO strings or ages such as ``7d`` or ``12h``
  (:mod:`toolkit.times`: an age in ``since`` counts back from ``until`` when it is given);

and ``by``, the grouping columns (each metric lists the ones it accepts), and ``bucket``, a time-bucket width such as
``1h``, ``1d`` or ``1w`` (buckets start at UTC midnight, weeks on Monday) for the metrics measured over time.

One module per family: :mod:`.latency`, :mod:`.outcomes`, :mod:`.finality`, :mod:`.queries`, :mod:`.stuck`,
:mod:`.revisits`, :mod:`.queries_overdue`, :mod:`.proofs`, :mod:`.watchers`,
over :mod:`.common` (filters, SQL plumbing) and :mod:`.stats`.
:data:`METRICS` maps the kebab-case names of ``chainops metrics NAME`` to these functions. Each metric is declared
once in :mod:`.declarations` (the shapes: :mod:`.declare`); the functions' signatures and docstrings follow from it.

The names are imported on first use (PEP 562): ``import toolkit.metrics`` (and its declarations, which the command
line reads) loads no pandas or DuckDB; ``toolkit.metrics.status_latency`` loads what it needs.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import TYPE_CHECKING, Any

#: Each public name -> the module of this package that defines it.
_LAZY: dict[str, str] = {
    **dict.fromkeys(("FILTER_NAMES", "UnknownValueError"), "declare"),
    **dict.fromkeys(
        (
            "EmptyPeriodWarning",
            "Filters",
            "Values",
            "WarehouseLike",
            "bucket_seconds",
            "latest_event_time",
            "open_warehouse",
            "status_categorical",
        ),
        "common",
    ),
    **dict.fromkeys(("FINALITY_GROUPS", "FINALITY_TIMES", "finality_breakdown", "finality_times"), "finality"),
    **dict.fromkeys(("STATUS_LATENCY_GROUPS", "status_durations", "status_latency"), "latency"),
    **dict.fromkeys(
        (
            "FAILURE_CATEGORIES",
            "FAILURE_RULES",
            "OPERATION_GROUPS",
            "classify_failure",
            "failure_rates",
            "failure_reasons",
        ),
        "outcomes",
    ),
    **dict.fromkeys(("PROOF_GROUPS", "proof_coverage"), "proofs"),
    **dict.fromkeys(("QUERY_GROUPS", "QUERY_OUTCOMES", "query_latency"), "queries"),
    **dict.fromkeys(("OVERDUE_QUERY_GROUPS", "overdue_queries"), "queries_overdue"),
    **dict.fromkeys(("REVISIT_GROUPS", "revisits"), "revisits"),
    **dict.fromkeys(("Z95", "newcombe_interval", "two_proportion_p", "wilson_interval"), "stats"),
    **dict.fromkeys(("STUCK_COLUMNS", "STUCK_GROUPS", "stuck_operations"), "stuck"),
    **dict.fromkeys(("WATCHER_GROUPS", "watcher_activity", "watcher_status_history"), "watchers"),
}

if TYPE_CHECKING:  # for type checkers and the API reference
    from collections.abc import Callable

    import pandas as pd

    from ..times import TimeLike
    from .common import (
        EmptyPeriodWarning,
        Filters,
        Values,
        WarehouseLike,
        bucket_seconds,
        latest_event_time,
        open_warehouse,
        status_categorical,
    )
    from .declare import FILTER_NAMES, UnknownValueError
    from .finality import FINALITY_GROUPS, FINALITY_TIMES, finality_breakdown, finality_times
    from .latency import STATUS_LATENCY_GROUPS, status_durations, status_latency
    from .outcomes import (
        FAILURE_CATEGORIES,
        FAILURE_RULES,
        OPERATION_GROUPS,
        classify_failure,
        failure_rates,
        failure_reasons,
    )
    from .proofs import PROOF_GROUPS, proof_coverage
    from .queries import QUERY_GROUPS, QUERY_OUTCOMES, query_latency
    from .queries_overdue import OVERDUE_QUERY_GROUPS, overdue_queries
    from .revisits import REVISIT_GROUPS, revisits
    from .stats import Z95, newcombe_interval, two_proportion_p, wilson_interval
    from .stuck import STUCK_COLUMNS, STUCK_GROUPS, stuck_operations
    from .watchers import WATCHER_GROUPS, watcher_activity, watcher_status_history

    METRICS: dict[str, Callable[..., pd.DataFrame]]


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it; ``METRICS``: every metric by its ``chainops metrics NAME``
    name (from :mod:`.declarations`); ``_open``/``to_utc``: kept for code written against the single module."""
    if name == "METRICS":
        from .declarations import METRICS as DECLARED

        value: Any = {m.name: importlib.import_module(f".{m.module}", __name__).__dict__[m.function] for m in DECLARED}
    elif name == "_open":
        value = importlib.import_module(".common", __name__).open_warehouse
    elif name in ("to_utc", "TimeLike"):
        times = importlib.import_module("..times", __name__)
        value = times.parse_time if name == "to_utc" else times.TimeLike
    elif name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif (declared := _declared_module(name)) is not None:  # a metric added by its declaration alone
        value = getattr(importlib.import_module(f".{declared}", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def _declared_module(name: str) -> str | None:
    """The module of the declared metric whose function (or companion) is ``name``, or None (at once for the name of
    a submodule: ``from toolkit.metrics import declare`` asks for the attribute before importing it)."""
    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return None
    from .declarations import by_function

    found = by_function(name)
    return found.module if found is not None else None


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "METRICS"})


class _Package(types.ModuleType):
    """This package, whose name ``revisits`` is the function (as it was when the package imported every module at
    once), not the submodule of that name that the import system binds here when it is first imported."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "revisits" and isinstance(value, types.ModuleType):
            value = value.revisits
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "FAILURE_CATEGORIES",
    "FAILURE_RULES",
    "FILTER_NAMES",
    "FINALITY_GROUPS",
    "FINALITY_TIMES",
    "METRICS",
    "OPERATION_GROUPS",
    "OVERDUE_QUERY_GROUPS",
    "PROOF_GROUPS",
    "QUERY_GROUPS",
    "QUERY_OUTCOMES",
    "REVISIT_GROUPS",
    "STATUS_LATENCY_GROUPS",
    "STUCK_COLUMNS",
    "STUCK_GROUPS",
    "WATCHER_GROUPS",
    "Z95",
    "EmptyPeriodWarning",
    "Filters",
    "TimeLike",
    "UnknownValueError",
    "Values",
    "WarehouseLike",
    "bucket_seconds",
    "classify_failure",
    "failure_rates",
    "failure_reasons",
    "finality_breakdown",
    "finality_times",
    "latest_event_time",
    "newcombe_interval",
    "open_warehouse",
    "overdue_queries",
    "proof_coverage",
    "query_latency",
    "revisits",
    "status_categorical",
    "status_durations",
    "status_latency",
    "stuck_operations",
    "two_proportion_p",
    "watcher_activity",
    "watcher_status_history",
    "wilson_interval",
]
