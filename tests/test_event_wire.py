"""The one columnar form of event pages (toolkit/event_wire.py): what each way of reading a page puts in it, and
what the gap pass and the loader read from it."""

from __future__ import annotations

import json

import orjson
import pytest

from toolkit.api.wire import decode_event_page, raw_texts
from toolkit.event_wire import EventColumns, columns_from_records
from toolkit.warehouse.event_batches import columns_batch


def _event(i: int, **extra) -> dict:
    return {
        "event_id": f"e{i}",
        "headers": {"type": "operation.status", "offset": i, "proofs": []},
        "payload": {"operation_id": f"op{i}", "status": "sent", "timestamp": 1_700_000_000 + i},
        **extra,
    }


def test_a_generic_page_keeps_rejected_events_served_and_stores_only_the_usable_ones() -> None:
    records = [
        _event(1),
        {**_event(2), "event_id": "  "},  # blank id: rejected by name, its offset still served
        {**_event(3), "event_id": None},  # no id (0.8 does not require one): stored under its channel and offset
        _event(4, surprise={"kept": True}),  # an unknown field: kept in extra
        {**_event(5), "headers": {"type": "operation.status", "offset": "6"}},  # digits in a string count as served
    ]
    columns = columns_from_records(records)
    assert not columns.typed and not columns.clean
    assert columns.served_offsets() == [1, 2, 3, 4, 6]
    assert columns.served_ids() == [("e1", 1), ("  ", 2), ("e4", 4), ("e5", 6)]
    batch, rejected = columns_batch(columns, channel_id="c", stream_channel=True)
    assert [str(r) for r in rejected] == ["events record 'offset 2': field 'event_id' is empty"]
    rows = batch.to_pylist()
    assert [r["event_id"] for r in rows] == ["e1", "offset:c:3", "e4", "e5"]
    assert json.loads(rows[2]["extra"]) == {"surprise": {"kept": True}}
    # converted as a column of integers, and the value sent kept under its wire path
    assert rows[3]["offset"] == 6 and json.loads(rows[3]["extra"]) == {"_invalid": {"headers.offset": "6"}}


def test_a_documented_page_and_its_generic_parse_give_the_same_rows_and_texts() -> None:
    records = [_event(i) for i in range(1, 4)]
    records[1]["headers"]["proofs"] = [{"signatures": ["a", "b"], "report": "0x01"}]
    body = json.dumps({"events": records, "has_more": False}, indent=2).encode()  # spaces the service may send
    typed, has_more = decode_event_page(body)
    assert typed.typed and has_more is False
    payloads, proofs = raw_texts(body)
    generic = columns_from_records(orjson.loads(body)["events"], payloads, proofs)
    fast, _ = columns_batch(typed, channel_id="c", stream_channel=True)
    careful, _ = columns_batch(generic, channel_id="c", stream_channel=True)
    assert fast.to_pylist() == careful.to_pylist()
    row = fast.to_pylist()[1]
    assert row["proof_count"] == 1 and row["signature_count"] == 2 and row["subject_id"] == "op2"
    # payload and proofs stored as the service sent them, spaces and all
    for text, sent in ((row["proofs"], records[1]["headers"]["proofs"]), (row["payload"], records[1]["payload"])):
        assert json.loads(text) == sent and "\n" in text and text.encode() in body


def test_clean_pages_converted_together_keep_the_last_copy_of_an_event() -> None:
    first, _ = decode_event_page(orjson.dumps({"events": [_event(1), _event(2)], "has_more": True}))
    again = _event(2)
    again["payload"]["status"] = "confirmed_latest"
    second, _ = decode_event_page(orjson.dumps({"events": [again, _event(3)], "has_more": False}))
    batch, rejected = columns_batch(EventColumns.concat([first, second]), channel_id="c", stream_channel=True)
    assert rejected == []
    assert [(r["event_id"], r["status"]) for r in batch.to_pylist()] == [
        ("e1", "sent"),
        ("e2", "confirmed_latest"),
        ("e3", "sent"),
    ]
    with pytest.raises(ValueError, match="clean"):
        EventColumns.concat([first, columns_from_records([_event(4)])])


@pytest.mark.parametrize("where", ["payload", "unknown field"])
def test_a_value_nested_too_deep_to_write_again_leaves_out_its_event_by_name_only(where) -> None:
    # orjson reads 1,024 levels; writing 1,000 again recursed past Python's limit and failed the whole page
    deep = orjson.loads(b"[" * 1000 + b"]" * 1000)
    records = [_event(1), _event(2), _event(3)]
    if where == "payload":
        records[1]["payload"]["nested"] = deep
    else:
        records[1]["surprise"] = deep
    columns = columns_from_records(records)
    assert columns.served_offsets() == [1, 2, 3]  # served, so the gap pass reads that offset again
    batch, rejected = columns_batch(columns, channel_id="c", stream_channel=True)
    field = "payload" if where == "payload" else "unknown fields"
    assert [str(r) for r in rejected] == [
        f"events record 'offset 2': field '{field}' is nested more than 512 levels deep, too deep to store"
    ]
    assert [r["event_id"] for r in batch.to_pylist()] == ["e1", "e3"]


def test_a_documented_page_with_events_without_event_id_takes_the_fast_path_and_names_them_by_offset() -> None:
    # 0.8 does not require event_id: a page lacking it (or sending null) is still the documented shape
    records = [_event(1), _event(2), _event(3)]
    del records[0]["event_id"]
    records[2]["event_id"] = None
    body = orjson.dumps({"events": records, "has_more": False})
    typed, _ = decode_event_page(body)
    assert typed.clean and typed.event_ids == [None, "e2", None]
    fast, fast_rejected = columns_batch(typed, channel_id="c:1", stream_channel=True)
    careful, careful_rejected = columns_batch(columns_from_records(records), channel_id="c:1", stream_channel=True)
    assert fast_rejected == careful_rejected == []
    assert [r["event_id"] for r in fast.to_pylist()] == ["offset:c:1:1", "e2", "offset:c:1:3"]
    assert fast.to_pylist() == careful.to_pylist()
    # pages converted together: the same offset served again is one row, its last copy
    again, _ = decode_event_page(
        orjson.dumps({"events": [{**records[0], "payload": {"status": "x"}}], "has_more": False})
    )
    both, _ = columns_batch(EventColumns.concat([typed, again]), channel_id="c:1", stream_channel=True)
    assert [(r["event_id"], r["status"]) for r in both.to_pylist()][-1] == ("offset:c:1:1", "x")
    assert both.num_rows == 3


def test_an_event_without_event_id_is_rejected_by_name_only_when_it_cannot_be_named_by_offset() -> None:
    records = [
        {**_event(1), "event_id": None, "headers": {"type": "operation.status", "offset": 1.5}},
        {k: v for k, v in _event(2).items() if k != "event_id"},
    ]
    batch, rejected = columns_batch(columns_from_records(records), channel_id=None)
    assert batch.num_rows == 0
    assert [str(r) for r in rejected] == [
        "events record 'offset 1.5': field 'event_id' is missing, and headers.offset is not an integer to name the "
        "event by",
        "events record 'offset 2': field 'event_id' is missing, and no channel is known to name the event by its "
        "offset",
    ]
    # an event naming its own channel is named by it
    batch, rejected = columns_batch(columns_from_records([{**records[1], "channel_id": "own"}]), channel_id=None)
    assert not rejected and batch.column("event_id").to_pylist() == ["offset:own:2"]


@pytest.mark.parametrize("proofs", ['""', "12", "{}", '[{"signatures":"x"}]'], ids=["text", "number", "object", "sigs"])
def test_proofs_of_another_shape_send_the_page_to_the_generic_parse(proofs: str) -> None:
    """A page's proofs are decoded in one call, and skipped when every one is ``[]``: a two-character text that is
    not a list (``""``, ``12``, ``{}``) is not taken for one, and the page is read generically as before."""
    events = [_event(1), _event(2)]
    body = json.dumps({"events": events, "has_more": False}).encode()
    decoded = decode_event_page(body)
    assert decoded is not None and decoded[0].proof_counts == [0, 0] and decoded[0].signature_counts == [None, None]
    odd = body.replace(b'"proofs": []', b'"proofs": ' + proofs.encode(), 1)
    assert odd != body and decode_event_page(odd) is None
