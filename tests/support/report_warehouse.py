"""The report tests' warehouse: a day of operations on two networks and one named in markup, a channel named in
markup, a stuck operation, and the day before (``tests/report/conftest.py`` gives it as the ``warehouse`` fixture)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.support.builders import ETHEREUM, NETWORKS, RELAY, SEPOLIA, T0, build, ladder, op_record, refresh
from toolkit.warehouse import to_batch

__all__ = [
    "DAY",
    "EVIL_CHAIN",
    "SCRIPT_CHANNEL",
    "SCRIPT_NETWORK",
    "SCRIPT_REASON",
    "SINCE",
    "UNTIL",
    "report_warehouse",
]

SCRIPT_REASON = "<script>alert('reason')</script> execution reverted"
SCRIPT_CHANNEL = "<script>alert('channel')</script> & <b>ops</b>"
SCRIPT_NETWORK = 'Evil <img src=x onerror="alert(1)"> Net'
EVIL_CHAIN = "4444444444444444444"
DAY = 86_400
#: The period of the tests: [T0, T0 + 1 day); the previous period is the day before.
SINCE = datetime.fromtimestamp(T0, UTC).isoformat()
UNTIL = datetime.fromtimestamp(T0 + DAY, UTC).isoformat()


def _ops(prefix: str, n_ok: int, n_failed: int, *, chain: str, start: int, channel: str = "ch-1") -> tuple[list, list]:
    events, records = [], []
    for i in range(n_ok + n_failed):
        op, t = f"{prefix}-{i}", start + i * 60
        if i < n_ok:
            statuses, times = RELAY, [t + k * 10 for k in range(len(RELAY))]
            status = "confirmed"
        else:
            statuses, times = ("accepted", "sending", "failed"), (t, t + 10, t + 20)
            status = "failed"
        events += ladder(op, statuses, times, chain=chain, channel=channel, reason=SCRIPT_REASON)
        records.append(op_record(op, status, chain=chain, created=times[0], updated=times[-1], channel=channel))
    return events, records


def report_warehouse(path: Path) -> Path:
    """This period: Ethereum 8 ok + 2 failed, Sepolia 9 ok + 1 failed, the evil network 1 failed; the day before:
    Ethereum 10 ok. One operation stuck in ``sending``; a channel and a network name full of markup."""
    evil = {**NETWORKS[1], "id": "n-evil", "name": SCRIPT_NETWORK, "chain_selector": EVIL_CHAIN}
    events, records = [], []
    for args in (
        ("eth", 8, 2, ETHEREUM, 600),
        ("sep", 9, 1, SEPOLIA, 900),
        ("evil", 0, 1, EVIL_CHAIN, 1200),
        ("old", 10, 0, ETHEREUM, 600 - DAY),
    ):
        e, r = _ops(*args[:3], chain=args[3], start=args[4], channel="ch-evil" if args[0] == "evil" else "ch-1")
        events += e
        records += r
    # one operation stuck in sending for hours while later events keep arriving
    events += ladder("stuck-1", ("accepted", "sending"), (2000, 2010), chain=ETHEREUM)
    records.append(op_record("stuck-1", "sending", chain=ETHEREUM, created=2000, updated=2010))
    events += ladder("late-1", RELAY, [40_000 + 10 * k for k in range(len(RELAY))], chain=ETHEREUM)
    records.append(op_record("late-1", "confirmed", chain=ETHEREUM, created=40_000, updated=40_060))
    wh = build(path, events=events, operations=records, networks=[*NETWORKS, evil])
    with wh.transaction():
        batch, rejected = to_batch(
            "channels",
            [
                {"channel_id": "ch-1", "name": "payments", "status": "active", "created_at": T0 - DAY},
                {"channel_id": "ch-evil", "name": SCRIPT_CHANNEL, "status": "active", "created_at": T0 - DAY},
            ],
        )
        assert not rejected
        wh.upsert("channels", batch)
        wh.con.execute(
            "INSERT INTO sync_runs (run_id, started_at, finished_at, outcome) VALUES "
            "('r1', to_timestamp(?), to_timestamp(?), 'ok')",
            [T0 + DAY - 120, T0 + DAY - 60],
        )
    refresh(wh).close()
    return path
