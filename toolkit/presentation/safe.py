"""Values from the service made safe to show: on a terminal, in a CSV file a spreadsheet opens, in a report.

Names, reasons and ids come from the service (or whoever wrote to it) and may hold anything: ANSI escape sequences
that recolour or rewrite a terminal, ``=HYPERLINK(...)`` that a spreadsheet runs as a formula, a megabyte of text.
Data outputs (JSON, Parquet, the warehouse) keep every value as it is; only what is displayed goes through here.
How numbers, times and ids read is :mod:`toolkit.presentation.values`'s.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from .tables import present
from .values import DISPLAY_LIMIT, clean_for_terminal, shorten, unit_for

#: A CSV cell starting with one of these is a formula to Excel, LibreOffice and Google Sheets (OWASP CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


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
# How a number reads is decided once, in presentation.values (the CLI, the report, the dashboard and the notebooks use
# it); the names below are kept for code written against this module.


def duration_unit(seconds: pd.Series) -> tuple[str, float]:
    """The unit (name, seconds) for a column of durations (:func:`toolkit.presentation.values.unit_for`)."""
    return unit_for(seconds.tolist())


def frame_for_display(df: pd.DataFrame, *, metric: bool | str = True) -> pd.DataFrame:
    """A copy of ``df`` as text for people, as :func:`.tables.present` shows it (one column per shown
    column, named by its header: ``failure_rate %`` reading ``1.55% (0.4–5.5%)``, ``p90 (min)``). Data outputs
    (CSV, JSON, Parquet) never go through here: they keep full precision."""
    shown = present(df, metric=metric, short_ids=False)
    return pd.DataFrame({c.header: c.cells for c in shown.columns}, index=df.index)


__all__ = [
    "csv_safe",
    "duration_unit",
    "for_terminal",
    "frame_for_csv",
    "frame_for_display",
    "frame_for_terminal",
]
