"""Property-based tests of the Arrow conversion: every shape a feed could send is stored (unknowns kept) or
rejected by name, nothing crashes, and the fast (typed, from the bytes) and careful event paths agree exactly."""

from __future__ import annotations

import json

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkit import spec
from toolkit.api.wire import decode_event_page, raw_texts
from toolkit.event_wire import EventColumns, offset_event_id, offset_value
from toolkit.warehouse import RAW_TABLES, to_batch
from toolkit.warehouse.event_batches import columns_batch, events_batch

PROFILE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
odd_text = st.one_of(text, st.text(max_size=3000), st.sampled_from(["", " ", "🙂", "\u202e", "a\x00b", "😀" * 500]))
finite = st.floats(allow_nan=False, allow_infinity=False)  # JSON has no NaN or Infinity
scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), finite, odd_text)
json_value = st.recursive(
    scalar, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)), max_leaves=8
)
timestamp = st.one_of(st.integers(0, 4_000_000_000), scalar)
uuidish = st.one_of(st.uuids().map(str), text, st.integers(), st.none())


@st.composite
def events(draw, *, documented: bool = False):
    """An event as a feed might send it; ``documented`` keeps to the wire format's field names and types."""
    etype = draw(st.sampled_from([*spec.EVENT_TYPES, "brand.new"]))
    value = text if documented else scalar
    payload = {
        k: draw(value)
        for k in draw(
            st.sets(
                st.sampled_from(
                    [
                        "status",
                        "status_reason",
                        "operation_id",
                        "query_id",
                        "watcher_id",
                        "wallet_id",
                        "chain_selector",
                        "address",
                        "event_hash",
                    ]
                )
            )
        )
    }
    if draw(st.booleans()):
        payload["timestamp"] = draw(st.integers(0, 4_000_000_000) if documented else timestamp)
    if not documented:
        payload.update(draw(st.dictionaries(text, json_value, max_size=2)))
    proofs = draw(
        st.lists(
            st.fixed_dictionaries({"alg": st.just("ecdsa"), "signatures": st.lists(st.text(max_size=8), max_size=5)}),
            max_size=1,
        )
    )
    event = {
        "event_id": draw(st.uuids().map(str) if documented else uuidish),
        "headers": {"type": etype, "offset": draw(st.integers(0, 2**40) if documented else scalar), "proofs": proofs},
        "payload": payload if documented or draw(st.booleans()) else draw(json_value),
    }
    if not documented and draw(st.booleans()):
        event["surprise"] = draw(json_value)
    return event


def _stored_id(record, channel: str) -> str | None:
    """The id an event is stored under: its own, or without one (absent, null) the one made from its channel and
    integer offset; ``None``: rejected."""
    key = record.get("event_id")
    if key is None:
        offset = offset_value(record["headers"]["offset"])
        return None if offset is None else offset_event_id(channel, offset)
    if isinstance(key, str | int) and not isinstance(key, bool) and str(key).strip():
        return str(key)
    return None


def rows_of(batch):
    return batch.to_pylist()


def page_body(records, *, pretty: bool) -> bytes:
    """An event page as a service would send it (json.dumps writes spaces after separators, orjson does not)."""
    page = {"events": records, "has_more": False}
    return json.dumps(page, ensure_ascii=False).encode() if pretty else orjson.dumps(page)


def texts_of(body: bytes) -> dict:
    """The careful path's raw texts of a page, as the paginator passes them."""
    payloads, proofs = raw_texts(body)
    return {"payload_texts": payloads, "proof_texts": proofs}


@PROFILE
@given(st.lists(events(documented=True), max_size=20), st.booleans())
def test_fast_and_careful_event_paths_agree(records, pretty) -> None:
    body = page_body(records, pretty=pretty)
    decoded = decode_event_page(body)
    assert decoded is not None, "a page in the documented shape takes the fast path"
    assert decoded[0].typed
    fast, fast_rejected = columns_batch(decoded[0], channel_id="ch", stream_channel=True)
    careful, careful_rejected = events_batch(
        orjson.loads(body)["events"], channel_id="ch", stream_channel=True, **texts_of(body)
    )
    assert fast.schema == careful.schema
    assert fast.to_pylist() == careful.to_pylist()
    assert [str(r) for r in fast_rejected] == [str(r) for r in careful_rejected]
    for row, text in zip(
        fast.to_pylist(), (r["payload"] for r in {r["event_id"]: r for r in records}.values()), strict=True
    ):
        assert json.loads(row["payload"]) == text  # the payload text is the one sent, whatever its spacing
    sent = {r["event_id"]: r["headers"]["proofs"] for r in records}
    for row in fast.to_pylist():  # the proofs too: stored as sent (spaces and all), never serialised again
        proofs = sent[row["event_id"]]
        assert row["proofs"] == (json.dumps(proofs, ensure_ascii=False) if pretty else orjson.dumps(proofs).decode())


@PROFILE
@given(st.lists(st.lists(events(documented=True), max_size=8), min_size=1, max_size=4), st.booleans(), st.data())
def test_pages_converted_together_equal_one_page_holding_them_all(pages, pretty, data) -> None:
    # the loader converts a channel's pages at once when it flushes them; an event sent on two pages (the same
    # record seen twice) is stored once, as its last copy, exactly as if one page had held every event in order
    if len(pages) > 1 and pages[0] and data.draw(st.booleans()):
        pages[-1].append({**pages[0][0], "payload": {"status": "seen again"}})
    decoded = [decode_event_page(page_body(records, pretty=pretty)) for records in pages]
    assert all(part is not None for part in decoded)
    parts = [columns for columns, _ in decoded]
    merged, merged_rejected = columns_batch(EventColumns.concat(parts), channel_id="ch", stream_channel=True)
    whole, _ = decode_event_page(page_body([r for records in pages for r in records], pretty=pretty))
    expected, expected_rejected = columns_batch(whole, channel_id="ch", stream_channel=True)
    assert merged.to_pylist() == expected.to_pylist()
    assert [str(r) for r in merged_rejected] == [str(r) for r in expected_rejected]


@PROFILE
@given(st.lists(events(), min_size=1, max_size=10))
def test_pages_in_another_shape_take_the_careful_path(records) -> None:
    body = (
        orjson.dumps({"events": records, "has_more": False}, option=orjson.OPT_NON_STR_KEYS)
        if _orjson_can(records)
        else None
    )
    if body is None:
        return
    decoded = decode_event_page(body)
    if any("surprise" in r for r in records):
        assert decoded is None, "an unknown field must reach the careful path, which keeps it in extra"
    if decoded is not None:  # every event happened to be documented: both paths must then agree
        fast, _ = columns_batch(decoded[0], channel_id="ch", stream_channel=True)
        careful, _ = events_batch(orjson.loads(body)["events"], channel_id="ch", stream_channel=True, **texts_of(body))
        assert fast.to_pylist() == careful.to_pylist()


def _orjson_can(value) -> bool:
    try:
        orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return False  # integers over 64 bits: a service cannot send them through orjson either
    return True


def test_invalid_utf8_in_a_payload_is_not_taken_for_a_documented_page() -> None:
    body = (
        b'{"events": [{"event_id": "e1", "headers": {"type": "operation.status", "offset": 1, "proofs": []},'
        b' "payload": {"status": "sent", "note": "\xff"}}], "has_more": false}'
    )
    assert decode_event_page(body) is None


@PROFILE
@given(st.lists(events(), max_size=20))
def test_any_event_page_is_stored_or_rejected_by_name(records) -> None:
    batch, rejected = to_batch("events", records, defaults={"channel_id": "ch"})
    assert batch.schema == RAW_TABLES["events"].schema
    keys = [_stored_id(r, "ch") for r in records]
    assert sorted(batch.column("event_id").to_pylist()) == sorted({k for k in keys if k is not None})
    assert len(rejected) == keys.count(None)
    for r in rejected:
        assert r.field == "event_id" and "events record" in str(r)
    for row in rows_of(batch):
        if row["extra"] is not None:
            json.loads(row["extra"])  # always valid JSON
        if row["payload"] is not None:
            json.loads(row["payload"])


@PROFILE
@given(st.lists(events(), min_size=1, max_size=10))
def test_unknown_fields_and_bad_values_are_kept_not_lost(records) -> None:
    batch, _ = to_batch("events", records, defaults={"channel_id": "ch"})
    by_id = {str(r["event_id"]): r for r in records if isinstance(r.get("event_id"), str) and r["event_id"].strip()}
    for row in rows_of(batch):
        source = by_id.get(row["event_id"])
        if source is None:
            continue
        extra = json.loads(row["extra"]) if row["extra"] else {}
        if "surprise" in source:
            assert extra["surprise"] == json.loads(json.dumps(source["surprise"], default=repr))
        offset = source["headers"]["offset"]
        if row["offset"] is None and offset is not None:
            assert "headers.offset" in extra.get("_invalid", {})


resource = st.dictionaries(
    st.sampled_from(["channel_id", "name", "status", "created_at", "description", "x-new"]), scalar, max_size=6
)


@PROFILE
@given(
    st.sampled_from([t for t in RAW_TABLES if t not in ("events", "operation_transactions")]),
    st.lists(resource, max_size=10),
)
def test_any_resource_page_converts_without_crashing(table, records) -> None:
    key = RAW_TABLES[table].key[0]
    for i, r in enumerate(records):
        if i % 2:
            r[key] = f"id-{i}"
    batch, rejected = to_batch(table, records, defaults={"channel_id": "ch"})
    assert batch.schema == RAW_TABLES[table].schema
    assert batch.num_rows + len(rejected) <= len(records)
    assert all(r.field == key for r in rejected)
