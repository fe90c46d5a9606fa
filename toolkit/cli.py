"""The ``chainops`` command line: demo, sync, metrics, report, sql, export, sandbox.

Exit codes: 0 done, 1 failed (the message says what and what to do), 2 usage, 3 a ``report --fail-on``
threshold was breached (the report is still written). The API key comes only from
``CREC_API_KEY``: flags end up in shell history and process lists.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from . import spec
from .atomic import atomic_file, output_error
from .config import Settings, data_dir, redact
from .display import clean_for_terminal, frame_for_csv, frame_for_display, frame_for_terminal
from .errors import ChainopsError, UsageError
from .logs import show_on_stderr
from .signals import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Terminated,
    is_interruption,
    sigterm_interrupts,
    sigterm_received,
)

DEMO_KEY = "sandbox-demo-key"
#: The sandbox's scenario shapes (toolkit.sandbox.scenarios.SHAPES; named here so that building the parser never
#: imports the sandbox; a test keeps the two equal).
SANDBOX_SHAPES = ("default", "one-channel", "many-channels", "many-transactions", "long-lived", "query-heavy", "messy")


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


def _table_text(df: pd.DataFrame, *, metric: bool) -> str:
    """A text table for people: numbers as :func:`toolkit.display.frame_for_display` shows them, strings cleaned
    (a table without rows is its header line)."""
    if df.empty:
        shown = frame_for_terminal(frame_for_display(df, metric=metric))
        return "  ".join(str(c) for c in shown.columns) + "\n"
    return frame_for_terminal(frame_for_display(df, metric=metric)).to_string(index=False, na_rep="-") + "\n"


def _print_table(df: pd.DataFrame, *, metric: bool = True) -> None:
    sys.stdout.write(_table_text(df, metric=metric))


def _json_value(value: object) -> object:
    """What orjson cannot write itself: times as ISO 8601 text, a missing value as null."""
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


def _write_frame(df: pd.DataFrame, fmt: str, out: str | None, *, metric: bool = True) -> None:
    """Print or write a result (``fmt`` from :func:`output_format`). The table (text or HTML) is for people:
    percentages, durations in a unit per column, significant digits (``metric`` says whether the columns follow the
    metrics' naming conventions; a SQL result gets significant digits only), control characters shown, long values
    shortened. CSV has formulas neutralised (and control characters shown when printed); CSV, JSON and Parquet keep
    every number at full precision. ``--out`` files appear whole or not at all."""
    if fmt == "table":
        text = _table_text(df, metric=metric)
    elif fmt == "html":
        text = frame_for_display(df, metric=metric).to_html(index=False, na_rep="-", border=0)
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


# ---- commands ---------------------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    """Sandbox -> sync -> metrics -> report, offline."""
    from . import metrics, report
    from .loader import sync
    from .sandbox import Sandbox

    warehouse = Path(args.warehouse)
    _replace_demo_warehouse(warehouse)
    print(f"Starting the sandbox (seed {args.seed}, {args.days} days of history) ...", flush=True)
    sandbox = Sandbox(orgs=(DEMO_KEY,), seed=args.seed, days=args.days)
    with sandbox.serve(host="127.0.0.1", port=0) as server:
        print(f"Syncing {server.base_url} into {warehouse} ...", flush=True)
        settings = Settings.load(base_url=server.base_url, api_key=DEMO_KEY, warehouse=warehouse, environ={})
        result = sync(settings, quiet=args.quiet)
    print(result.summary())
    print("\nTime in each status, per network:")
    _print_table(metrics.status_latency(str(warehouse)))
    out = report.write_html_report(str(warehouse), Path(args.out) / "demo.html", title="Chain operations (demo)")
    print(f"\nReport: {out}")
    return 0


def _replace_demo_warehouse(warehouse: Path) -> None:
    """Replace the previous demo's warehouse (the demo's mirrors this run's sandbox only) with a new one marked as
    the demo's, holding the writer lock throughout: while a sync (or another writer) holds it, SyncLockedError names
    the holder and nothing is touched. Refuse, touching nothing, when ``warehouse`` is anything else: a README,
    another program's file, a warehouse synced from the service."""
    from .warehouse import sync_lock
    from .warehouse.identity import is_demo_warehouse

    lock_file = Path(f"{warehouse}.lock")
    had_lock_file = lock_file.exists()
    with sync_lock(warehouse, holder="chainops demo"):
        if (warehouse.exists() or warehouse.is_symlink()) and not is_demo_warehouse(warehouse):
            if not had_lock_file:
                lock_file.unlink(missing_ok=True)  # touch nothing: not even a lock file beside another program's file
            raise UsageError(
                f"--warehouse {warehouse} is not a warehouse made by `chainops demo`, and the demo replaces its "
                "warehouse on every run: it was left untouched. Choose a new path (the default is data/demo.duckdb)."
            )
        warehouse.unlink(missing_ok=True)
        Path(f"{warehouse}.wal").unlink(missing_ok=True)
        _mark_demo(warehouse)  # marked from the start, so a demo stopped part-way is replaced the next time


def _mark_demo(warehouse: Path) -> None:
    """Mark ``warehouse`` (made if missing) as the demo's, which the next demo may replace."""
    from .warehouse import Warehouse
    from .warehouse.identity import DEMO_MARK, MARKER_TABLE

    with Warehouse(warehouse) as wh:
        wh.con.execute(f"INSERT OR REPLACE INTO {MARKER_TABLE} VALUES (?, ?)", list(DEMO_MARK))


def _time_text(text: str) -> str:
    """argparse type of a time (``--since``, ``--until``, ``--now``): checked here so that a typo is a usage error
    listing the accepted forms; the text itself is kept (an age counts back from ``--until``, read later)."""
    from .times import parse_time

    try:
        parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _duration_text(text: str) -> str:
    """argparse type of ``--bucket``: a usage error listing the accepted forms for anything else."""
    from .times import parse_duration

    try:
        parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def cmd_sync(args: argparse.Namespace) -> int:
    """Sync the organisation from CREC_BASE_URL into the warehouse."""
    from .loader import sync
    from .loader.event_window import requested

    requested(args.since, args.event_type)  # a bad --since or --event-type is a usage error before anything else
    settings = Settings.load(base_url=args.base_url, warehouse=args.warehouse)
    result = sync(
        settings,
        channels=args.channel or None,
        full=args.full,
        quiet=args.quiet,
        workers=args.workers,
        since=args.since,  # event windows: read through event search (toolkit.loader.event_window)
        event_types=args.event_type,
    )
    # the summary quotes what the service sent (ids, a rejected item): shown safely, the key never in it
    print(clean_for_terminal(redact(result.summary(), settings.api_key), keep_newlines=True))
    return 0


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
    from .spark import spark_session, spark_warehouse

    return spark_warehouse(args.parquet, spark_session(args.spark_master))


def cmd_metrics(args: argparse.Namespace) -> int:
    """Print or write one metric table."""
    from . import metrics

    settings = Settings.load(warehouse=args.warehouse)
    fmt = output_format(args.format, args.out)
    func = metrics.METRICS[args.name]
    kwargs = _metric_arguments(args, func)
    source = _metrics_source(args, settings)
    _check_filter_values(source, args)
    try:
        df = func(source, **kwargs)
    except ValueError as exc:  # a grouping, bucket or period the metric refuses: the command line was wrong
        raise UsageError(str(exc)) from None
    if df.attrs.get("clipped"):  # the warehouse holds a shorter period (toolkit.metrics.coverage)
        print(f"chainops metrics: {clean_for_terminal(str(df.attrs['clipped']))}", file=sys.stderr)
    if df.empty:
        _say_why_empty(args)
    _write_frame(df, fmt, args.out)
    return 0


def _metric_arguments(args: argparse.Namespace, func: object) -> dict[str, object]:
    """The metric's keyword arguments from the command line; a usage error for an option it does not take."""
    accepts = {*inspect.signature(func).parameters, *getattr(func, "filter_names", ())}  # type: ignore[arg-type]
    given = {
        "since": args.since,
        "until": args.until,
        "channel": args.channel,
        "network": args.network,
        "status": args.status,
        "bucket": args.bucket,
        "top": args.top,
        "now": args.now,
    }
    refused = [f"--{k}" for k, v in given.items() if v and k not in accepts]
    if refused:
        raise UsageError(f"{args.name} does not take {', '.join(refused)}")
    kwargs: dict[str, object] = {k: v for k, v in given.items() if v}
    if args.by:
        kwargs["by"] = [c.strip() for c in args.by.split(",") if c.strip()]
    return kwargs


def _check_filter_values(source: object, args: argparse.Namespace) -> None:
    """A usage error (exit 2) for a --network, --channel or --status value the warehouse (a path) or the Spark
    export does not know."""
    if not (args.network or args.channel or args.status):
        return
    from .known_values import check_filters
    from .warehouse import Warehouse

    def check(wh: object) -> None:
        check_filters(wh, args.name, network=args.network, channel=args.channel, status=args.status)  # type: ignore[arg-type]

    if isinstance(source, str):
        with Warehouse(source, read_only=True) as wh:
            check(wh)
    else:
        check(source)


def _say_why_empty(args: argparse.Namespace) -> None:
    from .known_values import describe_empty

    filters = {k: getattr(args, k) for k in ("network", "channel", "status", "since", "until")}
    print(f"chainops metrics: {clean_for_terminal(describe_empty(filters))}", file=sys.stderr)


def _threshold(text: str) -> object:
    """argparse type of ``--fail-on``: a usage error (exit 2) for an expression it cannot parse."""
    from .report import parse_threshold

    try:
        return parse_threshold(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_report(args: argparse.Namespace) -> int:
    """Write the report (HTML file, or CSV/Parquet tables in a directory); exit 3 when a --fail-on is breached."""
    from . import report

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
    print(f"Report: {clean_for_terminal(args.out)}")
    for finding in result.findings:
        print(f"  {clean_for_terminal(finding)}")
    breaches = result.breaches
    for threshold in breaches:
        value = result.summary.get(threshold.name)
        never = threshold.name == "sync_age_h" and value == float("inf")
        shown = "no sync has ever succeeded" if never else f"value {value:g}"
        print(f"chainops report: threshold breached: {threshold} ({shown})", file=sys.stderr)
    return EXIT_THRESHOLD if breaches else 0


def cmd_sql(args: argparse.Namespace) -> int:
    """Run one SQL query against the warehouse, opened read-only (writes fail with a clear message)."""
    import duckdb

    from .warehouse import Warehouse

    settings = Settings.load(warehouse=args.warehouse)
    fmt = output_format(args.format, args.out)
    if not args.query.strip().strip(";").strip():
        raise UsageError('the query is empty; give one, e.g. chainops sql "select count(*) from events"')
    with Warehouse(settings.warehouse, read_only=True) as wh:
        # no files, extensions or other databases either: COPY ... TO, ATTACH and INSTALL fail, and the query
        # cannot switch this back on
        wh.con.execute("SET enable_external_access = false")
        wh.con.execute("SET lock_configuration = true")
        try:
            df = wh.query(args.query)
        except duckdb.Error as exc:
            message = str(exc).strip()
            lowered = message.lower()
            if any(w in lowered for w in ("read-only", "read only", "disabled by configuration", "has been locked")):
                raise ChainopsError(
                    f"chainops sql is read-only: only queries of the warehouse are allowed ({message})"
                ) from None
            raise ChainopsError(f"The query failed: {message}") from None
        df = _with_comments(wh, args.query, df)
    _write_frame(df, fmt, args.out, metric=False)
    return 0


_DESCRIBE = re.compile(r"\s*(?:describe|desc)\s+(?:main\.)?\"?(\w+)\"?\s*;?\s*", re.IGNORECASE)


def _with_comments(wh: object, query: str, df: pd.DataFrame) -> pd.DataFrame:
    """``describe TABLE`` with each column's meaning from the data dictionary (DuckDB's DESCRIBE leaves it out)."""
    m = _DESCRIBE.fullmatch(query)
    if m is None or "column_name" not in df.columns:
        return df
    rows = wh.con.execute(  # type: ignore[attr-defined]
        "SELECT column_name, comment FROM duckdb_columns() WHERE database_name = current_database() AND table_name = ?",
        [m.group(1)],
    ).fetchall()
    comments = dict(rows)
    return df.assign(comment=[comments.get(c) for c in df["column_name"]])


def cmd_export(args: argparse.Namespace) -> int:
    """Write every table and view as Parquet, one directory each (the large ones partitioned by network and day)."""
    from .export import export_parquet

    settings = Settings.load(warehouse=args.warehouse)
    try:
        written = export_parquet(str(settings.warehouse), args.out)
    except OSError as exc:
        raise output_error(args.out, exc, "the export") from None
    for name, files in written.items():
        print(f"{name}: {files} file{'s' if files != 1 else ''}")
    print(f"Exported to {args.out}")
    return 0


def _check_rate_limit(rate: float | None, retry_after: float | None) -> None:
    """Refuse rate-limit flags the sandbox cannot honour (a usage error, before anything is served)."""
    if rate is not None and not rate > 0:
        raise UsageError(f"--rate-limit must be a positive number of requests per second, not {rate:g}")
    if retry_after is not None:
        if rate is None:
            raise UsageError(
                "--rate-limit-retry-after adds a header to the 429s of --rate-limit: give --rate-limit too"
            )
        if not retry_after >= 0:
            raise UsageError(f"--rate-limit-retry-after must be 0 or more seconds, not {retry_after:g}")


def cmd_sandbox(args: argparse.Namespace) -> int:
    """Serve the sandbox on loopback until interrupted."""
    from .sandbox.serve import run_server

    if args.shape not in SANDBOX_SHAPES:
        raise UsageError(f"unknown --shape {args.shape!r}; choose one of {', '.join(SANDBOX_SHAPES)}")
    _check_rate_limit(args.rate_limit, args.rate_limit_retry_after)
    run_server(
        host=args.host,
        port=args.port,
        orgs=tuple(args.org or ["sandbox-key"]),
        not_onboarded=tuple(args.not_onboarded or ()),
        seed=args.seed,
        days=args.days,
        empty=args.empty,
        speed=args.speed,
        fail_rate=args.fail_rate,
        rate_limit=args.rate_limit,
        rate_limit_retry_after=args.rate_limit_retry_after,
        operations_per_day=args.operations_per_day,
        start=args.start,
        slow_rate=args.slow_rate,
        slow_seconds=args.slow_seconds,
        truncate_rate=args.truncate_rate,
        drop_rate=args.drop_rate,
        malformed_rate=args.malformed_rate,
        shape=args.shape,
    )
    return 0


# ---- parser -----------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog="chainops",
        description="Sync a Channel-Based Chain Operations Service into DuckDB and analyse it. "
        "The key comes from CREC_API_KEY, the service from CREC_BASE_URL, the warehouse from CHAINOPS_WAREHOUSE.",
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="show what the sync decides on stderr (-vv: more detail)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def warehouse_opt(p: argparse.ArgumentParser, default: str | None = None) -> None:
        p.add_argument(
            "--warehouse",
            default=default,
            metavar="PATH",
            help="DuckDB warehouse file (default: $CHAINOPS_WAREHOUSE or data/chainops.duckdb)",
        )

    def output_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--format",
            choices=["table", "csv", "json", "parquet", "html"],
            default=None,
            help="output format (default: from the --out file's extension, .csv .json .parquet .html .txt; "
            "a text table without --out; parquet needs --out)",
        )
        p.add_argument("--out", metavar="PATH", help="write to a file instead of standard output")

    p = sub.add_parser("demo", help="sandbox -> sync -> metrics -> report, offline, no key needed")
    p.add_argument(
        "--warehouse",
        default=str(data_dir() / "demo.duckdb"),
        metavar="PATH",
        help="warehouse file for the demo (recreated each run; default data/demo.duckdb)",
    )
    p.add_argument(
        "--out", default=str(data_dir() / "reports"), metavar="DIR", help="where the report goes (default data/reports)"
    )
    p.add_argument("--seed", type=int, default=7, help="sandbox seed (default 7)")
    p.add_argument("--days", type=int, default=3, help="days of seeded history (default 3)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("sync", help="sync the organisation into the warehouse")
    warehouse_opt(p)
    p.add_argument("--base-url", metavar="URL", help="service base URL ending in /v1 (default: $CREC_BASE_URL)")
    p.add_argument("--channel", action="append", metavar="ID", help="sync only this channel (repeatable)")
    p.add_argument(
        "--full",
        action="store_true",
        help="ignore saved cursors and read everything the warehouse holds again (an event window from its start)",
    )
    p.add_argument(
        "--since",
        metavar="AGE|TIME",
        help="read only the events created since then (30d, 2026-01-01, or 'all'), through event search; later runs "
        "continue the window, an earlier --since fills in the older part",
    )
    p.add_argument(
        "--event-type",
        action="append",
        metavar="TYPE",
        help=f"read only events of this type (repeatable): {', '.join(spec.EVENT_TYPES)}",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument(
        "--workers",
        type=_at_least_one,
        metavar="N",
        help="requests in flight at once (default: 4, or 1 when the service is on this machine)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        dest="sync_verbose",
        action="count",
        default=0,
        help="log retries, holes re-read, refetches and commits to stderr (-vv: more detail)",
    )
    p.set_defaults(func=cmd_sync)

    from .metrics import METRICS

    p = sub.add_parser("metrics", help="print or write one metric table")
    p.add_argument("name", choices=sorted(METRICS), metavar="NAME", help=f"which metric: {', '.join(sorted(METRICS))}")
    warehouse_opt(p)
    p.add_argument("--by", metavar="COLS", help="comma-separated grouping columns, e.g. network,status")
    p.add_argument(
        "--since",
        type=_time_text,
        metavar="T",
        help="start of the period: ISO date/time or an age such as 7d, '7 days', 12h, 90min, yesterday",
    )
    p.add_argument("--until", type=_time_text, metavar="T", help="end of the period (exclusive): ISO time or an age")
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
    p.add_argument(
        "--bucket", type=_duration_text, metavar="SIZE", help="time buckets, e.g. 1h, 6h, 1d (metrics over time)"
    )
    p.add_argument("--top", type=_at_least_one, metavar="N", help="how many failure reasons (failure-reasons)")
    p.add_argument(
        "--now",
        type=_time_text,
        metavar="T",
        help="the time ages are measured to (stuck-operations; default: the newest event in the warehouse)",
    )
    output_options(p)
    spark_options(p)
    p.set_defaults(func=cmd_metrics)

    p = sub.add_parser("report", help="write the report: one HTML file, or the metric tables as CSV/Parquet")
    warehouse_opt(p)
    p.add_argument(
        "--since",
        default="7d",
        type=_time_text,
        metavar="T",
        help="start of the period: ISO time or an age before --until such as 7d, 12h (default 7d)",
    )
    p.add_argument(
        "--until",
        type=_time_text,
        metavar="T",
        help="end of the period (exclusive): ISO time or an age (default: the data's as-of time, the newest event)",
    )
    p.add_argument(
        "--out",
        required=True,
        metavar="PATH",
        help="the HTML file to write, or the directory of the CSV/Parquet tables",
    )
    p.add_argument("--format", choices=["html", "csv", "parquet"], default="html", help="output format (default html)")
    p.add_argument("--title", default="Chain operations", help="the report's title")
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

    p = sub.add_parser("sql", help="run a read-only SQL query against the warehouse")
    p.add_argument("query", help='SQL text, e.g. "select * from operation_lifecycle limit 5"')
    warehouse_opt(p)
    output_options(p)
    p.set_defaults(func=cmd_sql)

    p = sub.add_parser(
        "export", help="write every table and view as Parquet (large ones partitioned by network and day)"
    )
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write (replaced table by table)")
    warehouse_opt(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("sandbox", help="serve the local emulator of the service on loopback")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    p.add_argument(
        "--org",
        action="append",
        metavar="KEY",
        help="an onboarded organisation's API key (repeatable; the first holds the seeded history)",
    )
    p.add_argument(
        "--not-onboarded",
        action="append",
        metavar="KEY",
        help="a known key whose organisation is not onboarded (answers ORGANIZATION_NOT_FOUND)",
    )
    p.add_argument("--seed", type=int, default=7, help="scenario seed (default 7)")
    p.add_argument("--days", type=int, default=3, help="days of backfilled history (default 3)")
    p.add_argument("--empty", action="store_true", help="seed nothing")
    p.add_argument(
        "--speed", type=float, default=1.0, help="simulated seconds per wall second (default 1; 0 freezes the clock)"
    )
    p.add_argument(
        "--fail-rate",
        type=float,
        default=0.0,
        metavar="P",
        help="share of requests answered 500 INTERNAL_ERROR (fault injection)",
    )
    p.add_argument(
        "--rate-limit",
        type=float,
        default=None,
        metavar="RPS",
        help="requests per second per key before answering 429, without Retry-After as the service (fault injection)",
    )
    p.add_argument(
        "--rate-limit-retry-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="add Retry-After: SECONDS to the --rate-limit 429s (the service sends none)",
    )
    p.add_argument(
        "--operations-per-day",
        type=float,
        default=400,
        metavar="N",
        help="scenario size: operations per day of history (default 400; events are about 8x that)",
    )
    p.add_argument(
        "--shape",
        default="default",
        metavar="NAME",
        help=f"how the seeded history is laid out: {', '.join(SANDBOX_SHAPES)} (default: five channels)",
    )
    p.add_argument(
        "--start",
        type=int,
        default=None,
        metavar="UNIX",
        help="simulated 'now' at start, unix seconds (default: the current minute)",
    )
    p.add_argument("--slow-rate", type=float, default=0.0, metavar="P", help="share of answers delayed (fault)")
    p.add_argument("--slow-seconds", type=float, default=5.0, metavar="S", help="delay of a slow answer (default 5)")
    p.add_argument(
        "--truncate-rate",
        type=float,
        default=0.0,
        metavar="P",
        help="share of answers cut short after the headers (fault)",
    )
    p.add_argument(
        "--drop-rate", type=float, default=0.0, metavar="P", help="share of connections closed before answering (fault)"
    )
    p.add_argument(
        "--malformed-rate",
        type=float,
        default=0.0,
        metavar="P",
        help="share of answers that are 200 with invalid JSON (fault)",
    )
    p.set_defaults(func=cmd_sandbox)
    return parser


def _stdout_closed() -> int:
    """Standard output was closed early (``chainops sync | head -1``): what was done is done (a sync has committed);
    exit as a process killed by SIGPIPE would, quietly, and keep Python from complaining again at exit."""
    import os

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code. Errors are cleaned text on standard error, never a traceback: 1 for a
    failure, 2 for usage, 130 for Ctrl-C and 143 for SIGTERM (a sync commits what it has either way)."""
    import duckdb

    parser = build_parser()
    args = parser.parse_args(argv)
    show_on_stderr(args.verbose + getattr(args, "sync_verbose", 0))

    def fail(message: str, code: int) -> int:
        # newlines stay: DuckDB's syntax errors point at the query with a caret on the next line
        print(f"chainops {args.command}: {clean_for_terminal(message, keep_newlines=True)}", file=sys.stderr)
        return code

    try:
        # a sync stops at its next safe point (see toolkit.signals); other commands at once
        stops = sigterm_interrupts(deferred=args.command in ("sync", "demo"))
        with stops if args.command != "sandbox" else contextlib.nullcontext():
            code = int(args.func(args) or 0)
            sys.stdout.flush()  # a closed pipe shows here, inside the handler below
            return code
    except BrokenPipeError:
        return _stdout_closed()
    except UsageError as exc:
        return fail(str(exc), 2)
    except ChainopsError as exc:
        return fail(str(exc), 1)
    except (KeyboardInterrupt, RuntimeError, duckdb.Error) as exc:
        if not is_interruption(exc):
            if isinstance(exc, duckdb.Error):  # the warehouse failed somewhere no clearer message was given
                return fail(f"the warehouse failed: {exc}", 1)
            raise
        if isinstance(exc, Terminated) or sigterm_received():
            return fail(
                "terminated (SIGTERM); what was committed is kept, run the command again to continue", EXIT_TERMINATED
            )
        return fail("interrupted; what was committed is kept, run the command again to continue", EXIT_INTERRUPTED)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        return fail(f"a file could not be read or written{where}: {exc.strerror or exc}", 1)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
