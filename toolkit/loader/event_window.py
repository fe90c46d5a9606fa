"""Event windows: which part of each channel's event log the warehouse holds, and the search walks that grow it.

``chainops sync --since 30d --event-type operation.status`` reads channels' event logs through event search
(``created.gte``, ``type``) instead of the whole log through poll. What a channel holds is a *window*: every event
of its ``types`` (``None``: all) created at or after ``since`` (``None``: the log's start). The window is saved in
``sync_state`` under ``events_window:<channel_id>`` (and the warehouse's default, for channels that appear later,
under ``events_window``), in the same transaction as the events it covers.

Windows only grow: a run asks for ``since``/``types`` and each channel's window becomes the union of what it holds
and what was asked (an earlier ``since`` fills in the older part, new types are read from ``since`` on); a
narrower request keeps what is held. A run without flags keeps each window and continues it:

- a window of **all types** continues with the poll cursor (offsets are one contiguous sequence per channel, so
  every event after the highest offset read belongs to the window), and its offsets are checked for holes from
  the first one it holds;
- a window of **some types** continues through search (poll has no filters) from the newest payload time read,
  less :data:`OVERLAP_SECONDS` (re-read events are deduplicated by ``event_id``); its offsets have holes by design
  and are not checked.

This module is pure: the state, the plan of walks and how each page moves the state;
:mod:`toolkit.loader.fetchers.event_windows` runs the walks.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from .. import spec
from ..errors import UsageError
from ..times import parse_time

#: A type-subset window continues its search from the newest payload time read, less this: an event becomes
#: searchable a little after the transition it reports (its ``created`` time is at or after its payload
#: ``timestamp``), so the overlap covers events that were written late. Re-read events are deduplicated.
OVERLAP_SECONDS = 600
#: ``--since all``: the whole log (no ``created`` bound).
ALL = "all"
#: The sync_state stream of a channel's window, and of the warehouse's default window.
STREAM = "events_window"


def stream_of(channel_id: str) -> str:
    """The ``sync_state`` stream holding a channel's window."""
    return f"{STREAM}:{channel_id}"


# ---- what a run asks for ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """A part of an event log: events of ``types`` (``None``: all) created at or after ``since`` (unix seconds;
    ``None``: from the log's start)."""

    since: int | None = None
    types: frozenset[str] | None = None

    @property
    def whole(self) -> bool:
        """Whether this is the whole log."""
        return self.since is None and self.types is None

    def holds(self, other: Window) -> bool:
        """Whether every event of ``other`` is in this window."""
        since_ok = self.since is None or (other.since is not None and other.since >= self.since)
        types_ok = self.types is None or (other.types is not None and other.types <= self.types)
        return since_ok and types_ok

    def grow(self, other: Window | None) -> Window:
        """The smallest window holding both."""
        if other is None:
            return self
        since = None if self.since is None or other.since is None else min(self.since, other.since)
        types = None if self.types is None or other.types is None else self.types | other.types
        return Window(since, None if types is not None and set(types) >= set(spec.EVENT_TYPES) else types)

    def to_json(self) -> dict[str, Any]:
        """The window as JSON for ``sync_state``."""
        return {"since": self.since, "types": None if self.types is None else sorted(self.types)}

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> Window | None:
        """A window read back from :meth:`to_json` (``None`` stays ``None``)."""
        if value is None:
            return None
        types = value.get("types")
        return cls(value.get("since"), None if types is None else frozenset(types))

    def describe(self) -> str:
        """``operation.status, query.status since 2026-01-01 00:00 UTC`` and the like."""
        what = "all event types" if self.types is None else ", ".join(sorted(self.types))
        when = "the log's start" if self.since is None else _show(self.since)
        return f"{what} since {when}"


def _show(seconds: int) -> str:
    return pd.Timestamp(seconds, unit="s", tz="UTC").strftime("%Y-%m-%d %H:%M:%S UTC")


def parse_since(value: Any) -> int | None:
    """The start of a window: ``all`` (the whole log: ``None``), an age (``30d``), an ISO time, a datetime or unix
    seconds (an int), as unix seconds. Raises :class:`~toolkit.errors.UsageError` naming the accepted forms."""
    if isinstance(value, str) and value.strip().lower() == ALL:
        return None
    if isinstance(value, int) and not isinstance(value, bool):  # unix seconds, from Python
        return value
    try:
        ts = parse_time(value)
    except ValueError as exc:
        raise UsageError(f"--since: {exc}; or 'all' for the whole log") from None
    if ts is None:
        return None
    return int(ts.timestamp()) if ts.timestamp() == int(ts.timestamp()) else int(ts.ceil("s").timestamp())


def parse_event_types(values: Iterable[str] | None) -> frozenset[str] | None:
    """The event types asked for (``None`` when none, or when all are); an unknown one is a
    :class:`~toolkit.errors.UsageError` listing the known ones."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    chosen = [v.strip() for raw in values for v in str(raw).split(",") if v.strip()]
    for value in chosen:
        if value not in spec.EVENT_TYPES:
            close = difflib.get_close_matches(value, spec.EVENT_TYPES, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else "."
            raise UsageError(f"unknown --event-type {value!r}{hint} Known values: {', '.join(spec.EVENT_TYPES)}.")
    if not chosen or set(chosen) >= set(spec.EVENT_TYPES):
        return None
    return frozenset(chosen)


@dataclass(frozen=True)
class Ask:
    """What a run asks for: a window start and/or event types. A part not given keeps what is held."""

    since: int | None = None
    types: frozenset[str] | None = None
    since_given: bool = False
    types_given: bool = False

    def apply(self, base: Window | None) -> Window:
        """The window that holds ``base`` (``None``: nothing held yet) and what is asked."""
        if base is None:
            return Window(self.since if self.since_given else None, self.types if self.types_given else None)
        asked = Window(self.since if self.since_given else base.since, self.types if self.types_given else base.types)
        return base.grow(asked)

    def to_json(self) -> dict[str, Any]:
        """What was asked, as JSON (a part not given is absent)."""
        out: dict[str, Any] = {}
        if self.since_given:
            out["since"] = self.since
        if self.types_given:
            out["types"] = None if self.types is None else sorted(self.types)
        return out


def requested(since: Any = None, event_types: Iterable[str] | None = None) -> Ask | None:
    """What a run asks for (``since``/``event_types`` as :func:`sync` takes them), or ``None`` for a run that asks
    for nothing (it keeps what each channel holds). Raises :class:`~toolkit.errors.UsageError` for a bad value."""
    if since is None and event_types is None:
        return None
    return Ask(
        None if since is None else parse_since(since),
        parse_event_types(event_types),
        since_given=since is not None,
        types_given=event_types is not None,
    )


# ---- what a channel holds, and the walks that grow it -------------------------------------------------------------


@dataclass
class Walk:
    """One event search: ``types`` (``None``: all) created in ``[gte, lt)`` (either bound optional), paged by
    message offset from ``offset``. ``max_offset``: the highest offset it has read."""

    types: frozenset[str] | None
    gte: int | None
    lt: int | None
    offset: int = 0
    max_offset: int | None = None

    @property
    def open_ended(self) -> bool:
        """Whether it reads up to the log's end (no upper bound)."""
        return self.lt is None

    def params(self) -> dict[str, Any]:
        """The search filters (``type`` repeated, ``created.*`` in unix seconds)."""
        return {
            "type": None if self.types is None else sorted(self.types),
            "created.gte": self.gte,
            "created.lt": self.lt,
        }

    def to_json(self) -> dict[str, Any]:
        """The walk as JSON for ``sync_state``."""
        return {
            "types": None if self.types is None else sorted(self.types),
            "gte": self.gte,
            "lt": self.lt,
            "offset": self.offset,
            "max_offset": self.max_offset,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Walk:
        """A walk read back from :meth:`to_json`."""
        types = value.get("types")
        return cls(
            None if types is None else frozenset(types),
            value.get("gte"),
            value.get("lt"),
            int(value.get("offset") or 0),
            value.get("max_offset"),
        )


@dataclass
class ChannelWindow:
    """A channel's window in ``sync_state``: what it holds, how far it has read, and the walks still to run.

    ``held`` is complete (every event of it up to ``read_to`` for a type subset, up to the poll cursor for all
    types); while ``walks`` remain, ``target`` is what they lead to, and ``held`` is what metrics may rely on.
    """

    held: Window | None = None
    #: The newest payload time (unix seconds) the held types are read to (a type subset continues from it).
    read_to: int | None = None
    #: Where the poll continues once a window of all types is walked (the highest offset walked + 1).
    poll_from: int | None = None
    target: Window | None = None
    walks: list[Walk] = field(default_factory=list)
    #: Newest payload time read by this plan's walks so far, and what it was when each open-ended walk ended.
    reached: int | None = None
    ends: list[int] = field(default_factory=list)
    #: For a plan that ends holding all types: the channel's newest offset before its walks began (-1: an empty
    #: log), and the highest offset its open-ended walks read. The poll continues after the higher of the two.
    floor: int | None = None
    top: int | None = None

    @property
    def busy(self) -> bool:
        """Whether walks remain (the poll and the gap check wait for them)."""
        return bool(self.walks)

    @property
    def subset(self) -> bool:
        """Whether the channel holds (or is growing to) only some event types: its offsets have holes by design."""
        window = self.target or self.held
        return window is not None and window.types is not None

    def to_json(self) -> dict[str, Any]:
        """The state as JSON for ``sync_state``."""
        return {
            "held": None if self.held is None else self.held.to_json(),
            "read_to": self.read_to,
            "poll_from": self.poll_from,
            "target": None if self.target is None else self.target.to_json(),
            "walks": [w.to_json() for w in self.walks],
            "reached": self.reached,
            "ends": list(self.ends),
            "floor": self.floor,
            "top": self.top,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> ChannelWindow | None:
        """The state read back from :meth:`to_json` (``None`` when the channel has none)."""
        if value is None:
            return None
        return cls(
            held=Window.from_json(value.get("held")),
            read_to=value.get("read_to"),
            poll_from=value.get("poll_from"),
            target=Window.from_json(value.get("target")),
            walks=[Walk.from_json(w) for w in value.get("walks") or []],
            reached=value.get("reached"),
            ends=[int(e) for e in value.get("ends") or []],
            floor=value.get("floor"),
            top=value.get("top"),
        )

    def copy(self) -> ChannelWindow:
        """A copy whose walks can be moved on independently."""
        return replace(self, walks=[replace(w) for w in self.walks], ends=list(self.ends))


def plan(
    state: ChannelWindow | None,
    *,
    polled: bool,
    asked: Ask | None,
    default: Window | None = None,
    reread: bool = False,
) -> ChannelWindow | None:
    """The walks one channel needs this run.

    ``state``: its saved window (``None``: never windowed); ``polled``: whether it has a poll cursor (it was synced
    whole); ``asked``: what the run asks for (``None``: nothing); ``default``: the warehouse's window, which a
    channel without one takes; ``reread``: ``--full``, read the window again from its start. Returns the new
    state, or ``None`` when the channel is (and stays) read whole through poll (a channel synced whole keeps its
    whole log: a window never shrinks what is held).
    """
    if state is None:
        wanted = asked.apply(default) if asked is not None else default
        if polled or wanted is None or wanted.whole:
            return None
        return _fresh(wanted)
    state = state.copy()
    if reread and state.held is not None:
        base = state.held.grow(state.target)
        walks = [Walk(base.types, base.since, None)]
        return ChannelWindow(
            held=state.held, read_to=state.read_to, poll_from=state.poll_from, target=base, walks=walks
        )
    # an unfinished plan is finished first; what it leads to is what the new request grows
    base = state.target if state.walks else state.held
    if base is None:  # a state with nothing held nor planned: as for a channel never windowed
        return plan(None, polled=polled, asked=asked, default=default)
    target = asked.apply(base) if asked is not None else base
    if state.walks:
        walks = state.walks
    elif base.types is None:  # all types: the poll continues it
        walks = []
    else:  # a type subset continues through search, from where it was read to (with overlap)
        start = state.read_to if state.read_to is not None else base.since
        if start is not None:
            start -= OVERLAP_SECONDS
            if base.since is not None:  # the overlap never reaches before the window: that is not held
                start = max(start, base.since)
        walks = [Walk(base.types, start, None)]
    if target != base:
        new_types = None if base.types is None else (set(spec.EVENT_TYPES) if target.types is None else target.types)
        new_types = None if new_types is None else frozenset(new_types - base.types)
        if new_types:  # types not held before: from the (new) start up to now
            walks.append(Walk(new_types, target.since, None))
        if base.since is not None and (target.since is None or target.since < base.since):
            walks.append(Walk(base.types, target.since, base.since))  # the older part of what is held
    if not walks:
        return replace(state, target=None, held=target)
    if state.walks:  # resumed: the plan's progress stands
        return replace(state, target=target, walks=walks)
    # the newest time read so far starts at where the window was read to: a continuation that finds nothing new
    # keeps that mark instead of moving it back by the overlap each run
    return replace(state, target=target, walks=walks, reached=state.read_to, ends=[], floor=None, top=None)


def _fresh(window: Window) -> ChannelWindow:
    """The plan of a channel that holds nothing yet: the window, from its start up to now."""
    return ChannelWindow(target=window, walks=[Walk(window.types, window.since, None)])


def advance(
    state: ChannelWindow, walk: int, *, next_offset: int, max_offset: int | None, max_ts: int | None, done: bool
) -> ChannelWindow:
    """The state after a committed page of walk ``walk``: where the walk continues, the newest time read, and,
    when the walk is ``done``, the plan finished if it was the last."""
    state = state.copy()
    current = state.walks[walk]
    current.offset = next_offset
    if max_offset is not None:
        current.max_offset = max(max_offset, current.max_offset if current.max_offset is not None else max_offset)
    if max_ts is not None:
        state.reached = max(max_ts, state.reached if state.reached is not None else max_ts)
    if not done:
        return state
    if current.open_ended:
        # an event this walk did not see was created after its last page was served, so after every payload
        # time read so far
        mark = state.reached if state.reached is not None else current.gte
        if mark is not None:
            state.ends.append(mark)
        if current.max_offset is not None:
            state.top = max(current.max_offset, state.top if state.top is not None else current.max_offset)
    del state.walks[walk]
    if state.walks:
        return state
    held = state.target or state.held
    read_to = min(state.ends) if state.ends else state.read_to
    poll_from = state.poll_from
    if held is not None and held.types is None and poll_from is None:
        starts = [x + 1 for x in (state.floor, state.top) if x is not None]
        poll_from = max(starts) if starts else None
    return ChannelWindow(held=held, read_to=read_to, poll_from=poll_from)


def needs_floor(state: ChannelWindow) -> bool:
    """Whether the walks lead to a window of all types that has no poll cursor yet: the channel's newest offset
    must be asked before they begin (events after it are polled; the walks read the window's older ones)."""
    return (
        state.busy
        and state.target is not None
        and state.target.types is None
        and state.poll_from is None
        and (state.floor is None)
    )


def dumps(state: ChannelWindow) -> str:
    """The state as JSON text (for messages and tests)."""
    return json.dumps(state.to_json(), sort_keys=True)


def describe_channels(states: Mapping[str, ChannelWindow]) -> str | None:
    """One line for the run's summary: the windows the channels hold (``None`` when every channel holds its whole
    log)."""
    windows = sorted({s.held.describe() for s in states.values() if s.held is not None and not s.held.whole})
    busy = sum(1 for s in states.values() if s.busy)
    if not windows and not busy:
        return None
    line = "event window: " + ("; ".join(windows) if windows else "not yet read")
    if busy:
        line += f" ({busy} channel(s) still filling it in: the next run continues)"
    return line


def summary_json(states: Mapping[str, ChannelWindow], asked: Ask | None) -> dict[str, Any] | None:
    """What ``sync_runs.event_window`` records for a run: the window asked for and each channel's window."""
    if asked is None and not states:
        return None
    return {
        "asked": None if asked is None else asked.to_json(),
        "channels": {cid: s.to_json() for cid, s in sorted(states.items())},
    }


__all__: Sequence[str] = [
    "ALL",
    "OVERLAP_SECONDS",
    "STREAM",
    "Ask",
    "ChannelWindow",
    "Walk",
    "Window",
    "advance",
    "describe_channels",
    "needs_floor",
    "parse_event_types",
    "parse_since",
    "plan",
    "requested",
    "stream_of",
    "summary_json",
]
