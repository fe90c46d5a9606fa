"""The one parser of times, ages and durations for the whole toolkit (metrics, report, dashboard, command line).

- A *time* is a datetime, a ``pd.Timestamp``, an ISO 8601 string (a naive one is UTC), or an *age* counted back
  from an anchor: ``7d``, ``12h``, ``30m``, ``7days``, ``2 weeks``, ``yesterday`` (midnight UTC of the day before
  the anchor's day) or ``now``/``today``.
- A *duration* (a bucket width, an age) is ``15m``, ``1h``, ``1d``, ``1w``, ``7days``, whole seconds or a
  timedelta.
- A *period* ``[since, until)`` reads ``until`` first (an age counts back from now) and then ``since`` counting back
  from ``until``, so ``--since 1d --until 2026-01-01`` is the last day of 2025 in every command.

Every time comes back tz-aware in UTC. :class:`Period` is a period parsed once, carried to the SQL and back to what
shows the result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

TimeLike = datetime | str | pd.Timestamp | None
DurationLike = str | int | timedelta | pd.Timedelta

#: Seconds per unit; every spelling of a unit maps to one entry.
_UNIT_SECONDS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86_400,
    "day": 86_400,
    "days": 86_400,
    "w": 604_800,
    "wk": 604_800,
    "week": 604_800,
    "weeks": 604_800,
}
#: The forms a time may take, as error messages list them.
TIME_FORMS = (
    "an ISO date or time (2026-01-01, 2026-01-01 12:00, 2026-01-01T12:00:00Z; UTC when no zone is given), "
    "an age (7d, 7 days, 12h, 90min, 30s, 2 weeks, '3 days ago'), or now, today, yesterday"
)
#: The forms a duration may take.
DURATION_FORMS = "a number and a unit: 15m, 90min, 1h, 12 hours, 1d, 7 days, 1w (units s, min, h, d, w)"
_AGE_RE = re.compile(r"^\s*(\d+)\s*([a-z]+)\s*(?:ago)?\s*$", re.I)


def now_utc() -> pd.Timestamp:
    """The wall-clock time in UTC, to the second."""
    return pd.Timestamp.now(tz="UTC").floor("s")


def age_seconds(text: str) -> int | None:
    """Seconds of an age such as ``7d``, ``12h``, ``7days`` or ``2 weeks``; None when ``text`` is not an age."""
    m = _AGE_RE.match(text)
    if not m or m.group(2).lower() not in _UNIT_SECONDS:
        return None
    return int(m.group(1)) * _UNIT_SECONDS[m.group(2).lower()]


def parse_duration(value: DurationLike) -> int:
    """Whole seconds (at least 1) of ``15m``, ``1h``, ``1d``, ``1w``, ``7days``, an int of seconds or a timedelta.

    Raises ``ValueError`` naming the accepted forms.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, timedelta | pd.Timedelta):
        seconds = int(pd.Timedelta(value).total_seconds())
    elif isinstance(value, str) and (parsed := age_seconds(value)) is not None:
        seconds = parsed
    else:
        raise ValueError(f"not a duration: {value!r}; use {DURATION_FORMS}")
    if seconds < 1:
        raise ValueError(f"a duration must be at least one second, not {value!r}")
    return seconds


def parse_time(value: TimeLike, *, anchor: TimeLike = None) -> pd.Timestamp | None:
    """A tz-aware UTC timestamp from a datetime, an ISO string, or an age counted back from ``anchor``.

    Arguments: ``value`` (None gives None); ``anchor`` the time ages count back from (default: now). Raises
    ``ValueError`` for text that is neither.
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        base = parse_time(anchor) if anchor is not None else now_utc()
        assert base is not None
        if text == "now":
            return base
        if text == "today":
            return base.floor("D")
        if text == "yesterday":
            return base.floor("D") - pd.Timedelta(days=1)
        if (seconds := age_seconds(text)) is not None:
            return base - pd.Timedelta(seconds=seconds)
        try:
            ts = pd.Timestamp(value.strip())
        except ValueError:
            raise ValueError(f"not a time: {value!r}; use {TIME_FORMS}") from None
    else:
        ts = pd.Timestamp(value)
    if pd.isna(ts):
        raise ValueError(f"not a time: {value!r}")
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def parse_period(
    since: TimeLike, until: TimeLike, *, now: TimeLike = None
) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """The bounds of ``[since, until)``: ``until`` read first (ages count back from ``now``), then ``since``
    (ages count back from ``until`` when it is given, so the period is exactly that long).

    Returns ``(start, end)``, either None when not given. Raises ``ValueError`` when the period is empty.
    """
    end = parse_time(until, anchor=now)
    start = parse_time(since, anchor=end if end is not None else now)
    if start is not None and end is not None and start >= end:
        raise ValueError(f"the period is empty: since {start} is not before until {end}")
    return start, end


def _counts_from_clock(value: TimeLike) -> bool:
    """Whether a ``since``/``until`` as given counts from the wall clock (an age, ``now``, ``today``,
    ``yesterday``)."""
    if not isinstance(value, str):
        return False
    text = value.strip().lower()
    return text in ("now", "today", "yesterday") or age_seconds(text) is not None


def _iso(value: pd.Timestamp | None) -> str | None:
    return None if value is None else value.isoformat()


class Period(dict):
    """A period ``[start, end)`` parsed once (:meth:`parse`), as it travels from the caller to the SQL and back to
    whatever shows the result (a metric puts it in ``df.attrs["period"]``). Its attributes: ``start``/``end``
    tz-aware UTC (None: open), ``since``/``until`` as the caller gave them, and ``as_of``, the newest event of the
    data it was read against (None until known).

    It is also a dict of the same as ISO 8601 text (``since``, ``until``, ``as_of``: the bounds), so a result's
    ``attrs`` still go into Parquet and JSON (pandas writes them as JSON); :meth:`of` reads either back."""

    start: pd.Timestamp | None
    end: pd.Timestamp | None
    since: TimeLike
    until: TimeLike
    as_of: pd.Timestamp | None

    def __init__(
        self,
        start: pd.Timestamp | None = None,
        end: pd.Timestamp | None = None,
        since: TimeLike = None,
        until: TimeLike = None,
        as_of: pd.Timestamp | None = None,
    ) -> None:
        super().__init__(since=_iso(start), until=_iso(end), as_of=_iso(as_of))
        self.start, self.end, self.since, self.until, self.as_of = start, end, since, until, as_of

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self, k)!r}" for k in ("start", "end", "since", "until", "as_of"))
        return f"Period({shown})"

    @classmethod
    def parse(cls, since: TimeLike = None, until: TimeLike = None, *, now: TimeLike = None) -> Period:
        """The period of ``since``/``until`` as :func:`parse_period` reads them. Raises ``ValueError`` for a bad or
        empty period."""
        start, end = parse_period(since, until, now=now)
        return cls(start, end, since, until)

    @property
    def counts_from_clock(self) -> bool:
        """Whether the period counts back from the wall clock: ``since`` an age (or now/today/yesterday) and
        ``until`` not an absolute time."""
        return _counts_from_clock(self.since) and (self.until is None or _counts_from_clock(self.until))

    def to_attrs(self) -> dict[str, str | None]:
        """The ISO 8601 text of the bounds and as-of (``since``, ``until``, ``as_of``), the keys a result's
        ``attrs`` held before the period was an object."""
        return dict(self)

    @classmethod
    def of(cls, attrs: Mapping[str, Any]) -> Period:
        """The period of a result's ``attrs``: its ``period`` object, else (a frame read back from a file) the ISO
        text of ``since``/``until``/``as_of``."""
        found = attrs.get("period")
        if isinstance(found, cls):
            return found
        text = found if isinstance(found, Mapping) else attrs
        start, end, as_of = (parse_time(text.get(k) or None) for k in ("since", "until", "as_of"))
        return cls(start, end, text.get("since"), text.get("until"), as_of)
