"""Values from the service made safe to show: on a terminal, in a CSV file a spreadsheet opens, in a report.

Names, reasons and ids come from the service (or whoever wrote to it) and may hold anything: ANSI escape sequences
that recolour or rewrite a terminal, ``=HYPERLINK(...)`` that a spreadsheet runs as a formula, a megabyte of text.
Data outputs (JSON, Parquet, the warehouse) keep every value as it is; only what is displayed goes through here.
This module imports nothing of the toolkit, so every module may use it.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

import pandas as pd

#: Characters a value shown in a table keeps at most (the rest becomes ``…``).
DISPLAY_LIMIT = 200

# C0 controls (ESC, BEL, BS, CR, LF, ...), DEL, C1 controls (CSI 0x9b and friends), and the Unicode bidi controls that
# can make text read differently from what it is (Trojan Source), plus the line and paragraph separators.
_OTHER_CONTROLS = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_CONTROL = re.compile(f"[\x00-\x1f{_OTHER_CONTROLS}]")
_CONTROL_EXCEPT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f{_OTHER_CONTROLS}]")
#: A CSV cell starting with one of these is a formula to Excel, LibreOffice and Google Sheets (OWASP CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


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


def encodable_streams(*streams: Any) -> None:
    """Make standard output and error (or ``streams``) write what their encoding cannot hold as backslash escapes
    (``caf\\xe9``) instead of raising ``UnicodeEncodeError``: a POSIX locale or ``PYTHONIOENCODING=ascii`` with
    a non-ASCII channel name must not end a command with a traceback (after a sync's commit, say). UTF-8 streams,
    and streams that cannot be reconfigured, are left alone."""
    for stream in streams or (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
        if encoding in ("utf-8", "utf8") or not hasattr(stream, "reconfigure"):
            continue
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # a stream already closed, or not a text wrapper
            continue


def shorten(text: str, limit: int = DISPLAY_LIMIT) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when it was cut."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def for_terminal(value: Any, limit: int = DISPLAY_LIMIT) -> Any:
    """One table cell for a terminal: strings shortened, then cleaned of control characters; others unchanged."""
    if isinstance(value, str):
        return clean_for_terminal(shorten(value, limit))
    return value


def csv_safe(value: Any) -> Any:
    """One CSV cell a spreadsheet will not run: a string starting with ``= + - @``, tab or CR gets a leading ``'``.

    Only strings change, and not those that are plain numbers (``-0.05`` as text): a number is not a formula.
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.match(value):
        return "'" + value
    return value


def _text_columns(df: pd.DataFrame) -> list[Any]:
    return [
        c
        for c in df.columns
        if pd.api.types.is_object_dtype(df[c])
        or pd.api.types.is_string_dtype(df[c])
        or isinstance(df[c].dtype, pd.CategoricalDtype)
    ]


def _map_text(df: pd.DataFrame, func: Any) -> pd.DataFrame:
    """A copy of ``df`` with ``func`` applied to every string cell and to the column names."""
    out = df.copy()
    for col in _text_columns(out):
        # a categorical stays one (its order matters to plots) while the mapping keeps its categories distinct
        out[col] = out[col].map(func, na_action="ignore")
    return out.rename(columns=lambda c: func(c) if isinstance(c, str) else c)


def frame_for_terminal(df: pd.DataFrame, limit: int = DISPLAY_LIMIT) -> pd.DataFrame:
    """A copy of ``df`` fit for a terminal table: every string cell (and column name) shortened and cleaned."""
    return _map_text(df, lambda v: for_terminal(v, limit))


def frame_for_csv(df: pd.DataFrame, *, terminal: bool = False) -> pd.DataFrame:
    """A copy of ``df`` whose string cells (and column names) cannot run as spreadsheet formulas; with ``terminal``
    (CSV printed rather than written to a file) their control characters are shown visibly too."""
    if terminal:
        return _map_text(df, lambda v: clean_for_terminal(csv_safe(v)) if isinstance(v, str) else v)
    return _map_text(df, csv_safe)


# ---- numbers for people -------------------------------------------------------------------------------------------
#
# A terminal (or text/HTML file) table shows rates and shares as percentages with their intervals, durations in one
# unit per column named in the header, and every other number with enough significant digits that nothing non-zero
# prints as 0.0. Which column is which comes from the metrics' column-name conventions (docs/metrics.md), never from
# the values:
#
# - a *proportion* (a value in [0, 1]) is named ``*_rate`` or ``*_share``, or is ``share``, ``rate`` or
#   ``coverage``; ``<name>_low`` and ``<name>_high`` beside it are its 95% interval;
# - a *duration in seconds* is named ``*_s`` (``p90_s``, ``age_s``) or ``seconds_*`` (``seconds_in_status``).

#: Significant digits of numbers that are neither proportions nor durations.
SIGNIFICANT = 4
#: Significant digits of percentages and durations.
SIGNIFICANT_UNITS = 3
#: Duration units, largest first, with their seconds: a column takes the largest unit in which its typical (median)
#: value is at least 2, so 90 s stays seconds and 3 hours read as 3 h, not 180 min.
DURATION_UNITS = (("d", 86_400.0), ("h", 3_600.0), ("min", 60.0), ("s", 1.0))
_PROPORTION_RE = re.compile(r"^(?:.*_(?:rate|share)|share|rate|coverage)$")
_DURATION_RE = re.compile(r"^(?:(?P<stem>.+)_s|seconds_(?P<what>.+))$")


def is_proportion_column(name: str) -> bool:
    """Whether a metric column holds a proportion in [0, 1] (named ``*_rate``, ``*_share``, ``share``, ``rate`` or
    ``coverage``), shown as a percentage."""
    return bool(_PROPORTION_RE.match(name))


def is_duration_column(name: str) -> bool:
    """Whether a metric column holds a duration in seconds (named ``*_s`` or ``seconds_*``)."""
    return bool(_DURATION_RE.match(name))


def format_number(value: Any, digits: int = SIGNIFICANT) -> str:
    """A number with ``digits`` significant digits (never ``0.0`` for a small non-zero value): ``0.0155``,
    ``1e-09``, ``1,235`` (thousands separated, whole numbers from 1,000 up), ``-`` for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
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


def format_percent(value: Any) -> str:
    """A proportion as a percentage with :data:`SIGNIFICANT_UNITS` significant digits: ``2.19%``, ``0.0312%``."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format_number(float(value) * 100, SIGNIFICANT_UNITS) + "%"


def duration_unit(seconds: pd.Series) -> tuple[str, float]:
    """The unit (name, seconds) for a column of durations: the largest of :data:`DURATION_UNITS` in which the
    column's median absolute value is at least 2 (seconds for an empty column)."""
    values = pd.to_numeric(seconds, errors="coerce").abs().dropna()
    if values.empty:
        return "s", 1.0
    typical = float(values.median())
    for unit, size in DURATION_UNITS:
        if typical >= 2 * size:
            return unit, size
    return "s", 1.0


def _duration_header(name: str, unit: str) -> str:
    m = _DURATION_RE.match(name)
    assert m is not None
    stem = m.group("stem") or m.group("what")
    return f"{stem}_{unit}"


def frame_for_display(df: pd.DataFrame, *, metric: bool = True) -> pd.DataFrame:
    """A copy of ``df`` as text for people (a terminal, a text or HTML file): with ``metric`` (a metric table),
    each proportion becomes one ``<name> %`` column reading ``2.19% (0.84–5.31)`` with its interval when the table
    has one, and each duration one column in a unit named in its header (``p90_min``); every other number gets
    significant digits (so ``chainops sql "select 2/129"`` shows ``0.0155``, not ``0.0``). Data outputs (CSV, JSON,
    Parquet) never go through here: they keep full precision."""
    out = pd.DataFrame(index=df.index)
    columns = [str(c) for c in df.columns]
    interval_parts = set()
    if metric:
        for name in columns:
            if is_proportion_column(name) and f"{name}_low" in columns and f"{name}_high" in columns:
                interval_parts |= {f"{name}_low", f"{name}_high"}
    for original, name in zip(df.columns, columns, strict=True):
        col = df[original]
        numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        if name in interval_parts or not numeric:
            if name not in interval_parts:
                out[original] = col
            continue
        if metric and is_proportion_column(name):
            if f"{name}_low" in interval_parts:
                low, high = df[f"{name}_low"], df[f"{name}_high"]
                out[f"{name} %"] = [
                    _with_interval(v, lo, hi)
                    for v, lo, hi in zip(col.tolist(), low.tolist(), high.tolist(), strict=True)
                ]
            else:
                out[f"{name} %"] = [format_percent(v) for v in col.tolist()]
        elif metric and is_duration_column(name):
            unit, size = duration_unit(col)
            out[_duration_header(name, unit)] = [
                format_number(v / size if _present(v) else v, SIGNIFICANT_UNITS) for v in col.tolist()
            ]
        else:
            out[original] = [format_number(v) for v in col.tolist()]
    return out


def _present(value: Any) -> bool:
    return value is not None and value is not pd.NA and not (isinstance(value, float) and math.isnan(value))


def _with_interval(value: Any, low: Any, high: Any) -> str:
    """``2.19% (0.84–5.31)``: a proportion and its interval, in percent."""
    if not _present(value):
        return "-"
    if not (_present(low) and _present(high)):
        return format_percent(value)
    low_text = format_percent(low).rstrip("%")
    return f"{format_percent(value)} ({low_text}–{format_percent(high)})"


__all__ = [
    "DISPLAY_LIMIT",
    "DURATION_UNITS",
    "clean_for_terminal",
    "csv_safe",
    "duration_unit",
    "for_terminal",
    "format_number",
    "format_percent",
    "frame_for_csv",
    "frame_for_display",
    "frame_for_terminal",
    "is_duration_column",
    "is_proportion_column",
    "shorten",
]
