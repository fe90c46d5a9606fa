"""Row-for-row equality of two metric tables, written for the Spark tests without the toolkit's own code: the same
columns in the same order and the same rows in the same order; integers exactly, other numbers to 1e-9 relative,
times as the same UTC instants, everything else as equal values (NULL equal to NULL)."""

from __future__ import annotations

import math

import pandas as pd

RTOL = 1e-9


def _cell(value: object) -> object:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        assert value.tzinfo is not None, f"naive timestamp {value}"
        return ("time", value.value)  # nanoseconds since the epoch, UTC
    if isinstance(value, bool):
        return value
    if hasattr(value, "item"):  # numpy scalars
        return _cell(value.item())
    return value


def assert_same_table(duck: pd.DataFrame, spark: pd.DataFrame, what: str) -> None:
    """Fail with the first difference between ``duck`` and ``spark`` (``what`` names the case)."""
    assert list(spark.columns) == list(duck.columns), f"{what}: columns differ"
    assert len(spark) == len(duck), f"{what}: {len(duck)} rows on DuckDB, {len(spark)} on Spark"
    for col in duck.columns:
        assert str(spark[col].dtype) == str(duck[col].dtype), (
            f"{what}: column {col!r} is {duck[col].dtype} on DuckDB, {spark[col].dtype} on Spark"
        )
        for i, (a, b) in enumerate(zip(duck[col].tolist(), spark[col].tolist(), strict=True)):
            a, b = _cell(a), _cell(b)
            where = f"{what}: row {i}, column {col!r}: DuckDB {a!r}, Spark {b!r}"
            if a is None or b is None:
                assert a is None and b is None, where
            elif isinstance(a, float) or isinstance(b, float):
                assert isinstance(a, (int, float)) and isinstance(b, (int, float)), where
                assert math.isclose(a, b, rel_tol=RTOL, abs_tol=0.0) or a == b, where
            else:
                assert a == b and type(a) is type(b), where
