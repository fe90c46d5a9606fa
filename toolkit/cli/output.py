"""What the commands print or write: the output format, tables that fit the terminal, CSV, JSON and Parquet files
(written whole or not at all), and remarks on stderr wrapped to the terminal's width."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..atomic import atomic_file, output_error
from ..errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

#: Exit code of `chainops report` when a --fail-on threshold is breached.

EXIT_THRESHOLD = 3


#: Exit code when standard output is closed early (``chainops sync | head -1``), as for a process killed by SIGPIPE.
EXIT_BROKEN_PIPE = 141


#: The output format of ``--out PATH`` without ``--format``, by the file's extension.
FORMATS_BY_EXTENSION = {
    ".csv": "csv",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".html": "html",
    ".htm": "html",
    ".txt": "table",
}


def output_format(fmt: str | None, out: str | None) -> str:
    """The format to write: ``--format`` when given, else the ``--out`` file's extension (a text table when there is
    no ``--out`` or the file has no extension). Raises :class:`UsageError` for an extension it does not know and for
    Parquet without a file."""
    if fmt is None:
        suffix = Path(out).suffix.lower() if out else ""
        if suffix and suffix not in FORMATS_BY_EXTENSION:
            known = ", ".join(FORMATS_BY_EXTENSION)
            raise UsageError(
                f"cannot tell the output format from the extension {suffix!r} of --out {out}; "
                f"use one of {known}, or say --format"
            )
        fmt = FORMATS_BY_EXTENSION.get(suffix, "table")
    if fmt == "parquet" and not out:
        raise UsageError("--format parquet needs --out PATH (Parquet is a binary file, not for a terminal)")
    return fmt


def clean_for_terminal(text: str, *, keep_newlines: bool = False) -> str:
    """:func:`toolkit.presentation.safe.clean_for_terminal`, imported when first needed (that module loads pandas)."""
    from ..presentation.safe import clean_for_terminal as clean

    return clean(text, keep_newlines=keep_newlines)


def table_text(
    df: pd.DataFrame,
    *,
    metric: str | bool,
    columns: Sequence[str] | None = None,
    wide: bool = False,
    notes: Sequence[str] = (),
) -> str:
    """A text table for people that fits the terminal (:mod:`toolkit.presentation.tables`: one way to show each value,
    text left-aligned and numbers right-aligned, columns that do not fit named below; ``wide``: every column)."""
    from ..presentation.tables import present, to_terminal

    shown = present(df, metric=metric, columns=columns)
    shown.notes.extend(notes)
    return to_terminal(shown, wide=wide)


def _print_table(df: pd.DataFrame, *, metric: str | bool = True) -> None:
    sys.stdout.write(table_text(df, metric=metric, columns=default_columns(df, metric)))


def default_columns(df: pd.DataFrame, metric: str | bool, by: Sequence[str] = ()) -> list[str] | None:
    """The columns a terminal shows first: the grouping columns (a channel's name beside its id), then the
    metric's declared defaults (:mod:`toolkit.registry`); None (all) for a result the registry does not know."""
    from ..registry import BY_NAME

    if not isinstance(metric, str) or metric not in BY_NAME:
        return None
    lead = [*by, *(["channel"] if "channel_id" in by else [])]
    wanted = [c for c in dict.fromkeys([*lead, *BY_NAME[metric].default]) if c in df.columns]
    return wanted or None


def hidden_rows(df: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, list[str]]:
    """``df`` without the rows that cannot carry a value by definition
    (:func:`toolkit.presentation.tables.hide_rows`)."""
    from ..presentation.tables import hide_rows

    return hide_rows(df, metric)


def period_line(df: pd.DataFrame, metric: str) -> str:
    """What a metric's table is about: its period (and how the period selects rows) and the time it is as of."""
    import pandas as pd

    from ..presentation.tables import format_time
    from ..registry import BY_NAME

    since, until, as_of = (
        pd.Timestamp(t) if t else None for t in (df.attrs.get(k) for k in ("since", "until", "as_of"))
    )
    if since is None and until is None:
        period = "everything the warehouse holds"
    else:
        start = format_time(since, seconds=False) if since is not None else "the start"
        end = format_time(until, seconds=False) if until is not None else "now"
        period = f"{start} to {end} UTC"
    how = BY_NAME[metric].period if metric in BY_NAME else ""
    line = f"{metric}: {period}" + (f" ({how})" if how else "")
    if as_of is not None:
        line += f"; as of {format_time(as_of, seconds=False)} UTC, the newest event"
    return clean_for_terminal(line)


def _json_value(value: object) -> object:
    """What orjson cannot write itself: times as ISO 8601 text, a missing value as null."""
    import pandas as pd

    if value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, pd.Timestamp | pd.Timedelta):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _json_text(df: pd.DataFrame) -> str:
    """The rows as a JSON array of objects, every number as exact as a float is (shortest round-trip form)."""
    import orjson

    records = df.astype(object).where(df.notna(), None).to_dict(orient="records")
    option = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z
    return orjson.dumps(records, default=_json_value, option=option).decode() + "\n"


def write_frame(
    df: pd.DataFrame,
    fmt: str,
    out: str | None,
    *,
    metric: str | bool = True,
    columns: Sequence[str] | None = None,
    wide: bool = False,
    notes: Sequence[str] = (),
) -> None:
    """Print or write a result (``fmt`` from :func:`output_format`). The table (text or HTML) is for people:
    percentages, durations in a unit per column, significant digits (``metric`` says whether the columns follow the
    metrics' naming conventions; a SQL result gets significant digits only), control characters shown, long values
    shortened. CSV has formulas neutralised (and control characters shown when printed); CSV, JSON and Parquet keep
    every number at full precision. ``--out`` files appear whole or not at all."""
    from ..presentation.safe import frame_for_csv

    if fmt == "table":
        text = table_text(df, metric=metric, columns=columns, wide=wide or bool(out), notes=notes)
    elif fmt == "html":
        from ..presentation.tables import TABLE_CSS, present, to_html

        text = f"<style>{TABLE_CSS}</style>" + to_html(present(df, metric=metric, columns=columns), empty="No rows.")
    elif fmt == "csv":
        # printed: control characters shown visibly too (a file keeps them; only formulas are defused there)
        text = frame_for_csv(df, terminal=not out).to_csv(index=False)
    elif fmt == "json":
        text = _json_text(df)
    if not out:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(out) as tmp:
            if fmt == "parquet":
                df.to_parquet(tmp, index=False)
            else:
                tmp.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise output_error(out, exc) from None


def say_wrapped(message: str) -> None:
    """``message`` on stderr, wrapped to the terminal's width as the tables above it are (never a word split)."""
    import textwrap

    from ..presentation.tables import terminal_width

    print(
        textwrap.fill(message, width=terminal_width(), break_long_words=False, break_on_hyphens=False), file=sys.stderr
    )
