"""The change between two proportions: Newcombe's hybrid score interval against the published worked examples, and
the pooled two-proportion z-test against a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from toolkit.metrics.stats import newcombe_interval, two_proportion_p

# Newcombe (1998), "Interval estimation for the difference between independent proportions", Statistics in Medicine
# 17:873-890, Table II, method 10 (score interval, no continuity correction): (k1, n1, k2, n2) -> (low, high).
NEWCOMBE_TABLE_II = [
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((0, 10, 0, 10), (-0.2775, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0000)),
    ((10, 10, 0, 10), (0.6075, 1.0000)),
]


@pytest.mark.parametrize(("counts", "expected"), NEWCOMBE_TABLE_II)
def test_newcombe_matches_the_published_table(counts: tuple[int, ...], expected: tuple[float, float]) -> None:
    k1, n1, k2, n2 = counts
    diff, low, high = newcombe_interval(k1, n1, k2, n2)
    assert float(diff) == pytest.approx(k1 / n1 - k2 / n2)
    assert round(float(low), 4) == pytest.approx(expected[0], abs=1e-9)
    assert round(float(high), 4) == pytest.approx(expected[1], abs=1e-9)


def _z_test_by_hand(k1: int, n1: int, k2: int, n2: int) -> float:
    pooled = (k1 + k2) / (n1 + n2)
    z = (k1 / n1 - k2 / n2) / math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    return math.erfc(abs(z) / math.sqrt(2))


def test_the_issues_day_over_day_change_is_not_significant_at_2_points() -> None:
    # 10/391 against 19/357: -2.76 percentage points with p about 0.05
    diff, low, high = newcombe_interval(10, 391, 19, 357)
    assert float(diff) == pytest.approx(10 / 391 - 19 / 357) and round(float(diff) * 100, 2) == -2.76
    assert float(low) < -0.05 and 0 < float(high) < 0.001  # the interval holds 0: no evidence of any change
    p = float(two_proportion_p(10, 391, 19, 357))
    assert p == pytest.approx(_z_test_by_hand(10, 391, 19, 357), rel=1e-12)
    assert p == pytest.approx(0.0504, abs=5e-4)


@pytest.mark.parametrize("counts", [(56, 70, 48, 80), (9, 10, 3, 10), (1, 1000, 3, 900), (0, 5, 2, 5)])
def test_z_test_p_value_matches_a_hand_computation(counts: tuple[int, ...]) -> None:
    assert float(two_proportion_p(*counts)) == pytest.approx(_z_test_by_hand(*counts), rel=1e-12)


def test_vectorised_and_empty_trials_give_nan() -> None:
    diff, low, high = newcombe_interval([56, 1, 3], [70, 0, 10], [48, 1, 2], [80, 5, 0])
    assert diff[0] == pytest.approx(0.2) and np.isnan(diff[1:]).all()
    assert np.isnan(low[1:]).all() and np.isnan(high[1:]).all()
    p = two_proportion_p([56, 1, 0], [70, 0, 10], [48, 1, 0], [80, 5, 10])
    assert p[0] == pytest.approx(_z_test_by_hand(56, 70, 48, 80)) and np.isnan(p[1]) and p[2] == 1.0
