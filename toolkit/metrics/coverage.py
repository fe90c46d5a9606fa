"""Metrics over the period and event types the warehouse holds, never over what it does not.

A warehouse synced with ``chainops sync --since 30d`` holds each channel's events created since then (see
:mod:`toolkit.warehouse.coverage`). A metric asked for a period that starts earlier is **clipped** to the held
period: a weekly report over a 30-day warehouse keeps working, and the result says so (its ``attrs["coverage"]``,
and a note on standard error on the command line). A period that ends before the held one starts holds nothing to
count: that is refused (:class:`NotHeldError`, exit 2), as is a metric whose event type the warehouse does not
hold (operation metrics on a warehouse synced with ``--event-type query.status`` only), rather than a table of
zeros.

Operations created before the window started have their earlier statuses missing, so every operation metric counts
only operations created in the held period: most select by ``created_at`` already, and the per-status latency
checks it through :attr:`Filters.window_start <toolkit.metrics.common.Filters.window_start>`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import UsageError
from ..warehouse import Warehouse
from ..warehouse.coverage import Coverage, try_read_coverage
from .declarations import required_types

#: The event type each metric is computed from (a metric not named needs none in particular), from the registry.
REQUIRED_TYPES: dict[str, str] = required_types()


class NotHeldError(UsageError):
    """A metric asked for events the warehouse does not hold (a period before its window, or a type it did not
    sync): a usage error, exit 2 on the command line."""


def _when(ts: Any) -> str:
    return ts.strftime("%Y-%m-%d %H:%M UTC")


def clip_to_coverage(metric: str, filters: Any, coverage: Coverage | None) -> tuple[Any, dict[str, Any]]:
    """The filters of ``metric`` limited to what ``coverage`` holds, and what to put in the result's ``attrs``.

    Raises :class:`NotHeldError` when the metric's event type is not held or the period ends before the held one
    starts."""
    if coverage is None:
        return filters, {}
    cov = coverage.of(filters.channel)
    attrs: dict[str, Any] = {"coverage": cov.to_attrs()}
    if cov.whole:
        return filters, attrs
    need = REQUIRED_TYPES.get(metric)
    if need is not None and not cov.holds_type(need):
        raise NotHeldError(
            f"{metric}: the warehouse holds no {need} events (it holds {cov.describe()}); sync them with "
            f"`chainops sync --event-type {need}` (the other types held are kept)"
        )
    start = cov.since
    if start is None:
        return filters, attrs
    if filters.until is not None and filters.until <= start:
        raise NotHeldError(
            f"{metric}: the period ends {_when(filters.until)}, before the warehouse's events start "
            f"({_when(start)}: it holds {cov.describe()}); sync the older part with `chainops sync --since TIME`"
        )
    if filters.since is None or filters.since < start:
        asked = "the warehouse's start" if filters.since is None else _when(filters.since)
        attrs["clipped"] = f"the period starts at {_when(start)}, not {asked}: the warehouse holds {cov.describe()}"
        filters = replace(filters, since=start)
    return replace(filters, window_start=start), attrs


def coverage_of(warehouse: Any) -> Coverage | None:
    """The warehouse's coverage, or ``None`` for another engine (Spark over an export: its metrics are not clipped;
    each extra query there costs a Spark job)."""
    if not isinstance(warehouse, Warehouse):
        return None
    return try_read_coverage(warehouse)


__all__ = ["REQUIRED_TYPES", "NotHeldError", "clip_to_coverage", "coverage_of"]
