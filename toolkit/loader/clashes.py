"""Ids listed in two channels: a known loss, kept visible until it is resolved.

The warehouse keeps one row per ``operation_id`` and per ``query_id``; when the service lists one id in two channels,
the row read last is kept and the other channel's row is lost. The run that sees it ends ``partial`` naming it. A
later incremental run does not read both channels' lists whole again, so it would not see the clash again and would
end ``ok`` with the loss still there. So every clash is saved in ``sync_state`` (stream :data:`STREAM`) with when it
was first seen, and every later run reports the saved ones (and ends ``partial``) until a ``--full`` run, which reads
every channel's lists from the start and so sees each clash again if it is still there, replaces them with what it
found: none when the service now lists each id in one channel.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..warehouse import Warehouse
from ..warehouse.write_seq import STREAM as WRITE_SEQ

#: The ``sync_state`` stream of the clashes known: ``{table: [[id, other channel, kept channel, first seen], ...]}``.
STREAM = "channel_clashes"

#: One clash: (id, the channel whose row is not kept, the channel whose row is kept, when first seen (ISO time)).
Clash = tuple[str, str, str, str]


def write_seq_before(wh: Warehouse) -> int:
    """The last write number taken before now (see :mod:`toolkit.warehouse.write_seq`): read when a run starts, the
    rows written before it are those at or below it."""
    value = wh.get_cursors([WRITE_SEQ]).get(WRITE_SEQ)
    return int(value.get("last") or 0) if isinstance(value, dict) else 0


def carry(
    wh: Warehouse, found: dict[str, list[tuple[str, str, str, int]]], *, full: bool, before: int
) -> dict[str, list[Clash]]:
    """The clashes to report for this run: those ``found`` by it, and (unless it is ``full``) those saved by earlier
    runs and not resolved since; saves them for the next run (a ``full`` run saves only what it found).

    A ``full`` run reads every channel's lists whole, so an id still listed in two channels has both its rows
    written by it, one replacing the other; a row it replaces that was written before it (write number at or below
    ``before``) is an id that moved channel since (or a clash that is over), not a clash."""
    now = datetime.now(UTC).isoformat()
    saved = {} if full else _saved(wh.get_cursors([STREAM]).get(STREAM))
    merged: dict[str, dict[str, Clash]] = {t: {c[0]: c for c in rows} for t, rows in saved.items()}
    for table, rows in found.items():
        known = merged.setdefault(table, {})
        for i, old, new, replaced in rows:
            if full and replaced <= before:
                continue
            first = known[i][3] if i in known else now
            known[i] = (i, old, new, first)
    out = {t: sorted(rows.values()) for t, rows in merged.items() if rows}
    if out or saved or full:
        wh.set_cursor(STREAM, {t: [list(c) for c in rows] for t, rows in out.items()})
    return out


def problems(clashes: dict[str, list[Clash]]) -> list[str]:
    """A problem per table whose ids came in two channels: what is kept and what is not, and since when."""
    out = []
    for table, rows in sorted(clashes.items()):
        i, old, new, _ = rows[0]
        since = min(r[3] for r in rows)
        out.append(
            f"{len(rows)} {table} id(s) came in two channels; the warehouse keeps one row per id, the one read last, "
            f"and the other channel's row is not kept; known since {since[:19].replace('T', ' ')} UTC, reported by "
            "every run until `chainops sync --full` reads both channels again and finds each id in one channel "
            f"(first: {i} of channel {old}, kept as channel {new})"
        )
    return out


def _saved(value: object) -> dict[str, list[Clash]]:
    """The clashes saved in ``sync_state`` (anything unreadable there is ignored)."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, list[Clash]] = {}
    for table, rows in value.items():
        if isinstance(rows, list):
            out[str(table)] = [
                (str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows if isinstance(r, list) and len(r) == 4
            ]
    return out
