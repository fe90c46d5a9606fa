"""Records -> Arrow batches: fixed schema, unknown fields kept, bad values kept verbatim, bad keys rejected."""

from __future__ import annotations

import json

import pyarrow as pa

from tests.warehouse.helpers import T0, op_event
from toolkit.warehouse import RAW_TABLES, to_batch, transaction_records


def test_event_batch_has_the_fixed_schema_and_flattened_fields() -> None:
    ev = op_event("op-1", "confirmed", T0)
    ev["headers"]["proofs"] = [
        {"alg": "ecdsa", "ocr_report": "0x00", "ocr_context": "0x00", "signatures": ["0x" + "11" * 65] * 4}
    ]
    batch, rejected = to_batch("events", [ev], defaults={"channel_id": "ch-1"})
    assert rejected == []
    assert batch.schema == RAW_TABLES["events"].schema
    row = batch.to_pylist()[0]
    assert row["channel_id"] == "ch-1" and row["type"] == "operation.status" and row["operation_id"] == "op-1"
    assert row["ts"].timestamp() == T0 and row["ts"].tzinfo is not None
    assert row["proof_count"] == 1 and row["signature_count"] == 4
    assert json.loads(row["payload"])["status"] == "confirmed"
    assert row["extra"] is None


def test_unknown_fields_and_values_are_kept() -> None:
    ev = op_event("op-1", "teleported", T0)  # unknown enum value
    ev["brand_new_field"] = {"x": 1}
    batch, rejected = to_batch("events", [ev], defaults={"channel_id": "c"})
    row = batch.to_pylist()[0]
    assert rejected == [] and row["status"] == "teleported"
    assert json.loads(row["extra"]) == {"brand_new_field": {"x": 1}}


def test_wrong_types_become_null_and_are_kept_in_extra() -> None:
    op = {
        "operation_id": "op-1",
        "status": "accepted",
        "created_at": "not a time",
        "deadline": "17",
        "chain_selector": 15971525489660198786,
        "updated_at": -5,
        "transactions": [],
    }
    batch, rejected = to_batch("operations", [op], defaults={"channel_id": "c"})
    row = batch.to_pylist()[0]
    assert rejected == []
    assert row["created_at"] is None and row["updated_at"] is None
    assert row["deadline"] == 17
    assert row["chain_selector"] == "15971525489660198786"  # exact, as text, and noted: the wire sends text
    # a number sent as text is stored as the number and noted, under each column it fills (deadline, deadline_at)
    assert json.loads(row["extra"]) == {
        "_invalid": {
            "created_at": "not a time",
            "updated_at": -5,
            "chain_selector": 15971525489660198786,
            "deadline": "17",
            "deadline_at": "17",
        }
    }


def test_fractional_numbers_are_rounded_down_with_a_note_and_big_integers_stay_exact() -> None:
    op = {
        "operation_id": "op-1",
        "created_at": 1795000000.5,
        "updated_at": 1795000001,
        "deadline": 7.25,
        "chain_selector": 2**64,
    }
    batch, rejected = to_batch("operations", [op], defaults={"channel_id": "c"})
    row = batch.to_pylist()[0]
    assert rejected == []
    assert row["created_at"].timestamp() == 1795000000 and row["deadline"] == 7
    assert row["chain_selector"] == "18446744073709551616"
    assert json.loads(row["extra"]) == {
        "_invalid": {"created_at": 1795000000.5, "deadline": 7.25, "deadline_at": 7.25, "chain_selector": 2**64}
    }
    event = {
        "event_id": "e-1",
        "headers": {"type": "operation.status", "offset": 4.5, "proofs": []},
        "payload": {"status": "sent", "timestamp": 1795000000.5, "chain_selector": 2**64},
    }
    batch, _ = to_batch("events", [event], defaults={"channel_id": "c"})
    row = batch.to_pylist()[0]
    assert row["offset"] == 4 and row["ts"].timestamp() == 1795000000 and row["chain_selector"] == str(2**64)
    assert json.loads(row["extra"])["_invalid"] == {
        "headers.offset": 4.5,
        "payload.timestamp": 1795000000.5,
        "chain_selector": 2**64,
    }


def test_records_without_a_key_are_rejected_by_name_and_the_rest_kept() -> None:
    good = {"channel_id": "c-1", "name": "ok", "status": "active", "created_at": T0}
    batch, rejected = to_batch("channels", [good, {"name": "no id"}, "garbage", {"channel_id": ["x"]}])
    assert batch.num_rows == 1
    assert [(r.index, r.field) for r in rejected] == [(1, "channel_id"), (2, "<record>"), (3, "channel_id")]
    assert "channels record #1: field 'channel_id' is missing" in str(rejected[0])


def test_a_page_of_objects_with_one_unusable_key_rejects_that_record_only() -> None:
    """Every record an object (the keys read for the whole page at once): a blank, boolean or null key still
    rejects its record by name; an integer key is stored as its digits, the same key as that text."""
    recs = [
        {"operation_id": "a", "status": "sent"},
        {"operation_id": " \t", "status": "sent"},
        {"operation_id": True, "status": "sent"},
        {"operation_id": 7, "status": "old"},
        {"operation_id": "7", "status": "new"},
    ]
    batch, rejected = to_batch("operations", recs)
    assert batch.column("operation_id").to_pylist() == ["a", "7"]
    assert batch.column("status").to_pylist() == ["sent", "new"]
    assert [(r.index, r.field, r.reason) for r in rejected] == [
        (1, "operation_id", "is empty"),
        (2, "operation_id", "is not a string (bool)"),
    ]
    blank, _ = to_batch("channels", [{"channel_id": "c"}, {"channel_id": ""}])
    assert blank.column("channel_id").to_pylist() == ["c"]
    digits, _ = to_batch("operations", [{"operation_id": 7, "status": "old"}, {"operation_id": "7", "status": "new"}])
    assert digits.column("operation_id").to_pylist() == ["7"] and digits.column("status").to_pylist() == ["new"]


def test_same_key_twice_keeps_the_last() -> None:
    recs = [{"channel_id": "c", "name": "old"}, {"channel_id": "c", "name": "new"}]
    batch, _ = to_batch("channels", recs)
    assert batch.column("name").to_pylist() == ["new"]


def test_transactions_keep_exact_values_and_selectors() -> None:
    big = str(10**30 + 7)
    op = {
        "operation_id": "op-1",
        "transactions": [
            {"to": "0x" + "cd" * 20, "value": big, "data": "0xa9059cbb" + "00" * 64},
            {"to": "0x" + "ef" * 20, "value": "0", "data": "0x"},
        ],
    }
    batch, rejected = to_batch("operation_transactions", transaction_records([op]))
    rows = batch.to_pylist()
    assert rejected == []
    assert [(r["idx"], r["value"], r["data_size"], r["selector"]) for r in rows] == [
        (0, big, 68, "0xa9059cbb"),
        (1, "0", 0, None),
    ]
    assert batch.schema.field("value").type == pa.string()


def test_events_are_stored_under_the_channel_whose_log_they_came_from() -> None:
    """An event's own differing channel_id is kept in extra; the column holds the stream's channel, so a re-read
    of the same event replaces the stored row instead of adding a second one."""
    import json as _json

    from toolkit.warehouse.event_batches import events_batch

    records = [
        {
            "event_id": "e1",
            "channel_id": "other",
            "headers": {"type": "operation.status", "offset": 1, "proofs": []},
            "payload": {"status": "sent", "timestamp": 1},
        },
        {
            "event_id": "e2",
            "headers": {"type": "operation.status", "offset": 2, "proofs": []},
            "payload": {"status": "sent", "timestamp": 2},
        },
    ]
    batch, rejected = events_batch(records, channel_id="mine", stream_channel=True)
    assert rejected == []
    assert batch.column("channel_id").to_pylist() == ["mine", "mine"]
    extras = batch.column("extra").to_pylist()
    assert _json.loads(extras[0]) == {"channel_id": "other"} and extras[1] is None
    fallback, _ = events_batch(records, channel_id="mine")  # to_batch's defaults: only where the record names none
    assert fallback.column("channel_id").to_pylist() == ["other", "mine"]
