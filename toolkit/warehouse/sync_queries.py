"""The SQL a sync run needs beyond upserts and cursors: transaction control, the gap and refetch bookkeeping, what
the warehouse already holds, the audit row, the patch, memory and checkpoints.

A mixin of :class:`~toolkit.warehouse.Warehouse`: the loader's unit of work (:mod:`toolkit.loader.unit_of_work`)
calls these methods on its own thread and never touches the connection itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from . import patch
from .memory import raise_memory_limit, with_more_memory
from .schema import RAW_TABLES
from .write_seq import next_write_seq

if TYPE_CHECKING:
    _Base = Any
else:
    _Base = object


class SyncQueries(_Base):
    """Methods of :class:`~toolkit.warehouse.Warehouse` used by a sync run (see the module docstring)."""

    con: duckdb.DuckDBPyConnection
    _write_seq: int | None

    # ---- transactions ------------------------------------------------------------------------------------------

    def begin(self) -> None:
        """Open a transaction (see :meth:`commit`, :meth:`rollback`)."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            self._write_seq = next_write_seq(self.con)
        except BaseException:
            self.rollback()
            raise

    def commit(self) -> None:
        """Commit the open transaction."""
        self._write_seq = None
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        """Roll back the open transaction, if any (DuckDB drops a transaction whose COMMIT failed: no error then)."""
        self._write_seq = None
        with contextlib.suppress(duckdb.Error):
            self.con.execute("ROLLBACK")

    def save_cursors(self, cursors: Mapping[str, Any]) -> None:
        """Save streams' cursors that cover no rows (a plan saved before anything is read) in a transaction of their
        own, committed at once."""
        self.begin()
        try:
            self.set_cursors(cursors)
        except BaseException:
            self.rollback()
            raise
        self.commit()

    def drop_cursors(self, streams: Sequence[str]) -> None:
        """Forget the cursors of ``streams`` in a transaction of its own, committed at once."""
        if not streams:
            return
        self.begin()
        try:
            self.con.execute("DELETE FROM sync_state WHERE stream IN (SELECT unnest(?::VARCHAR[]))", [list(streams)])
        except BaseException:
            self.rollback()
            raise
        self.commit()

    # ---- what the warehouse holds ------------------------------------------------------------------------------

    def channel_ids(self) -> list[str]:
        """Every stored channel id, oldest channel first."""
        rows = self.con.execute("SELECT channel_id FROM channels ORDER BY created_at").fetchall()
        return [c for (c,) in rows if c is not None]

    def watcher_states(self) -> dict[str, tuple[Any, Any]]:
        """``watcher_id -> (name, status)`` of every stored watcher."""
        rows = self.con.execute("SELECT watcher_id, name, status FROM watchers").fetchall()
        return {wid: (name, status) for wid, name, status in rows}

    def watchers_moved_since(self, write_seq: int) -> tuple[list[tuple[str, str]], int | None]:
        """``(channel_id, watcher_id)`` of the watchers whose newest ``watcher.status`` event stored after
        ``write_seq`` reports a status other than the stored one (or that are not stored), and the highest
        ``write_seq`` of those events (``None`` when there are none)."""
        rows = self.con.execute(
            """
            WITH latest AS (
                SELECT channel_id, watcher_id, arg_max(status, "offset") AS status, max(write_seq) AS seq
                FROM events
                WHERE type = 'watcher.status' AND write_seq > ? AND watcher_id IS NOT NULL AND channel_id IS NOT NULL
                GROUP BY channel_id, watcher_id
            )
            SELECT l.channel_id, l.watcher_id, w.watcher_id IS NULL OR w.status IS DISTINCT FROM l.status, l.seq
            FROM latest l LEFT JOIN watchers w ON w.watcher_id = l.watcher_id
            ORDER BY l.channel_id, l.watcher_id
            """,
            [write_seq],
        ).fetchall()
        top = max((seq for *_, seq in rows), default=None)
        return [(cid, wid) for cid, wid, moved, _ in rows if moved], top

    def event_offsets(self, channel_id: str, event_ids: Iterable[str]) -> list[tuple[str, int | None]]:
        """``(event_id, offset)`` of the channel's stored events with one of ``event_ids``."""
        return self.con.execute(
            'SELECT event_id, "offset" FROM events WHERE channel_id = ? AND list_contains(?, event_id)',
            [channel_id, sorted(set(event_ids))],
        ).fetchall()

    def event_holes(self, channel_id: str, also_read: Iterable[int] = ()) -> list[tuple[int, int]]:
        """Runs ``(lo, hi)`` of offsets missing between the channel's stored event offsets (and ``also_read``,
        offsets counted as read although no row holds them)."""
        rows = self.con.execute(
            """
            SELECT prev + 1 AS lo, "offset" - 1 AS hi FROM (
                SELECT "offset", lag("offset") OVER (ORDER BY "offset") AS prev FROM (
                    SELECT "offset" FROM events WHERE channel_id = ? AND "offset" IS NOT NULL
                    UNION SELECT unnest(?::BIGINT[])
                )
            ) WHERE "offset" - prev > 1 ORDER BY lo
            """,
            [channel_id, sorted(also_read)],
        ).fetchall()
        return [(int(lo), int(hi)) for lo, hi in rows]

    def event_holes_of(self, channel_ids: Sequence[str]) -> dict[str, list[tuple[int, int]]]:
        """:meth:`event_holes` of many channels in one statement: channel -> its holes (channels without any are
        left out)."""
        rows = self.con.execute(
            """
            SELECT channel_id, prev + 1 AS lo, "offset" - 1 AS hi FROM (
                SELECT channel_id, "offset", lag("offset") OVER (PARTITION BY channel_id ORDER BY "offset") AS prev
                FROM (
                    SELECT DISTINCT channel_id, "offset" FROM events
                    WHERE channel_id IN (SELECT unnest(?::VARCHAR[])) AND "offset" IS NOT NULL
                )
            ) WHERE "offset" - prev > 1 ORDER BY channel_id, lo
            """,
            [list(channel_ids)],
        ).fetchall()
        out: dict[str, list[tuple[int, int]]] = {}
        for cid, lo, hi in rows:
            out.setdefault(str(cid), []).append((int(lo), int(hi)))
        return out

    def ids_in_statuses(self, table: str, channel_ids: Sequence[str], statuses: Sequence[str]) -> list[tuple[str, str]]:
        """``(channel_id, id)`` of the ``operations`` or ``queries`` rows of ``channel_ids`` held in ``statuses``."""
        (key,) = RAW_TABLES[table].key
        rows = self.con.execute(
            f"SELECT channel_id, {key} FROM {table} "
            "WHERE list_contains(?, channel_id) AND list_contains(?, status) ORDER BY 1, 2",
            [list(channel_ids), list(statuses)],
        ).fetchall()
        return [(str(c), str(i)) for c, i in rows]

    # ---- the refetch queue -------------------------------------------------------------------------------------

    def refetch_queue(self, kind: str, channel_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(channel_id, id)`` of the queued records of ``kind`` (operation, query) in ``channel_ids``, by id."""
        rows = self.con.execute(
            "SELECT channel_id, id FROM sync_refetch WHERE kind = ? AND list_contains(?, channel_id) ORDER BY id",
            [kind, list(channel_ids)],
        ).fetchall()
        return [(str(c), str(i)) for c, i in rows]

    def drop_refetched(self, kind: str, ids: Sequence[str]) -> None:
        """Take fetched records off the refetch queue (in the transaction that stored them)."""
        self.con.execute("DELETE FROM sync_refetch WHERE kind = ? AND list_contains(?, id)", [kind, list(ids)])

    def apply_new_events(self) -> int:
        """Move operations and queries forward from the events stored since the last patch (see
        :func:`toolkit.warehouse.patch.apply_new_events`); returns how many events it looked at."""
        return patch.apply_new_events(self.con)

    # ---- the audit row -----------------------------------------------------------------------------------------

    def record_sync_run(self, row: Mapping[str, Any]) -> None:
        """Insert or replace a run's row of ``sync_runs`` (keys: its column names)."""
        names = list(row)
        self.con.execute(
            f"INSERT OR REPLACE INTO sync_runs ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
            [row[n] for n in names],
        )

    def close_running_sync_runs(self, outcome: str, message: str) -> list[str]:
        """Give every run still ``running`` ``outcome`` and ``message`` (call only holding the sync lock: then no
        other run is running); returns their ids, oldest first."""
        rows = self.con.execute(
            "UPDATE sync_runs SET outcome = ?, message = coalesce(message || '; ', '') || ? "
            "WHERE outcome = 'running' RETURNING run_id, started_at",
            [outcome, message],
        ).fetchall()
        return [run_id for run_id, _ in sorted(rows, key=lambda r: (r[1] is None, r[1]))]

    # ---- memory and storage ------------------------------------------------------------------------------------

    def holds_events(self) -> bool:
        """Whether the warehouse holds any event (a first sync finds none)."""
        return bool(self.con.execute("SELECT EXISTS (SELECT 1 FROM events)").fetchone()[0])

    def memory_limit_setting(self) -> str:
        """DuckDB's current memory limit, as DuckDB writes it."""
        return str(self.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])

    def more_memory(self) -> bool:
        """Double the memory limit (kept across reopens), up to the ceiling; whether it went up."""
        if not raise_memory_limit(self.con):
            return False
        self.configure(memory_limit=self.memory_limit_setting())  # type: ignore[attr-defined]
        return True

    def checkpoint(self) -> None:
        """Write the WAL into the file (on one thread, then with more memory, should DuckDB run out)."""
        with_more_memory(lambda: self.con, lambda: self.con.execute("CHECKPOINT"))
