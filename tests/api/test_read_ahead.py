"""ReadAhead: a walk whose next requests are sent while it waits sees the same pages, in the same order, as a walk
one request at a time; predictions off its path are dropped, and it never predicts past a known end."""

from __future__ import annotations

import threading

from toolkit.api.concurrency import ReadAhead, RequestPool

LIMIT = 10


class Log:
    """An event log of message offsets with holes (``missing``): a page is the next ``LIMIT`` offsets from the one
    asked for; the walk continues from the highest + 1. Records every offset asked for."""

    def __init__(self, last: int, missing: set[int]) -> None:
        self.offsets = [o for o in range(last + 1) if o not in missing]
        self.asked: list[int] = []
        self.lock = threading.Lock()

    def page(self, offset: int) -> list[int]:
        with self.lock:
            self.asked.append(offset)
        return [o for o in self.offsets if o >= offset][:LIMIT]


def walk(get, start: int = 0) -> list[list[int]]:
    pages, offset = [], start
    while True:
        page = get(offset)
        pages.append(page)
        if len(page) < LIMIT:
            return pages
        offset = page[-1] + 1


def test_the_walk_sees_the_pages_of_a_serial_walk_and_asks_nothing_past_the_head() -> None:
    serial_log, log = Log(237, {55, 56, 57, 130}), Log(237, {55, 56, 57, 130})
    want = walk(serial_log.page)
    pool = RequestPool(4)
    try:
        ahead = ReadAhead(pool, log.page, step=LIMIT, depth=8, until=237)
        got = walk(ahead.get)
        ahead.close()
    finally:
        pool.close()
    assert got == want
    assert max(log.asked) <= 237
    # each hole drops the predictions past it: they are asked again from the right offset, never more than depth
    assert len(log.asked) <= len(serial_log.asked) + 2 * 8


def test_without_an_end_a_short_list_costs_one_request_and_a_long_one_at_most_depth_more() -> None:
    pool = RequestPool(3)
    try:
        short = Log(6, set())
        assert walk(ReadAhead(pool, short.page, step=LIMIT, depth=3).get) == [list(range(7))]
        assert short.asked == [0]
        long, serial = Log(99, set()), Log(99, set())
        ahead = ReadAhead(pool, long.page, step=LIMIT, depth=3)
        assert walk(ahead.get) == walk(serial.page)
        ahead.close()
    finally:
        pool.close()
    assert set(serial.asked) <= set(long.asked)
    assert len(long.asked) <= len(serial.asked) + 3


def test_a_head_asked_lazily_only_once_a_page_comes_back_full() -> None:
    asked_for_head: list[int] = []
    pool = RequestPool(2)
    try:
        one_page = Log(4, set())
        ReadAhead(pool, one_page.page, step=LIMIT, depth=4, until=lambda: asked_for_head.append(1) or 4).get(0)
        assert asked_for_head == []
        many = Log(45, set())
        ahead = ReadAhead(pool, many.page, step=LIMIT, depth=4, until=lambda: asked_for_head.append(1) or 45)
        assert walk(ahead.get) == walk(Log(45, set()).page)
    finally:
        pool.close()
    assert asked_for_head == [1]
    assert max(many.asked) <= 45
