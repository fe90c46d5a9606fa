"""What the commands print or write: the output format, tables that fit the terminal, CSV, JSON and Parquet files
(written whole or not at all), and remarks on stderr wrapped to the terminal's width."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..atomic import atomic_file, output_error
from ..errors import UsageError
from ..presentation.values import clean_for_terminal

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


def table_text(
    df: pd.DataFrame,
    *,
    metric: str | bool,
    columns: Sequence[str] | None = None,
    wide: bool = False,
    notes: Sequence[str] = (),
    keep: Sequence[str] = (),
) -> str:
    """A text table for people that fits the terminal (:mod:`toolkit.presentation.tables`: one way to show each value,
    text left-aligned and numbers right-aligned, columns that do not fit named below; ``wide``: every column;
    ``keep``: the columns asked for by name, which a narrow terminal keeps as it keeps the metric's values). Ids
    are shown whole when the whole table fits (always with ``wide``); else as their first characters, with a
    footer that says how to see them whole."""
    from ..presentation.tables import natural_width, present, terminal_width, to_terminal

    whole = present(df, metric=metric, columns=columns, short_ids=False, keep=keep)
    whole.notes.extend(notes)
    if wide or natural_width(whole) <= terminal_width():
        return to_terminal(whole, wide=wide)
    shown = present(df, metric=metric, columns=columns, keep=keep)
    shown.notes.extend(notes)
    if any(s.cells != w.cells for s, w in zip(shown.columns, whole.columns, strict=True) if s.kind == "id"):
        shown.notes.append(IDS_SHORTENED)
    return to_terminal(shown)


#: The footer of a table whose ids were cut short to fit.
IDS_SHORTENED = "ids cut short to fit: --wide, fewer --columns or --format csv show them whole"


def chosen_columns(df: pd.DataFrame, text: str | None) -> list[str] | None:
    """The columns of ``--columns a,b,c`` (a usage error naming the result's columns for one it does not have)."""
    if not text:
        return None
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in df.columns]
    if unknown:
        raise UsageError(
            f"--columns: no column {', '.join(map(repr, unknown))}; the columns are {', '.join(df.columns)}"
        )
    return chosen


#: Rows of a table shown on a terminal whose height is unknown (DuckDB's CLI shows 40).
SCREEN_ROWS = 40


def row_limit(fmt: str, out: str | None, max_rows: int | None, *, wide: bool = False) -> int | None:
    """How many rows a printed table shows (``chainops sql`` and ``metrics`` alike): ``--max-rows`` when given;
    a screenful when the table goes to a terminal (unless ``--wide``); every row to a file or a pipe."""
    if fmt != "table" or out:
        return None
    if max_rows is not None:
        return max_rows
    if wide or not sys.stdout.isatty():
        return None
    import shutil

    lines = shutil.get_terminal_size(fallback=(80, SCREEN_ROWS + 8)).lines
    return max(lines - 8, 10)


#: How to see the rows a table on a terminal left out, said below it.
MORE_ROWS = "--max-rows N shows more, --out FILE or a pipe gets every row"


def cut_rows(df: pd.DataFrame, limit: int | None, more: str = MORE_ROWS) -> tuple[pd.DataFrame, list[str]]:
    """``df`` cut to ``limit`` rows, and the footer that gives the total and how to see the rest (``more``)."""
    if limit is None or len(df) <= limit:
        return df, []
    return df.head(limit), [f"{len(df):,} rows ({limit:,} shown); {more}"]


def default_columns(df: pd.DataFrame, metric: str | bool, by: Sequence[str] = ()) -> list[str] | None:
    """The columns a terminal shows first: the grouping columns (a channel's name beside its id), then the
    metric's declared defaults (:mod:`toolkit.registry`); None (all) for a result the registry does not know."""
    from ..registry import BY_NAME

    if not isinstance(metric, str) or metric not in BY_NAME:
        return None
    lead = [*by, *(["channel"] if "channel_id" in by else [])]
    wanted = [c for c in dict.fromkeys([*lead, *BY_NAME[metric].default]) if c in df.columns]
    return wanted or None


def hidden_rows(df: pd.DataFrame, metric: str, *, wide: str = "--wide") -> tuple[pd.DataFrame, list[str]]:
    """``df`` without the rows that cannot carry a value by definition
    (:func:`toolkit.presentation.tables.hide_rows`); the note says ``wide`` (the option, or a whole command) shows
    them."""
    from ..presentation.tables import hide_rows

    return hide_rows(df, metric, shown_by=f"{wide} shows them")


def period_line(df: pd.DataFrame, metric: str) -> str:
    """What a metric's table is about: its period (and how the period selects rows) and the time it is as of."""
    from ..presentation.tables import format_time
    from ..registry import BY_NAME
    from ..times import Period

    found = Period.of(df.attrs)  # the period the metric read, as an object (no text parsed again)
    since, until, as_of = found.start, found.end, found.as_of
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
    from ..presentation.files import csv_text, json_text, write_parquet

    if fmt == "table":
        text = table_text(df, metric=metric, columns=columns, wide=wide or bool(out), notes=notes)
    elif fmt == "html":
        from ..presentation.tables import TABLE_CSS, present, to_html

        text = f"<style>{TABLE_CSS}</style>" + to_html(present(df, metric=metric, columns=columns), empty="No rows.")
    elif fmt == "csv":
        # printed: control characters shown visibly too (a file keeps them; only formulas are defused there)
        text = csv_text(df, terminal=not out)
    elif fmt == "json":
        text = json_text(df)
    if not out:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(out) as tmp:
            if fmt == "parquet":
                write_parquet(df, tmp)
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


def fitted(text: str, *, indent: str = "", hang: str = "  ", width: int | None = None) -> str:
    """``text`` wrapped to the terminal's width (``width``), line by line: each begins with ``indent`` and its
    continuations with ``indent + hang``; words are never split (a path longer than a line keeps its line)."""
    import textwrap

    from ..presentation.tables import terminal_width

    width = terminal_width() if width is None else width
    lines = []
    for line in text.splitlines() or [""]:
        lines += textwrap.wrap(
            line,
            width=width,
            initial_indent=indent,
            subsequent_indent=indent + hang,
            break_long_words=False,
            break_on_hyphens=False,
        ) or [indent.rstrip()]
    return "\n".join(lines)


def command_lines(command: str, *, indent: str = "  ", width: int | None = None) -> str:
    """A shell command to type, broken to the terminal's width between its words with ``\\`` continuations (as a
    shell joins them again); an option stays beside its value, and a quoted query is never broken."""
    from ..presentation.tables import terminal_width

    width = terminal_width() if width is None else width
    units: list[str] = []
    for word in _shell_words(command):
        if units and units[-1].startswith("--") and " " not in units[-1] and not word.startswith("-"):
            units[-1] += f" {word}"
        else:
            units.append(word)
    lines: list[str] = []
    line = ""
    for unit in units:
        if line and len(f"{line} {unit}") + 2 > width:
            lines.append(f"{line} \\")
            line = f"{indent}  {unit}"
        else:
            line = f"{line} {unit}" if line else f"{indent}{unit}"
    lines.append(line)
    return "\n".join(lines)


def _shell_words(command: str) -> list[str]:
    """``command``'s words as typed (quotes kept): split at spaces outside quotes."""
    import re

    return re.findall(r"""(?:[^\s"']+|"[^"]*"|'[^']*')+""", command)
