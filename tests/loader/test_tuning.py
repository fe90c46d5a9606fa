"""The models' memory limit within the sync's budget of resident memory (issue 40: a sync peaks at most 400 MB)."""

from __future__ import annotations

import dataclasses

from toolkit.loader.tuning import DEFAULT_TUNING, models_memory_limit, resident_mib


def test_the_models_get_what_the_budget_leaves_between_the_floor_and_the_limit() -> None:
    # 400 MiB budget, 8 MiB of it set aside for the build's overshoot; the limit 256 MB is 244.1 MiB; the floor 122
    assert models_memory_limit(DEFAULT_TUNING, 265.0) == "127MiB"  # 400 - 8 - 265
    assert models_memory_limit(DEFAULT_TUNING, 100.0) == "256MB"  # the budget leaves more than the limit: as set
    assert models_memory_limit(DEFAULT_TUNING, 350.0) == "122MiB"  # less than the floor is left: the floor


def test_the_overshoot_is_set_aside_from_what_the_budget_leaves() -> None:
    tight = dataclasses.replace(DEFAULT_TUNING, peak_budget_mib=300, models_overshoot_mib=20)
    assert models_memory_limit(tight, 100.0) == "180MiB"  # 300 - 20 - 100
    none_aside = dataclasses.replace(tight, models_overshoot_mib=0)
    assert models_memory_limit(none_aside, 100.0) == "200MiB"


def test_a_limit_set_below_the_floor_is_kept() -> None:
    small = dataclasses.replace(DEFAULT_TUNING, models_memory_limit="24MB")  # as the tests of small ceilings set it
    assert models_memory_limit(small, 265.0) == "24MB"
    assert models_memory_limit(small, 380.0) == "24MB"


def test_without_a_budget_or_a_reading_the_limit_is_used_as_set() -> None:
    assert models_memory_limit(DEFAULT_TUNING, None) == "256MB"
    unbounded = dataclasses.replace(DEFAULT_TUNING, peak_budget_mib=None)
    assert models_memory_limit(unbounded, 265.0) == "256MB"


def test_the_resident_memory_is_read_from_proc() -> None:
    resident = resident_mib()
    assert resident is not None and 10 < resident < 100_000
