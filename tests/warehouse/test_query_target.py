"""A query's ``target``: the contract address string of 0.8, the object older sandboxes sent, and warehouses made
while the column was JSON."""

from __future__ import annotations

import json

import duckdb

from toolkit.warehouse import to_batch
from toolkit.warehouse.store import Warehouse

CALL = {"from_address": "0x" + "0" * 40, "contract_address": "0x" + "a" * 40, "call_data": "0x1234"}


def _query(qid: str, target: object) -> dict:
    return {"query_id": qid, "channel_id": "c", "status": "accepted", "query_kind": "evm_call",
            "chain_selector": "1", "target": target, "created_at": 1, "updated_at": 1}  # fmt: skip


def _rows(batch) -> dict[str, tuple]:
    table = batch.to_pydict()
    return {q: (t, e) for q, t, e in zip(table["query_id"], table["target"], table["extra"], strict=True)}


def test_a_string_target_is_stored_as_it_is_and_an_object_as_its_address_kept_whole() -> None:
    batch, rejected = to_batch("queries", [_query("s", "0x" + "b" * 40), _query("o", CALL), _query("n", 7)])
    rows = _rows(batch)
    assert rejected == []
    assert rows["s"] == ("0x" + "b" * 40, None)
    assert rows["o"][0] == CALL["contract_address"] and json.loads(rows["o"][1]) == {"target": CALL}
    assert rows["n"][0] == "7" and json.loads(rows["n"][1]) == {"_invalid": {"target": 7}}


def test_a_warehouse_with_the_json_column_is_migrated_on_open(tmp_path) -> None:
    path = tmp_path / "old.duckdb"
    with Warehouse(path):
        pass
    con = duckdb.connect(str(path))  # make it as the toolkit did before: target JSON
    con.execute("ALTER TABLE queries ALTER target SET DATA TYPE JSON")
    con.execute("DELETE FROM chainops_meta WHERE starts_with(key, 'migration:')")  # nor did it record migrations
    con.execute(
        "INSERT INTO queries (query_id, target, extra) VALUES (?, ?, NULL), (?, ?, ?), (?, NULL, NULL), (?, ?, NULL)",
        ["o", json.dumps(CALL), "s", json.dumps("0x" + "c" * 40), '{"k": 1}', "none", "odd", "[1]"],
    )
    con.close()
    with Warehouse(path) as wh:
        kind = wh.con.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_name = 'queries' AND column_name = 'target'"
        ).fetchall()
        rows = {q: (t, json.loads(e) if e else None) for q, t, e in wh.con.execute(
            "SELECT query_id, target, extra FROM queries").fetchall()}  # fmt: skip
    assert kind == [("VARCHAR",)]
    assert rows == {
        "o": (CALL["contract_address"], {"target": CALL}),
        "s": ("0x" + "c" * 40, {"k": 1}),
        "none": (None, None),
        "odd": (None, {"_invalid": {"target": [1]}}),
    }
    with Warehouse(path) as wh:  # a second open finds nothing to do
        assert wh.con.execute("SELECT count(*) FROM queries WHERE target IS NOT NULL").fetchall() == [(2,)]
