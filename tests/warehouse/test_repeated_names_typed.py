"""The repeated-names check of pages in the documented shape (issue 40): told from the structs the typed decode
reads each payload into (:class:`toolkit.event_wire.WireFullPayload`), a repeat at any depth is still found and
marked exactly as the generic path marks it. Each expected path is written out by hand from the text."""

from __future__ import annotations

import json

import orjson
import pytest

from toolkit.api.wire import decode_event_page, raw_texts
from toolkit.event_wire import columns_from_records
from toolkit.warehouse.event_batches import columns_batch

PLAIN = '{"status":"sent","operation_id":"op","timestamp":1795000000}'


def _page(*payloads: str) -> bytes:
    """A page in the documented shape holding each payload text as sent."""
    events = ",".join(
        f'{{"event_id":"e{i}","headers":{{"type":"operation.status","offset":{i},"proofs":[]}},"payload":{p}}}'
        for i, p in enumerate(payloads)
    )
    return f'{{"events":[{events}],"has_more":false}}'.encode()


def _rows(body: bytes) -> list[dict]:
    """The rows of a page converted through the typed decode, checked against the generic path's rows."""
    decoded = decode_event_page(body)
    assert decoded is not None and decoded[0].typed and decoded[0].may_repeat is not None  # the fast path
    fast, _ = columns_batch(decoded[0], channel_id="c", stream_channel=True)
    payloads, proofs = raw_texts(body)
    generic = columns_from_records(orjson.loads(body)["events"], payloads, proofs)
    careful, _ = columns_batch(generic, channel_id="c", stream_channel=True)
    assert fast.to_pylist() == careful.to_pylist()
    return fast.to_pylist()


def _marked(row: dict) -> list[str] | None:
    return json.loads(row["extra"])["_repeated_names"] if row["extra"] else None


@pytest.mark.parametrize(
    ("payload", "paths"),
    [
        ('{"status":"sending","timestamp":1795000000,"status":"sent"}', ["payload.status"]),
        ('{"status":"sent","digest":null,"digest":null}', ["payload.digest"]),  # the same value twice
        ('{"status":"sent","surprise":1,"surprise":1}', ["payload.surprise"]),  # a name the struct skips
        (
            '{"status":"sent","transactions":[{"to":"0x1","value":"0","data":"0x"},'
            '{"to":"0x2","value":"0","data":"0x","to":"0x3"}]}',
            ["payload.transactions[1].to"],
        ),
        ('{"status":"sent","x":{"y":[1,{"z":{"w":":","w":"::"}}]}}', ["payload.x.y[1].z.w"]),  # deep, unknown
        ('{"status":"sent","transactions":"none","transactions":"none"}', ["payload.transactions"]),  # another type
        ('{"status":"sent","verifiable_event":{"a":1,"a":2}}', ["payload.verifiable_event.a"]),  # read raw
        ('{"status":"sent","verifiable_result":[{"b":"x","b":"y"}]}', ["payload.verifiable_result[0].b"]),
    ],
    ids=[
        "top",
        "same-value",
        "unknown-name",
        "in-a-transaction",
        "deep-in-an-unknown-field",
        "other-type",
        "object-in-a-raw-field",
        "list-in-a-raw-field",
    ],
)
def test_a_repeat_at_any_depth_is_marked_beside_payloads_that_repeat_nothing(payload: str, paths: list[str]) -> None:
    rows = _rows(_page(PLAIN, payload, PLAIN))
    assert [_marked(r) for r in rows] == [None, paths, None]
    assert json.loads(rows[1]["extra"])["_sent_payload"] == payload
    assert rows[0]["payload"] == rows[2]["payload"] == PLAIN


def test_an_escaped_colon_is_kept_as_sent_and_hides_no_repeat_beside_it() -> None:
    # an escaped ':' (and a name escaped) make a text longer than written again, never shorter: no false mark
    escaped = '{"status":"a\\u003ab","st\\u0061tus":"c"}'  # "status" twice, the second spelt with an escape
    clean = '{"status":"x\\u003ay","event_hash":"h"}'
    rows = _rows(_page(clean, escaped))
    assert rows[0]["payload"] == clean and rows[0]["extra"] is None
    assert _marked(rows[1]) == ["payload.status"] and rows[1]["status"] == "c"


def test_spaces_and_escapes_that_repeat_nothing_are_stored_as_sent() -> None:
    spaced = '{ "status" : "sent" ,\n "transactions" : [ { "to" : "0x1" } ] , "n" : -0 , "s" : "\\/\\u00e9" }'
    rows = _rows(_page(spaced, PLAIN))
    assert [r["payload"] for r in rows] == [spaced, PLAIN]
    assert [r["extra"] for r in rows] == [None, None]


def test_a_raw_field_holding_an_object_that_repeats_nothing_is_stored_as_sent() -> None:
    odd = '{"status":"sent","verifiable_event":{"a":{"b":1}},"verifiable_result":"eyJ9"}'
    rows = _rows(_page(PLAIN, odd))
    assert [r["payload"] for r in rows] == [PLAIN, odd]
    assert [r["extra"] for r in rows] == [None, None]
