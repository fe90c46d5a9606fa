"""Filter values checked against what the warehouse knows, so a typo is a clear usage error, not an empty table.

The one check for Python and the command line (the metric functions call it; the command line shows their error).
``chainops metrics failure-rates --network Ethereum`` on a warehouse whose networks are ``Ethereum Mainnet`` and
``Ethereum Sepolia`` would match no row; :func:`resolve_filters` raises :class:`UnknownValueError` naming the known
values and the nearest one instead. A known value that matches no row in the period is not an error: the command
line says so on standard error (:func:`describe_empty`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from .. import spec
from ..times import Period
from .declare import UnknownValueError, nearest

if TYPE_CHECKING:
    from .engine import QueryEngine

#: How many known values an error lists before it says how many more there are.
LISTED = 20


def unknown_value_message(flag: str, value: str, known: Sequence[str], labels: Mapping[str, str] | None = None) -> str:
    """The message for an unknown ``--flag value``: the known values (at most :data:`LISTED`, each with its label
    when ``labels`` has one) and the nearest."""
    labels = labels or {}
    shown = [f"{k} ({labels[k]})" if k in labels else k for k in list(known)[:LISTED]]
    more = f", and {len(known) - LISTED} more" if len(known) > LISTED else ""
    listing = ", ".join(shown) + more if shown else "none (the warehouse holds no data yet; run `chainops sync`)"
    hint = nearest(value, [*known, *labels.values()])
    if hint is not None and hint not in known:  # a label (a channel's name): name its id
        hint = next(k for k, label in labels.items() if label == hint)
    suggestion = f"; did you mean {hint!r}?" if hint is not None else "."
    return f"unknown {flag} {value!r}{suggestion} Known values: {listing}."


def _rows(wh: QueryEngine, sql: str) -> list[tuple]:
    """The rows of ``sql`` on the warehouse, or on any engine the metrics run on (Spark over an export)."""
    return list(wh.query(sql).itertuples(index=False, name=None))


def _column(wh: QueryEngine, sql: str) -> list[str]:
    return [str(r[0]) for r in _rows(wh, sql) if r[0] is not None and r[0] == r[0]]


def known_networks(wh: QueryEngine) -> tuple[list[str], dict[str, str]]:
    """Network names, then the chain selectors seen anywhere the metrics look (a selector the networks table does
    not name is still a valid filter); and each named selector's name."""
    named = _rows(wh, "SELECT chain_selector, name FROM networks ORDER BY name")
    names = [str(n) for _, n in named if n is not None]
    selectors = _column(
        wh,
        "SELECT DISTINCT chain_selector FROM (SELECT chain_selector FROM networks UNION ALL "
        "SELECT chain_selector FROM operations UNION ALL SELECT chain_selector FROM queries UNION ALL "
        "SELECT chain_selector FROM watchers) ORDER BY 1",
    )
    return [*names, *(s for s in selectors if s not in names)], {}


def known_channels(wh: QueryEngine) -> tuple[list[str], dict[str, str]]:
    """Channel ids (the filter matches ids), with each channel's name as its label; then the ids seen on operations,
    queries and events that the channels table does not hold (still valid filters)."""
    rows = _rows(wh, "SELECT channel_id, name FROM channels ORDER BY name, channel_id")
    ids = [str(i) for i, _ in rows]
    seen = _column(
        wh,
        "SELECT DISTINCT channel_id FROM (SELECT channel_id FROM operations UNION ALL SELECT channel_id FROM queries "
        "UNION ALL SELECT channel_id FROM events) ORDER BY 1",
    )
    return [*ids, *(i for i in seen if i not in set(ids))], {str(i): str(n) for i, n in rows if n is not None}


#: Which statuses a metric's ``status`` filter is about (operations unless named here).
STATUS_KINDS: dict[str, str] = {
    "query-latency": "queries",
    "watcher-activity": "watchers",
    "watcher-status-history": "watchers",
}
_SPEC_STATUSES = {
    "operations": spec.OPERATION_STATUSES,
    "queries": spec.QUERY_STATUSES,
    "watchers": spec.WATCHER_STATUSES,
}


def known_statuses(wh: QueryEngine, metric: str) -> list[str]:
    """The statuses of the metric's resource: the service's vocabulary (toolkit.spec) and any other value the
    warehouse stored (an unknown enum value is kept as text, and is a valid filter)."""
    kind = STATUS_KINDS.get(metric.replace("_", "-"), "operations")
    stored = _column(wh, f"SELECT DISTINCT status FROM {kind} ORDER BY 1")
    vocabulary = list(_SPEC_STATUSES[kind])
    return [*vocabulary, *(s for s in stored if s not in vocabulary)]


def _canonical(flag: str, value: str, known: Sequence[str], labels: Mapping[str, str]) -> str:
    """The known value ``value`` names: itself, the one value equal to it but for case, or (``labels``: channel
    names) the one key whose label it is. Raises :class:`UnknownValueError` otherwise."""
    if value in known:
        return value
    for same in (lambda a, b: a == b, lambda a, b: a.lower() == b.lower()):
        by_label = sorted({k for k, label in labels.items() if same(label, value)})
        if len(by_label) == 1:
            return by_label[0]
        if len(by_label) > 1:
            raise UnknownValueError(
                f"{flag} {value!r} names {len(by_label)} channels ({', '.join(by_label)}); give one of their ids"
            )
        folded = [k for k in known if same(k, value)]
        if len(folded) == 1:
            return folded[0]
    raise UnknownValueError(unknown_value_message(flag, value, known, labels))


def resolve_filters(
    wh: QueryEngine,
    metric: str,
    *,
    network: Sequence[str] | None = None,
    channel: Sequence[str] | None = None,
    status: Sequence[str] | None = None,
    prefix: str = "",
) -> dict[str, list[str] | None]:
    """The filter values as the warehouse knows them: a network name in any case, a channel's name (when it names
    one channel) as its id, a status in any case. Raises :class:`UnknownValueError` for the first value it does
    not know, naming the known values and the nearest one (``prefix`` before the filter's name: ``""``, the
    words Python and the command line both show). Returns ``{"network": [...], "channel": [...], "status":
    [...]}`` (None where not given)."""
    checks = (
        ("network", network, lambda: known_networks(wh)),
        ("channel", channel, lambda: known_channels(wh)),
        ("status", status, lambda: (known_statuses(wh, metric), {})),
    )
    out: dict[str, list[str] | None] = {}
    for name, values, load in checks:
        if values is None:
            out[name] = None
            continue
        values = [values] if isinstance(values, str) else [str(v) for v in values]
        if not values:
            out[name] = values
            continue
        known, labels = load()
        out[name] = [_canonical(f"{prefix}{name}", value, known, labels) for value in values]
    return out


#: What an empty answer means for the metrics that count exceptions: none is a good answer, not missing data.
EMPTY_MEANS = {
    "overdue-queries": "no query is past its expires_at without a terminal status (none is overdue)",
    "stuck-operations": "no operation has stayed in a status much longer than usual (none is stuck)",
    "revisits": "no operation entered a status again after moving on",
}


def describe_empty(filters: Mapping[str, object], *, metric: str | None = None, held: int | None = None) -> str:
    """The note for a metric that found no rows: which filters (all known values) matched nothing, else what the
    empty answer means for ``metric``, else whether the warehouse holds anything at all (``held``: its operations,
    queries and events; None when not counted)."""
    given = ", ".join(
        f"--{name} {', '.join(map(str, v)) if isinstance(v, list | tuple) else v}" for name, v in filters.items() if v
    )
    if given:
        return f"no rows match {given}: the values are known, but nothing matched them in this period"
    if metric in EMPTY_MEANS:
        return f"no rows: {EMPTY_MEANS[metric]}"
    if held == 0:
        return "no rows: the warehouse holds no operations, queries or events yet (run `chainops sync`)"
    if held is None:
        return "no rows: nothing this metric counts was found"
    return f"no rows: the warehouse holds {held:,} operations, queries and events, but nothing this metric counts"


def older_than_data(period: Period) -> str | None:
    """Why a period counted back from the wall clock found nothing: the data's newest event (``period.as_of``) is
    older than the period's start (the demo's history, or a warehouse not synced lately). None when the period is
    absolute, or the data reaches into it. The sentence names the newest event and the ``until`` that counts back
    from it, for Python (``until=``) and the command line (``--until``) alike."""
    newest, start = period.as_of, period.start
    if not period.counts_from_clock or newest is None or start is None or newest >= start:
        return None
    stamp = newest.strftime("%Y-%m-%dT%H:%M:%SZ")
    end = (newest.floor("s") + pd.Timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"since {period.since} counts back from now ({start.strftime('%Y-%m-%d %H:%M')} UTC on), and the newest "
        f"event in the warehouse is older ({stamp}): to count back from the data, add --until {end} "
        f"(until={end!r} in Python), as `chainops report` does by default, or give since and until as dates"
    )


__all__ = [
    "UnknownValueError",
    "describe_empty",
    "known_channels",
    "known_networks",
    "known_statuses",
    "nearest",
    "older_than_data",
    "resolve_filters",
    "unknown_value_message",
]
