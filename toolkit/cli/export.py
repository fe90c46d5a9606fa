"""``chainops export``: every table and view as Parquet, for other engines."""

from __future__ import annotations

import argparse
from typing import Any

from ..atomic import output_error
from ..config import Settings
from .options import quiet_option, warehouse_option


def cmd_export(args: argparse.Namespace) -> int:
    """Write every table and view as Parquet, one directory each (the large ones partitioned by network and day)."""
    from ..export import export_parquet

    settings = Settings.load(warehouse=args.warehouse)
    try:
        written = export_parquet(str(settings.warehouse), args.out)
    except OSError as exc:
        raise output_error(args.out, exc, "the export") from None
    if args.quiet:
        return 0
    for name, files in written.items():
        print(f"{name}: {files} file{'s' if files != 1 else ''}")
    print(f"Exported to {args.out}")
    return 0


def register(sub: Any) -> None:
    """Add ``chainops export`` and its options to ``sub``."""
    p = sub.add_parser(
        "export", help="write every table and view as Parquet (large ones partitioned by network and day)"
    )
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write (replaced table by table)")
    warehouse_option(p)
    quiet_option(p)
    p.set_defaults(func=cmd_export)
