"""The metric registry is the truth about every metric: its columns, filters and needed events match what the
functions do, and the generated docs match the registry."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from toolkit import metrics, spec
from toolkit.metrics.declare import FILTER_NAMES, UnknownValueError
from toolkit.presentation import tables as present
from toolkit.registry import METRICS, markdown

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metric-columns.md"


def test_the_command_line_names_are_the_registry_names() -> None:
    assert list(metrics.METRICS) == [m.name for m in METRICS]
    for m in METRICS:
        assert metrics.METRICS[m.name] is getattr(metrics, m.function)


@pytest.mark.parametrize("entry", METRICS, ids=lambda m: m.name)
def test_declared_columns_filters_and_kinds_match_the_results(warehouse, entry) -> None:
    func = getattr(metrics, entry.function)
    df = func(warehouse)
    assert set(df.columns) <= set(entry.column_names), set(df.columns) - set(entry.column_names)
    assert set(entry.default) <= set(entry.column_names)
    kinds = entry.kinds()
    assert set(kinds.values()) <= set(present.KINDS)
    for column in df.columns:  # the declared kind agrees with the values' type
        dtype = str(df[column].dtype)
        if kinds[column] in ("proportion", "duration", "number"):
            assert dtype.startswith(("float", "int", "Int", "Float")), (column, dtype)
        elif kinds[column] == "count":
            assert dtype.startswith(("int", "Int", "float")), (column, dtype)
        elif kinds[column] == "time":
            assert dtype.startswith("datetime64"), (column, dtype)
    if "channel_id" in df.columns:  # results that carry a channel's id carry its name beside it
        assert list(df.columns).index("channel") == list(df.columns).index("channel_id") + 1


#: A value of each filter the test warehouse does not hold, and one of the period filters.
NOWHERE = {"channel": "ch-nowhere", "network": "Nowhere Net", "status": "nowhere_status"}
PERIOD = {"since": "2000-01-01", "until": "2100-01-01"}


@pytest.mark.parametrize("entry", METRICS, ids=lambda m: m.name)
def test_a_metric_reads_exactly_its_declared_filters(warehouse, entry) -> None:
    """What the function does, not the declaration read back: a declared filter is read (a value the warehouse does
    not hold is refused by name), any other filter is refused as one it does not take."""
    func = getattr(metrics, entry.function)
    for name in FILTER_NAMES:
        value = NOWHERE.get(name) or PERIOD[name]
        if name not in entry.filters:
            with pytest.raises(TypeError, match=f"does not filter by \\['{name}'\\]"):
                func(warehouse, **{name: value})
        elif name in NOWHERE:
            with pytest.raises(UnknownValueError, match=value):
                func(warehouse, **{name: value})
        else:
            assert isinstance(func(warehouse, **{name: value}), pd.DataFrame)


def test_every_needed_event_type_is_one_the_service_sends() -> None:
    """A metric's ``needs`` is what the coverage check refuses it without: a type name not in the vocabulary would
    refuse it on every warehouse."""
    needs = {m.needs for m in METRICS} - {None}
    assert needs and needs <= set(spec.EVENT_TYPES), needs - set(spec.EVENT_TYPES)


def test_the_docs_are_generated_from_the_registry() -> None:
    assert DOCS.read_text(encoding="utf-8") == markdown(), "run: python -m toolkit.registry"


def test_signatures_are_built_from_the_declaration() -> None:
    """help() shows the real keywords: the declared filters, `where`, the engine keywords and the def's own ones (by,
    bucket, ...), and no filter the metric does not take."""
    import inspect

    for m in METRICS:
        for name in (m.function, *m.companions):
            func = getattr(metrics, name)
            params = inspect.signature(func).parameters
            own = inspect.signature(func.__wrapped__).parameters
            assert list(params)[:2] == ["warehouse", "where"], name
            assert [p for p in params if p in ("channel", "network", "status", "since", "until")] == list(m.filters)
            assert {"engine", "parquet", "spark"} <= set(params), name
            assert set(own) - {"warehouse", "where"} <= set(params), name  # by, bucket, top, now, ...
            assert all(f"``{f}``" in func.__doc__ for f in m.filters), name
