"""The ``chainops`` parser, made of each command module's own subparser, and :func:`main`: exit codes, and errors
as cleaned text on stderr, never a traceback."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import __version__
from ..errors import ChainopsError, UsageError
from ..logs import show_on_stderr
from ..signals import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Terminated,
    is_interruption,
    sigterm_interrupts,
    sigterm_received,
)
from ..streams import encodable_streams
from . import dashboard, demo, export, metrics, report, sandbox, sql, sync, verify
from .output import EXIT_BROKEN_PIPE, clean_for_terminal, fitted

#: The commands in the order ``chainops --help`` lists them.
COMMANDS = (demo, sync, verify, metrics, report, sql, export, dashboard, sandbox)


class _Parser(argparse.ArgumentParser):
    """argparse with a "did you mean" for a mistyped choice (a command, a metric name, a --format)."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            choices = [str(c) for c in action.choices]
            close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {', '.join(choices)}){hint}")
        super()._check_value(action, value)

    def error(self, message: str) -> NoReturn:
        """The usage and the error, wrapped to a terminal's width (argparse wraps only the usage); exit 2."""
        self.print_usage(sys.stderr)
        self.exit(2, on_stderr(f"{self.prog}: error: {message}") + "\n")


def on_stderr(message: str) -> str:
    """``message`` wrapped to the terminal's width when standard error is a terminal; one line each to a file, a
    pipe or a scheduler's mail (where a line is found by grep, not read on a screen)."""
    return fitted(message) if sys.stderr.isatty() else message


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
    for command in COMMANDS:
        command.register(sub)
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
    from ..warehouse.identity import damaged_message, is_damage

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
        # newlines stay: DuckDB's syntax errors point at the query with a caret on the next line (so such a
        # message is not wrapped: the caret would no longer be under what it points at)
        text = f"chainops {args.command}: {clean_for_terminal(message, keep_newlines=True)}"
        print(text if "\n" in text else on_stderr(text), file=sys.stderr)
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
