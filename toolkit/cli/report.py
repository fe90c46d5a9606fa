"""``chainops report``: the HTML report, or the metric tables as CSV/Parquet; exit 3 when a ``--fail-on`` holds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..atomic import output_error
from ..config import Settings
from ..errors import ChainopsError, UsageError
from .options import period_options, quiet_option, warehouse_option
from .output import EXIT_THRESHOLD, FORMATS_BY_EXTENSION, clean_for_terminal, fitted


def _threshold(text: str) -> object:
    """argparse type of ``--fail-on``: a usage error (exit 2) for an expression it cannot parse."""
    from ..presentation.report import parse_threshold

    try:
        return parse_threshold(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _check_report_out(out: str, fmt: str) -> None:
    """A usage error for an ``--out`` the report's format cannot be: HTML goes to a .html/.htm file (or a name
    without extension), CSV and Parquet to a directory, never to a name that promises a file of another kind."""
    suffix = Path(out).suffix.lower()
    if not suffix:
        return
    if fmt == "html" and FORMATS_BY_EXTENSION.get(suffix) != "html":
        raise UsageError(
            f"--out {out}: the report is written as HTML, not {suffix}; name the file .html "
            "(or write the tables with --format csv or --format parquet and --out DIR)"
        )
    if fmt != "html" and (suffix in FORMATS_BY_EXTENSION or suffix in {".pdf", ".xlsx", ".zip"}):
        raise UsageError(f"--out {out}: --format {fmt} writes a directory of tables; give a directory name")


def cmd_report(args: argparse.Namespace) -> int:
    """Write the report (HTML file, or CSV/Parquet tables in a directory); exit 3 when a --fail-on is breached."""
    _check_report_out(args.out, args.format)
    from ..presentation import report

    settings = Settings.load(warehouse=args.warehouse)
    try:
        result = report.write_report(
            str(settings.warehouse),
            args.out,
            fmt=args.format,
            since=args.since,
            until=args.until,
            title=args.title,
            thresholds=args.fail_on or (),
        )
    except ValueError as exc:
        raise ChainopsError(str(exc)) from None
    except OSError as exc:
        raise output_error(args.out, exc, "the report") from None
    if not args.quiet:
        print(fitted(f"Report: {clean_for_terminal(args.out)}"))
        for finding in result.findings:
            print(fitted(clean_for_terminal(finding), indent="  "))
    breaches = result.breaches
    for threshold in breaches:
        value = result.summary.get(threshold.name)
        never = threshold.name == "sync_age_h" and value == float("inf")
        shown = "no sync has ever succeeded" if never else f"value {value:g}"
        print(fitted(f"chainops report: threshold breached: {threshold} ({shown})"), file=sys.stderr)
    return EXIT_THRESHOLD if breaches else 0


def register(sub: Any) -> None:
    """Add ``chainops report`` and its options to ``sub``."""
    p = sub.add_parser("report", help="write the report: one HTML file, or the metric tables as CSV/Parquet")
    warehouse_option(p)
    period_options(p, since_default="7d", until_default="the data's as-of time, the newest event")
    p.add_argument(
        "--out",
        required=True,
        metavar="PATH",
        help="the HTML file to write, or the directory of the CSV/Parquet tables",
    )
    p.add_argument("--format", choices=["html", "csv", "parquet"], default="html", help="output format (default html)")
    p.add_argument("--title", default="Chain operations", help="the report's title")
    quiet_option(p, "print nothing on success (a breached --fail-on is still told on stderr)")
    p.add_argument(
        "--fail-on",
        action="append",
        type=_threshold,
        metavar="EXPR",
        help="exit 3 when this holds, e.g. 'failure_rate>0.05' or 'stuck>0' (repeatable; values: "
        "operations, terminal, failure_rate, expiry_rate, cancel_rate, failure_rate_change, "
        "worst_failure_rate, stuck, query_failure_rate, proof_coverage, slowest_p90_s, sync_age_h, ...)",
    )
    p.set_defaults(func=cmd_report)
