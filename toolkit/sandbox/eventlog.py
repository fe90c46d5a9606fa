"""A channel's append-only event log: pre-serialised JSON bytes per event, indexed by offset, type and time.

Events are stored back to back in one ``bytearray``, each followed by a comma, so a page of consecutive offsets is a
single slice and any other page is a join of slices: serving never encodes JSON. Payload timestamps are appended in
non-decreasing order (the engine runs transitions in time order), so time filters are bisections. Proof signatures
appended as :class:`~toolkit.sandbox.don.PendingSignature` are written as placeholders of their final length and
made in place the first time their event is read.
"""

from __future__ import annotations

import json
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from toolkit.sandbox.don import PLACEHOLDER, PendingSignature
from toolkit.spec import EVENT_TYPES

TYPE_CODE: dict[str, int] = {t: i for i, t in enumerate(EVENT_TYPES)}
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


@dataclass(frozen=True)
class EventMeta:
    """Searchable facts of one event beyond its type and timestamp."""

    status: str | None
    subject: str
    chain_selector: str
    address: str | None = None
    #: ``wallet_operation_id`` for operation events, the event name for ``watcher.event``
    extra: str | None = None
    service: str | None = None


@dataclass(frozen=True)
class TimeRange:
    """Bounds on the payload timestamp, each optional and inclusive as noted."""

    gt: int | None = None
    gte: int | None = None
    lt: int | None = None
    lte: int | None = None

    def contains(self, ts: int) -> bool:
        """Whether ``ts`` is inside every bound."""
        return (
            (self.gt is None or ts > self.gt)
            and (self.gte is None or ts >= self.gte)
            and (self.lt is None or ts < self.lt)
            and (self.lte is None or ts <= self.lte)
        )


class EventLog:
    """The events of one channel, offsets 0..n-1 contiguous."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._starts = array("q")
        self._ts = array("q")
        self._types = bytearray()
        self._status: list[str | None] = []
        self._chain: list[str] = []
        self._address: list[str | None] = []
        self._extra: list[str | None] = []
        self._service: list[str | None] = []
        self._by_type: dict[int, array] = {code: array("q") for code in TYPE_CODE.values()}
        self._by_id: dict[str, int] = {}
        #: event id by offset (a duplicate served at a later offset repeats its id; ``_by_id`` keeps the last)
        self._ids: list[str] = []
        self._by_subject: dict[str, array] = {}
        self._last_ts = 0
        #: offset -> the signatures still to make in its bytes: (position in the buffer, signature)
        self._unsigned: dict[int, list[tuple[int, PendingSignature]]] = {}

    def __len__(self) -> int:
        return len(self._starts)

    @property
    def nbytes(self) -> int:
        """Bytes of serialised events held."""
        return len(self._buf)

    def append(self, event_id: str, event_type: str, payload: dict, proofs: list, ts: int, meta: EventMeta) -> int:
        """Serialise and store one event; answer its offset."""
        offset = len(self._starts)
        body = _dumps(
            {
                "event_id": event_id,
                "headers": {"type": event_type, "offset": offset, "proofs": proofs},
                "payload": payload,
            }
        )
        start = len(self._buf)
        self._starts.append(start)
        encoded = body.encode()
        pending = [
            s for p in proofs if isinstance(p, dict) for s in p.get("signatures") or () if type(s) is PendingSignature
        ]
        if pending:
            marker, at, spots = PLACEHOLDER.encode(), 0, []
            for sig in pending:
                at = encoded.index(marker, at)
                spots.append((start + at, sig))
                at += len(marker)
            self._unsigned[offset] = spots
        self._buf += encoded
        self._buf += b","
        self._last_ts = max(self._last_ts, ts)
        self._ts.append(self._last_ts)
        code = TYPE_CODE[event_type]
        self._types.append(code)
        self._by_type[code].append(offset)
        self._status.append(meta.status)
        self._chain.append(meta.chain_selector)
        self._address.append(meta.address)
        self._extra.append(meta.extra)
        self._service.append(meta.service)
        self._by_id[event_id] = offset
        self._ids.append(event_id)
        subject = self._by_subject.get(meta.subject)
        if subject is None:
            subject = self._by_subject[meta.subject] = array("q")
        subject.append(offset)
        return offset

    # -- reading ---------------------------------------------------------------------------------------------------

    def _sign(self, offsets: Iterable[int]) -> None:
        """Make the pending signatures of these events in place (same length: no offset moves)."""
        if not self._unsigned:
            return
        for offset in offsets:
            spots = self._unsigned.pop(offset, None)
            for at, sig in spots or ():
                self._buf[at : at + len(PLACEHOLDER)] = sig.make().encode()

    def _end(self, offset: int) -> int:
        nxt = offset + 1
        return (self._starts[nxt] if nxt < len(self._starts) else len(self._buf)) - 1

    def event_bytes(self, offset: int) -> bytes:
        """The serialised event at ``offset``."""
        self._sign((offset,))
        return bytes(self._buf[self._starts[offset] : self._end(offset)])

    def offset_of(self, event_id: str) -> int | None:
        """The offset of an event id, or ``None``."""
        return self._by_id.get(event_id)

    def render(self, offsets: list[int]) -> bytes:
        """The events at ``offsets`` as the inside of a JSON array (comma separated)."""
        if not offsets:
            return b""
        self._sign(offsets)
        first, last = offsets[0], offsets[-1]
        if last - first == len(offsets) - 1:  # consecutive ascending: one slice
            return bytes(self._buf[self._starts[first] : self._end(last)])
        buf, starts, end = self._buf, self._starts, self._end
        return b",".join([buf[starts[o] : end(o)] for o in offsets])

    def all_events(self) -> Iterator[dict]:
        """Every event, decoded, in offset order (for test views, not for serving)."""
        for offset in range(len(self._starts)):
            yield json.loads(self.event_bytes(offset))

    def index(self) -> list[tuple[int, str, str, int]]:
        """(offset, event_id, type, indexed timestamp) of every event in offset order, from the index alone: nothing
        decoded, no signature made."""
        names = EVENT_TYPES
        return [(o, i, names[t], ts) for o, (i, t, ts) in enumerate(zip(self._ids, self._types, self._ts, strict=True))]

    def type_of(self, offset: int) -> str:
        """The type of the event at ``offset``."""
        return EVENT_TYPES[self._types[offset]]

    def ts_of(self, offset: int) -> int:
        """The (indexed) timestamp of the event at ``offset``."""
        return self._ts[offset]

    def bounds(self, start: int, times: TimeRange | None) -> tuple[int, int]:
        """The offset window ``[lo, hi)`` from ``start`` that the time bounds allow."""
        lo, hi = max(start, 0), len(self._starts)
        if times is not None:
            if times.gt is not None:
                lo = max(lo, bisect_right(self._ts, times.gt))
            if times.gte is not None:
                lo = max(lo, bisect_left(self._ts, times.gte))
            if times.lt is not None:
                hi = min(hi, bisect_left(self._ts, times.lt))
            if times.lte is not None:
                hi = min(hi, bisect_right(self._ts, times.lte))
        return lo, hi

    def _candidates(
        self, lo: int, hi: int, types: frozenset[str] | None, descending: bool, subject: str | None = None
    ) -> Iterable[int]:
        if subject is not None:  # the subject's own (short) offset list, filtered by type
            arr = self._by_subject.get(subject, array("q"))
            a, b = bisect_left(arr, lo), bisect_left(arr, hi)
            codes = None if types is None else {TYPE_CODE[t] for t in types if t in TYPE_CODE}
            picked = [o for o in arr[a:b] if codes is None or self._types[o] in codes]
            return reversed(picked) if descending else picked
        if types is None or len(types) == len(TYPE_CODE):
            return range(hi - 1, lo - 1, -1) if descending else range(lo, hi)
        arrays = [self._by_type[TYPE_CODE[t]] for t in types if t in TYPE_CODE]
        spans = []
        for arr in arrays:
            a, b = bisect_left(arr, lo), bisect_left(arr, hi)
            if a < b:
                spans.append((arr, a, b))
        if len(spans) == 1:
            arr, a, b = spans[0]
            return (arr[i] for i in range(b - 1, a - 1, -1)) if descending else arr[a:b]
        merged = sorted(o for arr, a, b in spans for o in arr[a:b])
        return reversed(merged) if descending else merged

    def select(
        self,
        start: int,
        limit: int,
        *,
        types: frozenset[str] | None = None,
        times: TimeRange | None = None,
        match: Callable[[int], bool] | None = None,
        descending: bool = False,
        subject: str | None = None,
    ) -> tuple[list[int], bool]:
        """Offsets of up to ``limit`` matching events, and whether more match beyond them.

        Ascending from offset ``start``; or, with ``descending``, newest first from the end. ``subject`` limits the
        events to one operation/query/watcher/wallet id (through its index); ``match`` checks the other filters.
        """
        lo, hi = self.bounds(start, times)
        if lo >= hi:
            return [], False
        if types is None and match is None and subject is None:
            if descending:
                first = max(lo, hi - limit)
                return list(range(hi - 1, first - 1, -1)), first > lo
            last = min(hi, lo + limit)
            return list(range(lo, last)), last < hi
        out: list[int] = []
        for offset in self._candidates(lo, hi, types, descending, subject):
            if match is None or match(offset):
                if len(out) == limit:
                    return out, True
                out.append(offset)
        return out, False

    def matcher(
        self,
        *,
        status: frozenset[str] | None = None,
        chains: frozenset[str] | None = None,
        addresses: frozenset[str] | None = None,
        extra: str | None = None,
        services: frozenset[str] | None = None,
    ) -> Callable[[int], bool] | None:
        """A predicate over offsets for the given filters (``None`` when there are none). Addresses compare
        case-insensitively (pass them lower-cased)."""
        checks: list[Callable[[int], bool]] = []
        if status is not None:
            checks.append(lambda o, s=self._status: s[o] in status)
        if chains is not None:
            checks.append(lambda o, s=self._chain: s[o] in chains)
        if addresses is not None:
            checks.append(lambda o, s=self._address: s[o] is not None and s[o].lower() in addresses)
        if extra is not None:
            checks.append(lambda o, s=self._extra: s[o] == extra)
        if services is not None:
            checks.append(lambda o, s=self._service: s[o] in services)
        if not checks:
            return None
        if len(checks) == 1:
            return checks[0]
        return lambda o: all(c(o) for c in checks)
