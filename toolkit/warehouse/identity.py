"""Is this file a chainops warehouse? Checked before anything is written to it.

A warehouse carries a marker, the table ``chainops_meta`` (``key``, ``value``) with ``format = chainops-warehouse``
and the schema version, made with the schema. Warehouses made before the marker existed are recognised by the
toolkit's own bookkeeping tables (``sync_state`` and ``sync_runs`` with their columns) and get the marker the next
time a writer opens them. A DuckDB file with other tables, a file that is not DuckDB at all (SQLite, text), and a
damaged (truncated) DuckDB file are refused with a :class:`~toolkit.errors.WarehouseError`, and nothing is written
to them: the check opens the file read-only, with DuckDB's extension auto-install and auto-load switched off (for a
SQLite file DuckDB would otherwise try to download its SQLite extension from the internet).

Two more refusals guard warehouses from elsewhere. A warehouse whose recorded schema version is newer than this
toolkit's :data:`SCHEMA_VERSION` (a newer chainops wrote it) is not written to (:func:`refuse_newer`). A damaged one,
whose blocks fail DuckDB's checksum (a bit flipped on disk or in a copy), is not written to either: before a writer
opens it, every column of every table is read once (:func:`check_blocks`), which has DuckDB verify the checksum of
every data block in use. Readers meet damage only where a query reaches it, and are told the same
(:func:`damaged_message`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import duckdb

from ..errors import WarehouseError
from .memory import with_more_memory
from .schema import quote_identifier

#: Settings of every connection the toolkit opens: no extension is ever installed or loaded behind its back.
CONNECTION_CONFIG: dict[str, str | bool] = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}

#: The memory limit :func:`check_blocks` reads the tables under (a scan keeps a few vectors a thread).
CHECK_MEMORY_LIMIT = "64MB"

MARKER_TABLE = "chainops_meta"
FORMAT = "chainops-warehouse"
#: Version of the warehouse schema written into the marker (raise it when a migration changes the tables).
SCHEMA_VERSION = "1"

#: The marker's DDL and rows (run by the writer with the schema; idempotent).
MARKER_SQL = f"""
CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR);
INSERT OR IGNORE INTO {MARKER_TABLE} VALUES ('format', '{FORMAT}'), ('schema_version', '{SCHEMA_VERSION}');
"""

#: The marker row of a warehouse made by ``chainops demo``, which the demo may replace on its next run.
DEMO_MARK = ("made_by", "chainops demo")

#: The marker keys under which ``chainops demo`` records what its proofs are checked against: the sandbox's
#: organisation id and its DON signers (comma-separated), which ``chainops verify`` takes when told no other.
DEMO_VERIFIER_KEYS = {"org_id": "demo_org_id", "signers": "demo_signers"}

#: Columns by which a warehouse made before the marker is recognised.
_LEGACY_COLUMNS = {
    "sync_state": {"stream", "cursor", "updated_at"},
    "sync_runs": {"run_id", "started_at", "finished_at", "outcome"},
}
#: DuckDB stores its header in the first three 4 KiB blocks; the data blocks follow.
_HEADER_BYTES = 3 * 4096

Kind = Literal["new", "empty", "marked", "legacy"]


def _damaged(path: Path, detail: str) -> WarehouseError:
    return WarehouseError(
        f"{path} is not a chainops warehouse: {detail}. Nothing was written to it. Point warehouse= (Python), "
        "--warehouse (CLI) or CHAINOPS_WAREHOUSE at the right file, or at a new path to start a new warehouse."
    )


def open_error(path: Path, exc: duckdb.Error) -> WarehouseError | None:
    """The clear error for a file DuckDB could not open because it is not (or no longer) a DuckDB database, or
    ``None`` when ``exc`` is something else (a lock held by another process, say)."""
    text = str(exc)
    lowered = text.lower()
    if "not a valid duckdb database file" in lowered:
        return _damaged(path, "it is not a DuckDB database file")
    if "extension" in lowered and ("sqlite" in lowered or "install" in lowered):
        return _damaged(path, "it is not a DuckDB database file (DuckDB read it as another database format)")
    if is_damage(text):
        return WarehouseError(damaged_message(path, text))
    if "could not read enough bytes" in lowered or "corrupt" in lowered:
        return _damaged(path, f"the DuckDB file is damaged, probably cut short ({text.strip()})")
    return None


def check_complete(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Raise if the file is shorter than the blocks in use its header counts (a truncated copy: DuckDB opens it and
    fails only when a query reaches a missing block).

    The header's ``total_blocks`` also counts free blocks, and DuckDB cuts free blocks off the end of the file after
    a checkpoint: a sound warehouse was measured one block shorter than ``total_blocks`` (a one-channel sync of 870k
    events, then the next sync refused it). So only the blocks in use are counted: a copy cut short by less than the
    free blocks is not caught here, and DuckDB reports it when a query reaches the missing block."""
    rows = con.execute(
        "SELECT block_size, total_blocks - free_blocks FROM pragma_database_size() "
        "WHERE database_name = current_database()"
    ).fetchall()
    if not rows:
        return
    block_size, used_blocks = (int(v) for v in rows[0])
    expected = _HEADER_BYTES + block_size * used_blocks
    actual = path.stat().st_size
    if actual < expected:
        raise _damaged(
            path,
            f"the DuckDB file is damaged: it holds {actual:,} bytes of the {expected:,} its header "
            "counts in use (probably cut short while copied)",
        )


def classify(con: duckdb.DuckDBPyConnection, path: Path) -> Kind:
    """What the database open on ``con`` is: ``marked`` (a warehouse with the marker), ``legacy`` (a warehouse
    from before the marker), ``empty`` (no tables or views). Raises :class:`WarehouseError` for anything else."""
    rows = con.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_catalog = current_database()"
    ).fetchall()
    columns: dict[str, set[str]] = {}
    for table, column in rows:
        columns.setdefault(table, set()).add(column)
    if not columns:
        return "empty"
    if MARKER_TABLE in columns:
        found = (
            dict(con.execute(f"SELECT key, value FROM {MARKER_TABLE}").fetchall())
            if {"key", "value"} <= columns[MARKER_TABLE]
            else {}
        )
        if found.get("format") == FORMAT:
            return "marked"
    elif all(need <= columns.get(table, set()) for table, need in _LEGACY_COLUMNS.items()):
        return "legacy"
    shown = ", ".join(sorted(columns)[:8]) + (", ..." if len(columns) > 8 else "")
    raise _damaged(path, f"it is a DuckDB database made by another program (its tables: {shown})")


def is_damage(error: BaseException | str) -> bool:
    """Whether a DuckDB error (or its text) says a block failed its checksum: the file is damaged."""
    lowered = str(error).lower()
    return "checksum" in lowered and ("corrupt" in lowered or "does not match" in lowered)


def damaged_message(path: str | os.PathLike[str], detail: str) -> str:
    """What to say about a warehouse whose blocks fail DuckDB's checksum: what is wrong, and how to recover."""
    detail = " ".join(detail.split())
    return (
        f"The warehouse {path} is damaged: a block of it fails DuckDB's checksum ({detail}). Nothing was written to "
        "it, and no command can be trusted with it. Recover with a fresh sync into a new file (`chainops sync "
        "--warehouse NEW.duckdb`, then use NEW.duckdb in its place; the service still holds the history), or from "
        "your last `chainops export` (its Parquet files hold every table as it was then)."
    )


def check_blocks(con: duckdb.DuckDBPyConnection, path: str | os.PathLike[str]) -> None:
    """Read every column of every table of the database open on ``con`` once, so that DuckDB checks the checksum of
    every data block in use; raise :class:`WarehouseError` (:func:`damaged_message`) if one fails. Costs one read of
    the tables' data (about 0.06 s for the demo's 21 MB warehouse); free blocks and index blocks are not read.

    The read runs under :data:`CHECK_MEMORY_LIMIT` (doubled, as any statement of the toolkit's, should a table need
    more), and the connection's own limit and threads are put back after it: under DuckDB's default limit (80% of
    the machine) every block read stayed cached, and the process grew by the file's size (1.6 GB at ten million
    events) before the sync or verify that opened it had begun."""
    settings = con.execute("SELECT current_setting('memory_limit'), current_setting('threads')").fetchall()[0]
    con.execute("SET memory_limit = ?", [CHECK_MEMORY_LIMIT])
    try:
        _read_every_block(con, path)
    finally:
        con.execute("SET memory_limit = ?", [settings[0]])
        con.execute(f"SET threads = {int(settings[1])}")


def _read_every_block(con: duckdb.DuckDBPyConnection, path: str | os.PathLike[str]) -> None:
    tables = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() ORDER BY table_name"
    ).fetchall()
    for (table,) in tables:
        columns = con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() AND table_name = ?",
            [table],
        ).fetchall()
        if not columns:
            continue
        quoted = quote_identifier(table)
        reads = ", ".join(f"bit_xor(hash({quote_identifier(c)}))" for (c,) in columns)
        sql = f"SELECT {reads} FROM {quoted}"
        try:
            with_more_memory(lambda: con, lambda sql=sql: con.execute(sql).fetchall())
        except duckdb.Error as exc:
            if is_damage(exc):
                raise WarehouseError(damaged_message(path, str(exc))) from None
            raise


def refuse_newer(con: duckdb.DuckDBPyConnection, path: str | os.PathLike[str]) -> None:
    """Raise :class:`WarehouseError` when the marker of the warehouse open on ``con`` records a schema version newer
    than :data:`SCHEMA_VERSION` (or one this toolkit cannot read as a version): a newer chainops wrote it."""
    rows = con.execute(f"SELECT value FROM {MARKER_TABLE} WHERE key = 'schema_version'").fetchall()
    if not rows or rows[0][0] is None:
        return
    recorded = str(rows[0][0]).strip()
    if recorded.isdigit() and int(recorded) <= int(SCHEMA_VERSION):
        return
    shown = recorded[:40] + ("..." if len(recorded) > 40 else "")
    raise WarehouseError(
        f"The warehouse {path} was written by a newer chainops: its schema version is {shown!r}, and this toolkit "
        f"knows versions up to {SCHEMA_VERSION}. Nothing was written to it. Upgrade chainops-toolkit to sync or "
        "verify into it (or sync into a new file with this version); reading it (sql, metrics, report) may work, "
        "but nothing is promised."
    )


def inspect_file(path: str | os.PathLike[str]) -> Kind:
    """Check, read-only, that ``path`` may be opened as a warehouse for writing; returns what it is (``new`` when
    there is no file yet). Raises :class:`WarehouseError` for a file that is not a chainops warehouse, and lets a
    lock error through as DuckDB raised it (another process holds the file)."""
    target = Path(path)
    if not target.exists():
        return "new"
    try:
        con = duckdb.connect(str(target), read_only=True, config=CONNECTION_CONFIG)
        try:
            check_complete(con, target)
            kind = classify(con, target)
            if kind == "marked":
                refuse_newer(con, target)
            if kind != "empty":
                con.execute("SET enable_progress_bar = false")  # seconds on a large file: the command shows its own
                check_blocks(con, target)  # a damaged warehouse is never written to (nor a run on it recorded ok)
            return kind
        finally:
            con.close()
    except duckdb.Error as exc:  # opening or reading it: a file DuckDB cannot read is refused by name
        refused = open_error(target, exc)
        if refused is not None:
            raise refused from None
        raise


def is_demo_warehouse(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a warehouse ``chainops demo`` made, which the next demo may delete and make again: it
    carries :data:`DEMO_MARK` (the demo marks its warehouse before anything else) and holds at most the one sync
    run the demo makes. Anything else is not: another file, another program's DuckDB file, a warehouse without the
    mark however it was synced (from a loopback address too: an SSH tunnel or a port-forward looks like that), a
    demo's warehouse that was synced again since. Opens the file read-only."""
    target = Path(path)
    if not target.is_file():
        return False
    try:
        con = duckdb.connect(str(target), read_only=True, config=CONNECTION_CONFIG)
    except duckdb.Error:
        return False
    try:
        return _is_demo(con, target)
    except (duckdb.Error, WarehouseError):
        return False
    finally:
        con.close()


def _is_demo(con: duckdb.DuckDBPyConnection, target: Path) -> bool:
    """Whether the warehouse open on ``con`` is a demo's (see :func:`is_demo_warehouse`)."""
    if classify(con, target) != "marked":
        return False
    marked = con.execute(
        f"SELECT count(*) FROM {MARKER_TABLE} WHERE key = ? AND value = ?", list(DEMO_MARK)
    ).fetchall()[0][0]
    return bool(marked) and con.execute("SELECT count(*) FROM sync_runs").fetchall()[0][0] <= 1


def demo_verifier(path: str | os.PathLike[str]) -> dict[str, str]:
    """What ``chainops demo`` recorded in ``path`` to check its proofs against (``org_id``, ``signers``; see
    :data:`DEMO_VERIFIER_KEYS`); empty for any other file or warehouse, and for a warehouse that is no longer a
    demo's own (:func:`is_demo_warehouse`: what a file records is its own word). Opens the file read-only, once."""
    target = Path(path)
    if not target.is_file():
        return {}
    try:
        con = duckdb.connect(str(target), read_only=True, config=CONNECTION_CONFIG)
    except duckdb.Error:
        return {}
    try:
        if not _is_demo(con, target):
            return {}
        rows = con.execute(
            f"SELECT key, value FROM {MARKER_TABLE} WHERE key IN (?, ?)", list(DEMO_VERIFIER_KEYS.values())
        ).fetchall()
    except (duckdb.Error, WarehouseError):
        return {}
    finally:
        con.close()
    found = dict(rows)
    recorded = {name: found.get(key) for name, key in DEMO_VERIFIER_KEYS.items()}
    return {name: value for name, value in recorded.items() if value} if recorded["org_id"] else {}


__all__ = [
    "CONNECTION_CONFIG",
    "DEMO_MARK",
    "DEMO_VERIFIER_KEYS",
    "FORMAT",
    "MARKER_SQL",
    "MARKER_TABLE",
    "SCHEMA_VERSION",
    "check_blocks",
    "check_complete",
    "classify",
    "damaged_message",
    "demo_verifier",
    "inspect_file",
    "is_damage",
    "is_demo_warehouse",
    "open_error",
    "refuse_newer",
]


def missing_warehouse_message(path: str | os.PathLike[str]) -> str:
    """What to say when there is no warehouse at ``path``: when the demo's warehouse exists (``chainops demo`` ran
    here), how to use it; else how to make one."""
    from ..config import DEMO_WAREHOUSE_NAME, data_dir

    target = Path(path)
    demo = data_dir() / DEMO_WAREHOUSE_NAME
    if demo.absolute() != target.absolute() and is_demo_warehouse(demo):
        shown = os.path.relpath(demo) if demo.is_relative_to(Path.cwd().resolve()) else str(demo)
        return (
            f"No warehouse at {target}, but `chainops demo` made one at {shown}: pass warehouse={str(shown)!r} "
            f"(Python) or --warehouse {shown} (CLI), or export CHAINOPS_WAREHOUSE={shown}. To make {target}, run "
            "`chainops sync` with CREC_BASE_URL and CREC_API_KEY set."
        )
    return (
        f"No warehouse at {target}. Run `chainops sync` (or `chainops demo`) first, "
        "or point warehouse= (Python), --warehouse (CLI) or CHAINOPS_WAREHOUSE at an existing file."
    )
