"""``event_holes_of`` answers, in one statement, each channel's ``event_holes``."""

from __future__ import annotations

from toolkit.warehouse import Warehouse

OFFSETS = {
    "a": [0, 1, 2, 5, 6, 9],  # holes 3-4 and 7-8
    "b": [0, 1, 2, 3],  # none
    "c": [2, 2, 7, 30],  # one offset held twice (two event ids); holes 3-6 and 8-29, none before the first
    "d": [],
}


def test_the_holes_of_many_channels_equal_each_channels_own(tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        rows = [(f"{cid}-{i}", cid, o) for cid, offsets in OFFSETS.items() for i, o in enumerate(offsets)]
        wh.con.executemany('INSERT INTO events (event_id, channel_id, "offset") VALUES (?, ?, ?)', rows)
        wh.con.execute('INSERT INTO events (event_id, channel_id, "offset") VALUES (?, ?, NULL)', ["x", "a"])
    with Warehouse(path, read_only=True) as wh:
        many = wh.event_holes_of(["a", "b", "c", "d", "never"])
        alone = {cid: wh.event_holes(cid) for cid in [*OFFSETS, "never"]}
        assert wh.event_holes_of(["b"]) == {}
    assert many == {cid: holes for cid, holes in alone.items() if holes}
    assert many == {"a": [(3, 4), (7, 8)], "c": [(3, 6), (8, 29)]}
