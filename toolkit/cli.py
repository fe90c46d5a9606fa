"""The ``chainops`` command line: demo, sync, metrics, report, sql, export, sandbox, verify.

Exit codes: 0 done, 1 failed (the message says what and what to do), 2 usage, 3 a ``report --fail-on``
threshold was breached (the report is still written) or a DON proof is invalid (``verify``, ``sync --verify``).
The API key comes only from ``CREC_API_KEY``: flags end up in shell history and process lists.

pandas, DuckDB, Arrow and matplotlib are imported by the commands that use them, never at import or while parsing:
``chainops --help``, ``--version`` and usage errors answer at once (``benchmarks/cli_startup_bench.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import inspect
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__, spec
from .atomic import atomic_file, output_error
from .config import DEMO_WAREHOUSE_NAME, Settings, data_dir, redact
from .errors import ChainopsError, UsageError
from .logs import show_on_stderr
from .registry import METRIC_NAMES  # the metric names; the registry imports no pandas or DuckDB
from .signals import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Terminated,
    is_interruption,
    sigterm_interrupts,
    sigterm_received,
)
from .streams import encodable_streams

if TYPE_CHECKING:
    import pandas as pd

DEMO_KEY = "sandbox-demo-key"
#: The sandbox's scenario shapes (toolkit.sandbox.scenarios.SHAPES; named here so that building the parser never
#: imports the sandbox; a test keeps the two equal).
SANDBOX_SHAPES = ("default", "one-channel", "many-channels", "many-transactions", "long-lived", "query-heavy", "messy")
#: The simulated 'now' the demo's history ends at, unless --start says otherwise: the same seed then gives the same
#: warehouse on every run (2026-01-05 00:00 UTC, a Monday).
DEMO_START = 1767571200


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
    from .presentation.safe import clean_for_terminal as clean

    return clean(text, keep_newlines=keep_newlines)


def _table_text(
    df: pd.DataFrame,
    *,
    metric: str | bool,
    columns: Sequence[str] | None = None,
    wide: bool = False,
    notes: Sequence[str] = (),
) -> str:
    """A text table for people that fits the terminal (:mod:`toolkit.presentation.tables`: one way to show each value,
    text left-aligned and numbers right-aligned, columns that do not fit named below; ``wide``: every column)."""
    from .presentation.tables import present, to_terminal

    shown = present(df, metric=metric, columns=columns)
    shown.notes.extend(notes)
    return to_terminal(shown, wide=wide)


def _print_table(df: pd.DataFrame, *, metric: str | bool = True) -> None:
    sys.stdout.write(_table_text(df, metric=metric, columns=_default_columns(df, metric)))


def _default_columns(df: pd.DataFrame, metric: str | bool, by: Sequence[str] = ()) -> list[str] | None:
    """The columns a terminal shows first: the grouping columns (a channel's name beside its id), then the
    metric's declared defaults (:mod:`toolkit.registry`); None (all) for a result the registry does not know."""
    from .registry import BY_NAME

    if not isinstance(metric, str) or metric not in BY_NAME:
        return None
    lead = [*by, *(["channel"] if "channel_id" in by else [])]
    wanted = [c for c in dict.fromkeys([*lead, *BY_NAME[metric].default]) if c in df.columns]
    return wanted or None


def _hidden_rows(df: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, list[str]]:
    """``df`` without the rows that cannot carry a value by definition
    (:func:`toolkit.presentation.tables.hide_rows`)."""
    from .presentation.tables import hide_rows

    return hide_rows(df, metric)


def _period_line(df: pd.DataFrame, metric: str) -> str:
    """What a metric's table is about: its period (and how the period selects rows) and the time it is as of."""
    import pandas as pd

    from .presentation.tables import format_time
    from .registry import BY_NAME

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


def _write_frame(
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
    from .presentation.files import csv_text, json_text, write_parquet

    if fmt == "table":
        text = _table_text(df, metric=metric, columns=columns, wide=wide or bool(out), notes=notes)
    elif fmt == "html":
        from .presentation.tables import TABLE_CSS, present, to_html

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


# ---- commands ---------------------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    """Sandbox -> sync -> metrics -> report, offline; ends with the next commands to try on the demo's warehouse.
    The same ``--seed``, ``--days`` and ``--start`` make the same warehouse."""
    from . import metrics
    from .loader import sync
    from .presentation import report
    from .sandbox import Sandbox

    say = (lambda *_a, **_k: None) if args.quiet else print
    warehouse = Path(args.warehouse)
    _replace_demo_warehouse(warehouse)
    say(f"Starting the sandbox (seed {args.seed}, {args.days} days of history) ...", flush=True)
    sandbox = Sandbox(orgs=(DEMO_KEY,), seed=args.seed, days=args.days, start=args.start, forge_share=args.forge_share)
    with sandbox.serve(host="127.0.0.1", port=0) as server:
        say(f"Syncing {server.base_url} into {warehouse} ...", flush=True)
        settings = Settings.load(base_url=server.base_url, api_key=DEMO_KEY, warehouse=warehouse, environ={})
        result = sync(settings, quiet=args.quiet)
    if args.quiet and result.outcome != "ok":  # as `sync --quiet`: silent on success only
        print(result.summary(), file=sys.stderr)
    say(result.summary())
    don = sandbox.signer_info(DEMO_KEY)
    if args.quiet:  # the forged share is the demo's own doing, not a failure to report
        from .verify import resolve_policy
        from .verify.run import verify_warehouse

        verify_warehouse(warehouse, resolve_policy(org_id=don["org_id"], signers=",".join(don["signers"]), env={}))
    else:
        print(f"\nVerifying DON proofs against the sandbox's signers (it forged {args.forge_share:.1%} of them) ...")
        _verify_and_print(warehouse, org_id=don["org_id"], signers=",".join(don["signers"]), env={})
        print("\nTime in each status, per network:")
        latency, hidden = _hidden_rows(metrics.status_latency(str(warehouse)), "status-latency")
        hidden = [n.replace("(--wide", "(chainops metrics status-latency --wide") for n in hidden]
        columns = _default_columns(latency, "status-latency")
        sys.stdout.write(_table_text(latency, metric="status-latency", columns=columns, notes=hidden))
    out = report.write_html_report(str(warehouse), Path(args.out) / "demo.html", title="Chain operations (demo)")
    say(f"\nReport: {out}")
    say("\nNext, on the demo's warehouse:")
    for command in demo_next_commands(warehouse, start=args.start, days=args.days):
        say(f"  {command}")
    return 0


def demo_next_commands(warehouse: Path, *, start: int, days: float) -> list[str]:
    """The commands the demo suggests next, each as a user would type it (a test runs them as printed): the report
    covers the demo's history, which ends at ``start`` (the sandbox's simulated 'now')."""
    import os
    import shlex
    import time

    def when(unix: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(unix))

    def shown(path: Path) -> str:  # data/demo.duckdb rather than the whole path, when it is under this folder
        here = Path.cwd().resolve()
        full = path.absolute().parent.resolve() / path.name  # not the file itself: a venv's python is a symlink
        return shlex.quote(os.path.relpath(full, here) if full.is_relative_to(here) else str(full))

    where = f"--warehouse {shown(warehouse)}"
    out = shown(warehouse.parent / "reports" / "period.html")
    period = f"--since {when(start - days * 86400)} --until {when(start + 60)}"
    program = _program(shown)
    return [
        f"{program} metrics failure-rates --by network {where}",
        f'{program} sql "select status, count(*) as n from operations group by status order by n desc" {where}',
        f"{program} report {period} {where} --out {out}",
    ]


def _program(shown: Callable[[Path], str]) -> str:
    """How to type this ``chainops`` here: ``chainops`` when the shell finds this one, else its path (after
    ``make demo`` it is ``.venv/bin/chainops``, not on the PATH), else this Python with ``-m toolkit``."""
    import shutil

    script = Path(sys.executable).parent / "chainops"
    found = shutil.which("chainops")
    if found is not None and Path(found).absolute() == script.absolute():
        return "chainops"
    if script.is_file():
        return shown(script)
    return f"{shown(Path(sys.executable))} -m toolkit"


def _unix_time(text: str) -> int:
    """argparse type of ``demo --start``: unix seconds, or an ISO time (UTC unless it says otherwise)."""
    if text.strip().isdigit():
        return int(text)
    from .times import parse_time

    try:
        return int(parse_time(text).timestamp())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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


def _share(text: str) -> float:
    """argparse type of a share between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text!r}")
    return value


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
    if args.verify:  # the verification settings are checked before anything is read
        from .verify import resolve_policy

        resolve_policy()
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
    summary = clean_for_terminal(redact(result.summary(), settings.api_key), keep_newlines=True)
    if not args.quiet:
        print(summary)
    elif result.outcome != "ok":  # quiet prints nothing on success only: a partial run is told (cron mails it)
        print(summary, file=sys.stderr)
    if args.verify:
        return _verify_and_print(settings.warehouse, quiet=args.quiet)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Verify the DON proofs of the warehouse's proof-bearing events; exit 3 when any is invalid."""
    warehouse = Settings.load(warehouse=args.warehouse).warehouse
    return _verify_and_print(
        warehouse,
        org_id=args.org_id,
        workflow_owner=args.workflow_owner,
        signers=args.signers,
        min_signatures=args.min_signatures,
        all_events=args.all,
    )


def _verify_and_print(warehouse: Path, *, all_events: bool = False, quiet: bool = False, **policy: Any) -> int:
    """Verify (options, else the environment), print the standing and the invalid events; 3 when any is invalid.
    ``quiet`` prints nothing when every proof is valid (the invalid ones go to stderr, so cron mails them)."""
    from .verify import resolve_policy
    from .verify.run import verify_warehouse

    result = verify_warehouse(warehouse, resolve_policy(**policy), all_events=all_events)
    if quiet and not result.invalid:
        return 0
    print_ = functools.partial(print, file=sys.stderr) if quiet else print
    print_(clean_for_terminal(result.summary()))
    for event_id, reason in result.invalid_examples:
        print_(f"  invalid  {clean_for_terminal(event_id)}  {clean_for_terminal(reason)}")
    if result.invalid > len(result.invalid_examples):
        print_(
            f"  ... {result.invalid - len(result.invalid_examples)} more: chainops sql "
            "\"select event_id, reason from event_verifications where verdict = 'invalid'\""
        )
    return EXIT_THRESHOLD if result.invalid else 0


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
        _say_why_empty(args, source)
    if fmt == "table" and not args.out:
        _print_metric_table(df, args)
        return 0
    columns = _chosen_columns(df, args.columns)
    _write_frame(df, fmt, args.out, metric=args.name, columns=columns if fmt in ("table", "html") else None)
    if columns is not None and fmt not in ("table", "html"):
        print("chainops metrics: --columns picks what a table shows; files keep every column", file=sys.stderr)
    return 0


def _chosen_columns(df: pd.DataFrame, text: str | None) -> list[str] | None:
    """The columns of ``--columns a,b,c`` (a usage error naming the metric's columns for one it does not have)."""
    if not text:
        return None
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in df.columns]
    if unknown:
        raise UsageError(
            f"--columns: no column {', '.join(map(repr, unknown))}; the columns are {', '.join(df.columns)}"
        )
    return chosen


def _print_metric_table(df: pd.DataFrame, args: argparse.Namespace) -> None:
    """A metric on the terminal: its period and as-of line, then the table that fits (the default columns and
    rows, ``--columns``, or everything with ``--wide``)."""
    notes: list[str] = []
    columns = _chosen_columns(df, args.columns)
    if not args.wide and columns is None:
        by = [c.strip() for c in (args.by or "").split(",") if c.strip()]
        columns = _default_columns(df, args.name, by)
        df, notes = _hidden_rows(df, args.name)
    from .presentation.tables import wrap

    print(wrap(_period_line(df, args.name)))
    sys.stdout.write(_table_text(df, metric=args.name, columns=columns, wide=args.wide, notes=notes))


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


def _say_why_empty(args: argparse.Namespace, source: object) -> None:
    """Say on stderr why a metric has no rows: the filters, what an empty answer of this metric means, or an
    empty warehouse."""
    from .known_values import describe_empty

    filters = {k: getattr(args, k) for k in ("network", "channel", "status", "since", "until")}
    held = None
    if isinstance(source, str):
        from .warehouse import Warehouse

        with Warehouse(source, read_only=True) as wh:
            held = int(
                wh.con.execute(
                    "SELECT (SELECT count(*) FROM operations) + (SELECT count(*) FROM queries) "
                    "+ (SELECT count(*) FROM events)"
                ).fetchone()[0]
            )
    note = describe_empty(filters, metric=args.name, held=held)
    _say_wrapped(f"chainops metrics: {clean_for_terminal(note)}")
    if isinstance(source, str) and held:
        from .known_values import older_than_period

        older = older_than_period(source, args.since, args.until)
        if older:
            _say_wrapped(f"chainops metrics: {clean_for_terminal(older)}")


def _say_wrapped(message: str) -> None:
    """``message`` on stderr, wrapped to the terminal's width as the tables above it are (never a word split)."""
    import textwrap

    from .presentation.tables import terminal_width

    print(
        textwrap.fill(message, width=terminal_width(), break_long_words=False, break_on_hyphens=False), file=sys.stderr
    )


def _threshold(text: str) -> object:
    """argparse type of ``--fail-on``: a usage error (exit 2) for an expression it cannot parse."""
    from .presentation.report import parse_threshold

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
    from .presentation import report

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
    limit = _sql_row_limit(args, fmt)
    notes = []
    if limit is not None and len(df) > limit:
        notes.append(
            f"{len(df):,} rows ({limit:,} shown); --max-rows N shows more, --out FILE or a pipe gets every row"
        )
        df = df.head(limit)
    _write_frame(df, fmt, args.out, metric=False, notes=notes)
    return 0


#: Rows of a SQL result shown on a terminal whose height is unknown (DuckDB's CLI shows 40).
SQL_SCREEN_ROWS = 40


def _sql_row_limit(args: argparse.Namespace, fmt: str) -> int | None:
    """How many rows ``chainops sql`` prints: ``--max-rows`` when given; a screenful when the table goes to a
    terminal; every row to a file or a pipe."""
    if fmt != "table" or args.out:
        return None
    if args.max_rows is not None:
        return args.max_rows
    if not sys.stdout.isatty():
        return None
    import shutil

    lines = shutil.get_terminal_size(fallback=(80, SQL_SCREEN_ROWS + 8)).lines
    return max(lines - 8, 10)


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


def cmd_dashboard(args: argparse.Namespace) -> int:
    """Serve the dashboard page on 127.0.0.1 until Ctrl-C or SIGTERM, printing its URL.

    A stop is deferred (see :mod:`toolkit.signals`): one asked while it starts (its imports, the first read) ends it
    as soon as it can, and one asked while it serves ends it at once; either way it says ``dashboard stopped`` and
    exits 0. Should a thread of its own outlive the stop (a figure still being drawn after ``STOP_WAIT``), the
    process ends without Python's finalisation, which such a thread could abort."""
    import os

    from .signals import check_stop, pause

    try:
        from .presentation.dashboard_page import allowed_host, serving

        try:
            hosts = [allowed_host(name) for name in args.allow_host or ()]
        except ValueError as exc:
            raise UsageError(f"--allow-host: {exc}") from None
        settings = Settings.load(warehouse=args.warehouse)
        if not Path(settings.warehouse).exists():
            raise ChainopsError(
                f"no warehouse at {settings.warehouse}; run `chainops sync` (or `chainops demo`) first, or give "
                "--warehouse"
            )
        check_stop()  # asked during the imports
        with serving(settings.warehouse, args.port, allow_hosts=hosts) as url:
            print(f"dashboard on {url} (Ctrl-C stops it)", flush=True)
            while True:
                pause(3600)  # ends (raising) the moment a stop is asked
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (Terminated): stopping it is how it ends, nothing to keep
        pass
    print("dashboard stopped", flush=True)
    threads_left = getattr(
        sys.modules.get("toolkit.presentation.dashboard_page"), "threads_left", None
    )  # a stop cut its import
    if threads_left is not None and threads_left():
        sys.stderr.flush()
        os._exit(0)  # a thread still drawing would abort Python's finalisation (SIGABRT): end without it
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
        forge_share=args.forge_share,
    )
    return 0


# ---- parser -----------------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with a "did you mean" for a mistyped choice (a command, a metric name, a --format)."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            choices = [str(c) for c in action.choices]
            close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {', '.join(choices)}){hint}")
        super()._check_value(action, value)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = _Parser(
        prog="chainops",
        description="Sync a Channel-Based Chain Operations Service into DuckDB and analyse it. "
        "The key comes from CREC_API_KEY, the service from CREC_BASE_URL, the warehouse from CHAINOPS_WAREHOUSE.",
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="show what the sync decides on stderr (-vv: more detail)"
    )
    parser.add_argument("--version", action="version", version=f"chainops {__version__}", help="print the version")
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

    def table_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--columns",
            metavar="A,B,C",
            help="the columns a table shows, comma-separated (default: the metric's main columns; files keep all)",
        )
        p.add_argument("--wide", action="store_true", help="show every column and row, however wide the table")

    p = sub.add_parser("demo", help="sandbox -> sync -> metrics -> report, offline, no key needed")
    p.add_argument(
        "--warehouse",
        default=str(data_dir() / DEMO_WAREHOUSE_NAME),
        metavar="PATH",
        help="warehouse file for the demo (recreated each run; default data/demo.duckdb)",
    )
    p.add_argument(
        "--out", default=str(data_dir() / "reports"), metavar="DIR", help="where the report goes (default data/reports)"
    )
    p.add_argument("--seed", type=int, default=7, help="sandbox seed (default 7)")
    p.add_argument("--days", type=int, default=3, help="days of seeded history (default 3)")
    p.add_argument(
        "--start",
        type=_unix_time,
        default=DEMO_START,
        metavar="TIME",
        help="when the seeded history ends: ISO time or unix seconds (default 2026-01-05T00:00Z, so that the same "
        "seed gives the same warehouse)",
    )
    p.add_argument(
        "--forge-share",
        type=_share,
        default=0.01,
        metavar="P",
        help="share of DON proofs the sandbox forges, for verification to catch (default 0.01)",
    )
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
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
    p.add_argument(
        "--quiet",
        action="store_true",
        help="print nothing when the run succeeds (no progress bars, no summary; a partial run's summary on stderr)",
    )
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
    p.add_argument(
        "--verify",
        action="store_true",
        help="then verify the DON proofs not verified yet (as chainops verify, settings from CREC_ORG_ID or "
        "CREC_WORKFLOW_OWNER and CREC_DON_SIGNERS); exit 3 if any is invalid",
    )
    p.set_defaults(func=cmd_sync)

    p = sub.add_parser("verify", help="verify the DON proofs of every proof-bearing event; exit 3 if any is invalid")
    warehouse_opt(p)
    who = p.add_mutually_exclusive_group()
    who.add_argument(
        "--org-id", metavar="ORG", help="the organisation id the workflow owner derives from ($CREC_ORG_ID)"
    )
    who.add_argument(
        "--workflow-owner", metavar="0xADDR", help="the workflow owner reports must carry ($CREC_WORKFLOW_OWNER)"
    )
    p.add_argument(
        "--signers",
        metavar="ADDR,...|FILE",
        help="trusted DON signer addresses, comma-separated or a file of them ($CREC_DON_SIGNERS; default: the "
        "production set the official SDK publishes)",
    )
    p.add_argument(
        "--min-signatures",
        type=_at_least_one,
        metavar="N",
        help=f"distinct trusted signers a proof needs (default {spec.PROOF_MIN_SIGNATURES})",
    )
    p.add_argument("--all", action="store_true", help="verify every proof-bearing event again, not only new ones")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("metrics", help="print or write one metric table")
    p.add_argument("name", choices=METRIC_NAMES, metavar="NAME", help=f"which metric: {', '.join(METRIC_NAMES)}")
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
    table_options(p)
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
        "--quiet", action="store_true", help="print nothing on success (a breached --fail-on is still told on stderr)"
    )
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
    p.add_argument(
        "--max-rows",
        type=_at_least_one,
        metavar="N",
        help="rows a printed table shows (default: a screenful on a terminal, every row to a pipe; files get all)",
    )
    p.set_defaults(func=cmd_sql)

    p = sub.add_parser(
        "export", help="write every table and view as Parquet (large ones partitioned by network and day)"
    )
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write (replaced table by table)")
    warehouse_opt(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("dashboard", help="serve the dashboard page on 127.0.0.1 and print its URL")
    warehouse_opt(p)
    p.add_argument("--port", type=int, default=8050, help="port on 127.0.0.1 (default 8050; 0 picks a free one)")
    p.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="also answer requests addressed to NAME (a name of your own for 127.0.0.1, or a proxy's); it still "
        "listens on 127.0.0.1 only, and answers 403 to any other name (repeat for several)",
    )
    p.set_defaults(func=cmd_dashboard)

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
        "--forge-share",
        type=_share,
        default=0.0,
        metavar="P",
        help="share of DON proofs forged (wrong signer, wrong owner, tampered event, too few signatures; default 0)",
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


def _duckdb_errors() -> tuple[type[BaseException], ...]:
    """DuckDB's error class when a command loaded DuckDB (an error of DuckDB's cannot arise otherwise)."""
    duckdb = sys.modules.get("duckdb")
    return (duckdb.Error,) if duckdb is not None else ()


def _damage_said(args: argparse.Namespace, exc: BaseException) -> str | None:
    """The damaged-warehouse message (what is wrong, how to recover) when ``exc`` reports a block failing DuckDB's
    checksum, as any command reading a damaged part of the file meets it; else None."""
    from .warehouse.identity import damaged_message, is_damage

    text = str(exc)
    if not is_damage(text) or text.startswith("The warehouse "):  # said already, by the warehouse's own check
        return None
    where = getattr(args, "warehouse", None) or getattr(args, "source", None) or "the warehouse"
    return damaged_message(where, text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code. Errors are cleaned text on standard error, never a traceback: 1 for a
    failure, 2 for usage, 130 for Ctrl-C and 143 for SIGTERM (a sync commits what it has either way)."""
    encodable_streams()  # a non-UTF-8 terminal gets escapes, not a UnicodeEncodeError after the work is done
    parser = build_parser()
    args = parser.parse_args(argv)
    show_on_stderr(args.verbose + getattr(args, "sync_verbose", 0))

    def fail(message: str, code: int) -> int:
        # newlines stay: DuckDB's syntax errors point at the query with a caret on the next line
        print(f"chainops {args.command}: {clean_for_terminal(message, keep_newlines=True)}", file=sys.stderr)
        return code

    try:
        # a sync stops at its next safe point (see toolkit.signals), the dashboard as soon as it can; others at once
        stops = sigterm_interrupts(deferred=args.command in ("sync", "demo", "dashboard"))
        with stops if args.command != "sandbox" else contextlib.nullcontext():
            code = int(args.func(args) or 0)
            sys.stdout.flush()  # a closed pipe shows here, inside the handler below
            return code
    except BrokenPipeError:
        return _stdout_closed()
    except UsageError as exc:
        return fail(str(exc), 2)
    except ChainopsError as exc:
        return fail(_damage_said(args, exc) or str(exc), 1)
    except (KeyboardInterrupt, RuntimeError, *_duckdb_errors()) as exc:
        if not is_interruption(exc):
            if isinstance(exc, _duckdb_errors()):  # the warehouse failed somewhere no clearer message was given
                return fail(_damage_said(args, exc) or f"the warehouse failed: {exc}", 1)
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
