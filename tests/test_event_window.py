"""The pure part of event windows: what a run asks for, the walks a channel's window needs, how pages move it."""

from __future__ import annotations

import pytest

from toolkit.errors import UsageError
from toolkit.loader.event_window import (
    OVERLAP_SECONDS,
    ChannelWindow,
    Walk,
    Window,
    advance,
    parse_event_types,
    parse_since,
    plan,
    requested,
)

OPS = frozenset({"operation.status"})
QUERIES = frozenset({"query.status"})
DAY = 86_400


def test_parse_since_reads_ages_times_unix_seconds_and_all() -> None:
    assert parse_since("all") is None
    assert parse_since(1_700_000_000) == 1_700_000_000
    assert parse_since("2026-01-01") == 1_767_225_600
    with pytest.raises(UsageError, match="--since"):
        parse_since("soonish")


def test_event_types_are_checked_and_every_type_means_all() -> None:
    assert parse_event_types(["operation.status"]) == OPS
    assert parse_event_types("operation.status,query.status") == OPS | QUERIES
    assert (
        parse_event_types(["operation.status", "query.status", "watcher.status", "watcher.event", "wallet.status"])
        is None
    )
    with pytest.raises(UsageError) as info:
        parse_event_types(["operation.stat"])
    assert "did you mean 'operation.status'" in str(info.value) and "wallet.status" in str(info.value)


def test_a_part_not_asked_for_keeps_what_is_held() -> None:
    held = Window(1000, OPS)
    assert requested(event_types=["query.status"]).apply(held) == Window(1000, OPS | QUERIES)
    assert requested(since=500).apply(held) == Window(500, OPS)
    assert requested(since=2000, event_types=["operation.status"]).apply(held) == held  # narrower: kept
    assert requested(since="all").apply(held) == Window(None, OPS)
    assert requested() is None


def test_a_channel_synced_whole_stays_whole_and_a_new_one_walks_its_window() -> None:
    assert plan(None, polled=True, asked=requested(since=1000)) is None
    assert plan(None, polled=False, asked=None) is None
    fresh = plan(None, polled=False, asked=requested(since=1000))
    assert fresh is not None and fresh.target == Window(1000, None)
    assert [(w.types, w.gte, w.lt) for w in fresh.walks] == [(None, 1000, None)]
    # a channel that appears later takes the warehouse's window
    later = plan(None, polled=False, asked=None, default=Window(1000, OPS))
    assert later is not None and [(w.types, w.gte, w.lt) for w in later.walks] == [(OPS, 1000, None)]


def test_a_window_of_all_types_continues_by_poll_and_fills_in_an_earlier_start() -> None:
    state = ChannelWindow(held=Window(1000, None), poll_from=50)
    assert plan(state, polled=True, asked=None).walks == []
    grown = plan(state, polled=True, asked=requested(since=400))
    assert [(w.types, w.gte, w.lt) for w in grown.walks] == [(None, 400, 1000)]  # only the older part


def test_a_type_subset_continues_through_search_from_where_it_was_read_less_the_overlap() -> None:
    state = ChannelWindow(held=Window(1000, OPS), read_to=5000)
    again = plan(state, polled=False, asked=None)
    assert [(w.types, w.gte, w.lt) for w in again.walks] == [(OPS, 5000 - OVERLAP_SECONDS, None)]
    wider = plan(state, polled=False, asked=requested(since=400, event_types=["query.status"]))
    assert [(w.types, w.gte, w.lt) for w in wider.walks] == [
        (OPS, 5000 - OVERLAP_SECONDS, None),  # the held types, continued
        (QUERIES, 400, None),  # the new type, from the new start
        (OPS, 400, 1000),  # the held types' older part
    ]
    assert wider.target == Window(400, OPS | QUERIES)


def test_the_continuations_overlap_never_reaches_before_the_window() -> None:
    # read to 300 s after a window that starts at 1000: the overlap would start at 700, outside what is held
    state = ChannelWindow(held=Window(1000, OPS), read_to=1300)
    again = plan(state, polled=False, asked=None)
    assert [(w.types, w.gte, w.lt) for w in again.walks] == [(OPS, 1000, None)]


def test_a_continuation_that_reads_nothing_keeps_its_mark() -> None:
    state = plan(ChannelWindow(held=Window(1000, OPS), read_to=5000), polled=False, asked=None)
    done = advance(state, 0, next_offset=0, max_offset=None, max_ts=None, done=True)
    assert done.read_to == 5000 and not done.busy


def test_the_mark_is_the_newest_time_read_when_the_last_open_walk_ended() -> None:
    state = plan(
        ChannelWindow(held=Window(1000, OPS), read_to=5000), polled=False, asked=requested(event_types=["query.status"])
    )
    state = advance(state, 0, next_offset=10, max_offset=9, max_ts=7000, done=True)  # the held types
    assert state.busy and state.held == Window(1000, OPS)  # what metrics rely on stays until the plan ends
    state = advance(state, 0, next_offset=20, max_offset=19, max_ts=6000, done=True)  # the new type
    assert state.held == Window(1000, OPS | QUERIES) and state.read_to == 7000 and not state.busy


def test_a_window_that_grows_to_every_type_polls_after_the_highest_offset_walked_or_the_old_head() -> None:
    state = plan(
        ChannelWindow(held=Window(1000, OPS), read_to=5000),
        polled=False,
        asked=requested(event_types=["query.status", "watcher.status", "watcher.event", "wallet.status"]),
    )
    state.floor = 30
    state = advance(state, 0, next_offset=26, max_offset=25, max_ts=6000, done=True)
    state = advance(state, 0, next_offset=41, max_offset=40, max_ts=6100, done=True)
    assert state.held == Window(1000, None) and state.poll_from == 41


def test_the_state_round_trips_through_json() -> None:
    state = ChannelWindow(
        held=Window(1, OPS), read_to=2, target=Window(0, None), walks=[Walk(QUERIES, 0, None, 7, 6)], floor=3
    )
    assert ChannelWindow.from_json(state.to_json()).to_json() == state.to_json()


def test_full_reads_the_window_again_from_its_start() -> None:
    state = ChannelWindow(held=Window(1000, OPS), read_to=5000)
    again = plan(state, polled=False, asked=None, reread=True)
    assert [(w.types, w.gte, w.lt) for w in again.walks] == [(OPS, 1000, None)]
