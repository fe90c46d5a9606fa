"""The exact JSON parse: integers of any size keep every digit, and the quick test in front of the regular expression
never lets a long integer literal through to orjson."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.api import exactjson
from toolkit.api.exactjson import _LONG_INTEGER, may_hold_long_integer
from toolkit.api.wire import raw_texts
from toolkit.event_wire import json_text

BIG = 2**64 + 12345  # beyond what orjson holds: it would come back as a float


def test_long_integers_keep_every_digit_wherever_they_stand() -> None:
    for body in (
        f'{{"a": {BIG}}}',
        f'{{"a":{BIG}}}',
        f'{{"a":\n\t -{BIG}}}',
        f"[{BIG}]",
        f"[1, {BIG}]",
        f'{{"data": [{{"chain_selector": {BIG}}}]}}',
    ):
        assert exactjson.loads(body.encode()) == json.loads(body), body


def test_digits_inside_strings_stay_text_and_short_integers_take_orjson() -> None:
    body = b'{"chain_selector": "16015286601757825753", "value": "1000000000000000000000", "n": 123456789012345678}'
    assert not may_hold_long_integer(body)
    assert exactjson.loads(body) == {
        "chain_selector": "16015286601757825753",
        "value": "1000000000000000000000",
        "n": 123456789012345678,
    }


def test_invalid_json_is_still_refused() -> None:
    for body in (b"{", b'{"a": NaN}', b"[1,]"):
        try:
            exactjson.loads(body)
        except ValueError:
            continue
        raise AssertionError(f"{body!r} was accepted")


# text made of the characters that matter to the expression, so that matches are frequent
_ALPHABET = st.sampled_from([b"0", b"1", b"9", b":", b"[", b",", b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"-"]) | (
    st.sampled_from([b'"', b"a", b"{", b"}", b"]", b".", b"e", b"+"])
)


@settings(max_examples=1000)
@given(st.lists(_ALPHABET | st.just(b"1234567890123456789"), max_size=12).map(b"".join))
def test_the_quick_test_never_misses_what_the_expression_finds(body: bytes) -> None:
    if _LONG_INTEGER.search(body) is not None:
        assert may_hold_long_integer(body)


@given(st.binary(max_size=200))
def test_the_quick_test_never_misses_on_any_bytes(body: bytes) -> None:
    if _LONG_INTEGER.search(body) is not None:
        assert may_hold_long_integer(body)


def test_an_object_that_repeats_a_name_keeps_the_last_value_and_lists_the_name() -> None:
    body = b'{"data": [{"status": "sending", "id": "a", "status": "sent", "tx": {"to": 1, "to": 2}}, {"x": "y:z"}]}'
    got = exactjson.loads_marking_repeats(body)
    first, second = got["data"]
    assert first == {
        "status": "sent",
        "id": "a",
        "tx": {"to": 2},  # the nested object gains no field: its repeat is named on the record, by path
        "_repeated_names": ["status", "tx.to"],
    }
    assert second == {"x": "y:z"} and "_repeated_names" not in got
    # no repeat: exactly what loads reads, big integers too; a repeat beside a big integer is still found
    plain = b'{"data": [{"n": 18446744073709551616, "s": "a:b"}], "has_more": false}'
    assert exactjson.loads_marking_repeats(plain) == exactjson.loads(plain)
    assert exactjson.loads_marking_repeats(b'{"n": 18446744073709551616, "n": 1}') == {"n": 1, "_repeated_names": ["n"]}
    # an escaped ':' balancing the count does not hide a repeat
    assert exactjson.loads_marking_repeats(b'{"a": "\\u003a", "a": 1}') == {"a": 1, "_repeated_names": ["a"]}


def test_an_event_page_with_a_number_past_float_range_is_read_with_its_digits() -> None:
    # issue 38: valid JSON that orjson refuses made a whole page of events unreadable
    body = b'{"events": [{"payload": {"gas": 1e400, "n": -2E999, "f": 1.5, "u": 1e-400}}], "has_more": false}'
    value = exactjson.loads(body, past_float_range=True)
    payload = value["events"][0]["payload"]
    assert payload == {"gas": Decimal("1e400"), "n": Decimal("-2e999"), "f": 1.5, "u": 0.0}
    assert type(payload["f"]) is float  # a number a float holds stays a float
    # lists are read as before: such a body is refused, named by the client
    with pytest.raises(ValueError):
        exactjson.loads(body)


def test_a_value_holding_such_a_number_is_written_again_with_its_digits() -> None:
    value = {"x": [Decimal("1e400"), 0, 1.5, {"k": Decimal("-1E+400")}], "s": "é"}
    text = json_text(value)
    assert json.loads(text, parse_float=Decimal) == json.loads(
        '{"x": [1e400, 0, 1.5, {"k": -1e400}], "s": "é"}', parse_float=Decimal
    )


def test_the_texts_of_an_event_holding_an_escaped_lone_surrogate_are_cut_from_the_page_as_sent() -> None:
    # msgspec refuses the escape even inside a text it keeps raw: the payload was written again, "\ud800" as U+FFFD
    payload = rb'{"": "\ud800", "pair": "\ud83d\ude00", "gas": 1e400}'
    proofs = rb'["\udfff"]'
    body = rb'{"events": [{"event_id": "a", "headers": {"proofs": ' + proofs + rb'}, "payload": ' + payload
    body += rb'}, {"event_id": "b", "payload": {}}], "has_more": false}'
    assert raw_texts(body) == ([payload, b"{}"], [proofs, None])
