"""``chainops verify``: the DON proofs of the warehouse's proof-bearing events; exit 3 when any is invalid."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import Any

from .. import spec
from ..config import Settings
from .options import at_least_one, quiet_option, warehouse_option
from .output import EXIT_THRESHOLD, clean_for_terminal, command_lines, fitted

#: The query that lists every invalid proof, as the verify command suggests it.
INVALID_QUERY = "select * from event_verifications where verdict = 'invalid'"


def cmd_verify(args: argparse.Namespace) -> int:
    """Verify the DON proofs of the warehouse's proof-bearing events; exit 3 when any is invalid. Told no
    organisation or signers (by options or the environment), a demo's warehouse is checked against what the demo
    recorded in it: the sandbox's organisation and signers."""
    warehouse = Settings.load(warehouse=args.warehouse).warehouse
    policy = {"org_id": args.org_id, "workflow_owner": args.workflow_owner, "signers": args.signers}
    from ..verify.signers import ENV_ORG_ID, ENV_SIGNERS, ENV_WORKFLOW_OWNER

    told = any(policy.values()) or any(os.environ.get(n) for n in (ENV_ORG_ID, ENV_WORKFLOW_OWNER, ENV_SIGNERS))
    if not told:
        from ..warehouse.identity import demo_verifier

        # only a demo's own warehouse (its mark, one sync run): the recorded signers are the file's word, so any
        # other file, however it came to carry them, is checked against what the user or the SDK says
        recorded = demo_verifier(warehouse)
        if recorded:
            policy.update(recorded)
            # said even with --quiet (on stderr then): these are the sandbox's signers, not the service's
            print(
                fitted("Using the sandbox's organisation and signers, as recorded by chainops demo"),
                file=sys.stderr if args.quiet else sys.stdout,
            )
    return verify_and_print(
        warehouse,
        min_signatures=args.min_signatures,
        check_workflow=args.check_workflow,
        all_events=args.all,
        quiet=args.quiet,
        **policy,
    )


def verify_and_print(warehouse: Path, *, all_events: bool = False, quiet: bool = False, **policy: Any) -> int:
    """Verify (options, else the environment), print the standing and the invalid events; 3 when any is invalid.
    ``quiet`` prints nothing when every proof is valid (the invalid ones go to stderr, so cron mails them)."""
    from ..verify import resolve_policy
    from ..verify.run import verify_warehouse

    result = verify_warehouse(warehouse, resolve_policy(**policy), all_events=all_events)
    if quiet and not result.invalid:
        return 0
    print_ = functools.partial(print, file=sys.stderr) if quiet else print
    print_(fitted(clean_for_terminal(result.summary())))
    for event_id, reason in result.invalid_examples:
        print_(fitted(f"invalid  {clean_for_terminal(event_id)}  {clean_for_terminal(reason)}", indent="  "))
    if result.invalid > len(result.invalid_examples):
        print_(f"  ... {result.invalid - len(result.invalid_examples)} more:")
        print_(command_lines(f'chainops sql "{INVALID_QUERY}"', indent="    "))
    return EXIT_THRESHOLD if result.invalid else 0


def register(sub: Any) -> None:
    """Add ``chainops verify`` and its options to ``sub``."""
    p = sub.add_parser("verify", help="verify the DON proofs of every proof-bearing event; exit 3 if any is invalid")
    warehouse_option(p)
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
        type=at_least_one,
        metavar="N",
        help=f"distinct trusted signers a proof needs (default {spec.PROOF_MIN_SIGNATURES})",
    )
    p.add_argument("--all", action="store_true", help="verify every proof-bearing event again, not only new ones")
    p.add_argument(
        "--check-workflow",
        action="store_true",
        help="also require each report's workflow execution id to be its event's (stricter than the SDK)",
    )
    quiet_option(p, "print nothing when every proof is valid (invalid ones are still listed, on stderr)")
    p.set_defaults(func=cmd_verify)
