"""The one naming rule for a column's kind: what a column's name says it holds, when nothing declares it.

A metric's columns are declared with their kinds (:mod:`toolkit.metrics.declarations`); the presentation
(:mod:`toolkit.presentation.values`) and the report's summary fall back on this rule for a column nothing declares
(a SQL result's, a summary's), so a name means the same kind everywhere. It imports nothing, so the foundation may
use it.

Kinds (:data:`KINDS`): ``proportion`` (a share in [0, 1], shown as a percentage, with ``_low``/``_high`` 95% bounds
beside it), ``duration`` (seconds), ``count``, ``number``, ``time`` (UTC), ``id``, ``text``, ``flag``.
"""

from __future__ import annotations

import re

#: The kinds of column, each with one way to read.
KINDS = ("proportion", "duration", "count", "number", "time", "id", "text", "flag")

_PROPORTION_RE = re.compile(r"^(?:.*_(?:rate|share|coverage)|share|rate|coverage)$")
_DURATION_RE = re.compile(r"^(?:(?P<stem>.+)_s|seconds_(?P<what>.+))$")
_HOURS_RE = re.compile(r"^(?P<stem>.+)_h$")
_COUNT_RE = re.compile(r"^(?:n|.*_(?:censored|operations|count))$")
_TIME_NAME_RE = re.compile(r"^(?:.*_at|ts|time|timestamp|deadline|created|updated|.*_time)$")


def bound_stem(name: str) -> str:
    """A 95% bound's proportion: ``failure_rate_low`` -> ``failure_rate``; other names unchanged."""
    for end in ("_low", "_high"):
        if name.endswith(end):
            return name.removesuffix(end)
    return name


def is_bound(name: str) -> bool:
    """Whether ``name`` is the ``_low``/``_high`` bound of a proportion (``failure_rate_low``)."""
    return bound_stem(name) != name and bool(_PROPORTION_RE.match(bound_stem(name)))


def is_proportion_name(name: str) -> bool:
    """Whether the name says a proportion: ``*_rate``, ``*_share``, ``*_coverage``, ``share``, ``rate``,
    ``coverage`` (and their ``_low``/``_high`` bounds)."""
    return bool(_PROPORTION_RE.match(bound_stem(name)))


def is_duration_name(name: str) -> bool:
    """Whether the name says a duration in seconds: ``*_s`` or ``seconds_*``."""
    return bool(_DURATION_RE.match(name))


def duration_stem(name: str) -> str:
    """A duration column's name without its unit: ``p90_s`` -> ``p90``, ``seconds_in_status`` -> ``in_status``."""
    m = _DURATION_RE.match(name)
    return (m.group("stem") or m.group("what")) if m else name


def hours_stem(name: str) -> str | None:
    """The stem of a name in hours (``sync_age_h`` -> ``sync_age``); None for another name."""
    m = _HOURS_RE.match(name)
    return m.group("stem") if m else None


def kind_by_name(name: str, *, metric: bool = True) -> str | None:
    """The kind a column's name says it has (None when the name says nothing).

    With ``metric`` (a metric's or the report's column), the metrics' conventions: proportions, durations in
    seconds and counts (``n``, ``*_censored``, ``*_operations``, ``*_count``); always ids (``id``, ``*_id``) and
    times (``*_at``, ``ts``, ...). Without it (a SQL result) only ids and times.
    """
    if metric and is_proportion_name(name):
        return "proportion"
    if metric and is_duration_name(name):
        return "duration"
    if metric and _COUNT_RE.match(name):
        return "count"
    if name.endswith("_id") or name == "id":
        return "id"
    if _TIME_NAME_RE.match(name):
        return "time"
    return None


__all__ = [
    "KINDS",
    "bound_stem",
    "duration_stem",
    "hours_stem",
    "is_bound",
    "is_duration_name",
    "is_proportion_name",
    "kind_by_name",
]
