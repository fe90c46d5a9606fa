"""What a metric is, as data: the shapes every metric's one declaration takes (:mod:`.declarations` holds them).

A :class:`Metric` holds a metric's name, the function that computes it (by name: this module and the declarations
import no pandas or DuckDB, so the command line reads them at once), the filters and ``by`` columns it accepts, the
other options it takes, and its :class:`Column` s (kind, unit, short header, description, whether a value). From it
follow the public function's signature and docstring (:func:`signature_of`, :func:`docstring_of`, applied by
:func:`toolkit.metrics.common.takes_filters`), the command line's arguments (:meth:`Metric.arguments`), the checks
Python and the command line share (:meth:`Metric.check_by`, :func:`nearest`), the report's tables
(:class:`ReportTable`), the dashboards' tab (:class:`View`) and the docs (``docs/metric-columns.md``).

Column kinds: ``proportion`` (a value in [0, 1] shown as a percentage, with its ``_low``/``_high`` 95% interval when
present), ``duration`` (seconds, shown in one unit per column), ``count``, ``number``, ``time`` (UTC), ``id``,
``text``, ``flag``.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError

#: Every filter a metric may take, in the order signatures list them.
FILTER_NAMES = ("channel", "network", "status", "since", "until")
#: The keywords that choose the engine, taken by every metric (:func:`toolkit.metrics.common.engine_for`).
ENGINE_KEYWORDS = ("engine", "parquet", "spark")
#: The options beside the filters that a metric may declare (``Metric.options``), as the command line passes them.
OPTION_NAMES = ("bucket", "top", "now")

_KW = inspect.Parameter.KEYWORD_ONLY
#: The one keyword-only block of filter parameters every metric's signature is built from (annotations as text).
FILTER_PARAMETERS: dict[str, inspect.Parameter] = {
    "channel": inspect.Parameter("channel", _KW, default=None, annotation="Values"),
    "network": inspect.Parameter("network", _KW, default=None, annotation="Values"),
    "status": inspect.Parameter("status", _KW, default=None, annotation="Values"),
    "since": inspect.Parameter("since", _KW, default=None, annotation="TimeLike"),
    "until": inspect.Parameter("until", _KW, default=None, annotation="TimeLike"),
}
ENGINE_PARAMETERS = (
    inspect.Parameter("engine", _KW, default=None, annotation="Engine"),
    inspect.Parameter("parquet", _KW, default=None, annotation="ParquetPath"),
    inspect.Parameter("spark", _KW, default=None, annotation="Any"),
)
#: What each filter selects, for the generated docstrings.
FILTER_TEXT = {
    "channel": "one channel id (or a channel's name) or a list of them",
    "network": "a network name (any case) or chain selector, or a list of them",
    "status": "one status or a list of them",
    "since": "start of the period: a datetime, an ISO string or an age such as ``7d`` (counted back from ``until``)",
    "until": "end of the period (excluded): a datetime, an ISO string, ``now`` or an age",
}


class UnknownValueError(UsageError, ValueError):
    """A filter value the warehouse does not know, or a ``by`` column the metric cannot group by (a usage error: exit
    2 on the command line; a ``ValueError`` in Python)."""


#: How alike (difflib's ratio, 0 to 1) a value must be to a known one to be suggested.
CLOSE = 0.6


def nearest(value: str, known: Iterable[str]) -> str | None:
    """The known value nearest to ``value``: one that differs only in case, else one that contains it (or that it
    contains), else the closest by difflib's ratio (at least :data:`CLOSE`), each value compared whole and by its
    beginning (``pendng`` is ``pending_signature`` mistyped, not ``sending``); None when nothing is close."""
    options = sorted(set(known))
    lowered = value.lower()
    for option in options:
        if option.lower() == lowered:
            return option
    containing = [o for o in options if lowered in o.lower() or o.lower() in lowered]
    if containing:
        return min(containing, key=lambda o: (abs(len(o) - len(value)), o))
    scored = []
    for option in options:
        folded = option.lower()
        whole = difflib.SequenceMatcher(None, lowered, folded).ratio()
        start = difflib.SequenceMatcher(None, lowered, folded[: len(lowered) + 1]).ratio()
        scored.append((max(whole, start), whole, -abs(len(option) - len(value)), option))
    best = min(scored, key=lambda s: (-s[0], -s[1], -s[2], s[3]), default=None)  # ties: the first by name
    return best[-1] if best is not None and best[0] >= CLOSE else None


@dataclass(frozen=True)
class Column:
    """One column of a metric's result: its ``name`` and ``kind`` (its unit: ``duration`` is seconds, ``proportion``
    a share in [0, 1]); ``header``, the short label a table shows, keeping the statistic but not the unit (the
    presentation adds the unit it shows the column in; empty: derived from the name by :meth:`label`);
    ``description``, one line on what it holds; ``value``: whether it is one of the metric's own values (what a
    narrow table keeps last), rather than a descriptor such as a group or a count."""

    name: str
    kind: str
    header: str = ""
    description: str = ""
    value: bool = False

    def label(self) -> str:
        """The short header: ``header`` if declared, else the name without its unit suffix, words spaced
        (``since_created_p50_s`` -> ``since created p50``)."""
        if self.header:
            return self.header
        return self.name.removesuffix("_s").replace("_", " ")


@dataclass(frozen=True)
class ReportTable:
    """A table of the report that holds a metric's result: ``key`` (the table's name: its CSV/Parquet file and the
    HTML anchor), ``heading``, ``columns`` the HTML shows (the files hold every column; none: the section shows
    its figure and note only), ``note`` (how the period selects the rows and how the numbers are computed),
    ``within``: the key of the section it sits in under a sub-heading (None: a section of its own), and ``kinds``:
    whether the metric's column kinds apply (False: a table of other columns, shown by the naming conventions)."""

    key: str
    heading: str
    columns: tuple[str, ...] = ()
    note: str = ""
    within: str | None = None
    kinds: bool = True


@dataclass(frozen=True)
class View:
    """A tab of the dashboards (``tk.dashboard`` and ``chainops dashboard``): ``key``, ``title``, and what the tab
    says in place of a figure when the metric has no rows (``empty``). Its table shows the metric's default
    columns."""

    key: str
    title: str
    empty: str


@dataclass(frozen=True)
class Metric:
    """One metric, declared once: ``name`` (``chainops metrics NAME``), ``function`` (``tk.metrics.<function>``),
    ``module`` (the module of :mod:`toolkit.metrics` that computes it), ``title``, ``definition`` (one paragraph),
    ``period`` (how the period selects rows), ``filters`` it takes, ``by`` (the columns it can group by; empty: it
    takes no grouping), ``options`` (of :data:`OPTION_NAMES`: what else the command line passes it), the event type
    it ``needs`` (None: none in particular), ``columns`` (all of them, in order), ``default`` (the columns a
    terminal shows first), ``hidden`` (column -> values whose rows are not shown by default, with ``hidden_why``),
    ``companions``: other public functions computed from the same events (same filters), ``report``: the report's
    tables that show it, and ``view``: its dashboard tab (None: not on the dashboards)."""

    name: str
    function: str
    title: str
    definition: str
    period: str
    filters: tuple[str, ...]
    needs: str | None
    columns: tuple[Column, ...]
    default: tuple[str, ...]
    hidden: dict[str, frozenset[str]] = field(default_factory=dict)
    hidden_why: str = ""
    companions: tuple[str, ...] = ()
    report: tuple[ReportTable, ...] = ()
    view: View | None = None
    module: str = ""
    by: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        bad = [f for f in self.filters if f not in FILTER_NAMES] + [o for o in self.options if o not in OPTION_NAMES]
        if bad:
            raise ValueError(f"{self.name}: not filters or options: {bad}")
        names = self.column_names
        if len(set(names)) != len(names) or not set(self.default) <= set(names):
            raise ValueError(f"{self.name}: columns repeated, or a default column not among them")

    @property
    def column_names(self) -> tuple[str, ...]:
        """Every column's name, in order."""
        return tuple(c.name for c in self.columns)

    @property
    def value_columns(self) -> tuple[str, ...]:
        """The columns that hold the metric's own values (``Column.value``), in order."""
        return tuple(c.name for c in self.columns if c.value)

    def kinds(self) -> dict[str, str]:
        """Column name -> kind."""
        return {c.name: c.kind for c in self.columns}

    def column(self, name: str) -> Column:
        """The column called ``name`` (``KeyError`` for one the metric does not have)."""
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no column {name!r}")

    def check_by(self, by: Sequence[str] | str | None) -> list[str]:
        """The ``by`` columns, checked against the declared ones: :class:`UnknownValueError` (a ``ValueError`` and
        a usage error) names the nearest and the choices, the same words in Python and on the command line."""
        cols = [by] if isinstance(by, str) else list(by or [])
        for col in cols:
            if col not in self.by:
                hint = nearest(col, self.by)
                mean = f"; did you mean {hint!r}?" if hint else ""
                choices = ", ".join(self.by) if self.by else "none (it takes no grouping)"
                raise UnknownValueError(f"cannot group {self.name} by {col!r}{mean} Choose from: {choices}.")
        return cols

    def arguments(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of this metric's function from ``given`` (the command line's options as a mapping:
        every filter, option and ``by`` is looked up, anything else ignored; a value of None, "" or [] is not
        given). ``by`` given as text ``a,b`` is split. Raises :class:`~toolkit.errors.UsageError` naming the options
        the metric does not take."""
        takes = {*self.filters, *self.options}
        chosen = {k: given.get(k) for k in (*FILTER_NAMES, *OPTION_NAMES) if given.get(k)}
        refused = [f"--{k}" for k in chosen if k not in takes]
        if refused:
            raise UsageError(f"{self.name} does not take {', '.join(refused)}")
        by = given.get("by")
        if isinstance(by, str):
            by = [c.strip() for c in by.split(",") if c.strip()]
        if by:
            chosen["by"] = list(by)
        return chosen


def signature_of(metric_filters: Sequence[str], own: inspect.Signature) -> inspect.Signature:
    """The public signature of a metric function: ``warehouse`` and ``where`` and the other keywords of its own
    ``def`` (``own``), with the declared filters and the engine keywords inserted after ``where`` (one block for
    every metric, never written out in a ``def``)."""
    params = list(own.parameters.values())
    head = [p for p in params if p.kind is not _KW or p.name == "where"]
    tail = [p for p in params if p.kind is _KW and p.name != "where"]
    filters = [FILTER_PARAMETERS[f] for f in FILTER_NAMES if f in metric_filters]
    return own.replace(parameters=[*head, *filters, *ENGINE_PARAMETERS, *tail])


def docstring_of(doc: str | None, metric_filters: Sequence[str], by: Sequence[str] = ()) -> str:
    """The function's own docstring, then what every metric takes: its filters (from the declaration), ``where``,
    the engine keywords and, when declared, its ``by`` columns."""
    lines = [
        "",
        "Filters (keywords, or one :class:`~toolkit.metrics.Filters` as ``where``):",
        "",
        *(f"- ``{f}``: {FILTER_TEXT[f]}" for f in FILTER_NAMES if f in metric_filters),
    ]
    if by:
        lines += ["", "Grouping (``by``): any of " + ", ".join(f"``{c}``" for c in by) + "."]
    lines += [
        "",
        "Engine: ``engine='spark'`` with ``parquet=DIR`` (a ``chainops export``) and optionally ``spark=`` a session; "
        "the default is DuckDB over ``warehouse`` (a path, a Warehouse, or the configured one).",
    ]
    return inspect.cleandoc(doc or "") + "\n" + "\n".join(lines)


#: Called with each metric result (a DataFrame) before it is returned; the package root adds the notebook display
#: here, so that the metrics never import the presentation.
RESULT_HOOKS: list[Callable[[Any], None]] = []


__all__ = [
    "ENGINE_KEYWORDS",
    "FILTER_NAMES",
    "FILTER_PARAMETERS",
    "OPTION_NAMES",
    "RESULT_HOOKS",
    "Column",
    "Metric",
    "ReportTable",
    "UnknownValueError",
    "View",
    "docstring_of",
    "nearest",
    "signature_of",
]
