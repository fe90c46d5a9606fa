"""The option groups several commands share, declared once (the warehouse, the output), and the argparse types of
their values. Nothing here imports pandas or DuckDB: ``chainops --help`` must answer at once."""

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


def output_options(p: argparse.ArgumentParser) -> None:
    """``--format`` and ``--out``."""
    p.add_argument(
        "--format",
        choices=["table", "csv", "json", "parquet", "html"],
        default=None,
        help="output format (default: from the --out file's extension, .csv .json .parquet .html .txt; "
        "a text table without --out; parquet needs --out)",
    )
    p.add_argument("--out", metavar="PATH", help="write to a file instead of standard output")


def table_options(p: argparse.ArgumentParser) -> None:
    """``--columns`` and ``--wide``: what a printed table shows."""
    p.add_argument(
        "--columns",
        metavar="A,B,C",
        help="the columns a table shows, comma-separated (default: the metric's main columns; files keep all)",
    )
    p.add_argument("--wide", action="store_true", help="show every column and row, however wide the table")


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
