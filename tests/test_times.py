"""The one parser of times, ages and periods."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from toolkit import times

UNTIL = pd.Timestamp("2026-01-01T00:00:00Z")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("7d", 7 * 86_400),
        ("7days", 7 * 86_400),
        ("12h", 43_200),
        ("2 weeks", 1_209_600),
        ("30m", 1800),
        ("1w", 604_800),
    ],
)
def test_ages(text: str, seconds: int) -> None:
    assert times.age_seconds(text) == seconds
    assert times.parse_time(text, anchor=UNTIL) == UNTIL - pd.Timedelta(seconds=seconds)


def test_named_days_count_from_the_anchor() -> None:
    anchor = pd.Timestamp("2026-01-01T15:30:00Z")
    assert times.parse_time("yesterday", anchor=anchor) == pd.Timestamp("2025-12-31T00:00:00Z")
    assert times.parse_time("today", anchor=anchor) == pd.Timestamp("2026-01-01T00:00:00Z")
    assert times.parse_time("now", anchor=anchor) == anchor


def test_iso_times_are_utc() -> None:
    assert times.parse_time("2026-01-01") == UNTIL
    assert times.parse_time("2026-01-01T01:00:00+01:00") == UNTIL
    assert times.parse_time(None) is None
    with pytest.raises(ValueError, match="not a time"):
        times.parse_time("last tuesday")


def test_a_period_counts_since_back_from_until() -> None:
    assert times.parse_period("1d", "2026-01-01") == (pd.Timestamp("2025-12-31T00:00:00Z"), UNTIL)
    assert times.parse_period("7days", UNTIL)[0] == pd.Timestamp("2025-12-25T00:00:00Z")
    assert times.parse_period("yesterday", "2026-01-01T12:00Z")[0] == pd.Timestamp("2025-12-31T00:00:00Z")
    now = pd.Timestamp("2026-03-01T00:00:00Z")
    assert times.parse_period("1d", None, now=now) == (now - pd.Timedelta(days=1), None)
    assert times.parse_period("1d", "12h", now=now) == (now - pd.Timedelta(hours=36), now - pd.Timedelta(hours=12))
    with pytest.raises(ValueError, match="empty"):
        times.parse_period("2026-01-02", "2026-01-01")


@pytest.mark.parametrize(("value", "seconds"), [("15m", 900), ("1h", 3600), (90, 90), (timedelta(days=1), 86_400)])
def test_durations(value: object, seconds: int) -> None:
    assert times.parse_duration(value) == seconds  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["0s", 0, "soon", True])
def test_bad_durations(value: object) -> None:
    with pytest.raises(ValueError):
        times.parse_duration(value)  # type: ignore[arg-type]
