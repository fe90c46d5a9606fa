"""Arrow columns made from Python lists without :func:`pyarrow.array`, for the verdicts verify writes.

``pyarrow.array`` imports pandas the first time it is called (to ask whether its argument is a pandas object):
about 35 MiB and 0.3 s that verify, which never uses pandas, would spend in the middle of its run. These build the
same arrays from their buffers (NumPy, which pyarrow loads anyway, packs them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa


def _validity(present: np.ndarray) -> pa.Buffer | None:
    """The validity bitmap of a column whose non-null rows are ``present`` (None when every row is)."""
    if present.all():
        return None
    return pa.py_buffer(np.packbits(present, bitorder="little"))


def texts(values: Sequence[str | None]) -> pa.Array:
    """A ``string`` column of ``values`` (None is NULL)."""
    encoded = [b"" if v is None else v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    present = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    validity = _validity(present)
    return pa.StringArray.from_buffers(
        len(encoded),
        pa.py_buffer(offsets),
        pa.py_buffer(b"".join(encoded)),
        validity,
        0 if validity is None else len(values) - int(present.sum()),
    )


def int32s(values: Sequence[int]) -> pa.Array:
    """An ``int32`` column of ``values`` (no NULL)."""
    data = np.fromiter(values, dtype=np.int32, count=len(values))
    return pa.Array.from_buffers(pa.int32(), len(values), [None, pa.py_buffer(data)], 0)


def bools(values: Sequence[bool | None]) -> pa.Array:
    """A ``bool`` column of ``values`` (None is NULL)."""
    data = np.fromiter((v is True for v in values), dtype=bool, count=len(values))
    present = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    validity = _validity(present)
    bits = pa.py_buffer(np.packbits(data, bitorder="little"))
    return pa.Array.from_buffers(
        pa.bool_(), len(values), [validity, bits], 0 if validity is None else len(values) - int(present.sum())
    )
