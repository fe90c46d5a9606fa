"""What part of each channel's event log the warehouse holds: the period and event types metrics may rely on.

A warehouse synced whole holds every event of every channel. One synced with ``chainops sync --since 30d`` or
``--event-type ...`` holds a *window* per channel (``sync_state`` stream ``events_window:<channel_id>``, written
by :mod:`toolkit.loader.event_window`): every event of its types created since its start. A rate over a period the
warehouse does not hold would be wrong, so metrics and reports read the coverage here and clip their period to it
(:func:`toolkit.metrics.common.clip_to_coverage`).

The JSON read here is the one :class:`toolkit.loader.event_window.ChannelWindow` writes: ``held`` = ``{"since": unix
seconds or null, "types": [..] or null}`` (null: all), plus ``read_to`` (unix seconds) and ``walks`` (unfinished).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .. import spec

#: The sync_state stream prefix of a channel's window (see toolkit.loader.event_window.STREAM).
WINDOW_STREAM = "events_window"


@dataclass(frozen=True)
class ChannelCoverage:
    """The events one channel holds: of ``types`` (``None``: all) created since ``since`` (``None``: its whole
    log). ``filling``: a run is still growing the window (what is held is complete; more is on its way)."""

    channel_id: str
    since: pd.Timestamp | None = None
    types: frozenset[str] | None = None
    filling: bool = False

    @property
    def whole(self) -> bool:
        """Whether the channel's whole log, every type, is held."""
        return self.since is None and self.types is None


@dataclass(frozen=True)
class Coverage:
    """The warehouse's coverage: per channel, and what every channel (of a selection) holds in common."""

    channels: Mapping[str, ChannelCoverage]

    def of(self, channels: Iterable[str] | None = None) -> Coverage:
        """The coverage of some channels only (``None``: all)."""
        if channels is None:
            return self
        wanted = set(channels)
        return Coverage({c: v for c, v in self.channels.items() if c in wanted})

    @property
    def whole(self) -> bool:
        """Whether every channel holds its whole log (the warehouse was never windowed)."""
        return all(c.whole for c in self.channels.values())

    @property
    def since(self) -> pd.Timestamp | None:
        """The start of the period every channel holds: the latest window start (``None``: the logs' start)."""
        starts = [c.since for c in self.channels.values() if c.since is not None]
        return max(starts) if starts else None

    @property
    def types(self) -> frozenset[str] | None:
        """The event types every channel holds (``None``: all)."""
        sets = [c.types for c in self.channels.values() if c.types is not None]
        if not sets:
            return None
        common = frozenset.intersection(*sets)
        return common

    def holds_type(self, event_type: str) -> bool:
        """Whether every channel holds events of ``event_type``."""
        return self.types is None or event_type in self.types

    def describe(self) -> str:
        """One line: ``events of all types since 2026-01-01 00:00 UTC`` or ``the whole event log``."""
        if self.whole:
            return "the whole event log of every channel"
        what = "all types" if self.types is None else ", ".join(t for t in spec.EVENT_TYPES if t in self.types)
        when = "the logs' start" if self.since is None else self.since.strftime("%Y-%m-%d %H:%M UTC")
        filling = sum(1 for c in self.channels.values() if c.filling)
        tail = f" ({filling} channel(s) still filling in a wider window)" if filling else ""
        return f"events of {what} created since {when}{tail}"

    def to_attrs(self) -> dict[str, Any]:
        """The coverage as plain values, for a result's ``attrs`` or a report."""
        return {
            "whole": self.whole,
            "since": None if self.since is None else self.since.isoformat(),
            "types": None if self.types is None else sorted(self.types),
            "text": self.describe(),
        }


def _channel(channel_id: str, state: Mapping[str, Any]) -> ChannelCoverage:
    held = state.get("held") or None
    if held is None:  # the first walk has not finished: nothing complete is held yet
        since = state.get("target", {}) or {}
        return ChannelCoverage(channel_id, _time(since.get("since")), _types(since.get("types")), filling=True)
    return ChannelCoverage(
        channel_id, _time(held.get("since")), _types(held.get("types")), filling=bool(state.get("walks"))
    )


def _time(value: Any) -> pd.Timestamp | None:
    return None if value is None else pd.Timestamp(int(value), unit="s", tz="UTC")


def _types(value: Any) -> frozenset[str] | None:
    return None if value is None else frozenset(str(v) for v in value)


def read_coverage(wh: Any) -> Coverage:
    """The coverage of a warehouse (or any engine with ``query``): every channel it knows, windowed or whole.

    A channel without a window holds its whole log, unless the warehouse has a default window (a channel that
    appeared after it was set, and has no events yet, holds that window).
    """
    rows = wh.query(
        "SELECT stream, cursor::VARCHAR AS cursor FROM sync_state WHERE stream = $w OR starts_with(stream, $p)",
        {"w": WINDOW_STREAM, "p": WINDOW_STREAM + ":"},
    )
    channel_ids = [str(c) for c in wh.query("SELECT channel_id FROM channels", {})["channel_id"] if isinstance(c, str)]
    states: dict[str, dict[str, Any]] = {}
    default: dict[str, Any] | None = None
    for stream, cursor in rows.itertuples(index=False, name=None):
        value = json.loads(cursor) if isinstance(cursor, str) else None
        if stream == WINDOW_STREAM:
            default = value
        elif isinstance(value, dict):
            states[stream.split(":", 1)[1]] = value
    out: dict[str, ChannelCoverage] = {}
    for cid in dict.fromkeys([*channel_ids, *states]):
        if cid in states:
            out[cid] = _channel(cid, states[cid])
        elif default is not None and not _polled(wh, cid):
            out[cid] = ChannelCoverage(cid, _time(default.get("since")), _types(default.get("types")))
        else:
            out[cid] = ChannelCoverage(cid)
    return Coverage(out)


def _polled(wh: Any, channel_id: str) -> bool:
    """Whether the channel was synced whole (it has a poll cursor and no window)."""
    df = wh.query("SELECT count(*) AS n FROM sync_state WHERE stream = $s", {"s": f"events:{channel_id}"})
    return bool(len(df) and int(df["n"].iloc[0]))


def try_read_coverage(wh: Any) -> Coverage | None:
    """:func:`read_coverage`, or ``None`` on an engine without the sync tables (Spark over an export)."""
    try:
        return read_coverage(wh)
    except Exception:  # an engine without sync_state: coverage unknown, metrics as before
        return None


__all__ = ["ChannelCoverage", "Coverage", "read_coverage", "try_read_coverage"]
