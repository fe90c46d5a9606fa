"""Loaders: the organisation's resources -> Arrow batches -> the DuckDB warehouse.

Order of a run: networks, channels (archived too), wallets (archived too), then per channel its watchers (list and
detail), operations with their transactions, queries, and its event log. Every page is converted to an Arrow batch
and upserted in one transaction together with the cursor of its stream, so a run killed at any point leaves the
warehouse as it was after the last committed page, and the next run resumes from there.

Events are read forward from each channel's saved message offset; pages are deduplicated by ``event_id`` (the table
key), so overlap between runs is harmless. A gap in a channel's offsets is re-read once and recorded in
``sync_runs.gaps`` if it survives.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tqdm.auto import tqdm

from .api import Client, Page
from .config import Settings
from .errors import ChainopsError
from .warehouse import RejectedRecord, Warehouse, sync_lock, to_batch, transaction_records
from .warehouse.models import refresh_models

EVENT_PAGE_LIMIT = 200


@dataclass
class SyncResult:
    """What one sync run did: the audit row of ``sync_runs``."""

    run_id: str
    started_at: datetime
    finished_at: datetime | None = None
    outcome: str = "running"
    requests: int = 0
    retries: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    rejected: list[str] = field(default_factory=list)
    gaps: dict[str, list[list[int]]] = field(default_factory=dict)
    message: str | None = None

    @property
    def seconds(self) -> float:
        """Wall time of the run."""
        end = self.finished_at or datetime.now(UTC)
        return (end - self.started_at).total_seconds()

    def summary(self) -> str:
        """A few human lines: rows per table, requests, retries, time."""
        rows = ", ".join(f"{table} {n:,}" for table, n in sorted(self.rows.items())) or "nothing new"
        lines = [
            f"sync {self.outcome} in {self.seconds:.1f}s: {self.requests:,} requests, {self.retries:,} retries",
            f"rows written: {rows}",
        ]
        if self.rejected:
            lines.append(f"{len(self.rejected)} records rejected (see sync_runs.message); first: {self.rejected[0]}")
        if self.gaps:
            lines.append(f"offset gaps kept after a re-read: {self.gaps}")
        return "\n".join(lines)


class _Progress:
    """tqdm bars per stream, silent when asked or when output is not a terminal or notebook."""

    def __init__(self, quiet: bool) -> None:
        self.enabled = not quiet and _interactive()

    def bar(self, desc: str, unit: str = "rows") -> tqdm:
        return tqdm(desc=desc, unit=unit, disable=not self.enabled, leave=False, dynamic_ncols=True)


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class Loader:
    """One sync run against one warehouse (use :func:`sync`)."""

    def __init__(self, client: Client, warehouse: Warehouse, result: SyncResult, *, full: bool, quiet: bool) -> None:
        self.client = client
        self.wh = warehouse
        self.result = result
        self.full = full
        self.progress = _Progress(quiet)

    # ---- writing one page -----------------------------------------------------------------------------------

    def store(
        self,
        table: str,
        records: Sequence[dict[str, Any]],
        *,
        page: Page | None = None,
        defaults: dict[str, Any] | None = None,
        cursor: tuple[str, Any] | None = None,
    ) -> int:
        """Convert and upsert one page (and save ``cursor``) in one transaction; returns rows written."""
        batch, rejected = to_batch(table, records, defaults=defaults)
        tx_batch = None
        if table == "operations":
            tx_batch, tx_rejected = to_batch("operation_transactions", transaction_records(records))
            rejected += tx_rejected
        self._note_rejected(rejected, page)
        with self.wh.transaction():
            n = self.wh.upsert(table, batch)
            if tx_batch is not None:
                self.result.rows["operation_transactions"] += self.wh.upsert("operation_transactions", tx_batch)
            if cursor is not None:
                self.wh.set_cursor(*cursor)
        self.result.rows[table] += n
        return n

    def _note_rejected(self, rejected: list[RejectedRecord], page: Page | None) -> None:
        where = f" (from {page.describe()})" if page is not None else ""
        self.result.rejected.extend(f"{r}{where}" for r in rejected)

    # ---- streams --------------------------------------------------------------------------------------------

    def sync_networks(self) -> None:
        """The networks list (one page, no paging)."""
        self.store("networks", self.client.list_networks())

    def sync_pages(self, table: str, pages: Iterable[Page], desc: str, **kwargs: Any) -> list[dict[str, Any]]:
        """Store every page of a list; returns the records seen (for what depends on them)."""
        seen: list[dict[str, Any]] = []
        with self.progress.bar(desc) as bar:
            for page in pages:
                self.store(table, page.records, page=page, **kwargs)
                seen.extend(page.records)
                bar.update(len(page.records))
        return seen

    def sync_channel(self, channel_id: str) -> None:
        """A channel's watchers, operations (with transactions), queries and events."""
        defaults = {"channel_id": channel_id}
        summaries = self.sync_pages("watchers", self.client.watcher_pages(channel_id), "watchers", defaults=defaults)
        details = [self.client.get_watcher(channel_id, w["watcher_id"]) for w in summaries if "watcher_id" in w]
        if details:
            self.store("watchers", details, defaults=defaults)
        self.sync_pages("operations", self.client.operation_pages(channel_id), f"operations {channel_id[:8]}",
                        defaults=defaults)
        self.sync_pages("queries", self.client.query_pages(channel_id), f"queries {channel_id[:8]}", defaults=defaults)
        self.sync_events(channel_id)

    def sync_events(self, channel_id: str) -> None:
        """The channel's event log forward from the saved message offset, one transaction per page."""
        stream = f"events:{channel_id}"
        saved = None if self.full else self.wh.get_cursor(stream)
        start = int(saved["next_offset"]) if isinstance(saved, dict) and "next_offset" in saved else 0
        defaults = {"channel_id": channel_id}
        with self.progress.bar(f"events {channel_id[:8]}", unit="events") as bar:
            for page in self.client.event_pages(channel_id, start=start, limit=EVENT_PAGE_LIMIT):
                cursor = {"next_offset": page.next_offset}
                self.store("events", page.records, page=page, defaults=defaults, cursor=(stream, cursor))
                bar.update(len(page.records))
        self.check_gaps(channel_id)

    def check_gaps(self, channel_id: str) -> None:
        """Re-read once any hole in the channel's stored offsets; record holes that survive."""
        holes = self._holes(channel_id)
        for lo, hi in holes:
            for page in self.client.event_pages(channel_id, start=lo, limit=EVENT_PAGE_LIMIT):
                self.store("events", page.records, page=page, defaults={"channel_id": channel_id})
                if page.next_offset is None or page.next_offset > hi:
                    break
        left = self._holes(channel_id) if holes else []
        if left:
            self.result.gaps[channel_id] = [list(h) for h in left]

    def _holes(self, channel_id: str) -> list[tuple[int, int]]:
        rows = self.wh.con.execute(
            """
            SELECT prev + 1 AS lo, "offset" - 1 AS hi FROM (
                SELECT "offset", lag("offset") OVER (ORDER BY "offset") AS prev
                FROM events WHERE channel_id = ? AND "offset" IS NOT NULL
            ) WHERE "offset" - prev > 1 ORDER BY lo
            """,
            [channel_id],
        ).fetchall()
        return [(int(lo), int(hi)) for lo, hi in rows]

    def run(self, channels: Sequence[str] | None) -> None:
        """Every stream, in dependency order."""
        self.sync_networks()
        all_channels = self.sync_pages("channels", self.client.channel_pages(), "channels")
        self.sync_pages("wallets", self.client.wallet_pages(), "wallets")
        ids = [c["channel_id"] for c in all_channels if isinstance(c.get("channel_id"), str)]
        if channels:
            wanted = set(channels)
            unknown = wanted - set(ids)
            if unknown:
                raise ChainopsError(
                    f"No channel with id {', '.join(sorted(unknown))} in this organisation; "
                    "run `chainops sql \"select channel_id, name from channels\"` to list them."
                )
            ids = [i for i in ids if i in wanted]
        for channel_id in ids:
            self.sync_channel(channel_id)


def sync(
    settings: Settings | None = None,
    *,
    client: Client | None = None,
    warehouse: str | None = None,
    channels: Sequence[str] | None = None,
    full: bool = False,
    quiet: bool = False,
) -> SyncResult:
    """Sync the organisation into the warehouse and return what the run did.

    ``settings`` (default: from the environment) names the service, key and warehouse; pass ``client`` to reuse
    one. ``channels`` limits the per-channel streams; ``full`` ignores saved cursors. Raises a
    :class:`~toolkit.errors.ChainopsError` that says what failed and what to do; the run is recorded in
    ``sync_runs`` either way.
    """
    settings = settings or Settings.load(warehouse=warehouse)
    path = warehouse or settings.warehouse
    own_client = client is None
    client = client or Client.from_settings(settings)
    result = SyncResult(run_id=str(uuid.uuid4()), started_at=datetime.now(UTC))
    requests0, retries0 = client.requests, client.retries
    try:
        with sync_lock(path), Warehouse(path) as wh:
            _write_run(wh, result, client.base_url, full)
            loader = Loader(client, wh, result, full=full, quiet=quiet)
            try:
                loader.run(channels)
                refresh_models(wh)
                result.outcome = "partial" if result.rejected or result.gaps else "ok"
            except BaseException as exc:
                result.outcome = "failed"
                result.message = str(exc) if isinstance(exc, ChainopsError) else f"{type(exc).__name__}: {exc}"
                raise
            finally:
                result.requests = client.requests - requests0
                result.retries = client.retries - retries0
                result.finished_at = datetime.now(UTC)
                if result.rejected and not result.message:
                    result.message = "; ".join(result.rejected[:20])
                _write_run(wh, result, client.base_url, full)
    finally:
        if own_client:
            client.close()
    return result


def _write_run(wh: Warehouse, result: SyncResult, base_url: str, full: bool) -> None:
    wh.con.execute(
        """
        INSERT OR REPLACE INTO sync_runs
        (run_id, started_at, finished_at, outcome, base_url, full_sync, requests, retries, rows_written, rejected,
         gaps, message)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        [
            result.run_id, result.started_at, result.finished_at, result.outcome, base_url, full, result.requests,
            result.retries, json.dumps(dict(result.rows)), len(result.rejected), json.dumps(result.gaps),
            result.message,
        ],
    )

