"""The DuckDB store: open the file, create the schema and views, upsert Arrow batches with their cursors.

One writer at a time: :func:`sync_lock` takes an exclusive lock file beside the warehouse; a second writer gets
:class:`~toolkit.errors.SyncLockedError` naming the holder. A sync holds it for its whole run; a :class:`Warehouse`
opened for writing holds it while open (unless this process already holds it, as a sync does around its own
connection), so code that writes through the toolkit never writes beside a running sync. Readers open with
``read_only=True`` and need no lock.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb
import filelock
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import SyncLockedError, WarehouseError
from .dictionary import apply_comments
from .failures import write_failure
from .identity import (
    CONNECTION_CONFIG,
    MARKER_SQL,
    check_complete,
    classify,
    inspect_file,
    missing_warehouse_message,
    open_error,
)
from .migrations import migrate
from .schema import RAW_TABLES, schema_sql
from .settled import is_settled, remember_settled
from .sync_queries import SyncQueries
from .views import (
    MODEL_VERSION,
    MODELS_CURRENT_SQL,
    MODELS_VERSION_SQL,
    current_model_views,
    drop_outdated_models,
    live_views,
    view_statements,
)
from .write_seq import next_write_seq

if TYPE_CHECKING:  # loaded by query() through Arrow when it runs: verify and the sync never need it
    import pandas as pd

#: Seconds a reader waits for a running sync to make room before giving up.
DEFAULT_READER_WAIT = 30.0

#: Rows per row group written by a writable connection (DuckDB's default is 122,880). A sync commits a few tens of
#: thousands of rows at a time; DuckDB writes each full row group once, compressed, as it is inserted, but rewrites
#: (and compresses again) a partly filled one at every commit that adds to it. With groups smaller than a commit,
#: nearly every row is compressed once: measured on a 1M-event sync, about 40% less work for the writer.
WRITE_ROW_GROUP_SIZE = 16_384
#: The storage format a new warehouse is written in: the oldest DuckDB release that reads every feature the schema
#: uses (ZSTD-compressed text in ``events.payload``), so DuckDB 1.4 and later (its CLI, DBeaver's bundled driver,
#: older Python environments) open the file. A file made before keeps the format it has: DuckDB cannot lower the
#: storage version of an existing database.
STORAGE_VERSION = "v1.4.0"


log = logging.getLogger("toolkit.warehouse")
T = TypeVar("T")

#: DuckDB's memory limit on a read-only connection (metrics, reports, ``chainops sql``) unless the caller gives one:
#: the metrics' statements fit it at ten million operation events, and a statement that does not fit fails with
#: :class:`~toolkit.errors.WarehouseError` saying so (:func:`reader_memory_limit`), rather than growing the process.
READER_MEMORY_LIMIT = "512MB"
#: The environment variable that sets another reader limit (a DuckDB size such as ``2GB``).
READER_MEMORY_ENV = "CHAINOPS_READER_MEMORY"


def reader_memory_limit() -> str:
    """The memory limit of a read-only connection: ``$CHAINOPS_READER_MEMORY``, else :data:`READER_MEMORY_LIMIT`."""
    return os.environ.get(READER_MEMORY_ENV, "").strip() or READER_MEMORY_LIMIT


def out_of_memory_message(limit: str) -> str:
    """What to say when a read-only statement needed more memory than the reader's limit ``limit``."""
    return (
        f"the query needed more memory than the reader's limit ({limit}): narrow it (a shorter period with "
        f"--since/--until, fewer groups, fewer columns), or raise the limit with {READER_MEMORY_ENV}=2GB (in Python, "
        "Warehouse(path, read_only=True, memory_limit='2GB'))"
    )


def _readers_file(path: Path) -> Path:
    """The file by which readers in other processes ask a running sync to make room."""
    return Path(f"{path}.readers")


def to_arrow_table(result: duckdb.DuckDBPyRelation | duckdb.DuckDBPyConnection) -> pa.Table:
    """Materialise a DuckDB result as an Arrow table (the method name moved across DuckDB releases)."""
    for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        method = getattr(result, name, None)
        if method is not None:
            out = method()
            return out.read_all() if isinstance(out, pa.RecordBatchReader) else out
    raise WarehouseError(f"cannot read a {type(result).__name__} as an Arrow table (not a query result)")


#: Tables whose rows belong to one channel and are keyed by an id the service may (wrongly) repeat in two channels.
_ONE_CHANNEL_TABLES = ("operations", "queries")


def refuse_special_file(path: Path) -> None:
    """Raise :class:`WarehouseError` when ``path`` names something that is not a regular file (a FIFO, whose
    opening would wait for a writer forever; a device; a directory; a socket). A missing path is fine (a new
    warehouse), and a path that cannot be looked at is left for the open to report."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if stat.S_ISREG(mode):
        return
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket or other special file"
    )
    raise WarehouseError(
        f"{path} is {kind}, not a warehouse file; nothing was read or written. Point warehouse= (Python), "
        "--warehouse (CLI) or CHAINOPS_WAREHOUSE at a DuckDB file (or a new path)."
    )


def read_current_models(con: duckdb.DuckDBPyConnection) -> None:
    """On a read-only connection, let the modelled views read what answers them fastest, exactly.

    A warehouse whose models are current (:data:`~.views.MODEL_VERSION`, no stale operation) gets temporary views
    over the model tables alone (:func:`~.views.current_model_views`): the same rows, each statement planned without
    the live part. One whose model tables another version of the toolkit made (a sync by this version rebuilds them)
    gets the views computed from the raw tables (:func:`~.views.live_views`): this version's answers, slower. A
    warehouse with stale operations of this version (a sync stopped before its model refresh) keeps its own views,
    which compute those operations live."""
    try:
        version = con.execute(MODELS_VERSION_SQL).fetchall()[0][0]
        if version is not None and int(version) != MODEL_VERSION:
            log.warning(
                "the warehouse's model tables were made by another version of the toolkit (models version %s, this "
                "one reads %s): every view is computed from the raw tables until the next `chainops sync` rebuilds "
                "them; the answers are exact, only slower",
                version,
                MODEL_VERSION,
            )
            statements = live_views()
        elif con.execute(MODELS_CURRENT_SQL).fetchall()[0][0]:
            statements = current_model_views()
        else:
            return
        for statement in statements:
            con.execute(statement)
    except duckdb.Error:
        pass  # a file without the model tables or views (made elsewhere, or damaged): its own views answer


class Warehouse(SyncQueries):
    """A DuckDB warehouse file with the toolkit's tables and views.

    Use as a context manager. ``read_only=True`` opens an existing file for queries only.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        memory_limit: str | None = None,
        wait: float = DEFAULT_READER_WAIT,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.memory_limit = memory_limit or (reader_memory_limit() if read_only else None)
        refuse_special_file(self.path)
        if read_only and not self.path.exists():
            raise WarehouseError(missing_warehouse_message(self.path))
        self._lock = contextlib.ExitStack()
        if not read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise write_failure(self.path, exc) from None
            if not holds_sync_lock(self.path):  # a sync opening its own connection holds it already
                self._lock.enter_context(sync_lock(self.path, holder="a Warehouse opened for writing"))
        self._inspected = False  # a writer checks once, read-only, that the file is a warehouse (see identity)
        self._settings: dict[str, str | int] = {}  # made with configure(), applied again on reopen()
        try:
            self.con = self._connect(wait)
        except BaseException:
            self._lock.close()
            raise
        self._column_cache: dict[str, list[str]] = {}
        #: Per table, ``(id, stored channel, new channel)`` of rows an upsert replaced with a row of another channel
        #: (one id listed in two channels), for the sync to report (:meth:`take_channel_clashes`).
        self.channel_clashes: dict[str, list[tuple[str, str, str, int]]] = {}
        self._write_seq: int | None = None  # the number of the open transaction's writes (see write_seq)
        self._memo: dict[Hashable, Any] = {}  # what a reader computed once (see memoized)
        if not read_only:
            try:
                self.ensure_schema()
            except BaseException:
                self.close()
                raise

    def _connect(self, wait: float) -> duckdb.DuckDBPyConnection:
        """Open the file; while another process holds it, ask it to make room (see :meth:`yield_to_readers`)
        and retry for up to ``wait`` seconds."""
        deadline = time.monotonic() + wait
        while True:
            try:
                con = self._open_file()
                break
            except duckdb.Error as exc:
                refused = open_error(self.path, exc)
                if refused is not None:
                    raise refused from None
                busy = "lock" in str(exc).lower()
                if busy and time.monotonic() < deadline:
                    if self.read_only:
                        _readers_file(self.path).touch()
                    time.sleep(0.05)
                    continue
                if "file handle conflict" in str(exc).lower():
                    hint = "it is already open in this process: close that Warehouse or DuckDB connection first"
                elif busy and not self.read_only:
                    # the writer holds the sync lock, so the holder is not a sync: a reader such as a notebook,
                    # `chainops sql` or a DuckDB client (DBeaver, the duckdb CLI) keeps the file open
                    hint = (
                        f"a reader holds it open and did not let go within {wait:.0f} s (a notebook, a DuckDB client "
                        "such as DBeaver or the duckdb CLI, or another chainops command; the process is named above): "
                        "close it and run again"
                    )
                elif busy:
                    hint = _writer_hint(self.path, wait)
                elif not self.read_only and any(w in str(exc).lower() for w in ("permission", "read-only", "director")):
                    raise write_failure(self.path, exc) from None
                else:
                    hint = "check the path and that it is a DuckDB file"
                raise WarehouseError(f"Cannot open the warehouse {self.path}: {exc} ({hint}).") from None
        con.execute("SET TimeZone = 'UTC'")
        if self.read_only:
            # under its memory limit a reader spills large sorts and aggregations to a folder of its own (a second
            # reader of the same file in this process shares DuckDB's instance, set already and closed to changes)
            spill = str(Path(tempfile.gettempdir()) / f"chainops-reader-{os.getpid()}")
            if con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0] != spill:
                con.execute("SET temp_directory = ?", [spill])
            # a reader runs the file's views, and a file from elsewhere may define them: no view reads a local file
            # (read_text, read_csv), writes one, attaches a database or loads an extension
            con.execute("SET enable_external_access = false")
        if not self.read_only:
            con.execute("SET enable_progress_bar = false")  # a writer (a sync) shows its own progress, or none
        if self.memory_limit:
            con.execute("SET memory_limit = ?", [self.memory_limit])
        return con

    def _open_file(self) -> duckdb.DuckDBPyConnection:
        """A connection to the file: plain for reading; for writing, attached with :data:`WRITE_ROW_GROUP_SIZE`
        (an option only ATTACH takes), made the default database, and spilling beside the file as a plain
        connection would."""
        if self.read_only:
            con = duckdb.connect(str(self.path), read_only=True, config=CONNECTION_CONFIG)
            try:
                check_complete(con, self.path)
                if classify(con, self.path) == "empty":
                    raise WarehouseError(
                        f"{self.path} is an empty DuckDB file, not a warehouse yet: run `chainops sync` (or "
                        "`chainops demo`) into it first, or point warehouse= (Python), --warehouse (CLI) or "
                        "CHAINOPS_WAREHOUSE at a warehouse."
                    )
                read_current_models(con)
            except BaseException:
                con.close()
                raise
            return con
        if not self._inspected:
            inspect_file(self.path)  # refuses, without writing to it, a file that is not a warehouse
            self._inspected = True
        options = f"ROW_GROUP_SIZE {WRITE_ROW_GROUP_SIZE}"
        if not self.path.exists():
            options += f", STORAGE_VERSION '{STORAGE_VERSION}'"
        con = duckdb.connect(config=CONNECTION_CONFIG)
        try:
            quoted = str(self.path).replace("'", "''")
            con.execute(f"ATTACH '{quoted}' AS warehouse ({options})")
            con.execute("USE warehouse")
            con.execute("SET temp_directory = ?", [f"{self.path}.tmp"])
        except BaseException:
            con.close()
            raise
        return con

    def readers_waiting(self) -> bool:
        """Whether a reader in another process is waiting for the file (see :meth:`yield_to_readers`)."""
        return not self.read_only and _readers_file(self.path).exists()

    def yield_to_readers(self, *, pause: float = 0.2, wait: float = 600.0) -> bool:
        """If a reader in another process is waiting for the file, checkpoint, close, let it in, and reopen.

        DuckDB lets one process hold a file for writing and no one else open it meanwhile, so a long sync calls this
        between committed batches: readers wait at most one batch. Returns whether it yielded. Call only between
        transactions, from the thread that owns the connection.
        """
        request = _readers_file(self.path)
        if self.read_only or not request.exists():
            return False

        def let_reader_in() -> None:
            request.unlink(missing_ok=True)
            time.sleep(pause)

        self.reopen(wait=wait, meanwhile=let_reader_in)
        return True

    def reopen(self, *, wait: float = 600.0, meanwhile: Callable[[], None] | None = None) -> None:
        """Checkpoint, close and reopen the connection (``meanwhile`` runs while it is closed).

        DuckDB then lets go of what it held for the file, such as the primary-key index nodes that upserts loaded
        (it keeps them in memory, against the memory limit, until the connection closes; the large tables have no
        such index, see schema.py), and loads again only what is used. Settings made with :meth:`configure` are
        applied again (a plain ``SET`` is not); a reader that got in meanwhile is waited for up to ``wait`` seconds.
        Call only between transactions, from the thread that owns the connection.
        """
        self.con.execute("CHECKPOINT")
        self.con.close()
        if meanwhile is not None:
            meanwhile()
        self.con = self._connect(wait)
        for name, value in self._settings.items():
            self.con.execute(f"SET {name} = ?", [value])

    def configure(self, **settings: str | int) -> None:
        """Apply DuckDB settings (``SET name = value``) now, and again whenever :meth:`reopen` reconnects."""
        for name, value in settings.items():
            if not name.isidentifier():
                raise WarehouseError(f"not a DuckDB setting name: {name!r}")
            self.con.execute(f"SET {name} = ?", [value])
            self._settings[name] = value

    def __repr__(self) -> str:
        return f"Warehouse({str(self.path)!r}, read_only={self.read_only})"

    def ensure_schema(self) -> None:
        """Create missing tables (:mod:`.schema`), bring an older warehouse up to date (:mod:`.migrations`), and
        (re)create the views and the data dictionary's comments. A file whose shape this process has already seen
        that leave behind is left as it is (:mod:`.settled`)."""
        if is_settled(self.con):
            return
        self.con.execute(schema_sql())
        self.con.execute(MARKER_SQL)
        if migrate(self.con):
            self._column_cache.clear()
        drop_outdated_models(self.con)  # model tables of another version: rebuilt by the next refresh
        for statement in view_statements():
            self.con.execute(statement)
        apply_comments(self.con)  # the data dictionary, also into warehouses made before it existed
        remember_settled(self.con)

    def close(self) -> None:
        """Close the connection (and let go of the writer lock, if this warehouse took it)."""
        try:
            self.con.close()
        finally:
            self._lock.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- writing --------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One DuckDB transaction: committed when the block ends, rolled back if it raises."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            self._write_seq = next_write_seq(self.con)
            yield self.con
        except BaseException:
            self._write_seq = None
            self.con.execute("ROLLBACK")
            raise
        self._write_seq = None
        self.con.execute("COMMIT")

    def upsert(self, table: str, batch: pa.RecordBatch | pa.Table) -> tuple[int, int]:
        """Insert or replace ``batch``'s rows in ``table`` by primary key (call inside :meth:`transaction`).

        Returns ``(new, updated)``: rows whose key was not there before, and rows that replaced an existing one.
        """
        if batch.num_rows == 0:
            return 0, 0
        tspec = RAW_TABLES[table]
        with self._registered(table, batch) as view:
            # delete + insert (one transaction) is faster than INSERT OR REPLACE and counts the replaced rows;
            # an operation's transactions are replaced as a whole
            key = tspec.key[0]
            where, params = f"{key} IN (SELECT {key} FROM {view})", []
            if table == "events":
                # events arrive a channel at a time and are stored in that order, so the rows of one channel sit
                # in few row groups: naming the channel lets DuckDB skip the rest instead of probing every id
                channels = pc.unique(batch.column("channel_id"))
                if len(channels) == 1 and channels[0].is_valid:
                    where, params = f"channel_id = ? AND {where}", [channels[0].as_py()]
            if table in _ONE_CHANNEL_TABLES and "channel_id" in batch.schema.names:
                self._note_channel_clashes(table, key, view)
            deleted = self.con.execute(f'DELETE FROM "{tspec.name}" WHERE {where}', params).fetchall()
            existing = min(int(deleted[0][0]) if deleted else 0, batch.num_rows)
            self._insert_from(table, view)
        return batch.num_rows - int(existing), int(existing)

    def _note_channel_clashes(self, table: str, key: str, view: str) -> None:
        """Note the stored rows of ``table`` that the rows in ``view`` are about to replace although they belong to
        another channel: one id in two channels, of which the warehouse keeps one row (the one written last)."""
        rows = self.con.execute(
            f'SELECT t.{key}::VARCHAR, t.channel_id, v.channel_id, t.write_seq FROM "{RAW_TABLES[table].name}" t '
            f"JOIN {view} v ON t.{key} = v.{key} WHERE t.channel_id IS DISTINCT FROM v.channel_id"
        ).fetchall()
        if rows:
            self.channel_clashes.setdefault(table, []).extend(
                (str(i), str(a), str(b), int(seq or 0)) for i, a, b, seq in rows
            )

    def take_channel_clashes(self) -> dict[str, list[tuple[str, str, str, int]]]:
        """The clashes noted since the last call (see :attr:`channel_clashes`), forgotten here: ``(id, channel of
        the row replaced, channel of the row written, write_seq of the row replaced)``."""
        clashes, self.channel_clashes = self.channel_clashes, {}
        return clashes

    def insert(self, table: str, batch: pa.RecordBatch | pa.Table) -> int:
        """Append ``batch``'s rows to ``table`` without looking for stored rows with the same keys (call inside
        :meth:`transaction`, and see :meth:`delete_superseded`); returns the rows appended."""
        if batch.num_rows == 0:
            return 0
        with self._registered(table, batch) as view:
            self._insert_from(table, view)
        return batch.num_rows

    def delete_superseded(self, table: str, channel_id: str, keys: pa.Array) -> int:
        """Delete the rows of ``table`` in ``channel_id`` whose key is one of ``keys`` and that the open transaction
        did not write, and return how many: what :meth:`upsert` deletes row by row, done once for many
        :meth:`insert` calls. A row's ``write_seq`` is the number of the transaction that wrote it (see
        :mod:`.write_seq`: not the clock, which may step backwards), so the rows this transaction wrote are exactly
        those with its number."""
        if len(keys) == 0:
            return 0
        tspec = RAW_TABLES[table]
        key = tspec.key[0]
        with self._registered(f"{table}_keys", pa.table({key: keys})) as view:
            deleted = self.con.execute(
                f'DELETE FROM "{tspec.name}" WHERE channel_id = ? AND write_seq IS DISTINCT FROM ? '
                f"AND {key} IN (SELECT {key} FROM {view})",
                [channel_id, self._current_write_seq()],
            ).fetchall()
        return int(deleted[0][0]) if deleted else 0

    @contextlib.contextmanager
    def _registered(self, name: str, data: pa.RecordBatch | pa.Table) -> Iterator[str]:
        """``data`` as a view of the connection while the block runs; yields the view's name."""
        view = f"_incoming_{name}"
        self.con.register(view, pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data)
        try:
            yield view
        except BaseException:
            with contextlib.suppress(duckdb.Error):  # in a transaction the error aborted: its own error says more
                self.con.unregister(view)
            raise
        self.con.unregister(view)

    def _insert_from(self, table: str, view: str) -> None:
        columns = self._columns_of(table)
        extra_cols = ", now() AS synced_at" if "synced_at" in columns else ""
        params: list[int] = []
        if "write_seq" in columns:
            extra_cols += ", ? AS write_seq"
            params.append(self._current_write_seq())
        self.con.execute(f'INSERT INTO "{RAW_TABLES[table].name}" BY NAME SELECT *{extra_cols} FROM {view}', params)

    def _current_write_seq(self) -> int:
        """The open transaction's number (see :mod:`.write_seq`); outside :meth:`transaction` and :meth:`begin`,
        a new number for this one statement."""
        if self._write_seq is None:
            return next_write_seq(self.con)
        return self._write_seq

    def _columns_of(self, table: str) -> list[str]:
        cached = self._column_cache.get(table)
        if cached is None:
            cached = self._column_cache[table] = self.columns(table)
        return cached

    def columns(self, table: str) -> list[str]:
        """Column names of a table or view."""
        rows = self.con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_catalog = current_database() "
            "AND table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
        return [r[0] for r in rows]

    def get_cursor(self, stream: str) -> Any:
        """The saved cursor of a sync stream (decoded JSON), or ``None``."""
        rows = self.con.execute("SELECT cursor FROM sync_state WHERE stream = ?", [stream]).fetchall()
        return json.loads(rows[0][0]) if rows and rows[0][0] is not None else None

    def get_cursors(self, streams: Iterable[str]) -> dict[str, Any]:
        """The saved cursors of many sync streams in one statement: stream -> decoded JSON or ``None`` (a run reads
        one per channel and table; a statement each was most of a 300-channel sync's warehouse reads)."""
        wanted = list(dict.fromkeys(streams))
        if not wanted:
            return {}
        rows = self.con.execute(
            "SELECT stream, cursor FROM sync_state WHERE stream IN (SELECT unnest(?::VARCHAR[]))", [wanted]
        ).fetchall()
        found = {stream: json.loads(cursor) for stream, cursor in rows if cursor is not None}
        return {stream: found.get(stream) for stream in wanted}

    def set_cursor(self, stream: str, cursor: Any) -> None:
        """Save a stream's cursor (call inside the transaction that wrote the rows it covers)."""
        self.set_cursors({stream: cursor})

    def set_cursors(self, cursors: Mapping[str, Any]) -> None:
        """Save several streams' cursors in one statement (inside the transaction that wrote their rows)."""
        if not cursors:
            return
        rows = ", ".join("(?, ?, now())" for _ in cursors)
        params = [v for stream, cursor in cursors.items() for v in (stream, json.dumps(cursor))]
        self.con.execute(f"INSERT OR REPLACE INTO sync_state (stream, cursor, updated_at) VALUES {rows}", params)

    # ---- reading --------------------------------------------------------------------------------------------

    def arrow(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> pa.Table:
        """Run SQL (values bound as parameters, never pasted in) and return an Arrow table (an empty one for a
        statement that returns no result, such as a comment alone). On a read-only warehouse, a statement that needs
        more memory than the reader's limit raises :class:`~toolkit.errors.WarehouseError` saying what to do."""
        try:
            relation = self.con.sql(sql, params=params or None)
            if relation is None:
                return pa.table({})
            return to_arrow_table(relation)
        except duckdb.OutOfMemoryException as exc:
            if not self.read_only:
                raise
            limit, cause = self.memory_limit_setting(), str(exc).splitlines()[0]
            raise WarehouseError(f"Reading {self.path}: {out_of_memory_message(limit)} ({cause}).") from None

    def memoized(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, once per ``key`` while this warehouse is open read-only (a reader sees no write while it is
        open: DuckDB lets no writer in), so a report asking several questions reads what they share once; on a
        writable warehouse, every time. The result is shared: callers must not change it."""
        if not self.read_only:
            return compute()
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Run SQL (values bound as parameters) and return a DataFrame with tz-aware UTC timestamps."""
        return self.arrow(sql, params).to_pandas()

    def count(self, table: str) -> int:
        """Rows in a table or view."""
        if table not in self.tables():
            raise WarehouseError(f"no table or view named {table!r}")
        return int(self.con.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0][0])

    def tables(self) -> list[str]:
        """Names of the tables and views."""
        rows = self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
            "ORDER BY table_name"
        ).fetchall()
        return [r[0] for r in rows]


#: The warehouses (resolved paths) whose writer lock this process holds through :func:`sync_lock`.
_HELD: set[str] = set()
_HELD_GUARD = threading.Lock()


def _lock_key(path: str | os.PathLike[str]) -> str:
    try:
        return str(Path(path).resolve())
    except (RuntimeError, OSError):  # a loop of symbolic links: the open that follows reports it
        return os.path.abspath(path)


def holds_sync_lock(path: str | os.PathLike[str]) -> bool:
    """Whether this process holds the writer lock of the warehouse at ``path`` (see :func:`sync_lock`)."""
    with _HELD_GUARD:
        return _lock_key(path) in _HELD


@contextlib.contextmanager
def sync_lock(path: str | os.PathLike[str], *, holder: str = "a sync") -> Iterator[None]:
    """Hold the warehouse's writer lock (``<warehouse>.lock``) for the block, or raise SyncLockedError at once,
    naming who holds it.

    The lock is the ``filelock`` package's (``flock`` on POSIX, ``msvcrt`` locking on Windows), released by the
    operating system when the process ends, so a killed sync leaves no lock behind. Not re-entrant: a second
    ``sync_lock`` on the same warehouse is refused even in the same process. While held, the lock file names its
    ``holder`` (what it is, its process id and host, and since when, UTC), which the refusal quotes; it is emptied
    again on release."""
    lock_path = Path(f"{path}.lock")
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        # filelock reports a file it cannot create as a lock held by someone else: name that problem for what it is
        lock_path.touch()
        lock = filelock.FileLock(lock_path, timeout=0, thread_local=False)
        lock.acquire()
    except filelock.Timeout:
        raise SyncLockedError(
            f"Another sync is writing to {path} right now{_holder_of(lock_path)}. Wait for it to finish and run "
            f"again (if no sync is running, the lock file {lock_path} is stale and may be deleted)."
        ) from None
    except OSError as exc:
        raise write_failure(path, exc) from None
    key = _lock_key(path)
    with _HELD_GUARD:
        _HELD.add(key)
    _write_holder(
        lock_path,
        f"{holder}, process {os.getpid()} on {socket.gethostname()}, since {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC",
    )
    try:
        yield
    finally:
        _write_holder(lock_path, "")
        with _HELD_GUARD:
            _HELD.discard(key)
        lock.release()


#: The longest holder description read from a lock file (it is ours, but any file may sit at that path).
_HOLDER_MAX = 300


def _write_holder(lock_path: Path, text: str) -> None:
    """Replace the lock file's content with ``text`` (best effort: the lock works without it)."""
    try:
        with open(lock_path, "r+", encoding="utf-8") as handle:
            handle.truncate(0)
            handle.write(text)
    except OSError:
        pass


def _writer_hint(path: Path, wait: float) -> str:
    """Why a reader could not open ``path`` within ``wait`` seconds: the writer the lock file names (a sync, a
    verify, a Warehouse opened for writing), or, when it names none, a writer outside the toolkit."""
    holder = _holder_of(Path(f"{path}.lock"))
    if holder:
        return (
            f"another process holds it for writing{holder} and did not make room within {wait:.0f} s; try again, "
            "or wait for it to finish"
        )
    return (
        "another process holds it for writing and the toolkit's lock file names no writer: a DuckDB client that "
        "opened it read-write (DBeaver, the duckdb CLI, a notebook's duckdb.connect); close it and run again"
    )


def _holder_of(lock_path: Path) -> str:
    """`` (held by ...)`` from the lock file, or nothing when it names no holder."""
    try:
        with open(lock_path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(_HOLDER_MAX + 1)
    except OSError:
        return ""
    text = " ".join(text.split())
    if not text:
        return ""
    return f" (held by {text[:_HOLDER_MAX]})"
