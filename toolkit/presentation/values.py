"""How one value reads, once, for every surface (terminal, HTML report, dashboards, notebooks).

A column's kind is decided in one place, :func:`column_kind`: the metric's declared kind
(:mod:`toolkit.registry`) first, then the one naming rule (:func:`toolkit.column_kinds.kind_by_name`), then, for a
column neither names (a SQL result), its type. Each kind has one way to read:

- a proportion: a percentage with three significant figures, trailing zeros kept, and its 95% interval:
  ``1.40% (0.256–7.76%)``;
- a duration: one unit per column (:func:`unit_for`: the largest in which the column's median is at least 2), named
  in the header, three significant figures: ``p90 (min)``: ``90.0``; ``18,288``;
- a count: ``1,234`` (:func:`format_count`); another number: four significant figures, never ``0.0`` for a small
  value;
- a time: UTC, ``2026-11-20 14:03:22``;
- an id: a UUID or long hex value shortened to ``1a2b3c4d…`` on a terminal;
- text: control characters written out visibly, long text shortened.

It imports pandas only inside functions: the command line reads it before it needs them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from ..column_kinds import KINDS, duration_stem, hours_stem, is_duration_name, is_proportion_name, kind_by_name

if TYPE_CHECKING:
    import pandas as pd

#: Characters a text cell keeps at most (the rest becomes ``…``).
DISPLAY_LIMIT = 200
#: Significant figures of plain numbers, and of percentages and durations.
SIGNIFICANT = 4
SIGNIFICANT_UNITS = 3
#: Duration units, largest first, with their seconds: a column takes the largest unit in which its typical (median)
#: value is at least 2, so 90 s stays seconds and 3 hours read as 3 h, not 180 min.
DURATION_UNITS = (("d", 86_400.0), ("h", 3_600.0), ("min", 60.0), ("s", 1.0))
#: Characters of an id kept on a terminal before ``…``.
ID_CHARS = 8

_OTHER_CONTROLS = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_CONTROL = re.compile(f"[\x00-\x1f{_OTHER_CONTROLS}]")
_CONTROL_EXCEPT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f{_OTHER_CONTROLS}]")
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_LONG_HEX_RE = re.compile(r"^0x[0-9a-fA-F]{16,}$")
#: Unix seconds between 2001 and 2286: a whole number in a column named like a time is read as one.
_UNIX_RANGE = (1_000_000_000, 9_999_999_999)


# ---- text --------------------------------------------------------------------------------------------------------


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean_for_terminal(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character written out visibly (ESC becomes the four characters ``\\x1b``).

    Arguments: ``text``; ``keep_newlines`` keeps ``\\n`` (for free text; a table cell must not have one).
    Returns the cleaned text; text without control characters comes back unchanged.
    """
    pattern = _CONTROL_EXCEPT_NEWLINE if keep_newlines else _CONTROL
    return pattern.sub(_visible, text)


def shorten(text: str, limit: int = DISPLAY_LIMIT) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when it was cut."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def short_id(text: str) -> str:
    """A UUID or long hex value shortened for a terminal (``1a2b3c4d…``, ``0x1a2b3c4d…``); other text unchanged."""
    if _UUID_RE.match(text):
        return text[:ID_CHARS] + "…"
    if _LONG_HEX_RE.match(text):
        return text[: ID_CHARS + 2] + "…"
    return text


# ---- numbers -----------------------------------------------------------------------------------------------------


def missing(value: Any) -> bool:
    """Whether ``value`` is missing: None, NaN, pandas' NA or NaT."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")


def format_number(value: Any, digits: int = SIGNIFICANT) -> str:
    """A number with ``digits`` significant digits (never ``0.0`` for a small non-zero value): ``0.0155``,
    ``1e-09``, ``1,235`` (thousands separated, whole numbers from 1,000 up), ``-`` for a missing value."""
    if missing(value):
        return "-"
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return str(bool(value))
    if _is_integral(value):
        return f"{int(value):,}"
    number = float(value)
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    if number == 0:
        return "0"
    magnitude = abs(number)
    if magnitude >= 10**digits and magnitude < 1e15:
        return f"{number:,.0f}"
    if magnitude < 1e-4 or magnitude >= 1e15:
        mantissa, exponent = f"{number:.{digits}g}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{number:.{digits}g}"


def _is_integral(value: Any) -> bool:
    import numbers

    return isinstance(value, numbers.Integral)


def format_significant(value: Any, digits: int = SIGNIFICANT_UNITS) -> str:
    """A number with ``digits`` significant figures, trailing zeros kept (``1.40``, ``0.256``, ``7.76``, ``60.5``);
    from ``10**(digits-1)`` up whole, thousands separated, no digit dropped (``100``, ``1,018``, ``18,288``); ``0``
    for zero, ``-`` missing; tiny values in exponent form (``1.20e-5``)."""
    if missing(value):
        return "-"
    number = float(value)
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    if number == 0:
        return "0"
    if abs(number) >= 10 ** (digits - 1) - 0.5:  # whole: 1,018 and 10,959 keep every digit before the point
        return f"{round(number):,}"
    rounded = float(f"{number:.{digits}g}")  # 9.996 -> 10.0: the decimals follow the rounded value
    magnitude = abs(rounded)
    if magnitude < 1e-4:
        mantissa, exponent = f"{number:.{digits - 1}e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    decimals = max(digits - 1 - math.floor(math.log10(magnitude)), 0)
    return f"{rounded:,.{decimals}f}"


def format_count(value: Any) -> str:
    """A count as every surface prints it: ``13,237`` (thousands separated); ``-`` when missing."""
    if missing(value):
        return "-"
    return f"{int(value):,}"


def format_percent(value: Any) -> str:
    """A proportion as a percentage with :data:`SIGNIFICANT_UNITS` significant figures, trailing zeros kept:
    ``2.19%``, ``1.40%``, ``0.0312%``."""
    if missing(value):
        return "-"
    return format_significant(float(value) * 100) + "%"


def format_interval(value: Any, low: Any, high: Any) -> str:
    """``2.19% (0.84–5.31%)``: a proportion and its 95% interval, in percent."""
    if missing(value):
        return "-"
    if missing(low) or missing(high):
        return format_percent(value)
    return f"{format_percent(value)} ({format_percent(low).rstrip('%')}–{format_percent(high)})"


def unit_for(seconds: Sequence[Any]) -> tuple[str, float]:
    """The unit (name, seconds) for a column of durations: the largest of :data:`DURATION_UNITS` in which the
    column's median absolute value is at least 2 (seconds for a column without values)."""
    values = sorted(abs(float(v)) for v in seconds if not missing(v))
    if not values:
        return "s", 1.0
    mid = len(values) // 2
    typical = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    for unit, size in DURATION_UNITS:
        if typical >= 2 * size:
            return unit, size
    return "s", 1.0


def format_in_unit(seconds: Any, unit: tuple[str, float]) -> str:
    """A duration in seconds as a number of ``unit`` (from :func:`unit_for`), three significant figures: the cell
    of a duration column (its header names the unit); ``-`` when missing."""
    if missing(seconds):
        return "-"
    return format_significant(float(seconds) / unit[1])


def format_duration(seconds: Any, unit: tuple[str, float] | None = None) -> str:
    """A duration with its unit, for prose: ``33.0 h``, ``90.0 s``, ``1.50 min`` (the unit as :func:`unit_for`
    picks it for this one value unless ``unit`` is given); ``unknown`` when missing."""
    if missing(seconds):
        return "unknown"
    name, size = unit or unit_for([seconds])
    return f"{format_in_unit(seconds, (name, size))} {name}"


def unit_named(name: str) -> tuple[str, float]:
    """The unit (name, seconds) of :data:`DURATION_UNITS` called ``name`` (``h`` -> ``("h", 3600.0)``)."""
    return next(u for u in DURATION_UNITS if u[0] == name)


def plural(count: float, word: str, words: str | None = None) -> str:
    """``1 operation``, ``2 operations``, ``1,977 operations``: a count with its noun in the right number."""
    n = int(count)
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def format_time(value: Any, *, seconds: bool = True) -> str:
    """A time as UTC text, ``2026-11-20 14:03:22`` (naive times are taken as UTC); ``-`` when missing."""
    if missing(value):
        return "-"
    if isinstance(value, int | float) or _is_integral(value):
        if value == 0:
            return "-"
        value = datetime.fromtimestamp(float(value), tz=UTC)
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


# ---- columns -----------------------------------------------------------------------------------------------------


def is_proportion_column(name: str) -> bool:
    """Whether a metric column holds a proportion in [0, 1] by its name (``*_rate``, ``*_share``, ``share``,
    ``rate``, ``coverage``, and their ``_low``/``_high`` bounds): :func:`toolkit.column_kinds.is_proportion_name`."""
    return is_proportion_name(name)


def is_duration_column(name: str) -> bool:
    """Whether a metric column holds a duration in seconds by its name (``*_s`` or ``seconds_*``)."""
    return is_duration_name(name)


def _kind_by_values(values: Sequence[Any], dtype: Any, name_kind: str | None) -> str:
    import pandas as pd

    api = pd.api.types
    if api.is_bool_dtype(dtype):
        return "flag"
    if api.is_datetime64_any_dtype(dtype):
        return "time"
    if api.is_integer_dtype(dtype):
        present = [int(v) for v in values if not missing(v) and int(v) != 0]  # 0: no time set
        unix = present and all(_UNIX_RANGE[0] <= v <= _UNIX_RANGE[1] for v in present)
        return "time" if name_kind == "time" and unix else "count"
    if api.is_numeric_dtype(dtype):
        present = [v for v in values if not missing(v)]
        if name_kind == "time" and present and all(_UNIX_RANGE[0] <= float(v) <= _UNIX_RANGE[1] for v in present):
            return "time"
        return "number"
    sample = [v for v in values if not missing(v)][:50]
    if sample and all(isinstance(v, datetime) for v in sample):
        return "time"
    if sample and all(isinstance(v, str) and (_UUID_RE.match(v) or _LONG_HEX_RE.match(v)) for v in sample):
        return "id"
    return "id" if name_kind == "id" else "text"


def column_kind(name: str, series: pd.Series, metric: str | bool = True) -> str:
    """The kind a column is shown as, decided here only: the kind ``metric`` (a registry name) declares for it,
    else the one naming rule (:func:`toolkit.column_kinds.kind_by_name`; with ``metric`` False only ids and
    times), else its type (a SQL result's columns). A proportion or duration by name must hold numbers."""
    from ..registry import declared_kinds

    declared = declared_kinds(metric) if isinstance(metric, str) else {}
    if name in declared:
        return declared[name]
    by_name = kind_by_name(name, metric=metric is not False)
    if by_name in ("proportion", "duration", "count"):
        import pandas as pd

        if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
            return by_name
    return _kind_by_values(series.tolist(), series.dtype, by_name)


__all__ = [
    "DISPLAY_LIMIT",
    "DURATION_UNITS",
    "ID_CHARS",
    "KINDS",
    "SIGNIFICANT",
    "SIGNIFICANT_UNITS",
    "clean_for_terminal",
    "column_kind",
    "duration_stem",
    "format_count",
    "format_duration",
    "format_in_unit",
    "format_interval",
    "format_number",
    "format_percent",
    "format_significant",
    "format_time",
    "hours_stem",
    "is_duration_column",
    "is_proportion_column",
    "kind_by_name",
    "missing",
    "plural",
    "short_id",
    "shorten",
    "unit_for",
    "unit_named",
]
