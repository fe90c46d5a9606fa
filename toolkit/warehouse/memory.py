"""DuckDB's memory limit as a target, never a cause of failure.

DuckDB's ``memory_limit`` is a hard ceiling: a statement that needs more than it fails with an out-of-memory error
unless its operators can spill to the temp directory (not all can: a sort kept in insertion order, some windows).
How much a statement needs depends on the shape of the data (one busy channel, long payloads, many transactions per
operation), so a limit tuned on one shape fails on another. Work that runs under a limit therefore goes in pieces
that can be retried: on an out-of-memory error a piece is rolled back and retried on one thread, then in smaller
pieces, and at the smallest size with a higher limit, doubled up to :func:`memory_ceiling`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from typing import TypeVar

import duckdb

_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
T = TypeVar("T")

#: The highest limit a retry raises to, as a share of the machine's memory, and never more than this many bytes.
CEILING_SHARE = 0.25
CEILING_BYTES = 4 * 2**30


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckDB running out of its memory limit (the statement may succeed with more, or in parts)."""
    return isinstance(exc, duckdb.OutOfMemoryException) or (
        isinstance(exc, duckdb.Error) and "out of memory" in str(exc).lower()
    )


def parse_bytes(text: str) -> float:
    """A DuckDB size such as ``'128.0 MiB'`` or ``'96MB'`` in bytes (infinity when there is none)."""
    match = re.match(r"^\s*([0-9.]+)\s*([A-Za-z]+)\s*$", text)
    size = float(match.group(1)) * _UNITS.get(match.group(2).upper(), 0) if match else 0
    return size if size > 0 else float("inf")


def memory_limit(con: duckdb.DuckDBPyConnection) -> float:
    """The connection's memory limit in bytes (infinity when DuckDB reports none)."""
    row = con.execute("SELECT current_setting('memory_limit')").fetchone()
    return parse_bytes(str(row[0]) if row else "")


def memory_ceiling() -> float:
    """The highest memory limit a retry may set: :data:`CEILING_SHARE` of this machine's memory, at most
    :data:`CEILING_BYTES`."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 8 * 2**30
    return min(physical * CEILING_SHARE, CEILING_BYTES)


def raise_memory_limit(con: duckdb.DuckDBPyConnection) -> bool:
    """Double the connection's memory limit, up to :func:`memory_ceiling`; returns whether it went up."""
    current = memory_limit(con)
    ceiling = memory_ceiling()
    if current >= ceiling:
        return False
    new = min(current * 2, ceiling)
    con.execute(f"SET memory_limit = '{int(new // 2**20)}MiB'")
    return True


def with_more_memory(con_of: Callable[[], duckdb.DuckDBPyConnection], work: Callable[[], T]) -> T:
    """Run ``work``; when it runs out of memory, run it again on one thread, then under doubled limits (up to the
    ceiling), and raise the last error when no step is left. ``work`` must be safe to repeat (a statement that
    failed changed nothing). ``con_of`` gives the connection (it may be reopened meanwhile)."""
    while True:
        try:
            return work()
        except duckdb.Error as exc:
            if not is_out_of_memory(exc):
                raise
            con = con_of()
            if int(con.execute("SELECT current_setting('threads')").fetchone()[0]) > 1:
                con.execute("SET threads = 1")
            elif not raise_memory_limit(con):
                raise


def rollback_quietly(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back the open transaction, if any (after an error DuckDB keeps it open but aborted)."""
    with contextlib.suppress(duckdb.Error):
        con.execute("ROLLBACK")
