"""``chainops metrics NAME``: one metric table, printed to fit the terminal or written to a file."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..errors import UsageError
from ..registry import BY_NAME, METRIC_NAMES  # the metrics' declarations import no pandas or DuckDB
from .options import (
    at_least_one,
    duration_text,
    filter_options,
    output_options,
    period_options,
    quiet_option,
    time_text,
    warehouse_option,
)
from .output import (
    chosen_columns,
    clean_for_terminal,
    cut_rows,
    default_columns,
    hidden_rows,
    output_format,
    period_line,
    row_limit,
    say_wrapped,
    table_text,
    write_frame,
)

if TYPE_CHECKING:
    import pandas as pd


def spark_options(p: argparse.ArgumentParser) -> None:
    """The options that run a metric on Spark over a Parquet export instead of on the warehouse."""
    p.add_argument(
        "--engine",
        choices=["duckdb", "spark"],
        default="duckdb",
        help="duckdb: the warehouse (default); spark: Apache Spark over a Parquet export (needs --parquet)",
    )
    p.add_argument("--parquet", metavar="DIR", help="the export Spark reads (chainops export --out DIR; any Spark URI)")
    p.add_argument(
        "--spark-master", metavar="URL", help="Spark master (default: the spark-submit session's, else local[*])"
    )


def _metrics_source(args: argparse.Namespace, settings: Settings) -> object:
    """The warehouse path, or the Parquet export registered in a Spark session (``--engine spark``)."""
    if args.engine != "spark":
        if args.parquet or args.spark_master:
            raise UsageError("--parquet and --spark-master go with --engine spark")
        return str(settings.warehouse)
    if not args.parquet:
        raise UsageError("--engine spark reads a Parquet export: give --parquet DIR (write one with chainops export)")
    from ..spark import spark_session, spark_warehouse

    return spark_warehouse(args.parquet, spark_session(args.spark_master))


def cmd_metrics(args: argparse.Namespace) -> int:
    """Print or write one metric table."""
    from .. import metrics

    settings = Settings.load(warehouse=args.warehouse)
    fmt = output_format(args.format, args.out)
    func = metrics.METRICS[args.name]
    kwargs = BY_NAME[args.name].arguments(vars(args))  # the declaration says what the metric takes
    source = _metrics_source(args, settings)
    try:
        with warnings.catch_warnings(record=True) as said:  # what Python warns, the command line says
            warnings.simplefilter("always", metrics.EmptyPeriodWarning)
            df = func(source, **kwargs)
    except ValueError as exc:  # a filter value, grouping, bucket or period the metric refuses (its own words)
        raise UsageError(str(exc)) from None
    if df.attrs.get("clipped") and not args.quiet:  # the warehouse holds a shorter period (toolkit.metrics.coverage)
        print(f"chainops metrics: {clean_for_terminal(str(df.attrs['clipped']))}", file=sys.stderr)
    if df.empty and not args.quiet:
        _say_why_empty(args, source)
    for w in said:  # the metric's own word on the period as a line of ours; any other warning as Python shows it
        if issubclass(w.category, metrics.EmptyPeriodWarning):
            if not args.quiet:
                say_wrapped(f"chainops metrics: {clean_for_terminal(str(w.message))}")
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    if fmt == "table" and not args.out:
        _print_metric_table(df, args)
        return 0
    columns = chosen_columns(df, args.columns)
    write_frame(df, fmt, args.out, metric=args.name, columns=columns if fmt in ("table", "html") else None)
    if columns is not None and fmt not in ("table", "html") and not args.quiet:
        print("chainops metrics: --columns picks what a table shows; files keep every column", file=sys.stderr)
    return 0


def _print_metric_table(df: pd.DataFrame, args: argparse.Namespace) -> None:
    """A metric on the terminal: its period and as-of line (not with ``--quiet``), then the table that fits (the
    default columns and rows, ``--columns``, or everything with ``--wide``), cut at the row limit ``sql`` keeps."""
    notes: list[str] = []
    columns = chosen_columns(df, args.columns)
    if not args.wide and columns is None:
        by = [c.strip() for c in (args.by or "").split(",") if c.strip()]
        columns = default_columns(df, args.name, by)
        df, notes = hidden_rows(df, args.name)
    from ..presentation.tables import wrap

    if not args.quiet:
        print(wrap(period_line(df, args.name)))
    df, cut = cut_rows(df, row_limit("table", None, args.max_rows, wide=args.wide))
    notes = [] if args.quiet else [*notes, *cut]
    asked = columns if args.columns else ()  # named in --columns: kept on a narrow terminal
    sys.stdout.write(table_text(df, metric=args.name, columns=columns, wide=args.wide, notes=notes, keep=asked))


def _say_why_empty(args: argparse.Namespace, source: object) -> None:
    """Say on stderr why a metric has no rows: the filters, what an empty answer of this metric means, or an
    empty warehouse."""
    from ..metrics.known_values import describe_empty

    filters = {k: getattr(args, k) for k in ("network", "channel", "status", "since", "until")}
    held = None
    if isinstance(source, str):
        from ..warehouse import Warehouse

        with Warehouse(source, read_only=True) as wh:
            held = int(
                wh.con.execute(
                    "SELECT (SELECT count(*) FROM operations) + (SELECT count(*) FROM queries) "
                    "+ (SELECT count(*) FROM events)"
                ).fetchone()[0]
            )
    note = describe_empty(filters, metric=args.name, held=held)
    say_wrapped(f"chainops metrics: {clean_for_terminal(note)}")


def register(sub: Any) -> None:
    """Add ``chainops metrics`` and its options to ``sub``."""
    p = sub.add_parser("metrics", help="print or write one metric table")
    p.add_argument("name", choices=METRIC_NAMES, metavar="NAME", help=f"which metric: {', '.join(METRIC_NAMES)}")
    warehouse_option(p)
    p.add_argument("--by", metavar="COLS", help="comma-separated grouping columns, e.g. network,status")
    period_options(p)
    filter_options(p)
    p.add_argument(
        "--bucket", type=duration_text, metavar="SIZE", help="time buckets, e.g. 1h, 6h, 1d (metrics over time)"
    )
    p.add_argument("--top", type=at_least_one, metavar="N", help="how many failure reasons (failure-reasons)")
    p.add_argument(
        "--now",
        type=time_text,
        metavar="T",
        help="the time ages are measured to (stuck-operations; default: the newest event in the warehouse)",
    )
    output_options(p, columns_default="the metric's main columns, as many as fit")
    spark_options(p)
    quiet_option(p, "print only the result: no period line, no row counts under the table, no remarks on stderr")
    p.set_defaults(func=cmd_metrics)
