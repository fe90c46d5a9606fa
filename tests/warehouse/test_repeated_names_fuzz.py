"""The typed decode's repeated-names verdict (``EventColumns.may_repeat``, issue 40) checked against an independent
reading: the standard library's parser with a hook that sees every object's pairs in order. Payloads are generated
from a seed in the documented shape and beside it (escapes, spaces, ``null`` for absent, numbers written otherwise,
names the struct does not read, fields of another type, repeats at any depth), and one page is built so that a
payload written longer by its struct and another shortened by a repeat cancel out exactly. A payload the reading
finds a repeat in must never be told ``False``, and the rows stored must be those of the generic path."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import orjson

from toolkit.api.wire import decode_event_page, raw_texts
from toolkit.event_wire import WireFullPayload, WirePayload, columns_from_records
from toolkit.warehouse.event_batches import columns_batch

SEED = 4040
PAGES = 250
PER_PAGE = 8

TEXT_FIELDS = ("status", "status_reason", "operation_id", "wallet_operation_id", "digest", "workflow_id")
RAW_FIELDS = ("verifiable_event", "verifiable_result")


def _repeats(text: str) -> bool:
    """Whether any object of ``text`` repeats a name (the standard library hands every pair to the hook)."""
    seen = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        names = [name for name, _ in pairs]
        seen.append(len(set(names)) < len(names))
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)
    return any(seen)


def _string(rng: random.Random) -> str:
    """A JSON string as a sender may write it: escapes where none is needed, characters outside ASCII, ``:``."""
    pieces = ["a", "0x1f", ":", " ", "é", "\\u00e9", "\\u0041", '\\"', "\\\\", "\\/", "😀", "\\ud83d\\ude00", "{", "}"]
    return '"' + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) + '"'


def _value(rng: random.Random, depth: int) -> str:
    kind = rng.randrange(7 if depth < 3 else 4)
    if kind == 0:
        return _string(rng)
    if kind == 1:
        return rng.choice(["0", "-0", "1", "12.50", "1e3", "1E+2", "-7", "123456789012345678901234"])
    if kind == 2:
        return rng.choice(["null", "true", "false"])
    if kind == 3:
        return '""'
    if kind == 4:
        return "[" + ",".join(_value(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    return _object(rng, [(f"k{i}", _value(rng, depth + 1)) for i in range(rng.randint(0, 3))])


def _object(rng: random.Random, pairs: list[tuple[str, str]]) -> str:
    """An object of ``pairs``, sometimes one of them sent twice (with the same value or another), sometimes spaced."""
    pairs = list(pairs)
    if pairs and rng.random() < 0.15:
        name, value = rng.choice(pairs)
        pairs.insert(rng.randrange(len(pairs) + 1), (name, value if rng.random() < 0.5 else '"other"'))
    gap = rng.choice(["", "", "", " ", "\n  "])
    return "{" + gap + ("," + gap).join(f'"{name}":{gap}{value}' for name, value in pairs) + gap + "}"


def _clean_payload(rng: random.Random) -> str:
    """A payload as the service writes one (compact, documented fields only), a name repeated in one in ten."""
    pairs = [(name, f'"{name[:3]}{rng.randrange(10**6)}"') for name in TEXT_FIELDS if rng.random() < 0.6]
    pairs.append(("timestamp", str(1795000000 + rng.randrange(10**5))))
    if rng.random() < 0.3:
        pairs.append(("transactions", '[{"to":"0x1","value":"0","data":"0x"}]'))
    if rng.random() < 0.1:
        name, value = rng.choice(pairs)
        pairs.append((name, value))
    if rng.random() < 0.05:
        pairs.append(("transactions", '[{"to":"0x1","value":"0","to":"0x2","data":"0x"}]'))
    return "{" + ",".join(f'"{name}":{value}' for name, value in pairs) + "}"


def _payload(rng: random.Random) -> str:
    """A payload beside the documented shape, in any of the ways listed in the module's text."""
    pairs: list[tuple[str, str]] = []
    for name in TEXT_FIELDS:
        roll = rng.random()
        if roll < 0.5:
            pairs.append((name, _string(rng)))
        elif roll < 0.6:
            pairs.append((name, "null"))
        elif roll < 0.63:
            pairs.append((name, _value(rng, 1)))  # perhaps another type
    if rng.random() < 0.7:
        pairs.append(("timestamp", str(rng.choice([0, 1795000000, 1795000001]))))
    if rng.random() < 0.4:
        items = [
            _object(rng, [("to", _string(rng)), ("value", _string(rng)), ("data", _string(rng))])
            for _ in range(rng.randint(0, 3))
        ]
        pairs.append(("transactions", "[" + ",".join(items) + "]"))
    for name in RAW_FIELDS:
        if rng.random() < 0.3:
            pairs.append((name, _string(rng) if rng.random() < 0.8 else _value(rng, 1)))
    if rng.random() < 0.2:
        pairs.append(("surprise", _value(rng, 1)))  # a name no struct reads
    rng.shuffle(pairs)
    return _object(rng, pairs)


def _page(payloads: list[str]) -> bytes:
    events = ",".join(
        f'{{"event_id":"e{i}","headers":{{"type":"operation.status","offset":{i},"proofs":[]}},"payload":{p}}}'
        for i, p in enumerate(payloads)
    )
    return f'{{"events":[{events}],"has_more":false}}'.encode()


def _check(body: bytes, payloads: list[str]) -> tuple[int, int]:
    """Assert the typed path's verdicts and rows for ``body``; returns (payloads told by the typed path, of which
    told ``False``)."""
    decoded = decode_event_page(body)
    if decoded is None or decoded[0].may_repeat is None:
        return 0, 0
    told = decoded[0].may_repeat
    for text, may in zip(payloads, told, strict=True):
        if _repeats(text):
            assert may, f"a repeat told certain not to be: {text}"
    fast, _ = columns_batch(decoded[0], channel_id="c", stream_channel=True)
    sent, proofs = raw_texts(body)
    generic = columns_from_records(orjson.loads(body)["events"], sent, proofs)
    careful, _ = columns_batch(generic, channel_id="c", stream_channel=True)
    assert fast.to_pylist() == careful.to_pylist()
    return len(told), told.count(False)


def test_no_payload_that_repeats_a_name_is_told_it_does_not() -> None:
    rng = random.Random(SEED)
    typed = certain = repeating = 0
    for page in range(PAGES):
        make = _clean_payload if page % 2 else _payload  # every other page as the service writes them
        payloads = [make(rng) for _ in range(PER_PAGE)]
        repeating += sum(map(_repeats, payloads))
        told, false = _check(_page(payloads), payloads)
        typed, certain = typed + told, certain + false
    # the typed path and its certain verdict were exercised, and so were repeats (else this proves little)
    assert typed >= PAGES * PER_PAGE // 2, typed
    assert certain >= typed // 4, (certain, typed)
    assert repeating >= 100, repeating


def test_a_payload_written_longer_does_not_hide_a_repeat_on_its_page() -> None:
    # A documented field of another type: this payload is read as WirePayload, which writes every field it lacks as
    # null, so its struct written again is longer than its text by `grown` bytes.
    longer = '{"status":"sent","digest":5}'
    grown = len(msgspec.json.encode(msgspec.json.decode(longer, type=WirePayload))) - len(longer)
    assert grown > 17
    # Another payload repeats a documented name; the copy its struct drops, `"workflow_id":"…",`, is `grown` bytes,
    # so the page's texts and its structs written again are exactly as long.
    value = "v" * (grown - len('"workflow_id":"",'))
    repeating = f'{{"status":"sent","workflow_id":"{value}","workflow_id":"{value}"}}'
    shrunk = len(repeating) - len(msgspec.json.encode(msgspec.json.decode(repeating, type=WireFullPayload)))
    assert shrunk == grown
    payloads = [longer, repeating]
    told, _ = _check(_page(payloads), payloads)
    assert told == 2  # the typed path read the page
