"""The option groups several commands share, declared once (the warehouse, the period, the filters, the output,
``--quiet``), and the argparse types of their values. Nothing here imports pandas or DuckDB: ``chainops --help``
must answer at once."""

from __future__ import annotations

import argparse


def warehouse_option(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """``--warehouse PATH``."""
    p.add_argument(
        "--warehouse",
        default=default,
        metavar="PATH",
        help="DuckDB warehouse file (default: $CHAINOPS_WAREHOUSE or data/chainops.duckdb)",
    )


def period_options(p: argparse.ArgumentParser, *, since_default: str | None = None, until_default: str = "now") -> None:
    """``--since`` and ``--until``: the period a metric or the report covers (``since_default``: the report's 7d;
    ``until_default``: what the end is when not given, in words)."""
    default = f" (default {since_default})" if since_default else ""
    p.add_argument(
        "--since",
        default=since_default,
        type=time_text,
        metavar="T",
        help="start of the period: ISO date/time or an age before --until such as 7d, '7 days', 12h, 90min, "
        f"yesterday{default}",
    )
    p.add_argument(
        "--until",
        type=time_text,
        metavar="T",
        help=f"end of the period (exclusive): ISO time or an age (default: {until_default})",
    )


def filter_options(p: argparse.ArgumentParser) -> None:
    """``--channel``, ``--network``, ``--status``: values checked against the warehouse, with a "did you mean"."""
    p.add_argument("--channel", action="append", metavar="ID", help="only this channel (repeatable)")
    p.add_argument(
        "--network", action="append", metavar="NAME", help="only this network, by name or chain selector (repeatable)"
    )
    p.add_argument(
        "--status",
        action="append",
        metavar="STATUS",
        help="only this status (repeatable; metrics that group by status)",
    )


def output_options(p: argparse.ArgumentParser, *, columns_default: str = "as many columns as fit") -> None:
    """The output group: ``--format`` and ``--out`` (where it goes), ``--columns``, ``--wide`` and ``--max-rows``
    (what a printed table shows; files keep every column and row)."""
    p.add_argument(
        "--format",
        choices=["table", "csv", "json", "parquet", "html"],
        default=None,
        help="output format (default: from the --out file's extension, .csv .json .parquet .html .txt; "
        "a text table without --out; parquet needs --out)",
    )
    p.add_argument("--out", metavar="PATH", help="write to a file instead of standard output")
    p.add_argument(
        "--columns",
        metavar="A,B,C",
        help=f"the columns a table shows, comma-separated (default: {columns_default}; files keep all)",
    )
    p.add_argument("--wide", action="store_true", help="show every column and row, however wide the table")
    p.add_argument(
        "--max-rows",
        type=at_least_one,
        metavar="N",
        help="rows a printed table shows (default: a screenful on a terminal, every row to a pipe; files get all)",
    )


def quiet_option(p: argparse.ArgumentParser, help: str = "print nothing on success") -> None:
    """``--quiet``, on every command that prints on success (what it still prints is said in ``help``)."""
    p.add_argument("--quiet", action="store_true", help=help)


def time_text(text: str) -> str:
    """argparse type of a time (``--since``, ``--until``, ``--now``): checked here so that a typo is a usage error
    listing the accepted forms; the text itself is kept (an age counts back from ``--until``, read later)."""
    from ..times import parse_time

    try:
        parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def duration_text(text: str) -> str:
    """argparse type of ``--bucket``: a usage error listing the accepted forms for anything else."""
    from ..times import parse_duration

    try:
        parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def share(text: str) -> float:
    """argparse type of a share between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text!r}")
    return value


def at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value
