"""``chainops dashboard``: the dashboard page served on 127.0.0.1 until stopped."""

from __future__ import annotations

import argparse
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any, NoReturn

from ..config import Settings
from ..errors import ChainopsError, UsageError
from .options import quiet_option, warehouse_option


def cmd_dashboard(args: argparse.Namespace) -> NoReturn:
    """Serve the dashboard page on 127.0.0.1 until Ctrl-C or SIGTERM, printing its URL.

    A stop is deferred (see :mod:`toolkit.signals`): one asked while it starts (its imports, the first read) ends it
    as soon as it can, and one asked while it serves ends it at once; either way it says ``dashboard stopped`` and
    exits 0. Every step of a stop has a bound, and the process then ends without Python's finalisation, which a
    thread still drawing a figure could abort or hang; so it never returns."""
    import os

    from ..signals import check_stop, pause

    try:
        from ..presentation.dashboard_page import allowed_host, serving

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
    if not args.quiet:
        print("dashboard stopped", flush=True)
    with suppress(OSError):  # a closed pipe has nothing more to take
        sys.stdout.flush()
        sys.stderr.flush()
    # Nothing is left to do (the dashboard registers no exit work), and Python's finalisation is the one step of a
    # stop with no bound: a thread still inside DuckDB or matplotlib as it runs aborts it (SIGABRT) or hangs it.
    os._exit(0)


def register(sub: Any) -> None:
    """Add ``chainops dashboard`` and its options to ``sub``."""
    p = sub.add_parser("dashboard", help="serve the dashboard page on 127.0.0.1 and print its URL")
    warehouse_option(p)
    p.add_argument("--port", type=int, default=8050, help="port on 127.0.0.1 (default 8050; 0 picks a free one)")
    p.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="also answer requests addressed to NAME (a name of your own for 127.0.0.1, or a proxy's); it still "
        "listens on 127.0.0.1 only, and answers 403 to any other name (repeat for several)",
    )
    quiet_option(p, "print only the page's URL (not that it stopped)")
    p.set_defaults(func=cmd_dashboard)
