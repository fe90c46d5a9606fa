"""How a value is shown, once: on a terminal, in HTML (the report, the dashboard) and in a notebook.

One model for every surface. A column has a *kind* (:data:`KINDS`), taken from the metric registry
(:mod:`toolkit.registry`) when the column belongs to a metric, else from the metrics' naming conventions
(``*_rate``/``*_share``/``share``/``coverage`` are proportions with ``_low``/``_high`` intervals beside them; ``*_s``
and ``seconds_*`` durations in seconds), else from its values. Each kind has one way to read:

- a proportion: a percentage with three significant digits and its 95% interval, ``1.55% (0.4–5.5%)``;
- a duration: one unit per column (the largest in which the column's median is at least 2), named in the header,
  ``p90 (min)``: ``90``;
- a count: ``1,234``; another number: four significant digits, never ``0.0`` for a small value;
- a time: UTC, ``2026-11-20 14:03:22`` (a Unix time in seconds too, in a column named like a time);
- an id: a UUID or long hex value shortened to ``1a2b3c4d…`` on a terminal (files keep it whole; HTML keeps it in a
  tooltip);
- text: control characters written out visibly, long text shortened; left-aligned (numbers right-aligned).

:func:`present` turns a DataFrame into a :class:`Shown` (headers, cell texts, alignment); :func:`to_terminal`,
:func:`to_html` render it; :class:`Display` is a DataFrame with a notebook face (``_repr_html_``). Data outputs
(CSV, JSON, Parquet) never come here: they keep every column and full precision.

This module imports pandas and rich only inside functions: the command line reads it before it needs them.
"""

from __future__ import annotations

import html
import math
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: The kinds of column, each with one way to read.
KINDS = ("proportion", "duration", "count", "number", "time", "id", "text", "flag")
#: Characters a text cell keeps at most (the rest becomes ``…``).
DISPLAY_LIMIT = 200
#: Significant digits of plain numbers, and of percentages and durations.
SIGNIFICANT = 4
SIGNIFICANT_UNITS = 3
#: Duration units, largest first, with their seconds: a column takes the largest unit in which its typical (median)
#: value is at least 2, so 90 s stays seconds and 3 hours read as 3 h, not 180 min.
DURATION_UNITS = (("d", 86_400.0), ("h", 3_600.0), ("min", 60.0), ("s", 1.0))
#: Terminal width when neither ``COLUMNS`` nor the terminal says.
DEFAULT_WIDTH = 80
#: Characters of an id kept on a terminal before ``…``.
ID_CHARS = 8

_OTHER_CONTROLS = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_CONTROL = re.compile(f"[\x00-\x1f{_OTHER_CONTROLS}]")
_CONTROL_EXCEPT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f{_OTHER_CONTROLS}]")
_PROPORTION_RE = re.compile(r"^(?:.*_(?:rate|share)|share|rate|coverage)$")
_DURATION_RE = re.compile(r"^(?:(?P<stem>.+)_s|seconds_(?P<what>.+))$")
_TIME_NAME_RE = re.compile(r"^(?:.*_at|ts|time|timestamp|deadline|created|updated|.*_time)$")
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


def format_percent(value: Any) -> str:
    """A proportion as a percentage with :data:`SIGNIFICANT_UNITS` significant digits: ``2.19%``, ``0.0312%``."""
    if missing(value):
        return "-"
    return format_number(float(value) * 100, SIGNIFICANT_UNITS) + "%"


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


def format_duration(seconds: Any, unit: tuple[str, float] | None = None) -> str:
    """A duration with its unit, for prose: ``33 h``, ``90 s``, ``1.5 min`` (the unit as :func:`unit_for` picks it
    for this one value unless ``unit`` is given); ``unknown`` when missing."""
    if missing(seconds):
        return "unknown"
    name, size = unit or unit_for([seconds])
    return f"{format_number(float(seconds) / size, SIGNIFICANT_UNITS)} {name}"


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
    ``rate``, ``coverage``)."""
    return bool(_PROPORTION_RE.match(name))


def is_duration_column(name: str) -> bool:
    """Whether a metric column holds a duration in seconds by its name (``*_s`` or ``seconds_*``)."""
    return bool(_DURATION_RE.match(name))


def duration_stem(name: str) -> str:
    """A duration column's name without its unit: ``p90_s`` -> ``p90``, ``seconds_in_status`` -> ``in_status``."""
    m = _DURATION_RE.match(name)
    return (m.group("stem") or m.group("what")) if m else name


def kind_by_name(name: str, *, metric: bool = True) -> str | None:
    """The kind a column's name says it has (None when the name says nothing): with ``metric``, the metrics'
    proportion and duration conventions; always, ids (``*_id``) and times (``*_at``, ``ts``, ...)."""
    if metric and is_proportion_column(name):
        return "proportion"
    if metric and is_duration_column(name):
        return "duration"
    if name.endswith("_id") or name == "id":
        return "id"
    if _TIME_NAME_RE.match(name):
        return "time"
    return None


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


@dataclass(eq=False)
class Column:
    """One shown column: its source name, its header, its kind, and the text of each cell (``full`` holds the
    whole value where the cell shortened it, for a tooltip)."""

    name: str
    header: str
    kind: str
    cells: list[str]
    full: list[str | None] = field(default_factory=list)

    @property
    def right(self) -> bool:
        """Numbers read right-aligned; text, ids and times left-aligned."""
        return self.kind in ("proportion", "duration", "count", "number")


@dataclass
class Shown:
    """A table as people read it: its columns, and notes to print around it (columns or rows left out)."""

    columns: list[Column]
    rows: int
    notes: list[str] = field(default_factory=list)


def _column_kind(name: str, series: pd.Series, declared: dict[str, str], metric: bool) -> str:
    if name in declared:
        return declared[name]
    by_name = kind_by_name(name, metric=metric)
    if by_name in ("proportion", "duration"):
        import pandas as pd

        if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
            return by_name
    return _kind_by_values(series.tolist(), series.dtype, by_name)


def present(
    df: pd.DataFrame,
    *,
    metric: str | bool = True,
    columns: Sequence[str] | None = None,
    short_ids: bool = True,
    limit: int = DISPLAY_LIMIT,
) -> Shown:
    """``df`` as people read it (see the module's docstring), the same for every surface.

    Arguments: ``df``; ``metric`` a registry name (``status-latency``) whose declared column kinds apply, ``True``
    for the metrics' naming conventions, ``False`` for a SQL result (kinds from values only); ``columns`` to show
    (those present, in that order; default all; an interval's ``_low``/``_high`` are folded into their
    proportion); ``short_ids`` shortens UUIDs and long hex values; ``limit`` the characters a text cell keeps.
    Returns the :class:`Shown` table.
    """
    from ..registry import declared_kinds

    declared = declared_kinds(metric) if isinstance(metric, str) else {}
    conventions = metric is not False
    names = [str(c) for c in df.columns]
    wanted = [c for c in (columns or names) if c in names]
    by_name = dict(zip(names, df.columns, strict=True))
    folded = {
        f"{n}_{end}"
        for n in names
        if _column_kind(n, df[by_name[n]], declared, conventions) == "proportion"
        and f"{n}_low" in names
        and f"{n}_high" in names
        for end in ("low", "high")
    }
    shown: list[Column] = []
    for name in wanted:
        if name in folded and (columns is None or name[: name.rfind("_")] in wanted):
            continue
        series = df[by_name[name]]
        kind = _column_kind(name, series, declared, conventions)
        values = series.tolist()
        full: list[str | None] = []
        if kind == "proportion":
            header = f"{name} %"
            if f"{name}_low" in folded:
                lows, highs = df[by_name[f"{name}_low"]].tolist(), df[by_name[f"{name}_high"]].tolist()
                cells = [format_interval(v, lo, hi) for v, lo, hi in zip(values, lows, highs, strict=True)]
            else:
                cells = [format_percent(v) for v in values]
        elif kind == "duration":
            unit, size = unit_for(values)
            header = f"{duration_stem(name)} ({unit})"
            cells = [format_number(float(v) / size, SIGNIFICANT_UNITS) if not missing(v) else "-" for v in values]
        elif kind == "count":
            header, cells = name, [format_number(int(v)) if not missing(v) else "-" for v in values]
        elif kind == "number":
            header, cells = name, [format_number(v) for v in values]
        elif kind == "time":
            whole_minutes = all(_whole_minute(v) for v in values)
            header, cells = name, [format_time(v, seconds=not whole_minutes) for v in values]
        elif kind == "flag":
            header, cells = name, ["-" if missing(v) else ("yes" if v else "no") for v in values]
        else:
            header = name
            texts = ["-" if missing(v) else clean_for_terminal(str(v)) for v in values]
            if kind == "id" and short_ids:
                cells = [short_id(t) for t in texts]
                full = [t if c != t else None for c, t in zip(cells, texts, strict=True)]
            else:
                cells = [shorten(t, limit) for t in texts]
                full = [t[:2000] if c != t else None for c, t in zip(cells, texts, strict=True)]
        shown.append(Column(name, clean_for_terminal(header), kind, cells, full))
    return Shown(shown, len(df))


def _whole_minute(value: Any) -> bool:
    if missing(value):
        return True
    if isinstance(value, datetime):
        return value.second == 0 and value.microsecond == 0
    if isinstance(value, int | float) or _is_integral(value):
        return int(value) % 60 == 0
    return False


def hide_rows(df: pd.DataFrame, metric: str | bool) -> tuple[pd.DataFrame, list[str]]:
    """``df`` without the rows that cannot carry a value by definition (the registry's ``hidden``: final statuses in
    ``status-latency``), and the note that says how many were left out (none when nothing was). Data outputs keep
    every row; only what people read by default leaves them out."""
    from ..registry import BY_NAME

    m = BY_NAME.get(metric) if isinstance(metric, str) else None
    if m is None or not m.hidden or not len(df):
        return df, []
    keep = [True] * len(df)
    for column, values in m.hidden.items():
        if column in df.columns:
            keep = [k and str(v) not in values for k, v in zip(keep, df[column].tolist(), strict=True)]
    dropped = keep.count(False)
    if not dropped:
        return df, []
    return df[keep], [f"{plural(dropped, 'row')} for {m.hidden_why} not shown (--wide shows them)"]


# ---- terminal ----------------------------------------------------------------------------------------------------


def terminal_width(environ: dict[str, str] | None = None) -> int:
    """The width to fit: ``COLUMNS`` when set, else the terminal's, else :data:`DEFAULT_WIDTH`."""
    env = os.environ if environ is None else environ
    text = env.get("COLUMNS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    size = shutil.get_terminal_size(fallback=(0, 0))
    return size.columns if size.columns > 0 else DEFAULT_WIDTH


def _cells(text: str) -> int:
    """The terminal cells ``text`` takes (a CJK character takes two), as rich counts them."""
    from rich.cells import cell_len

    return cell_len(text)


def _natural(col: Column) -> int:
    return max([_cells(col.header), 1, *(_cells(c) for c in col.cells)])


def _need(col: Column) -> int:
    cells = max([1, *(_cells(c) for c in col.cells)])
    return max(min(cells, _TEXT_WIDTH) if not col.right else cells, min(_cells(col.header), 20))


def _widths(columns: list[Column], width: int) -> dict[Column, int]:
    """The columns that fit ``width``, each with the most characters it may take: a text column at least
    :data:`_TEXT_WIDTH` (elided past it) and more from what is left over, in order; the others their need."""
    kept: dict[Column, int] = {}
    used = 0
    # when not everything fits, a column with no value in any row (a JSON column nobody filled) is left out first
    # (named below the table), not shown in place of one with values
    fits = sum(_need(col) + _GAP for col in columns) <= width  # as the loop below counts
    for col in columns if fits else [col for col in columns if not _blank(col)] or columns:
        need = _need(col)
        if kept and used + need + _GAP > width:
            continue
        kept[col] = need
        used += need + _GAP
    slack = max(width - used, 0)
    for col in kept:
        if not col.right and slack:
            extra = min(_natural(col) - kept[col], slack) if _natural(col) > kept[col] else 0
            kept[col] += extra
            slack -= extra
    return kept


def _blank(col: Column) -> bool:
    """Whether every cell of a column with rows is missing (``-``)."""
    return bool(col.cells) and all(c == "-" for c in col.cells)


#: Characters a text column is sure to get before it is elided.
_TEXT_WIDTH = 24


#: Characters between two columns (a space of padding each side of rich's column divider, less the edges).
_GAP = 3


def to_terminal(shown: Shown, width: int | None = None, *, wide: bool = False) -> str:
    """The table as text for a terminal of ``width`` characters (default :func:`terminal_width`): no line longer,
    text left-aligned and elided, numbers right-aligned; columns that do not fit are left out and named below the
    table. ``wide`` shows every column at its full width (lines may be longer). Returns the text, ending in a
    newline."""
    from io import StringIO

    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    width = terminal_width() if width is None else max(width, 20)
    widths = {c: _natural(c) for c in shown.columns} if wide else _widths(shown.columns, width)
    columns = list(widths)
    left_out = [c.header for c in shown.columns if c not in columns]
    if wide:
        width = max(width, sum(_natural(c) + _GAP for c in columns) + _GAP)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), header_style="bold")
    for col in columns:
        table.add_column(
            Text(col.header, overflow="fold"),  # a long header folds; a cell keeps its line
            justify="right" if col.right else "left",
            overflow="ellipsis",
            no_wrap=True,
            max_width=widths[col],
        )
    for i in range(shown.rows):
        table.add_row(*(c.cells[i] for c in columns))
    buffer = StringIO()
    console = Console(
        file=buffer, width=width, color_system=None, force_terminal=False, highlight=False, emoji=False, markup=False
    )
    if columns:
        console.print(table, crop=True)
    text = "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"
    notes = list(shown.notes)
    if left_out:
        notes.append(
            f"{plural(len(left_out), 'more column')} not shown: {', '.join(left_out)} "
            "(--wide shows all, --columns picks)"
        )
    if not shown.rows:
        notes.append("no rows")
    for note in notes:
        text += wrap(note, width) + "\n"
    return text


def wrap(text: str, width: int | None = None) -> str:
    """``text`` wrapped to ``width`` (default :func:`terminal_width`) characters a line."""
    import textwrap

    width = terminal_width() if width is None else width
    return "\n".join(textwrap.wrap(text, width=width, break_long_words=True, break_on_hyphens=False)) or ""


# ---- HTML --------------------------------------------------------------------------------------------------------

#: The style of :func:`to_html`'s tables, scoped to their class (safe inside a notebook or a widget): a table wider
#: than its page scrolls inside its own box.
TABLE_CSS = """
div.chainops-scroll { max-width: 100%; overflow-x: auto; }
table.chainops { border-collapse: collapse; font-size: 0.85rem; margin: 1rem 0; color: #222; }
table.chainops th, table.chainops td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: right;
  white-space: nowrap; }
table.chainops th { background: #f2f2f2; font-weight: 600; white-space: normal; vertical-align: bottom; }
table.chainops td.text, table.chainops th.text { text-align: left; }
table.chainops td.text { white-space: normal; max-width: 24rem; overflow-wrap: break-word; }
table.chainops tbody tr:nth-child(even) { background: #fafafa; }
div.chainops-scroll + details > summary { cursor: pointer; color: #555; }
"""


def _html_rows(shown: Shown, start: int, stop: int) -> str:
    e = html.escape
    text_class = ' class="text"'
    # a long snake_case header may break after its underscores (<wbr>) when the table is wider than the page
    head = "".join(
        f"<th{'' if c.right else text_class}>{e(c.header).replace('_', '_<wbr>')}</th>" for c in shown.columns
    )
    body = []
    for i in range(start, stop):
        cells = []
        for c in shown.columns:
            cls = "" if c.right else ' class="text"'
            whole = c.full[i] if c.full else None
            title = f' title="{e(whole)}"' if whole else ""
            cells.append(f"<td{cls}{title}>{e(c.cells[i])}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="chainops-scroll"><table class="chainops"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def to_html(shown: Shown, *, max_rows: int | None = None, empty: str = "No rows in this period.") -> str:
    """The table as HTML, every header and cell escaped (style it with :data:`TABLE_CSS`). Rows past ``max_rows``
    follow in a folded ``<details>`` element, so none is left out; a table without rows is ``empty`` as text."""
    if not shown.rows:
        return f'<p class="meta">{html.escape(empty)}</p>'
    if max_rows is None or shown.rows <= max_rows:
        return _html_rows(shown, 0, shown.rows)
    rest = shown.rows - max_rows
    return (
        f"{_html_rows(shown, 0, max_rows)}<details><summary>Show the other {rest:,} of {shown.rows:,} rows</summary>"
        f"{_html_rows(shown, max_rows, shown.rows)}</details>"
    )


# ---- colours -----------------------------------------------------------------------------------------------------

#: matplotlib's tab20 palette: pairs of a strong and a light shade of one hue (the strong ones are tab10's).
_TAB20 = (
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd", "#c5b0d5",
    "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5",
)  # fmt: skip


def network_colour(name: object) -> str:
    """The one colour of a network in every figure, the report and the dashboard, whatever the filter: each network
    of the published list (:data:`toolkit.spec.KNOWN_NETWORKS`, by name or chain selector) has its own strong
    colour; any other a light one from its name, the same every time."""
    from zlib import crc32

    from ..spec import KNOWN_NETWORKS

    text = str(name)
    for i, network in enumerate(KNOWN_NETWORKS[:10]):
        if text in (network.name, network.chain_selector):
            return _TAB20[2 * i]
    return _TAB20[1 + 2 * (crc32(text.encode("utf-8")) % 10)]


# ---- notebooks ---------------------------------------------------------------------------------------------------


class Display:
    """A DataFrame with the face it has everywhere else: in a notebook the HTML table of :func:`to_html`, as text
    the terminal table. The numbers stay in ``frame`` at full precision.

    Arguments: ``frame``; ``metric`` (a registry name, or True/False as in :func:`present`); ``columns`` to show;
    ``max_rows`` shown before the rest is folded away.
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        metric: str | bool = True,
        columns: Sequence[str] | None = None,
        max_rows: int | None = None,
    ) -> None:
        self.frame = frame
        self.metric = metric
        self.columns = tuple(columns) if columns is not None else None
        self.max_rows = max_rows

    def shown(self) -> Shown:
        """The :class:`Shown` table."""
        return present(self.frame, metric=self.metric, columns=self.columns)

    def _repr_html_(self) -> str:
        return f"<style>{TABLE_CSS}</style>" + to_html(self.shown(), max_rows=self.max_rows, empty="No rows.")

    def __repr__(self) -> str:
        if not len(self.frame):
            return "No rows."
        return to_terminal(self.shown(), wide=True).rstrip("\n")


def show(df: pd.DataFrame, metric: str | bool | None = None, columns: Sequence[str] | None = None) -> Display:
    """``df`` as every surface shows it, for a notebook cell: ``tk.show(tk.metrics.failure_rates(wh))``.

    Arguments: ``df``; ``metric`` (default: the registry name the metric put in ``df.attrs["metric"]``, else the
    naming conventions); ``columns`` to show. Returns the :class:`Display`.
    """
    chosen = metric if metric is not None else df.attrs.get("metric", True)
    return Display(df, chosen, columns)


#: Rows a metric result may have for a notebook to show it as :class:`Display` (folded past 50); a longer one is
#: left to pandas' own display, which shows its head and tail.
NOTEBOOK_ROWS = 1000


def notebook_html(df: pd.DataFrame) -> str:
    """The HTML a notebook shows for ``df`` as a cell's value: a metric's result (its ``attrs["metric"]`` is a
    registry name) as every surface shows it (:class:`Display`, the first 50 rows, the rest folded), anything
    else as pandas shows it."""
    from ..registry import BY_NAME

    name = df.attrs.get("metric")
    if isinstance(name, str) and name in BY_NAME and len(df) <= NOTEBOOK_ROWS:
        return Display(df, name, max_rows=50)._repr_html_()
    return str(df._repr_html_())


def use_in_notebook() -> bool:
    """Show the metrics' results in a running IPython (Jupyter) as every surface shows them (:func:`notebook_html`):
    registers an HTML formatter for DataFrames. Does nothing outside IPython, or when it is registered already.
    Returns whether it is registered. The metrics call it: ``tk.metrics.failure_rates(wh)`` as a cell's last value
    reads as ``tk.show`` shows it; the DataFrame itself is unchanged."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    import pandas as pd

    formatter = shell.display_formatter.formatters["text/html"]
    try:
        current = formatter.lookup_by_type(pd.DataFrame)
    except KeyError:
        current = None
    if current is not notebook_html:
        formatter.for_type(pd.DataFrame, notebook_html)
    return True


__all__ = [
    "DEFAULT_WIDTH",
    "DISPLAY_LIMIT",
    "DURATION_UNITS",
    "KINDS",
    "NOTEBOOK_ROWS",
    "TABLE_CSS",
    "Column",
    "Display",
    "Shown",
    "clean_for_terminal",
    "duration_stem",
    "format_duration",
    "format_interval",
    "format_number",
    "format_percent",
    "format_time",
    "hide_rows",
    "is_duration_column",
    "is_proportion_column",
    "kind_by_name",
    "missing",
    "network_colour",
    "notebook_html",
    "plural",
    "present",
    "short_id",
    "shorten",
    "show",
    "terminal_width",
    "to_html",
    "to_terminal",
    "unit_for",
    "use_in_notebook",
    "wrap",
]
