"""Event windows (``sync --since``, ``--event-type``) against the sandbox, answered in process (the windows are about
what is read, not how it crosses a network; ``tests/support/service.py``).

The expected events come from the sandbox's own event log (``Truth.event_index``: each event's offset, type and the
``created`` time its search filters compare), never from the code under test.
"""

from __future__ import annotations

import itertools
import json
import math

import pytest

from tests.conftest import TEST_KEY
from toolkit import metrics
from toolkit.cli import main
from toolkit.metrics.coverage import NotHeldError
from toolkit.presentation.report import build_report
from toolkit.warehouse import Warehouse

pytestmark = pytest.mark.slow

PAGE = 200  # the largest search page, which the sync asks for


def channel_ids(sandbox) -> list[str]:
    return [c["channel_id"] for c in sandbox.truth(TEST_KEY).channels]


def expected(sandbox, since: int | None = None, types: set[str] | None = None) -> dict[str, set[str]]:
    """Per channel, the ids of the events of ``types`` created at or after ``since``, as the sandbox holds them."""
    truth = sandbox.truth(TEST_KEY)
    return {
        cid: {
            event_id
            for _, event_id, kind, created in truth.event_index(cid)
            if (since is None or created >= since) and (types is None or kind in types)
        }
        for cid in channel_ids(sandbox)
    }


def flat(per_channel: dict[str, set[str]]) -> set[str]:
    return set().union(*per_channel.values())


def stored(path) -> set[str]:
    with Warehouse(path, read_only=True) as wh:
        return {r[0] for r in wh.con.execute("SELECT event_id::VARCHAR FROM events").fetchall()}


def event_rows(path, ids: set[str] | None = None) -> list[tuple]:
    """The events' rows without the bookkeeping columns (synced_at, write_seq), sorted (only ``ids`` when given)."""
    with Warehouse(path, read_only=True) as wh:
        cols = [c for c in wh.columns("events") if c not in ("synced_at", "write_seq")]
        select = ", ".join(f'"{c}"::VARCHAR' for c in cols)
        rows = wh.con.execute(f"SELECT {select} FROM events").fetchall()
    at = cols.index("event_id")
    return sorted((r for r in rows if ids is None or r[at] in ids), key=repr)


def created_times(sandbox) -> list[int]:
    truth = sandbox.truth(TEST_KEY)
    return sorted(created for cid in channel_ids(sandbox) for *_, created in truth.event_index(cid))


def new_work(service, count: int = 3) -> None:
    """Operations created through the API in an existing channel (their events follow as the clock moves)."""
    with service.client() as client:
        cid = next(c["channel_id"] for c in client.iter_channels() if c["status"] == "active")
        wallet = next(w for w in client.iter_wallets() if w["status"] == "deployed")
        for _ in range(count):
            body = {
                "chain_selector": wallet["chain_selector"],
                "address": wallet["address"],
                "wallet_operation_id": str(next(_OPERATION_IDS)),
                "deadline": 0,
                "transactions": [{"to": "0x" + "12" * 20, "value": "1", "data": "0x"}],
                "signature": "0x" + "ab" * 65,
            }
            client.create_operation(cid, body)


_OPERATION_IDS = itertools.count(900_000)


@pytest.fixture(scope="module")
def since(sandbox) -> int:
    """A window start in the middle of the seeded history."""
    times = created_times(sandbox)
    return times[len(times) // 2]


def test_a_since_window_holds_exactly_the_events_created_in_it(sandbox, service, since, tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    result = service.sync(path, since=since)
    want = flat(expected(sandbox, since))
    assert 0 < len(want) < len(flat(expected(sandbox)))
    assert stored(path) == want
    assert result.outcome == "ok" and result.gaps == {}, result.summary()  # absences before the window are no gap
    # row for row what a whole sync stores for those events
    whole = tmp_path / "whole.duckdb"
    service.sync(whole)
    assert event_rows(path) == event_rows(whole, want)
    # the window is said in sync_state, in the run's row and in its summary
    with Warehouse(path, read_only=True) as wh:
        states = dict(wh.con.execute("SELECT stream, cursor FROM sync_state").fetchall())
        run = wh.con.execute("SELECT event_window FROM sync_runs WHERE run_id = ?", [result.run_id]).fetchone()[0]
    for cid in channel_ids(sandbox):
        held = json.loads(states[f"events_window:{cid}"])["held"]
        assert held == {"since": since, "types": None}
    assert json.loads(states["events_window"]) == {"since": since, "types": None}
    assert json.loads(run)["asked"] == {"since": since}
    assert "event window: all event types since" in result.summary()


def test_later_runs_continue_the_window_and_add_only_the_new_events(sandbox, service, since, tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    service.sync(path, since=since)
    before = stored(path)
    new_work(service)
    sandbox.advance(4 * 3600)
    later = service.sync(path)  # no flags: the window is kept and continued
    want = flat(expected(sandbox, since))
    assert stored(path) == want
    assert later.rows["events"] == len(want - before) > 0
    assert later.updated["events"] == 0  # continued with the poll cursor: nothing read twice
    assert later.outcome == "ok" and later.gaps == {}, later.summary()
    # the same as a window synced once, now
    fresh = tmp_path / "fresh.duckdb"
    service.sync(fresh, since=since)
    assert event_rows(path) == event_rows(fresh)


def test_an_earlier_since_fills_in_the_older_part_without_reading_stored_events(
    sandbox, service, since, tmp_path
) -> None:
    path = tmp_path / "w.duckdb"
    service.sync(path, since=since)
    nothing = service.sync(path)  # what a run costs when nothing changed
    assert sum(nothing.rows.values()) == 0
    times = created_times(sandbox)
    earlier = times[len(times) // 4]
    older = {cid: ids - expected(sandbox, since)[cid] for cid, ids in expected(sandbox, earlier).items()}
    filled = service.sync(path, since=earlier)
    assert stored(path) == flat(expected(sandbox, earlier))
    assert filled.rows["events"] == len(flat(older)) > 0
    assert filled.updated["events"] == 0  # not one stored event read again
    # exactly the pages of the older part: one search walk per channel over [earlier, since)
    pages = sum(max(1, math.ceil(len(ids) / PAGE)) for ids in older.values())
    assert filled.requests == nothing.requests + pages, filled.summary()
    assert filled.outcome == "ok" and filled.gaps == {}


def test_since_all_turns_a_window_into_the_whole_log(sandbox, service, since, tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    service.sync(path, since=since)
    window = stored(path)
    whole = service.sync(path, since="all")
    every = flat(expected(sandbox))
    assert stored(path) == every
    assert whole.rows["events"] == len(every - window) > 0 and whole.updated["events"] == 0
    with Warehouse(path, read_only=True) as wh:
        default = wh.get_cursor("events_window")
    assert default == {"since": None, "types": None}  # channels that appear later are read whole too
    again = service.sync(path)
    assert again.rows["events"] == 0 and again.gaps == {} and "event window" not in again.summary()


def test_event_types_hold_only_those_types_and_a_wider_set_reads_only_the_new_ones(
    sandbox, service, since, tmp_path
) -> None:
    path = tmp_path / "w.duckdb"
    first = service.sync(path, since=since, event_types=["operation.status"])
    ops = flat(expected(sandbox, since, {"operation.status"}))
    assert stored(path) == ops
    # holes everywhere, by design: no gap is reported, nothing is re-read
    assert first.outcome == "ok" and first.gaps == {}, first.summary()
    assert "event window: operation.status since" in first.summary()

    wider = service.sync(path, event_types=["query.status"])  # keeps since
    both = flat(expected(sandbox, since, {"operation.status", "query.status"}))
    assert stored(path) == both
    assert wider.rows["events"] == len(both - ops) > 0
    assert wider.gaps == {}

    new_work(service)
    sandbox.advance(3 * 3600)
    later = service.sync(path)
    after = flat(expected(sandbox, since, {"operation.status", "query.status"}))
    assert stored(path) == after
    assert later.rows["events"] == len(after - both) > 0
    assert later.outcome == "ok" and later.gaps == {}, later.summary()
    with Warehouse(path, read_only=True) as wh:
        kinds = {r[0] for r in wh.con.execute("SELECT DISTINCT type FROM events").fetchall()}
    assert kinds == {"operation.status", "query.status"}


def test_every_type_added_turns_the_window_into_one_continued_by_poll(sandbox, service, since, tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    service.sync(path, since=since, event_types=["watcher.event", "wallet.status"])
    rest = ["operation.status", "query.status", "watcher.status"]
    grown = service.sync(path, event_types=rest)
    assert stored(path) == flat(expected(sandbox, since))
    assert grown.gaps == {} and "event window: all event types since" in grown.summary()
    new_work(service)
    sandbox.advance(2 * 3600)
    later = service.sync(path)
    assert stored(path) == flat(expected(sandbox, since))
    assert later.rows["events"] > 0
    assert later.updated["events"] == 0 and later.gaps == {}


def test_a_hole_inside_a_window_of_all_types_is_still_read_again(sandbox, service, since, tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    service.sync(path, since=since)
    with Warehouse(path) as wh:
        cid, lo, hi = wh.con.execute(
            'SELECT channel_id, min("offset"), max("offset") FROM events GROUP BY channel_id ORDER BY count(*) DESC '
            "LIMIT 1"
        ).fetchone()
        middle = (lo + hi) // 2
        wh.con.execute(
            'DELETE FROM events WHERE channel_id = ? AND "offset" BETWEEN ? AND ?', [cid, middle, middle + 4]
        )
    again = service.sync(path)
    assert stored(path) == flat(expected(sandbox, since))
    assert again.rows["events"] == 5 and again.gaps == {}


def test_bad_flags_are_usage_errors_naming_the_known_values(service, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("CREC_API_KEY", TEST_KEY)
    path = str(tmp_path / "w.duckdb")
    # the flags are refused before anything is sent (a connection to the in-process URL would fail with exit 1)
    args = ["sync", "--base-url", service.base_url, "--warehouse", path, "--quiet"]
    assert main([*args, "--event-type", "operation.stat"]) == 2
    err = capsys.readouterr().err
    assert "unknown --event-type 'operation.stat'" in err and "did you mean 'operation.status'" in err
    assert "watcher.event" in err and "wallet.status" in err
    assert main([*args, "--since", "last tuesday"]) == 2
    assert "--since" in capsys.readouterr().err
    with pytest.raises(Exception, match="unknown --event-type"):
        service.sync(path, event_types=["nope"])


# ---- metrics and reports state the period and types held -------------------------------------------------------


@pytest.fixture(scope="module")
def windowed(sandbox, service, since, tmp_path_factory):
    path = tmp_path_factory.mktemp("cov") / "w.duckdb"
    service.sync(path, since=since)
    return path


def test_a_metric_over_an_earlier_period_is_clipped_to_the_window_and_says_so(windowed, sandbox, since) -> None:
    start = metrics.failure_rates(windowed, by=[], since=since)
    wider = metrics.failure_rates(windowed, by=[], since=since - 7 * 86400)
    assert "the period starts at" in wider.attrs["clipped"]
    assert wider.attrs["coverage"]["since"].startswith(str(__import__("pandas").Timestamp(since, unit="s"))[:10])
    assert wider.drop(columns=[], errors="ignore").equals(start)
    # only operations created in the window are counted (those before it have incomplete histories)
    created = [o["created_at"] for o in sandbox.truth(TEST_KEY).operations]
    assert int(wider["operations"].iloc[0]) == sum(1 for t in created if t >= since)
    with pytest.raises(NotHeldError, match="before the warehouse's events start"):
        metrics.failure_rates(windowed, by=[], since=since - 7 * 86400, until=since - 3600)


def test_status_latency_leaves_out_operations_created_before_the_window(windowed, since) -> None:
    df = metrics.status_latency(windowed, by=["status"])
    with Warehouse(windowed, read_only=True) as wh:
        # an independent count: status entries of operations created in the window, one per operation and status
        want = dict(
            wh.con.execute(
                """
                SELECT e.status, count(DISTINCT e.operation_id) FROM events e
                JOIN operations o ON o.operation_id = e.operation_id
                WHERE e.type = 'operation.status' AND o.created_at >= to_timestamp(?)
                GROUP BY 1
                """,
                [since],
            ).fetchall()
        )
    got = {str(s): int(n) for s, n in zip(df["status"], df["entered"], strict=True)}
    assert {s: n for s, n in got.items() if n} == {s: n for s, n in want.items() if s in got}
    assert set(want) <= set(got)


def test_the_command_line_and_the_report_state_the_coverage(windowed, since, tmp_path, capsys) -> None:
    assert main(["metrics", "failure-rates", "--warehouse", str(windowed), "--since", "400d", "--format", "csv"]) == 0
    assert "chainops metrics: the period starts at" in capsys.readouterr().err
    assert main(["metrics", "failure-rates", "--warehouse", str(windowed), "--until", "2000-01-01"]) == 2
    assert "before the warehouse's events start" in capsys.readouterr().err
    report = build_report(windowed, since="400d")
    assert report.findings[0].startswith("Events held: events of all types created since")
    assert report.since == __import__("pandas").Timestamp(since, unit="s", tz="UTC")
    html = report.to_html(figures=False)
    assert 'id="coverage"' in html and "Events held: events of all types created since" in html


def test_metrics_of_an_event_type_not_held_say_so_instead_of_zeros(sandbox, service, since, tmp_path, capsys) -> None:
    path = tmp_path / "q.duckdb"
    service.sync(path, since=since, event_types=["query.status"])
    with pytest.raises(NotHeldError, match=r"holds no operation\.status events"):
        metrics.status_latency(path)
    assert len(metrics.query_latency(path)) > 0
    assert main(["metrics", "failure-rates", "--warehouse", str(path)]) == 2
    assert "holds no operation.status events" in capsys.readouterr().err
    report = build_report(path, since="400d")
    assert any("holds no operation.status events" in f for f in report.findings)
    assert report.tables["failure_rates"].empty and report.tables["status_latency"].empty
