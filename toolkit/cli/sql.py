"""``chainops sql QUERY``: one read-only query of the warehouse."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..errors import ChainopsError, UsageError
from .options import at_least_one, output_options, warehouse_option
from .output import output_format, write_frame

if TYPE_CHECKING:
    import pandas as pd


def cmd_sql(args: argparse.Namespace) -> int:
    """Run one SQL query against the warehouse, opened read-only (writes fail with a clear message)."""
    import duckdb

    from ..warehouse import Warehouse

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
    write_frame(df, fmt, args.out, metric=False, notes=notes)
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


def register(sub: Any) -> None:
    """Add ``chainops sql`` and its options to ``sub``."""
    p = sub.add_parser("sql", help="run a read-only SQL query against the warehouse")
    p.add_argument("query", help='SQL text, e.g. "select * from operation_lifecycle limit 5"')
    warehouse_option(p)
    output_options(p)
    p.add_argument(
        "--max-rows",
        type=at_least_one,
        metavar="N",
        help="rows a printed table shows (default: a screenful on a terminal, every row to a pipe; files get all)",
    )
    p.set_defaults(func=cmd_sql)
