"""The event patch applied in parts (how a long history fits the sync's memory) gives exactly what it gives in one
piece: on a warehouse synced from the sandbox over HTTP, whose operations and queries are set back to their first
status, the patch moves them forward to what their events report, identically either way."""

from __future__ import annotations

import shutil

from tests.integration.test_incremental import settings_for
from toolkit import spec
from toolkit.sync import sync
from toolkit.warehouse import Warehouse, patch

RESULT = {
    "operations": "SELECT operation_id, status, updated_at::VARCHAR, confirmed_at::VARCHAR, cancelled_at::VARCHAR "
                  "FROM operations ORDER BY 1",
    "queries": "SELECT query_id, status, updated_at::VARCHAR, event_hash, has_proof FROM queries ORDER BY 1",
    "sync_refetch": "SELECT kind, channel_id, id FROM sync_refetch ORDER BY ALL",
}


def set_back(path) -> dict[str, list[tuple]]:
    """Set every operation and query back to its first status and forget the patch's watermark; returns the
    tables as the sync left them."""
    with Warehouse(path) as wh:
        synced = {name: wh.con.execute(sql).fetchall() for name, sql in RESULT.items()}
        wh.con.execute("UPDATE operations SET status = ?", [spec.OPERATION_STATUSES[1]])
        wh.con.execute("UPDATE queries SET status = ?", [spec.QUERY_STATUSES[0]])
        wh.con.execute("DELETE FROM sync_state WHERE stream = ?", [patch.PATCH_STREAM])
    return synced


def patched(path) -> tuple[int, dict[str, list[tuple]]]:
    with Warehouse(path) as wh:
        looked_at = patch.apply_new_events(wh.con)
        return looked_at, {name: wh.con.execute(sql).fetchall() for name, sql in RESULT.items()}


def test_a_patch_in_many_parts_equals_one_in_one_piece(server, tmp_path, monkeypatch) -> None:
    whole = tmp_path / "whole.duckdb"
    sync(settings_for(server, whole), quiet=True)
    synced = set_back(whole)
    parts = tmp_path / "parts.duckdb"
    shutil.copy(whole, parts)

    looked_at, one_piece = patched(whole)
    monkeypatch.setattr(patch, "PATCH_PART_EVENTS", 97)
    views: list[str] = []
    real = patch.apply_operation_events
    monkeypatch.setattr(patch, "apply_operation_events", lambda con, view, **kw: (views.append(view),
                                                                                 real(con, view, **kw)))
    looked_at_in_parts, in_parts = patched(parts)

    assert looked_at == looked_at_in_parts > 97 * 10
    assert len(views) == -(-looked_at // 97), "the patch ran in parts"
    assert in_parts == one_piece
    moved = sum(a != b for a, b in zip(synced["operations"], one_piece["operations"], strict=True))
    assert one_piece["operations"] != [
        (r[0], spec.OPERATION_STATUSES[1], *r[2:]) for r in one_piece["operations"]
    ], "the patch moved operations forward"
    assert moved < len(synced["operations"]) // 2, "most operations are back at their synced status"
