"""Values from the service made safe to show: on a terminal, in a CSV file a spreadsheet opens, in a report.

Names, reasons and ids come from the service (or whoever wrote to it) and may hold anything: ANSI escape sequences
that recolour or rewrite a terminal, ``=HYPERLINK(...)`` that a spreadsheet runs as a formula, a megabyte of text.
Data outputs (JSON, Parquet, the warehouse) keep every value as it is; only what is displayed goes through here.
This module imports nothing of the toolkit, so every module may use it.
"""

from __future__ import annotations

import re
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


__all__ = [
    "DISPLAY_LIMIT",
    "clean_for_terminal",
    "csv_safe",
    "for_terminal",
    "frame_for_csv",
    "frame_for_terminal",
    "shorten",
]
