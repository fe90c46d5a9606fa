"""When an incremental run reads more than the event log: the safety net.

An incremental run learns what changed from the channels' event logs: new operations and queries announce themselves
with their first status event and are fetched by id (:mod:`.fetchers.refetch`), their moves are applied from the
events (:mod:`toolkit.warehouse.patch`), and a watcher named by a new ``watcher.status`` event is fetched again
(:mod:`.fetchers.changed_watchers`). The channel lists that do not depend on events (watchers listed, the operations'
and queries' tails, the in-flight re-list) are the safety net, for what a service fails to announce: a missed event,
or a watcher renamed (renames emit no event). They run for a channel

- until a run has read it whole with no problem (its first runs), and on the run after one that left a problem or a
  gap (a page that could not be read may have held what no event will say again),
- with ``--full``,
- when its last safety net is :data:`SAFETY_NET_EVERY` old or more (wall clock),
- and on every run for what its event window leaves out: watchers where ``watcher.status`` is not synced,
  operations and queries where ``operation.status`` or ``query.status`` is not synced.

The time of each channel's last safety net is kept in ``sync_state`` (``safety_net:<channel_id>``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from ..warehouse import Warehouse

#: How often the lists run for a channel whose events cover everything. An event the service failed to emit is
#: then learnt within this time; a sync every five minutes pays the lists once in 72 runs.
SAFETY_NET_EVERY = timedelta(hours=6)
_STREAM = "safety_net:"


def due(wh: Warehouse, channel_ids: Sequence[str], now: datetime, *, full: bool) -> set[str]:
    """The channels whose safety net is due at ``now`` (all with ``full``; those never netted)."""
    if full:
        return set(channel_ids)
    out = set()
    saved = wh.get_cursors(_STREAM + cid for cid in channel_ids)
    for cid in channel_ids:
        last = (saved[_STREAM + cid] or {}).get("at")
        if last is None or now - datetime.fromisoformat(last) >= SAFETY_NET_EVERY:
            out.add(cid)
    return out


def mark(wh: Warehouse, channel_ids: Iterable[str], now: datetime) -> None:
    """Record that ``channel_ids`` were netted at ``now`` (a transaction of its own)."""
    wh.save_cursors({_STREAM + cid: {"at": now.astimezone(UTC).isoformat()} for cid in channel_ids})


def forget(wh: Warehouse, channel_ids: Iterable[str]) -> None:
    """Make the safety net of ``channel_ids`` due on the next run (a transaction of its own)."""
    wh.drop_cursors([_STREAM + cid for cid in channel_ids])
