"""What every fetcher of one run shares (:class:`FetchContext`): the client and its request pool, reads of the
warehouse through the unit of work, the progress bars, and the run's notes (problems, rejected records, gaps).

It also turns parsed records into a :class:`~toolkit.loader.unit_of_work.Write` (:meth:`FetchContext.rows`),
converting them on the fetching thread and noting what the conversion rejected.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from .. import spec
from ..api import Client, Page
from ..api.concurrency import RequestPool
from ..errors import ApiError, InvalidIdError, NotFoundError, ResponseFormatError
from ..warehouse import RejectedRecord, Warehouse, to_batch, transaction_records
from ..warehouse.repeated_names import repeated_names_problem
from .progress import Progress
from .result import SyncResult
from .unit_of_work import Write

log = logging.getLogger("toolkit.loader")
T = TypeVar("T")
A = TypeVar("A")

#: Reads the warehouse: runs a function of the :class:`~toolkit.warehouse.Warehouse` on the unit of work's thread,
#: after committing what has been written (:meth:`~toolkit.loader.unit_of_work.UnitOfWork.call`).
Reader = Callable[[Callable[[Warehouse], Any]], Any]


class _Unreadable:
    """The type of :data:`UNREADABLE`."""


#: What :meth:`FetchContext.fetch_each` gives for a record whose answer cannot be read.
UNREADABLE = _Unreadable()


class FetchContext:
    """The shared state of the fetchers of one run (see the module docstring).

    With more than one worker every request of the run goes through :attr:`pool`: at most ``workers`` in flight,
    and each walk reads ahead (see :class:`~toolkit.api.concurrency.ReadAhead`).
    """

    def __init__(
        self, client: Client, result: SyncResult, progress: Progress, read: Reader, *, workers: int, full: bool
    ) -> None:
        self.client = client
        self.result = result
        self.progress = progress
        self.read = read
        self.workers = workers
        self.full = full
        self.pool = RequestPool(workers) if workers > 1 else None
        self._rejected_seen: set[str] = set()
        #: Gaps recorded that the service did not confirm empty (a page that could not be read, a rejected event):
        #: something may be missing there, so the next run's safety net is due.
        self.open_gaps = 0

    def close(self) -> None:
        """Stop the request pool."""
        if self.pool is not None:
            self.pool.close()

    # ---- requests ------------------------------------------------------------------------------------------

    def call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``: on the request pool when there is one (so it counts among the requests in
        flight), else here."""
        return self.pool.call(fn, *args, **kwargs) if self.pool is not None else fn(*args, **kwargs)

    def map(self, fn: Callable[[A], T], items: Sequence[A]) -> list[T]:
        """``fn`` of each item, concurrently on the request pool when there is one."""
        return self.pool.map(fn, items) if self.pool is not None else [fn(item) for item in items]

    def fetch_each(
        self, keys: Sequence[tuple[str, str]], get: Callable[[str, str], dict[str, Any]]
    ) -> list[dict[str, Any] | _Unreadable | None]:
        """GET each ``(channel_id, id)`` concurrently; a 404 gives ``None`` (the record vanished), an answer that
        cannot be read even after the retries, or that refuses the channel (``spec.CHANNEL_REFUSED_STATUSES`` but
        404), gives :data:`UNREADABLE` and a problem naming the request (the run is ``partial``; the caller asks
        again next run)."""

        def one(key: tuple[str, str]) -> dict[str, Any] | _Unreadable | None:
            try:
                return get(*key)
            except NotFoundError:
                return None
            except ResponseFormatError as exc:
                self.problem(f"{exc} (asked again next run)")
                return UNREADABLE
            except InvalidIdError as exc:  # nothing sent: it would leave its own path
                self.problem(f"{exc} (GET of {key[1]!r} in channel {key[0]!r}; kept queued)")
                return UNREADABLE
            except ApiError as exc:  # refused (403, 410, ...): not gone, so asked again; other channels go on
                if exc.status not in spec.CHANNEL_REFUSED_STATUSES:
                    raise
                self.problem(f"{exc} (asked again next run)")
                return UNREADABLE

        if not keys:
            return []
        return self.map(one, keys)

    # ---- conversion ----------------------------------------------------------------------------------------

    def rows(
        self,
        table: str,
        records: Sequence[dict[str, Any]],
        *,
        page: Page | None = None,
        defaults: dict[str, Any] | None = None,
        cursor: tuple[str, Any] | None = None,
        done_refetch: tuple[str, Sequence[str]] | None = None,
    ) -> Write:
        """Records of ``table`` converted here, as a :class:`Write` with their cursor and refetch bookkeeping
        (what the conversion rejected or changed is noted with ``page``'s request)."""
        batch, rejected = to_batch(table, records, defaults=defaults)
        tx_batch = None
        if table == "operations":
            tx_batch, tx_rejected = to_batch("operation_transactions", transaction_records(records))
            rejected += tx_rejected
        self.note_rejected(rejected, page)
        self.note_invalid(table, batch, page)
        return Write(table, batch, cursor=cursor, transactions=tx_batch, done_refetch=done_refetch)

    # ---- notes ---------------------------------------------------------------------------------------------

    def problem(self, text: str) -> None:
        """Record a problem of the run (it ends ``partial``)."""
        log.warning("%s", self.client.redact(text))
        self.result.problems.append(text)

    def gap(self, channel_id: str, lo: int, hi: int, *, confirmed_empty: bool = False) -> None:
        """Record offsets ``lo..hi`` of a channel's event log as not stored; ``confirmed_empty`` when the service
        served past them without them (nothing is there to read: such a gap alone does not make the next run's
        safety net due)."""
        self.result.gaps.setdefault(channel_id, []).append([lo, hi])
        if not confirmed_empty:
            self.open_gaps += 1

    def note_rejected(self, rejected: Sequence[RejectedRecord | str], page: Page | None) -> None:
        """Record records left out (each once: the gap pass re-reads the hole a rejected event leaves)."""
        where = f" (from {page.describe()})" if page is not None else ""
        for text in (f"{r}{where}" for r in rejected):
            if text not in self._rejected_seen:
                self._rejected_seen.add(text)
                self.result.rejected.append(text)

    def note_invalid(self, table: str, batch: pa.RecordBatch | pa.Table, page: Page | None) -> None:
        """Values not of the documented type are kept verbatim under ``extra._invalid`` (a number where text belongs
        stored as its exact digits, a fraction rounded down, a value no column can hold as NULL): stored changed,
        so the run is ``partial`` and says which request brought them. So are event payloads that repeated a name
        (stored as their last-value reading, see :mod:`toolkit.warehouse.repeated_names`)."""
        if "extra" not in batch.schema.names:
            return
        repeated = repeated_names_problem(table, batch, f" (from {page.describe()})" if page is not None else "")
        if repeated is not None:
            self.problem(repeated)
        extra = batch.column("extra")
        marked = pc.fill_null(pc.match_substring(extra, '"_invalid"'), False)
        count = pc.sum(marked).as_py() or 0
        if not count:
            return
        first = json.loads(extra.filter(marked)[0].as_py()).get("_invalid", {})
        fields = ", ".join(sorted(first)) if isinstance(first, dict) else "?"
        where = f" (from {page.describe()})" if page is not None else ""
        self.problem(
            f"{count} {table} record(s) held values of another type than documented, stored converted and kept "
            f"verbatim under extra._invalid (first: {fields}){where}"
        )

    def note_page(self, page: Page) -> None:
        """Record what a page reports: items left out (rejected, with the request) and why a walk stopped early."""
        self.note_rejected(page.rejected, page)
        if page.problem is not None:
            self.problem(f"{page.describe()}: {page.problem}")
