"""Tables for people, once for every surface: on a terminal, in HTML (the report, the dashboard) and in a notebook.

How each value reads is :mod:`toolkit.presentation.values` (a column's kind decided once, three significant figures
with trailing zeros, one unit per duration column); this module lays the values out. A header is the column's
label with its statistic and the unit it is shown in (``since created p50 (s)``, ``failure rate %``): no two alike,
wrapped between words on a terminal, never inside one. A terminal too narrow for every column leaves out, in
order, columns without a value, columns another says again (``channel_id`` beside ``channel``), then descriptors,
and only last the metric's values and the columns asked for by name; below the table it names what it left out
and how to see it, and gives each ``-`` its reason (the row's notes, :func:`why_missing`).

:func:`present` turns a DataFrame into a :class:`Shown` (headers, cell texts, alignment); :func:`to_terminal`,
:func:`to_html` render it; :class:`Display` is a DataFrame with a notebook face (``_repr_html_``); :func:`show` is
``tk.show``. Data outputs (CSV, JSON, Parquet) never come here (:mod:`toolkit.presentation.files`).

This module imports pandas and rich only inside functions: the command line reads it before it needs them.
"""

from __future__ import annotations

import html
import numbers
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from .values import (
    DISPLAY_LIMIT,
    DURATION_UNITS,
    KINDS,
    clean_for_terminal,
    column_kind,
    duration_stem,
    format_count,
    format_duration,
    format_in_unit,
    format_interval,
    format_number,
    format_percent,
    format_time,
    is_duration_column,
    is_proportion_column,
    kind_by_name,
    missing,
    plural,
    short_id,
    shorten,
    unit_for,
)

#: Terminal width when neither ``COLUMNS`` nor the terminal says.
DEFAULT_WIDTH = 80
#: A statistic at the end of a duration's name (``to_finalized_p90``): columns differing only by it share a unit.
_STATISTIC = re.compile(r"_(?:p\d+|mean|max|min|median)$|^(?:p\d+|mean|max|min|median)$")
#: Footnotes of missing values listed at most (the rest counted).
_FOOTNOTES = 8


@dataclass(eq=False)
class Column:
    """One shown column: its source name, its header, its kind, and the text of each cell (``full`` holds the
    whole value where the cell shortened it, for a tooltip); ``value``: one of the metric's own values (a narrow
    terminal keeps it), ``keep``: asked for by name (kept too)."""

    name: str
    header: str
    kind: str
    cells: list[str]
    full: list[str | None] = field(default_factory=list)
    value: bool = False
    keep: bool = False
    unit: str = ""

    @property
    def right(self) -> bool:
        """Numbers read right-aligned; text, ids and times left-aligned."""
        return self.kind in ("proportion", "duration", "count", "number")


@dataclass
class Shown:
    """A table as people read it: its columns, notes to print around it (columns or rows left out, why a value is
    missing), ``omitted``: the source's columns it does not show (named below a terminal table), and ``reasons``:
    each row's ``notes`` when the source has them and does not show them (why a value is ``-``)."""

    columns: list[Column]
    rows: int
    notes: list[str] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)
    reasons: list[str | None] = field(default_factory=list)


def _declared(metric: str | bool) -> dict[str, Any]:
    """The registry's columns of ``metric`` by name (none for a frame the registry does not know)."""
    from ..registry import BY_NAME

    m = BY_NAME.get(metric) if isinstance(metric, str) else None
    return {c.name: c for c in m.columns} if m is not None else {}


def _label(name: str, kind: str, declared: dict[str, Any], metric: str | bool) -> str:
    """A column's header without its unit: the registry's :meth:`~toolkit.registry.Column.label`, else the name
    (a duration's without its ``_s``); a SQL result's columns keep their names."""
    if metric is False:
        return name
    if name in declared:
        return str(declared[name].label())
    return (duration_stem(name) if kind == "duration" else name).replace("_", " ")


def _is_value(name: str, kind: str, declared: dict[str, Any]) -> bool:
    """Whether a column is one of the metric's values: as declared, else (no column of the metric declared one)
    a proportion or duration that is not an interval's bound."""
    from ..column_kinds import is_bound

    if any(c.value for c in declared.values()):
        return bool(declared[name].value) if name in declared else False
    return kind in ("proportion", "duration") and not is_bound(name)


def _duration_units(df: pd.DataFrame, names: list[str], kinds: dict[str, str]) -> dict[str, tuple[str, float]]:
    """The unit of each duration column, decided once for the table: columns that differ only by their statistic
    (``to_finalized_p50_s``, ``to_finalized_p90_s``) share the unit :func:`~toolkit.presentation.values.unit_for`
    picks from their values together, so p50 and p90 read side by side."""
    families: dict[str, list[str]] = {}
    for name in names:
        if kinds[name] == "duration":
            families.setdefault(_STATISTIC.sub("", duration_stem(name)), []).append(name)
    units: dict[str, tuple[str, float]] = {}
    for members in families.values():
        unit = unit_for([v for n in members for v in df[n].tolist()])
        units.update(dict.fromkeys(members, unit))
    return units


def present(
    df: pd.DataFrame,
    *,
    metric: str | bool = True,
    columns: Sequence[str] | None = None,
    short_ids: bool = True,
    limit: int = DISPLAY_LIMIT,
    keep: Sequence[str] = (),
) -> Shown:
    """``df`` as people read it (see the module's docstring), the same for every surface.

    Arguments: ``df``; ``metric`` a registry name (``status-latency``) whose declared column kinds and headers
    apply, ``True`` for the metrics' naming conventions, ``False`` for a SQL result (kinds from values only);
    ``columns`` to show (those present, in that order; default all; an interval's ``_low``/``_high`` are folded
    into their proportion; :func:`show` refuses a name ``df`` lacks); ``short_ids`` shortens
    UUIDs and long hex values; ``limit`` the characters a text cell keeps; ``keep``: columns asked for by name,
    which a narrow terminal keeps (as it keeps the metric's values; columns not among the metric's defaults count
    as asked for). Returns the :class:`Shown` table.
    """
    names = [str(c) for c in df.columns]
    wanted = [c for c in (columns or names) if c in names]
    frame = df.set_axis(names, axis=1) if list(df.columns) != names else df
    declared = _declared(metric)
    kinds = {n: column_kind(n, frame[n], metric) for n in names}
    folded = {
        f"{n}_{end}"
        for n in names
        if kinds[n] == "proportion" and f"{n}_low" in names and f"{n}_high" in names
        for end in ("low", "high")
    }
    units = _duration_units(frame, wanted, kinds)
    defaults = _defaults(metric)
    asked = set(keep) | ({c for c in wanted if c not in defaults} if columns is not None and defaults else set())
    shown: list[Column] = []
    for name in wanted:
        if name in folded and (columns is None or name[: name.rfind("_")] in wanted):
            continue
        kind = kinds[name]
        values = frame[name].tolist()
        header = _label(name, kind, declared, metric)
        unit_name = ""
        full: list[str | None] = []
        if kind == "proportion":
            unit_name = "%"
            if f"{name}_low" in folded:
                lows, highs = frame[f"{name}_low"].tolist(), frame[f"{name}_high"].tolist()
                cells = [format_interval(v, lo, hi) for v, lo, hi in zip(values, lows, highs, strict=True)]
            else:
                cells = [format_percent(v) for v in values]
        elif kind == "duration":
            unit_name = units[name][0]
            cells = [format_in_unit(v, units[name]) for v in values]
        elif kind == "count":
            cells = [format_count(v) for v in values]
        elif kind == "number":
            cells = [format_number(v) for v in values]
        elif kind == "time":
            whole_minutes = all(_whole_minute(v) for v in values)
            cells = [format_time(v, seconds=not whole_minutes) for v in values]
        elif kind == "flag":
            cells = ["-" if missing(v) else ("yes" if v else "no") for v in values]
        else:
            texts = ["-" if missing(v) else clean_for_terminal(str(v)) for v in values]
            if kind == "id" and short_ids:
                cells = [short_id(t) for t in texts]
                full = [t if c != t else None for c, t in zip(cells, texts, strict=True)]
            else:
                cells = [shorten(t, limit) for t in texts]
                full = [t[:2000] if c != t else None for c, t in zip(cells, texts, strict=True)]
        value = _is_value(name, kind, declared) if metric is not False else False
        header = clean_for_terminal(_with_unit(header, unit_name))
        shown.append(Column(name, header, kind, cells, full, value=value, keep=name in asked, unit=unit_name))
    _unique_headers(shown)
    kept = {c.name for c in shown} | {f"{c.name}_{end}" for c in shown for end in ("low", "high")}
    bounds = {b for n in names if kinds[n] == "proportion" for b in (f"{n}_low", f"{n}_high")}
    result = Shown(shown, len(df), omitted=[n for n in names if n not in kept and n not in bounds])
    if "notes" in frame.columns and "notes" not in wanted:
        result.reasons = [None if missing(n) or not str(n).strip() else str(n) for n in frame["notes"].tolist()]
    result.notes.extend(_shortened(shown))
    return result


def _check_columns(columns: Sequence[str], names: list[str]) -> None:
    """A ValueError for a column ``names`` lacks, with the names that come close ("did you mean")."""
    import difflib

    unknown = [c for c in columns if c not in names]
    if not unknown:
        return
    hints = []
    for c in unknown:
        close = difflib.get_close_matches(c, names, n=3, cutoff=0.6)
        hints.append(f"{c!r}" + (f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""))
    raise ValueError(f"no column {', '.join(hints)}; the columns are {', '.join(names)}")


def _defaults(metric: str | bool) -> set[str]:
    from ..registry import BY_NAME

    m = BY_NAME.get(metric) if isinstance(metric, str) else None
    return set(m.default) if m is not None else set()


def _with_unit(label: str, unit: str) -> str:
    """A header: the label and the unit the column is shown in (``p50 (s)``, ``failure rate %``)."""
    if unit == "%":
        return f"{label} %"
    return f"{label} ({unit})" if unit else label


def _unique_headers(shown: list[Column]) -> None:
    """Two columns never share a header: where labels collide, each takes its column's name (and unit) instead."""
    seen: dict[str, int] = {}
    for col in shown:
        seen[col.header] = seen.get(col.header, 0) + 1
    for col in shown:
        if seen[col.header] > 1:
            base = duration_stem(col.name) if col.kind == "duration" else col.name
            col.header = clean_for_terminal(_with_unit(base, col.unit))


def _shortened(shown: list[Column]) -> list[str]:
    """The note naming the column behind each header that is not its name read aloud (a declared short header)."""
    pairs = []
    for col in shown:
        bare = col.header.removesuffix(f" ({col.unit})").removesuffix(" %")
        if bare.replace(" ", "_") not in (col.name, duration_stem(col.name)):
            pairs.append(f"{col.header} = {col.name}")
    return [f"Columns: {'; '.join(pairs)}"] if pairs else []


def why_missing(shown: Shown, columns: Sequence[Column] | None = None) -> list[str]:
    """Notes that give each ``-`` in a number column of ``columns`` (default: all of ``shown``) its reason: the
    row's notes (:attr:`Shown.reasons`), the row named by its text columns, else one line on what ``-`` means."""
    columns = list(shown.columns if columns is None else columns)
    numeric = [c for c in columns if c.right]
    rows = [i for i in range(shown.rows) if any(c.cells[i] == "-" for c in numeric)]
    if not rows:
        return []
    labels = [c for c in columns if not c.right]
    lines = []
    for i in rows:
        note = shown.reasons[i] if shown.reasons else None
        if note is None:
            continue
        who = " ".join(c.cells[i] for c in labels) or f"row {i + 1}"
        blank = [c for c in numeric if c.cells[i] == "-"]
        blanks = ", ".join(c.header for c in blank)
        lines.append(f"- {who} ({blanks}): {clean_for_terminal(shorten(_about(note, blank), 160))}")
    if len(lines) > _FOOTNOTES:
        rest = len(lines) - _FOOTNOTES
        lines = [*lines[:_FOOTNOTES], f"- and {plural(rest, 'more row')} (the notes column says why for each)"]
    out = ["Why a value is -:", *lines] if lines else []
    if len(lines) < len(rows):  # rows without a note of their own
        out.append("-: no value (not reached or not ended yet, nothing in the period, or too few to estimate)")
    return out


def _about(note: str, blank: list[Column]) -> str:
    """The parts of a row's notes (``stage p50: reason; ...``) about the blank columns (``stage_p50_s``), or the
    whole note when no part names one."""
    keys = set()
    for col in blank:
        stem = duration_stem(col.name)
        head, _, stat = stem.rpartition("_")
        keys |= {f"{head} {stat}", f"{head}"} if head else {stem}  # "to_finalized p50: ..." or "to_finalized: ..."
    parts = [p for p in note.split("; ") if any(p.startswith(f"{k}:") for k in keys)]
    return "; ".join(parts) if parts else note


def _whole_minute(value: Any) -> bool:
    if missing(value):
        return True
    if isinstance(value, datetime):
        return value.second == 0 and value.microsecond == 0
    if isinstance(value, int | float | numbers.Integral):
        return int(value) % 60 == 0
    return False


def hide_rows(
    df: pd.DataFrame, metric: str | bool, *, shown_by: str | None = "--wide shows them"
) -> tuple[pd.DataFrame, list[str]]:
    """``df`` without the rows that cannot carry a value by definition (the registry's ``hidden``: final statuses in
    ``status-latency``), and the note that says how many were left out (none when nothing was), ending with
    ``shown_by`` in brackets: where the reader finds them (the CLI's ``--wide``; a report's CSV tables; None says
    nothing). Data outputs keep every row; only what people read by default leaves them out."""
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
    where = f" ({shown_by})" if shown_by else ""
    return df[keep], [f"{plural(dropped, 'row')} for {m.hidden_why} not shown{where}"]


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


def natural_width(shown: Shown) -> int:
    """The characters ``shown`` takes with every column at its full width (its widest cell or whole header) and the
    gaps :func:`to_terminal` puts between them: a table no wider fits as it is, nothing squeezed or left out."""
    return sum(_natural(c) for c in shown.columns) + _GAP * max(len(shown.columns) - 1, 0)


def _need(col: Column) -> int:
    """The characters a column takes at least: its cells (a text column up to :data:`_TEXT_WIDTH`, elided past
    it), and its header's longest word (a header wraps between words, never inside one)."""
    cells = max([1, *(_cells(c) for c in col.cells)])
    return max(min(cells, _TEXT_WIDTH) if not col.right else cells, _header_need(col.header))


def _header_need(header: str) -> int:
    """The characters ``header`` takes: all of them up to :data:`_HEADER_LINE` (one line), else the fewest in which
    it fits on :data:`_HEADER_LINES` lines broken between words (its longest word, and :data:`_HEADER_LINE`, at
    least)."""
    import textwrap

    if _cells(header) <= _HEADER_LINE:
        return _cells(header)
    header = _glued(header)
    width = max([_HEADER_LINE, *(_cells(w) for w in header.split(" "))])
    while len(textwrap.wrap(header, width=width, break_long_words=False)) > _HEADER_LINES:
        width += 1
    return width


#: Lines a header may take (it wraps between words), and the characters a header keeps on one line.
_HEADER_LINES = 2
_HEADER_LINE = 12
#: A column that says again what another shows: (this, that) -> this goes first when the terminal is narrow.
_REDUNDANT = (("channel_id", "channel"), ("chain_selector", "network"))


def _drop_order(columns: list[Column]) -> list[Column]:
    """The columns a narrow terminal leaves out, first to last: those without a value in any row, those another
    column says again (a channel's id beside its name), then descriptors (counts first, then text, right to left,
    never the first column), and only then the metric's values and the columns asked for by name."""
    names = {c.name for c in columns}
    first = columns[:1]
    spare = [c for c in columns if not (c.value or c.keep) and c not in first]
    blank = [c for c in spare if _blank(c)]
    redundant = [c for c in spare if any(c.name == this and that in names for this, that in _REDUNDANT)]
    numbers = [c for c in reversed(spare) if c.right]
    texts = [c for c in reversed(spare) if not c.right]
    valued = [c for c in reversed(columns) if (c.value or c.keep) and c not in first]
    return list(dict.fromkeys([*blank, *redundant, *numbers, *texts, *valued]))


def _widths(columns: list[Column], width: int) -> dict[Column, int]:
    """The columns that fit ``width`` (left out in :func:`_drop_order`'s order until the rest fits), each with the
    most characters it may take: its need, and more for text columns from what is left over, in order."""
    need = {col: _need(col) for col in columns}  # measured once: every cell of a column is read for it
    chosen = list(columns)
    total = sum(need.values()) + _GAP * (len(chosen) - 1)
    for col in _drop_order(columns):
        if total <= width:
            break
        chosen.remove(col)
        total -= need[col] + _GAP
    kept = {col: need[col] for col in chosen}
    slack = max(width - sum(kept.values()) - _GAP * max(len(kept) - 1, 0), 0)
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
    left_out = [c.name for c in shown.columns if c not in columns]
    if wide:
        width = max(width, sum(_natural(c) + _GAP for c in columns) + _GAP)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), header_style="bold")
    for col in columns:
        table.add_column(
            Text(_wrap_header(col.header, widths[col]), overflow="fold"),  # a cell keeps its one line
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
    notes = ["no rows"] if not shown.rows else []
    notes += why_missing(shown, columns)
    notes += shown.notes
    if left_out:
        notes.append(
            f"{plural(len(left_out), 'more column')} not shown (the terminal is too narrow): {', '.join(left_out)} "
            "(--wide shows all, --columns picks)"
        )
    if shown.omitted and not wide:
        notes.append(f"Also in the result: {', '.join(shown.omitted)} (--wide shows every column, --columns picks)")
    for note in notes:
        text += wrap(note, width) + "\n"
    return text


def _wrap_header(header: str, width: int) -> str:
    """A header on as many lines as it needs to fit ``width``, broken between words only."""
    import textwrap

    lines = textwrap.wrap(_glued(header), width=max(width, 1), break_long_words=False)
    return "\n".join(lines).replace("\u00a0", " ") or header


def _glued(header: str) -> str:
    """``header`` with its unit held to the word before it (``rate %``, ``p50 (s)``): a no-break space between."""
    return re.sub(r" (%|\([a-z]+\))$", "\u00a0\\1", header)


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
    follow in a folded ``<details>`` element, so none is left out; a table without rows is ``empty`` as text. The
    reason of each ``-`` follows the table (:func:`why_missing`)."""
    if not shown.rows:
        return f'<p class="meta">{html.escape(empty)}</p>'
    reasons = why_missing(shown)
    below = f'<p class="meta why">{"<br>".join(html.escape(r) for r in reasons)}</p>' if reasons else ""
    if max_rows is None or shown.rows <= max_rows:
        return _html_rows(shown, 0, shown.rows) + below
    rest = shown.rows - max_rows
    return (
        f"{_html_rows(shown, 0, max_rows)}<details><summary>Show the other {rest:,} of {shown.rows:,} rows</summary>"
        f"{_html_rows(shown, max_rows, shown.rows)}</details>{below}"
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
    naming conventions); ``columns`` to show (a name ``df`` lacks raises ValueError saying which names come
    close). Returns the :class:`Display`.
    """
    if columns is not None:  # a misspelt name is refused, with the names that come close
        _check_columns(columns, [str(c) for c in df.columns])
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
