"""Kaplan–Meier percentiles (toolkit.metrics.survival): a textbook example worked by hand, the uncensored case
against numpy, the tie rule, the sample-size rule and its notes (it hides only what is not final), and the vectorised
groups against a naive loop."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.support.km_reference import km_percentile
from toolkit.metrics.survival import km_percentiles, km_quantile, min_observations

# Freireich et al. (1963), 6-MP arm of the leukaemia remission trial (Kalbfleisch & Prentice; Klein & Moeschberger
# table 1.1): weeks in remission, 21 patients, 9 relapses; a censored time is marked True.
SIX_MP = [6, 6, 6, 6, 7, 9, 10, 10, 11, 13, 16, 17, 19, 20, 22, 23, 25, 32, 32, 34, 35]
SIX_MP_CENSORED = [
    False, False, False, True, False, True, False, True, True, False, False, True, True, True,
    False, False, True, True, True, True, True,
]  # fmt: skip


def test_six_mp_median_is_23_weeks_as_worked_by_hand() -> None:
    # By hand (at risk n, relapses d, S = product of (1 - d/n)):
    #   t=6:  n=21 d=3  S = 18/21            = 0.857
    #   (one censored at 6, one at 9)
    #   t=7:  n=17 d=1  S = 0.857 * 16/17    = 0.807
    #   t=10: n=15 d=1  S = 0.807 * 14/15    = 0.753   (one more censored at 10, one at 11)
    #   t=13: n=12 d=1  S = 0.753 * 11/12    = 0.690
    #   t=16: n=11 d=1  S = 0.690 * 10/11    = 0.627   (censored at 17, 19, 20)
    #   t=22: n=7  d=1  S = 0.627 * 6/7      = 0.538
    #   t=23: n=6  d=1  S = 0.538 * 5/6      = 0.448  <= 0.5 first here: the median is 23 weeks
    # and S never reaches 0.1 (the rest are censored): p90 cannot be estimated.
    assert km_quantile(SIX_MP, SIX_MP_CENSORED, 0.5) == 23.0
    row = km_percentiles(
        pd.DataFrame(
            {"duration": SIX_MP, "events": [int(not c) for c in SIX_MP_CENSORED], "censored": SIX_MP_CENSORED}
        ),
        [],
        (0.5, 0.9),
        pending="in remission",
    ).iloc[0]
    assert (row.observations, row.events, row.censored) == (21, 9, 12)
    # the at-risk rule: 6 still at risk at 23 weeks after censorings before it, fewer than 10, so the table leaves
    # the median out (its 95% confidence interval, 13 weeks to unbounded, says the same); km_quantile has no rule
    assert math.isnan(row.p50_s) and math.isnan(row.p90_s)
    assert row.notes == (
        "p50: 6 at risk at 23 s < 10 needed (12 of 21 in remission); "
        "p90: 12 of 21 in remission; survival stays above 10% (lowest 45%)"
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=60),
    st.sampled_from([0.5, 0.9, 0.99, 0.25, 0.75, 0.1, 1 / 3, 0.95]),
)
def test_with_nothing_censored_it_is_numpys_averaged_inverted_cdf(values, q) -> None:
    x = np.array(values, dtype=float)
    assert km_quantile(x, None, q) == pytest.approx(float(np.quantile(x, q, method="averaged_inverted_cdf")))


def test_uncensored_random_samples_and_continuous_probabilities() -> None:
    rng = np.random.default_rng(13)
    for _ in range(500):
        x = np.round(rng.exponential(100, rng.integers(1, 200)))
        q = float(rng.random() * 0.99)
        assert km_quantile(x, None, q) == pytest.approx(float(np.quantile(x, q, method="averaged_inverted_cdf")))


def test_midpoint_where_the_curve_sits_exactly_on_the_level() -> None:
    assert km_quantile([1, 2, 3, 4], None, 0.5) == 2.5  # S(2) = 0.5 exactly: halfway to the next event at 3
    assert km_quantile([1, 2, 2, 4], None, 0.5) == 2.0  # S drops past 0.5 at 2
    assert km_quantile([1, 2], [False, True], 0.5) == 1.0  # S(1) = 0.5 to the end (2 is censored): the lower end


def test_events_come_before_censorings_at_the_same_time() -> None:
    # 5 (relapse), 5 (censored), 10 (relapse). Events first: at 5 three at risk, S = 2/3; at 10 one at risk, S = 0:
    # the median is 10. (Censoring first would give S(5) = 1/2 and a median of 7.5.)
    assert km_quantile([5, 5, 10], [False, True, False], 0.5) == 10.0


def test_censoring_raises_the_median_above_the_finished_only_reading() -> None:
    # finished 1, 2, 3, 20; three still going at 10. Finished only: median 2.5.
    # KM: S(1) = 6/7, S(2) = 5/7, S(3) = 4/7, (3 censored at 10), S(20) = 0: median 20.
    finished = [1, 2, 3, 20]
    assert float(np.quantile(finished, 0.5, method="averaged_inverted_cdf")) == 2.5
    assert km_quantile([*finished, 10, 10, 10], [False] * 4 + [True] * 3, 0.5) == 20.0


def test_sample_size_rule() -> None:
    assert [min_observations(q) for q in (0.5, 0.9, 0.99, 0.75, 0.0)] == [2, 10, 100, 4, 1]
    with pytest.raises(ValueError):
        min_observations(1.0)
    counts = pd.DataFrame(
        {
            "g": ["seven"] * 7 + ["twenty"] * 20 + ["one"] + ["four"] * 4,
            "duration": [*range(1, 8), *range(1, 21), 5, 1, 2, 3, 4],
            "events": [1] * 7 + [1] * 8 + [0] * 12 + [1] + [1, 1, 0, 1],
            "censored": [0] * 7 + [0] * 8 + [1] * 12 + [0] + [0, 0, 1, 0],
        }
    )
    df = km_percentiles(counts, ["g"], (0.5, 0.9)).set_index("g")
    seven, twenty, one, four = df.loc["seven"], df.loc["twenty"], df.loc["one"], df.loc["four"]
    # 7 uncensored: x_(4) (n q = 3.5); nothing open, so p90 (the largest, 7) is final and shown below the rule
    assert seven.p50_s == 4.0 and seven.p90_s == 7.0
    assert seven.notes == "p90: n=7 < 10, final (nothing open can change it)"
    # 1, 2, 4 ended and one open at 3: S(2) = 1/2 exactly, so p50 = (2 + 4) / 2 = 3 and p90 is read at 4; the stay
    # open at 3 may end before 4, so neither is final, and the sample-size rule hides p90
    assert four.p50_s == 3.0 and math.isnan(four.p90_s) and four.notes == "p90: n=4 < 10"
    # 20 observations, 8 ended (1..8), 12 censored at 9..20: S(8) = 12/20 = 0.6 at the last event
    assert math.isnan(twenty.p50_s) and math.isnan(twenty.p90_s)
    assert twenty.notes == (
        "p50: 12 of 20 still in status; survival stays above 50% (lowest 60%); "
        "p90: 12 of 20 still in status; survival stays above 10% (lowest 60%)"
    )
    assert (twenty.observations, twenty.events, twenty.censored) == (20, 8, 12)
    assert one.p50_s == one.p90_s == 5.0
    assert one.notes == (
        "p50: n=1 < 2, final (nothing open can change it); p90: n=1 < 10, final (nothing open can change it)"
    )


def test_groups_at_once_match_a_naive_loop_per_group() -> None:
    rng = np.random.default_rng(7)
    rows = []
    for g in range(40):
        n = int(rng.integers(1, 150))
        durations = rng.integers(0, 50, n)
        censored = rng.random(n) < rng.random() * 0.6
        rows += [(f"g{g}", g % 3, float(d), bool(c)) for d, c in zip(durations, censored, strict=True)]
    obs = pd.DataFrame(rows, columns=["name", "part", "duration", "is_censored"])
    counts = (
        obs.assign(events=~obs.is_censored, censored=obs.is_censored)
        .groupby(["name", "part", "duration"], as_index=False)[["events", "censored"]]
        .sum()
    )
    counts.loc[len(counts)] = ["empty", 0, np.nan, 0, 0]  # a group without observations keeps its row
    got = km_percentiles(counts.sample(frac=1, random_state=1), ["name", "part"], (0.5, 0.9, 0.99))
    assert len(got) == 41
    empty = got[got["name"] == "empty"].iloc[0]
    assert empty.observations == 0 and math.isnan(empty.p50_s) and empty.notes == "all: no observations"
    for row in got[got["name"] != "empty"].itertuples():
        sub = obs[obs.name == row.name]
        assert (row.observations, row.censored) == (len(sub), int(sub.is_censored.sum()))
        for q, value in ((0.5, row.p50_s), (0.9, row.p90_s), (0.99, row.p99_s)):
            want = km_percentile(list(sub.duration), list(sub.is_censored), q)
            assert value == pytest.approx(want, nan_ok=True), (row.name, q)


def test_a_median_from_one_ended_and_fifteen_censored_stays_is_not_shown() -> None:
    """Issue 29, item 2 (Avalanche ``pending_signature``, last hour): one stay ended at 3,364 s, fifteen censored
    younger; the curve falls to 0 on the one at risk there, so the median is NULL and the note gives the numbers."""
    censored_at = [200.0 * (i + 1) for i in range(15)]  # 200 s .. 3,000 s, all before the one that ended
    counts = pd.DataFrame({"duration": [3364.0, *censored_at], "events": [1] + [0] * 15, "censored": [0] + [1] * 15})
    row = km_percentiles(counts, [], (0.5,)).iloc[0]
    assert km_percentile([3364.0, *censored_at], [False] + [True] * 15, 0.5, rule=False) == 3364.0
    assert np.isnan(row["p50_s"])
    assert row["notes"] == "p50: 1 at risk at 3,364 s < 10 needed (15 of 16 still in status)"
    # nine ended at 1,000 .. 9,000 s and seven censored later: 9 still at risk where the median is read, shown
    durations = [1000.0 * (i + 1) for i in range(9)] + [10_000.0 + i for i in range(7)]
    flags = [False] * 9 + [True] * 7
    later = pd.DataFrame({"duration": durations, "events": [1] * 9 + [0] * 7, "censored": [0] * 9 + [1] * 7})
    value = km_percentiles(later, [], (0.5,)).iloc[0]["p50_s"]
    assert value == km_percentile(durations, flags, 0.5) == km_percentile(durations, flags, 0.5, rule=False)


def test_a_curve_flat_at_exactly_one_half_to_the_end_gives_no_median() -> None:
    """Issue 29's miss (Polygon ``pending_signature``, a 3-h window: 1,886 s shown, 10,450 s eventually): two stays,
    one ended at 1,886 s and one still waiting at 6,000 s. S(1886) = 1 − 1/2 = 0.5 exactly and nothing ends after
    it, so the median is anywhere from 1,886 s on: NULL with the reason (the plain estimator says 1,886 s)."""
    counts = pd.DataFrame({"duration": [1886.0, 6000.0], "events": [1, 0], "censored": [0, 1]})
    row = km_percentiles(counts, [], (0.5,)).iloc[0]
    assert math.isnan(row.p50_s)
    assert row.notes == (
        "p50: survival is exactly 50% from 1,886 s on and nothing ended after it, so p50 is somewhere above 1,886 s "
        "(1 of 2 still in status)"
    )
    assert km_quantile([1886.0, 6000.0], [False, True], 0.5) == 1886.0  # no rules: the lower end
    assert math.isnan(km_percentile([1886.0, 6000.0], [False, True], 0.5))
    # four stays, ended at 1,000, 1,886 and 7,000 s, one waiting at 6,000 s: S(1886) = 3/4 · 2/3 = 0.5 exactly and
    # the stretch is closed by the event at 7,000 s, so the median is its midpoint (1886 + 7000) / 2
    closed = pd.DataFrame(
        {"duration": [1000.0, 1886.0, 6000.0, 7000.0], "events": [1, 1, 0, 1], "censored": [0, 0, 1, 0]}
    )
    assert km_percentiles(closed, [], (0.5,)).iloc[0].p50_s == 4443.0


def test_a_note_writes_long_stays_in_plain_seconds() -> None:
    """Drafts wait for days: ``:g`` wrote a 14-day stay as ``1.2096e+06 s`` in a note."""
    from toolkit.metrics.survival import seconds_text

    assert seconds_text(1_209_600.0) == "1,209,600"
    assert seconds_text(3364.0) == "3,364" and seconds_text(0.25) == "0.25"
