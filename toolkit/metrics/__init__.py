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
:data:`METRICS` maps the kebab-case names of ``chainops metrics NAME`` to these functions.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from ..registry import METRICS as REGISTRY
from ..times import TimeLike, parse_time
from .common import (
    FILTER_NAMES,
    Filters,
    Values,
    WarehouseLike,
    bucket_seconds,
    latest_event_time,
    open_warehouse,
    status_categorical,
)
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

#: Kept for code written against the single-module metrics: the warehouse opener and the time parser.
_open = open_warehouse
to_utc = parse_time

#: Every metric by its ``chainops metrics NAME`` name (the names and their functions: :mod:`toolkit.registry`).
METRICS: dict[str, Callable[..., pd.DataFrame]] = {m.name: globals()[m.function] for m in REGISTRY}

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
    "Filters",
    "TimeLike",
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
