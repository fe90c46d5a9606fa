"""``chainops demo``: sandbox -> sync -> metrics -> report, offline, and the next commands to try."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import DEMO_WAREHOUSE_NAME, Settings, data_dir
from ..errors import UsageError
from .options import quiet_option, share
from .output import command_lines, cut_rows, default_columns, fitted, hidden_rows, row_limit, table_text
from .verify import verify_and_print

DEMO_KEY = "sandbox-demo-key"


#: The simulated 'now' the demo's history ends at, unless --start says otherwise: the same seed then gives the same
#: warehouse on every run (2026-01-05 00:00 UTC, a Monday).
DEMO_START = 1767571200


def cmd_demo(args: argparse.Namespace) -> int:
    """Sandbox -> sync -> metrics -> report, offline; ends with the next commands to try on the demo's warehouse.
    The same ``--seed``, ``--days`` and ``--start`` make the same warehouse."""
    from .. import metrics
    from ..loader import sync
    from ..presentation import report
    from ..sandbox import Sandbox

    say = (lambda *_a, **_k: None) if args.quiet else print
    warehouse = Path(args.warehouse)
    _replace_demo_warehouse(warehouse)
    say(fitted(f"Starting the sandbox (seed {args.seed}, {args.days} days of history) ..."), flush=True)
    sandbox = Sandbox(orgs=(DEMO_KEY,), seed=args.seed, days=args.days, start=args.start, forge_share=args.forge_share)
    with sandbox.serve(host="127.0.0.1", port=0) as server:
        say(fitted(f"Syncing {server.base_url} into {warehouse} ..."), flush=True)
        settings = Settings.load(base_url=server.base_url, api_key=DEMO_KEY, warehouse=warehouse, environ={})
        result = sync(settings, quiet=args.quiet)
    if args.quiet and result.outcome != "ok":  # as `sync --quiet`: silent on success only
        print(fitted(result.summary()), file=sys.stderr)
    say(fitted(result.summary()))
    don = sandbox.signer_info(DEMO_KEY)
    _record_verifier(warehouse, org_id=don["org_id"], signers=",".join(don["signers"]))
    if args.quiet:  # the forged share is the demo's own doing, not a failure to report
        from ..verify import resolve_policy
        from ..verify.run import verify_warehouse

        verify_warehouse(warehouse, resolve_policy(org_id=don["org_id"], signers=",".join(don["signers"]), env={}))
    else:
        print(
            fitted(
                f"\nVerifying DON proofs against the sandbox's signers (it forged {args.forge_share:.1%} of them) ..."
            )
        )
        verify_and_print(warehouse, org_id=don["org_id"], signers=",".join(don["signers"]), env={})
        print("\nTime in each status, per network:")
        again = f"chainops metrics status-latency --warehouse {shlex.quote(str(warehouse))}"  # the demo takes neither
        latency, hidden = hidden_rows(metrics.status_latency(str(warehouse)), "status-latency", wide=f"{again} --wide")
        columns = default_columns(latency, "status-latency")
        more = f"{again} --max-rows N shows more"
        latency, cut = cut_rows(latency, row_limit("table", None, None), more)
        sys.stdout.write(table_text(latency, metric="status-latency", columns=columns, notes=[*hidden, *cut]))
    out = report.write_html_report(str(warehouse), Path(args.out) / "demo.html", title="Chain operations (demo)")
    say("\n" + fitted(f"Report: {out}"))
    say("\nNext, on the demo's warehouse:")
    for command in demo_next_commands(warehouse, start=args.start, days=args.days):
        say(command_lines(command))
    return 0


def demo_next_commands(warehouse: Path, *, start: int, days: float) -> list[str]:
    """The commands the demo suggests next, each as a user would type it (a test runs them as printed): the report
    covers the demo's history, which ends at ``start`` (the sandbox's simulated 'now')."""
    import os
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
        f'{program} sql "select status, count(*) as n from operations group by 1 order by n desc" {where}',
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
    from ..times import parse_time

    try:
        return int(parse_time(text).timestamp())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _replace_demo_warehouse(warehouse: Path) -> None:
    """Replace the previous demo's warehouse (the demo's mirrors this run's sandbox only) with a new one marked as
    the demo's, holding the writer lock throughout: while a sync (or another writer) holds it, SyncLockedError names
    the holder and nothing is touched. Refuse, touching nothing, when ``warehouse`` is anything else: a README,
    another program's file, a warehouse synced from the service."""
    from ..warehouse import sync_lock
    from ..warehouse.identity import is_demo_warehouse

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


def _record_verifier(warehouse: Path, *, org_id: str, signers: str) -> None:
    """Record in the demo's warehouse what its proofs are checked against (the sandbox's organisation id and DON
    signers), so that ``chainops verify --warehouse`` on it needs no flag the user was never told."""
    from ..warehouse import Warehouse
    from ..warehouse.identity import DEMO_VERIFIER_KEYS, MARKER_TABLE

    with Warehouse(warehouse) as wh:
        for key, value in ((DEMO_VERIFIER_KEYS["org_id"], org_id), (DEMO_VERIFIER_KEYS["signers"], signers)):
            wh.con.execute(f"INSERT OR REPLACE INTO {MARKER_TABLE} VALUES (?, ?)", [key, value])


def _mark_demo(warehouse: Path) -> None:
    """Mark ``warehouse`` (made if missing) as the demo's, which the next demo may replace."""
    from ..warehouse import Warehouse
    from ..warehouse.identity import DEMO_MARK, MARKER_TABLE

    with Warehouse(warehouse) as wh:
        wh.con.execute(f"INSERT OR REPLACE INTO {MARKER_TABLE} VALUES (?, ?)", list(DEMO_MARK))


def register(sub: Any) -> None:
    """Add ``chainops demo`` and its options to ``sub``."""
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
        type=share,
        default=0.01,
        metavar="P",
        help="share of DON proofs the sandbox forges, for verification to catch (default 0.01)",
    )
    quiet_option(p, "print nothing on success")
    p.set_defaults(func=cmd_demo)
