"""Payloads that repeat a name inside one JSON object (issue 28 item 12): found at any depth, stored as the last
value's reading, the text as sent kept. Expected readings are written out by hand from the texts."""

from __future__ import annotations

import json

import duckdb
import msgspec
import pyarrow as pa
import pytest

from toolkit.warehouse.event_batches import events_batch
from toolkit.warehouse.repeated_names import _may_repeat, last_value_text, repeated_names, settle_repeated_names


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        ('{"status": "a", "status": "b"}', ["status"]),
        ('{"a": {"k": 1, "k": 2}, "l": [{"x": 1}, {"x": 1, "x": 2}]}', ["a.k", "l[1].x"]),
        ('{"a": 1, "b": {"a": 1}, "c": [{"a": 1}, {"a": 2}]}', []),  # the same name in different objects
        ('{"a": "x\\": \\"y", "b": ":::"}', []),  # colons and quotes inside strings
        ("not json", []),
    ],
    ids=["top", "nested", "distinct-objects", "colons-in-strings", "not-json"],
)
def test_repeated_names_are_found_by_path(text: str, paths: list[str]) -> None:
    assert repeated_names(text) == paths
    assert _may_repeat(text.encode()) or not paths  # the quick test never misses one


def test_the_quick_test_sees_a_repeat_that_an_escaped_colon_would_hide() -> None:
    # one escaped ':' in a string and one repeated name balance the colon count: the escape sends it to the exact test
    text = b'{"a": "\\u003a", "a": 1}'
    assert _may_repeat(text)
    assert repeated_names(text) == ["a"]
    assert not _may_repeat(b'{"a": ":", "b": [1, {"c": "d:e"}]}')
    assert not _may_repeat(b'{"x": 2}')


def test_the_last_value_reading_keeps_big_integers_and_reads_the_same_in_duckdb() -> None:
    text = '{"status": "sending", "n": 123456789012345678901234567890, "status": "accepted"}'
    settled = last_value_text(text)
    assert json.loads(settled) == {"status": "accepted", "n": 123456789012345678901234567890}
    con = duckdb.connect()
    assert con.execute("SELECT ?::VARCHAR ->> 'status', ?::VARCHAR ->> 'status'", [text, settled]).fetchone() == (
        "sending",  # why the stored text must change: DuckDB reads the first
        "accepted",
    )


@pytest.mark.parametrize(
    ("text", "settled"),
    [
        ('{"a": 2, "a": 1e400, "b": -1E400}', '{"a":1e400,"b":-1E400}'),  # past float range: not Infinity
        ('{"a": 1, "a": 1e-400, "z": -0, "w": -0.0}', '{"a":1e-400,"z":-0,"w":-0.0}'),  # not 0.0, not 0
        ('{"a": 1, "a": 1.50, "n": 123456789012345678901234567890}', '{"a":1.50,"n":123456789012345678901234567890}'),
    ],
    ids=["past-float-range", "underflow-and-negative-zero", "digits-as-written"],
)
def test_the_last_value_reading_writes_every_number_as_it_was_sent(text: str, settled: str) -> None:
    # issue 38: a number is never read through a float on its way to the stored text (1e400 was written Infinity)
    assert last_value_text(text) == settled


def _event(event_id: str, payload_text: str) -> dict:
    return {
        "event_id": event_id,
        "headers": {"type": "operation.status", "offset": 0},
        "payload": json.loads(payload_text),
    }


def test_a_batch_keeps_unrepeated_payloads_as_sent_and_marks_the_repeated_one() -> None:
    plain = '{"status": "accepted",  "timestamp": 1795000000}'  # odd spacing: kept byte for byte
    twice = '{"status": "sending", "timestamp": 1795000000, "status": "accepted"}'
    records = [_event("e1", plain), _event("e2", twice)]
    batch, rejected = events_batch(records, channel_id="c", payload_texts=[plain.encode(), twice.encode()])
    assert rejected == []
    got = {r["event_id"]: r for r in batch.to_pylist()}
    assert got["e1"]["payload"] == plain and got["e1"]["extra"] is None
    assert json.loads(got["e2"]["payload"]) == {"status": "accepted", "timestamp": 1795000000}
    assert got["e2"]["status"] == "accepted"
    extra = json.loads(got["e2"]["extra"])
    assert extra == {"_repeated_names": ["payload.status"], "_sent_payload": twice}


def test_a_batch_without_repeats_is_returned_unchanged_and_a_slice_is_read_from_its_offset() -> None:
    texts = ['{"status": "a:b"}', None, '{"x": [1, {"y": "z"}]}', '{"k": 1, "k": 2}']
    batch = pa.RecordBatch.from_arrays([pa.array(texts, pa.string()), pa.nulls(4, pa.string())], ["payload", "extra"])
    head = batch.slice(0, 3)
    assert settle_repeated_names(head) is head
    tail = settle_repeated_names(batch.slice(2))  # the repeat is in the slice's second row
    assert tail.column("payload").to_pylist() == ['{"x": [1, {"y": "z"}]}', '{"k":2}']
    assert json.loads(tail.column("extra")[1].as_py())["_repeated_names"] == ["payload.k"]


def test_each_payload_is_judged_on_its_own_in_a_batch() -> None:
    """A payload the quick test cannot read (an integer beyond 64 bits) is read exactly and kept as sent when it
    repeats nothing, beside a settled one; the rows around them are untouched."""
    big = '{"n": 123456789012345678901234567890, "status": "a"}'
    twice = '{"k": [1, 2], "k": {"z": ":"}}'
    texts = ['{"a": 1}', big, None, twice, '{"b": "\\u003a"}']
    batch = pa.RecordBatch.from_arrays([pa.array(texts, pa.string()), pa.nulls(5, pa.string())], ["payload", "extra"])
    settled = settle_repeated_names(batch)
    assert settled.column("payload").to_pylist() == ['{"a": 1}', big, None, '{"k":{"z":":"}}', '{"b": "\\u003a"}']
    extras = settled.column("extra").to_pylist()
    assert [e is None for e in extras] == [True, True, True, False, True]
    assert json.loads(extras[3]) == {"_repeated_names": ["payload.k"], "_sent_payload": twice}


def test_a_batch_counted_whole_still_finds_a_repeat_an_escaped_colon_elsewhere_would_balance() -> None:
    """The ``:`` are counted over a whole batch: one payload's escaped ``:`` (one more once re-serialised) and
    another's repeated name (one fewer) balance the totals, so an escape sends the batch payload by payload."""
    texts = ['{"x": "\\u003a"}', '{"k": 1, "k": 2}']
    batch = pa.RecordBatch.from_arrays([pa.array(texts, pa.string()), pa.nulls(2, pa.string())], ["payload", "extra"])
    sent = [msgspec.json.decode(t.encode(), type=msgspec.Raw) for t in texts]  # as the typed decode hands them over
    for settled in (settle_repeated_names(batch), settle_repeated_names(batch, sent)):
        assert settled.column("payload").to_pylist() == ['{"x": "\\u003a"}', '{"k":2}']
        assert json.loads(settled.column("extra")[1].as_py())["_repeated_names"] == ["payload.k"]


def test_the_texts_given_are_those_of_the_column() -> None:
    """A caller's texts (the payloads the column was built from) give the same reading as the column's own."""
    texts = ['{"a": 1}', None, '{"n": 123456789012345678901234567890, "n": 1}', '{"b": ":"}']
    batch = pa.RecordBatch.from_arrays([pa.array(texts, pa.string()), pa.nulls(4, pa.string())], ["payload", "extra"])
    given = [None if t is None else msgspec.json.decode(t.encode(), type=msgspec.Raw) for t in texts]
    assert settle_repeated_names(batch, given).to_pylist() == settle_repeated_names(batch).to_pylist()
    assert settle_repeated_names(batch).column("payload").to_pylist()[2] == '{"n":1}'
