"""``chainops sync``: the organisation into the warehouse (then ``--verify``: its DON proofs)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import spec
from ..config import Settings, redact
from .options import at_least_one, quiet_option, warehouse_option
from .output import clean_for_terminal, fitted
from .verify import verify_and_print


def cmd_sync(args: argparse.Namespace) -> int:
    """Sync the organisation from CREC_BASE_URL into the warehouse."""
    from ..loader import sync
    from ..loader.event_window import requested

    requested(args.since, args.event_type)  # a bad --since or --event-type is a usage error before anything else
    if args.verify:  # the verification settings are checked before anything is read
        from ..verify import resolve_policy

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
    summary = fitted(clean_for_terminal(redact(result.summary(), settings.api_key), keep_newlines=True))
    if not args.quiet:
        print(summary)
    elif result.outcome != "ok":  # quiet prints nothing on success only: a partial run is told (cron mails it)
        print(summary, file=sys.stderr)
    if args.verify:
        return verify_and_print(settings.warehouse, quiet=args.quiet)
    return 0


def register(sub: Any) -> None:
    """Add ``chainops sync`` and its options to ``sub``."""
    p = sub.add_parser("sync", help="sync the organisation into the warehouse")
    warehouse_option(p)
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
    quiet_option(
        p, "print nothing when the run succeeds (no progress bars, no summary; a partial run's summary on stderr)"
    )
    p.add_argument(
        "--workers",
        type=at_least_one,
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
