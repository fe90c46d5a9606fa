"""The messages between verify and its worker processes (:mod:`.pool` sends, :mod:`.worker` answers): each is
pickled and length-prefixed, followed by the raw buffers it points into; and the shapes of what travels.

It imports nothing of the toolkit, so the worker and the pool share it without importing each other.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Sequence
from typing import IO, Any

try:
    from collections.abc import Buffer  # Python 3.12
except ImportError:  # Python 3.11
    from typing import Any as Buffer


_LENGTH = struct.Struct("<Q")

#: One event's verdict as it travels back from a worker: (verdict, reason, valid signers, event hash matches).
Verdict = tuple[str, str | None, int, bool | None]
#: A column of texts as a worker reads it: an Arrow string column's offsets (int32, this machine's order), the bytes
#: they point into (from the first offset on), and the rows that are NULL.
Texts = tuple[bytes, bytes, list[int]]
#: A share of a batch as it travels: the events' types and the rows where the payload and the proofs are NULL; the
#: two columns' offsets and bytes travel beside it, as buffers (payload offsets, payload bytes, proofs offsets,
#: proofs bytes).
Share = tuple[list[str], list[int], list[int]]


def write_message(stream: IO[bytes], message: Any, buffers: Sequence[Buffer] = ()) -> None:
    """``message`` pickled, then ``buffers`` as they are (no copy is made of them here), each after its length;
    flushed."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.write(_LENGTH.pack(len(buffers)))
    for buffer in buffers:
        view = memoryview(buffer)
        stream.write(_LENGTH.pack(view.nbytes))
        stream.write(view)
    stream.flush()


def read_message(stream: IO[bytes]) -> tuple[Any, list[bytes]]:
    """The next message on ``stream`` and the buffers sent with it; ``EOFError`` when the stream has ended."""
    message = pickle.loads(_read_exactly(stream, _read_length(stream)))  # from this process's own pipe
    count = _read_length(stream)
    return message, [_read_exactly(stream, _read_length(stream)) for _ in range(count)]


def _read_length(stream: IO[bytes]) -> int:
    (size,) = _LENGTH.unpack(_read_exactly(stream, _LENGTH.size))
    return int(size)


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the stream ended")
    return data
