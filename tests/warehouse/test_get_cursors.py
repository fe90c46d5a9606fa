"""``Warehouse.get_cursors`` answers, in one statement, what ``get_cursor`` answers stream by stream."""

from __future__ import annotations

from toolkit.warehouse import Warehouse


def test_many_cursors_read_at_once_equal_each_read_alone(tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    saved = {f"events:c{i}": {"next_offset": i * 7} for i in range(300)} | {
        "operations:c1": {"offset": 4, "complete": True},
        "queries:c1": [1, "two", None],
        "events_window": None,  # a JSON null is saved as the text 'null'
    }
    with Warehouse(path) as wh:
        wh.save_cursors(saved)
        wh.con.execute("INSERT OR REPLACE INTO sync_state (stream, cursor, updated_at) VALUES ('blank', NULL, now())")
    asked = ["events:c5", "missing", *saved, "blank", "events:c5", "operations:c1"]
    with Warehouse(path, read_only=True) as wh:
        got = wh.get_cursors(iter(asked))
        alone = {stream: wh.get_cursor(stream) for stream in asked}
        assert wh.get_cursors([]) == {}
    assert got == alone
    assert list(got) == list(dict.fromkeys(asked))  # each stream once, in the order asked
    assert got["missing"] is None and got["blank"] is None and got["events:c299"] == {"next_offset": 2093}
