"""A fresh warehouse has exactly the tables, columns, types, constraints, comments and views it had before the
schema was declared in one module: the snapshot in data/fresh_warehouse_schema.json was generated from the toolkit
as it stood before that change (see schema_snapshot.py), and is the PUBLIC CONTRACT (DESIGN.md)."""

from __future__ import annotations

import json

from .schema_snapshot import SNAPSHOT, fresh_snapshot


def test_a_fresh_warehouse_matches_the_snapshot_of_its_contract() -> None:
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    got = fresh_snapshot()
    for part in ("tables", "views", "columns", "constraints"):
        assert got[part] == expected[part], part
    assert len(expected["tables"]) >= 14 and len(expected["columns"]) > 200  # the snapshot is a whole warehouse
