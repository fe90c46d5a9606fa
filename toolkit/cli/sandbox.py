"""``chainops sandbox``: the local emulator of the service, served on loopback (the only command that loads it)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from .options import share

#: The sandbox's scenario shapes (toolkit.sandbox.scenarios.SHAPES; named here so that building the parser never
#: imports the sandbox; a test keeps the two equal).
SANDBOX_SHAPES = ("default", "one-channel", "many-channels", "many-transactions", "long-lived", "query-heavy", "messy")


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
    from ..sandbox.serve import run_server

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


def register(sub: Any) -> None:
    """Add ``chainops sandbox`` and its options to ``sub``."""
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
        type=share,
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
