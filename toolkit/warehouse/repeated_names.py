"""Event payloads that repeat a name inside one JSON object: one reading everywhere, and a mark on the row.

RFC 8259 says the names of an object SHOULD be unique and leaves the meaning of a repeated one to the parser. Ours
differ: msgspec and orjson (the typed columns) keep the **last** value, DuckDB's ``->>`` and ``json_extract`` on the
stored text read the **first**. The toolkit's rule is the last value, as msgspec, orjson, Python's ``json``, Go's
``encoding/json`` and ECMAScript's ``JSON.parse`` read it: a payload that repeats a name is stored as the compact
JSON of that reading, every number written with the digits it was sent with (so a view reading the payload and a
typed column agree), and the text as sent is kept beside it in ``extra._sent_payload`` with the repeated names, by
path, in ``extra._repeated_names``. The sync names the events in a problem (the run ends ``partial``).

A page in the documented shape has been told already, at decode: a payload whose struct (every documented field
read) written again is exactly as long as its text repeats no name (:func:`toolkit.event_wire.payloads_may_repeat`,
``EventColumns.may_repeat``); only the payloads it flags are judged here. For the 200,000 payloads of
``benchmarks.cpu_bench`` that costs about 0.15 CPU-s (each page's structs written again, 0.06, and the documented
fields read beyond the columns' own, 0.1), where the check below cost 0.45.

Any other payload (a page read generically) costs one generic parse and serialisation (orjson, in C; about 2 µs per
1 KB payload): a repeated name is the only way the structural ``:`` of the text as sent can outnumber those of the
re-serialised value. The ``:`` are counted for a whole batch at once; only in a batch where the counts differ (or
whose texts escape a ``:``, or that orjson cannot read) is each payload judged on its own, and those it flags read
again with the standard library. Each payload is parsed on its own rather than a batch's payloads joined into one
array: the joined parse built every payload of a batch at once and cost twice as much (0.87 against 0.39 CPU-s
for the 200,000 payloads of ``benchmarks.cpu_bench``), besides a copy of the batch's texts.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ..event_wire import JsonNumber, exact_json_text

_S = pa.string()


class _Pairs(list):  # type: ignore[type-arg]
    """An object's (name, value) pairs in the order sent, kept so that a repeated name can be seen."""


def repeated_names(text: bytes | str) -> list[str]:
    """The paths (``status``, ``transactions[0].to``) of the names repeated inside one object of JSON ``text``, in
    the order they are met; empty when every object's names are unique or the text is not JSON."""
    try:
        parsed = json.loads(text, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return []
    found: list[str] = []
    _walk(parsed, "", found)
    return found


def _walk(value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, _Pairs):
        seen: set[str] = set()
        for name, item in value:
            where = f"{path}.{name}" if path else name
            if name in seen and where not in found:
                found.append(where)
            seen.add(name)
            _walk(item, where, found)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, f"{path}[{i}]", found)


def last_value_text(text: bytes | str) -> str:
    """``text`` as compact JSON of its last-value reading (a repeated name keeps the value it was given last), every
    number written with the digits it was sent with (``1e400``, ``-0`` and ``1.50`` stay as they are)."""
    # the standard library keeps the last value; each number is kept as its text, never read through a float
    value = json.loads(text, parse_float=JsonNumber, parse_int=JsonNumber)
    settled = exact_json_text(value)
    try:
        settled.encode()
    except UnicodeEncodeError:  # an escaped lone surrogate: kept escaped
        return exact_json_text(value, ensure_ascii=True)
    return settled


def _may_repeat(text: bytes) -> bool:
    """Whether the JSON ``text`` may repeat a name (``False`` is certain)."""
    if b"\\u003" in text:  # an escaped ':' inside a string would upset the count below
        return True
    try:
        again = orjson.dumps(orjson.loads(text))
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, RecursionError, TypeError):
        return True  # an integer beyond 64 bits, a lone surrogate, ...: read with the standard library
    # every ':' of a string value is in both texts; the structural ones are one per name kept, and a repeated
    # name is written once in the re-encoded value
    return text.count(b":") != again.count(b":")


def _text_bytes(column: pa.Array) -> bytes:
    """All the texts of a string array, one after the other."""
    if not pa.types.is_string(column.type):
        return b"".join(t.encode() for t in column.to_pylist() if t)
    bounds = np.frombuffer(column.buffers()[1], np.int32)[column.offset : column.offset + len(column) + 1]
    data = column.buffers()[2]
    if data is None or not len(bounds):
        return b""
    return data.slice(int(bounds[0]), int(bounds[-1] - bounds[0])).to_pybytes()


def _row_texts(column: pa.Array) -> list[bytes]:
    """Each row's text of a string array as bytes (``b""`` for NULL), without a Python string each."""
    if not pa.types.is_string(column.type):
        return [t.encode() if t else b"" for t in column.to_pylist()]
    bounds = np.frombuffer(column.buffers()[1], np.int32)[column.offset : column.offset + len(column) + 1].tolist()
    text, first = _text_bytes(column), bounds[0] if bounds else 0
    return [text[a - first : b - first] for a, b in itertools.pairwise(bounds)]


def _none_may_repeat(column: pa.Array, texts: Sequence[Any], joined: bytes | None = None) -> bool:
    """Whether no text of ``column`` (``texts``: the same texts, bytes-like or ``None``, row by row; ``joined``: the
    same texts one after the other, when the caller has them) can repeat a name: :func:`_may_repeat` for a whole
    batch at once (its texts as sent counted in one piece)."""
    # one copy at most: Arrow's substring kernels took longer than the parse
    sent_text = _text_bytes(column) if joined is None else joined
    if b"\\u003" in sent_text:
        return False
    sent = sent_text.count(b":")
    loads, dumps = orjson.loads, orjson.dumps
    try:
        again = sum(dumps(loads(memoryview(t))).count(b":") for t in texts if t is not None)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, RecursionError, TypeError, ValueError):
        return False  # an integer beyond 64 bits, a lone surrogate, ...: each payload is judged on its own
    return sent == again


def settle_repeated_names(
    batch: pa.RecordBatch,
    texts: Sequence[Any] | None = None,
    joined: bytes | None = None,
    may_repeat: Sequence[bool] | None = None,
) -> pa.RecordBatch:
    """``batch`` of the events table with every payload that repeats a name stored as its last-value reading, the
    text as sent and the names kept in ``extra`` (see the module's docstring); the batch itself when none does.
    ``texts``: the payloads the column was built from, row by row (bytes-like or ``None``), when the caller has
    them, so that they are not taken out of the array again; ``joined``: those texts one after the other (the
    column's data), when the caller has it; ``may_repeat``: with ``texts``, whether each may repeat a name as the
    typed decode told it (:func:`~toolkit.event_wire.payloads_may_repeat`; ``False`` is certain)."""
    column = batch.column("payload")
    if not len(column) or column.null_count == len(column):
        return batch
    if may_repeat is not None and texts is not None:
        if not any(may_repeat):
            return batch
        suspects = [i for i, text in enumerate(texts) if may_repeat[i] and text and _may_repeat(bytes(text))]
    elif _none_may_repeat(column, _row_texts(column) if texts is None else texts, None if texts is None else joined):
        return batch
    else:
        judge = _may_repeat  # the rare batch that may: each payload as the column holds it
        suspects = [i for i, text in enumerate(_row_texts(column)) if text and judge(text)]
    if not suspects:
        return batch
    payloads = column.to_pylist()
    extras = batch.column("extra").to_pylist()
    changed = False
    for i in suspects:
        text = payloads[i]
        names = repeated_names(text) if text is not None else []
        if not names:
            continue
        changed = True
        extra = json.loads(extras[i]) if extras[i] else {}
        if not isinstance(extra, dict):
            extra = {"_extra": extra}
        extra["_repeated_names"] = [f"payload.{n}" for n in names]
        extra["_sent_payload"] = text
        extras[i] = json.dumps(extra, ensure_ascii=False)
        payloads[i] = last_value_text(text)
    if not changed:
        return batch
    arrays = list(batch.columns)
    arrays[batch.schema.get_field_index("payload")] = pa.array(payloads, _S)
    arrays[batch.schema.get_field_index("extra")] = pa.array(extras, _S)
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def repeated_names_problem(table: str, batch: pa.RecordBatch | pa.Table, where: str) -> str | None:
    """The problem a sync records for the rows of ``batch`` whose ``extra`` lists repeated names (an event payload
    settled by :func:`settle_repeated_names`, or a record the client read with a repeated name: see
    :func:`toolkit.api.exactjson.loads_marking_repeats`), ``None`` when there are none: how many, the first by its
    key and names, and the request (``where``)."""
    if "extra" not in batch.schema.names:
        return None
    marked = pc.fill_null(pc.match_substring(batch.column("extra"), '"_repeated_names"'), False)
    count = pc.sum(marked).as_py() or 0
    if not count:
        return None
    first = batch.filter(marked).slice(0, 1).to_pylist()[0]
    key = batch.schema.names[0]
    listed = json.loads(first["extra"]).get("_repeated_names")
    names = ", ".join(map(str, listed)) if isinstance(listed, list) else "inside a nested object"
    return (
        f"{count} {table} record(s) repeated a name inside one JSON object (first: {key} {first[key]}, {names}); "
        "names should be unique, so the last value is the one kept, in every column and in any stored payload "
        f"(the names under extra._repeated_names, a payload as sent under extra._sent_payload){where}"
    )
