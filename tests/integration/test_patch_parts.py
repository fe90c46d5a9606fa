"""The event patch applied in parts (how a long history fits the sync's memory) gives exactly what it gives in one
piece. The warehouse is synced from the sandbox over HTTP, then every operation and query is set back to its first
status with the columns the patch fills emptied. The patch must move them forward to what their events report,
identically either way."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import small_sandbox
from tests.support.snapshot import settings_for
from toolkit import spec
from toolkit.loader import sync
from toolkit.warehouse import Warehouse, patch
from toolkit.warehouse.patch import _WORKFLOW_FIELDS


@pytest.fixture(scope="module")
def sandbox():
    """Half a day of history: its ~700 operation events make about 20 parts of :data:`PART`."""
    return small_sandbox()


#: Events a part holds here (a prime: the last part is a short one).
PART = 37
QUERY_AT = [f"{s}_at" for s in spec.QUERY_STATUSES]
RESULT = {
    "operations": "SELECT operation_id, status, updated_at::VARCHAR, confirmed_at::VARCHAR, cancelled_at::VARCHAR, "
    f"{', '.join(_WORKFLOW_FIELDS)} FROM operations ORDER BY 1",
    "queries": "SELECT query_id, status, updated_at::VARCHAR, event_hash, has_proof, "
    f"{', '.join(c + '::VARCHAR' for c in QUERY_AT)} FROM queries ORDER BY 1",
    "sync_refetch": "SELECT kind, channel_id, id FROM sync_refetch ORDER BY ALL",
}


def set_back(path) -> dict[str, list[tuple]]:
    """Set every operation and query back to its first status, empty what the patch fills, put a few drafts back
    to ``pending_signature`` (they go to the refetch queue when their events move them), and forget the patch's
    watermark; returns the tables as the sync left them."""
    with Warehouse(path) as wh:
        synced = {name: wh.con.execute(sql).fetchall() for name, sql in RESULT.items()}
        emptied = ", ".join(f"{c} = NULL" for c in ("updated_at", "confirmed_at", "cancelled_at", *_WORKFLOW_FIELDS))
        wh.con.execute(f"UPDATE operations SET status = ?, {emptied}", [spec.OPERATION_STATUSES[1]])
        wh.con.execute("UPDATE operations SET status = 'pending_signature' WHERE hash(operation_id) % 7 = 0")
        emptied = ", ".join(f"{c} = NULL" for c in ("updated_at", "event_hash", "has_proof", *QUERY_AT))
        wh.con.execute(f"UPDATE queries SET status = ?, {emptied}", [spec.QUERY_STATUSES[0]])
        wh.con.execute("DELETE FROM sync_refetch")
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
    monkeypatch.setattr(patch, "PATCH_PART_EVENTS", PART)
    sizes: list[int] = []
    real = patch.apply_operation_events

    def counting(con, view, **kwargs):
        sizes.append(con.execute(f"SELECT count(*) FROM {view}").fetchall()[0][0])
        return real(con, view, **kwargs)

    monkeypatch.setattr(patch, "apply_operation_events", counting)
    looked_at_in_parts, in_parts = patched(parts)

    assert looked_at == looked_at_in_parts > PART * 10
    assert len(sizes) == -(-looked_at // PART) and sum(sizes) == looked_at, "every event in exactly one part"
    assert in_parts == one_piece
    # the patch did real work: most rows are back where the sync left them, and moved drafts wait for a refetch
    assert one_piece["sync_refetch"], "drafts that moved were queued for a refetch"
    back = sum(a[1:3] == b[1:3] for a, b in zip(synced["operations"], one_piece["operations"], strict=True))
    assert back > len(synced["operations"]) // 2
    assert any(row[5:] != (None,) * len(_WORKFLOW_FIELDS) for row in one_piece["operations"])
    assert any(row[5:] != (None,) * len(QUERY_AT) for row in one_piece["queries"])
