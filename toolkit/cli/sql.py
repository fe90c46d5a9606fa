"""``chainops sql QUERY``: one read-only query of the warehouse."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..errors import ChainopsError, UsageError
from .options import output_options, quiet_option, warehouse_option
from .output import chosen_columns, cut_rows, output_format, row_limit, write_frame

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
    columns = chosen_columns(df, args.columns)
    df, notes = cut_rows(df, row_limit(fmt, args.out, args.max_rows, wide=args.wide))
    table = fmt in ("table", "html")
    write_frame(
        df,
        fmt,
        args.out,
        metric=False,
        columns=columns if table else None,
        wide=args.wide,
        notes=[] if args.quiet else notes,
    )
    if columns is not None and not table and not args.quiet:
        print("chainops sql: --columns picks what a table shows; files keep every column", file=sys.stderr)
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


def register(sub: Any) -> None:
    """Add ``chainops sql`` and its options to ``sub``."""
    p = sub.add_parser("sql", help="run a read-only SQL query against the warehouse")
    p.add_argument("query", help='SQL text, e.g. "select * from operation_lifecycle limit 5"')
    warehouse_option(p)
    output_options(p)
    quiet_option(p, "print only the result: no row count under the table")
    p.set_defaults(func=cmd_sql)
