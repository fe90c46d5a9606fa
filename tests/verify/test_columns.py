"""The verdicts' Arrow columns built from their buffers (toolkit.verify.columns) hold what pyarrow.array makes of the
same lists: values, NULLs, types."""

from __future__ import annotations

import pyarrow as pa
import pytest

from toolkit.verify import columns

TEXTS = [
    [],
    ["verified", None, "invalid", ""],
    [None, None, None],
    ["workflow owner 0x\u00e9\u00e9 is not the expected one"] * 9 + [None] + ["x"],
]
BOOLS = [[], [True, None, False], [True] * 9 + [None] + [False] * 7, [None, None], [False] * 8]
INTS = [[], [0, 4, 3, 32], [7] * 17]


@pytest.mark.parametrize("values", TEXTS)
def test_texts(values) -> None:
    made = columns.texts(values)
    made.validate(full=True)
    assert made.type == pa.string()
    assert made.equals(pa.array(values, pa.string()))
    assert made.to_pylist() == values
    assert made.null_count == values.count(None)


@pytest.mark.parametrize("values", BOOLS)
def test_bools(values) -> None:
    made = columns.bools(values)
    made.validate(full=True)
    assert made.equals(pa.array(values, pa.bool_()))
    assert made.to_pylist() == values
    assert made.null_count == values.count(None)


@pytest.mark.parametrize("values", INTS)
def test_int32s(values) -> None:
    made = columns.int32s(values)
    made.validate(full=True)
    assert made.equals(pa.array(values, pa.int32()))
    assert made.to_pylist() == values
