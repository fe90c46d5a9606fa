"""Headlines from groups large enough to say something, ranked by the interval; a threshold on the failure-rate
change judged by its interval."""

from __future__ import annotations

import pandas as pd
import pytest

from toolkit.presentation import report

NOW = pd.Timestamp("2026-01-01", tz="UTC")


def _report(latency: pd.DataFrame, rates: pd.DataFrame) -> report.Report:
    summary = {name: float("nan") for name in report.SUMMARY_VALUES}
    tables = {"status_latency": latency, "failure_rates": rates, "stuck_operations": pd.DataFrame()}
    return report.Report(
        title="t",
        since=NOW - pd.Timedelta(days=1),
        until=NOW,
        previous_since=NOW,
        synced_at=None,
        last_run=None,
        tables=tables,
        summary=summary,
        findings=[],
    )


def test_headlines_skip_small_groups_and_rank_by_the_lower_bound() -> None:
    latency = pd.DataFrame(
        {
            "network": ["A", "B", "C"],
            "status": ["sent", "sent", "broadcasting"],
            "n": [1, 10, 50],
            "p50_s": [900.0, 30.0, 20.0],
            "p90_s": [5000.0, 120.0, 60.0],
        }
    )
    rates = pd.DataFrame(
        {
            "network": ["tiny", "noisy", "steady"],
            "operations": [1, 25, 400],
            "failure_rate": [1.0, 0.2, 0.1],
            "failure_rate_low": [0.207, 0.089, 0.075],
            "failure_rate_high": [1.0, 0.39, 0.13],
        }
    )
    out = report.findings_of(_report(latency, rates), stuck_at=NOW)
    assert (
        out[0] == "Slowest status: sent on B, p90 120 s = 2.00 min (p50 30.0 s, n=10)."
    )  # A's p90 is from one operation
    assert out[1].startswith("Worst network by failure rate: noisy, 20.0% (95% interval 8.90% to 39.0%, n=25 ")
    rates.loc[1, "failure_rate_low"] = 0.05  # now steady's interval lies higher
    assert report.findings_of(_report(latency, rates), stuck_at=NOW)[1].startswith(
        "Worst network by failure rate: steady"
    )


@pytest.mark.parametrize(
    ("threshold", "low", "high", "breached"),
    [
        ("failure_rate_change>0.02", 0.01, 0.06, False),  # the point may be past 0.02; the interval is not
        ("failure_rate_change>0.02", 0.021, 0.06, True),
        ("failure_rate_change>=0.02", 0.02, 0.06, True),
        ("failure_rate_change<-0.02", -0.058, 0.0005, False),  # 10/391 against 19/357: p about 0.05
        ("failure_rate_change<-0.02", -0.058, -0.021, True),
        ("failure_rate_change<=-0.02", -0.058, -0.02, True),
        ("failure_rate_change>0", float("nan"), float("nan"), False),
    ],
)
def test_a_threshold_on_the_change_needs_the_whole_interval_past_it(
    threshold: str, low: float, high: float, breached: bool
) -> None:
    summary = {"failure_rate_change": 0.03, "failure_rate_change_low": low, "failure_rate_change_high": high}
    assert report.parse_threshold(threshold).breached(summary) is breached


def test_the_report_summary_has_the_change_interval_and_p() -> None:
    for name in ("failure_rate_change_low", "failure_rate_change_high", "failure_rate_change_p", "overdue_queries"):
        assert name in report.SUMMARY_VALUES
    assert "whole 95% interval" in report.SUMMARY_VALUES["failure_rate_change"]


def test_the_summary_shows_every_share_as_a_percentage() -> None:
    """proof_verified is a share like proof_coverage: 0.5 reads "50.0%", not "0" or "1" (it read "1" for 100%);
    a value named in seconds or hours reads in that unit, as the name promises."""
    rep = _report(pd.DataFrame(), pd.DataFrame())
    rep.summary.update(
        {"proof_verified": 0.5, "proof_coverage": 1.0, "proof_invalid": 13237.0, "stuck": 2.0, "slowest_p90_s": 18288.0}
    )
    rep.summary["sync_age_h"] = 0.25
    shown = dict(zip(*report.summary_table(rep)[["name", "value"]].T.values, strict=True))
    assert (shown["proof_verified"], shown["proof_coverage"]) == ("50.0%", "100%")
    assert (shown["proof_invalid"], shown["stuck"]) == ("13,237", "2")
    assert (shown["slowest_p90_s"], shown["sync_age_h"]) == ("18,288 s", "0.250 h")
    shares = [n for n, meaning in report.SUMMARY_VALUES.items() if meaning.startswith("share of")]
    assert shares and all(shown[n].endswith("%") or shown[n] == "unknown" for n in shares), shares


def test_a_finding_writes_control_characters_out() -> None:
    """A network named with a terminal escape reads as its escape written out in a finding, as in the tables."""
    evil = "\x1b[31mred\x1b]0;pwned\x07"
    latency = pd.DataFrame({"network": [evil], "status": ["sent"], "n": [10], "p50_s": [30.0], "p90_s": [120.0]})
    rates = pd.DataFrame(
        {
            "network": [evil],
            "operations": [25],
            "failure_rate": [0.2],
            "failure_rate_low": [0.089],
            "failure_rate_high": [0.39],
        }
    )
    out = report.findings_of(_report(latency, rates), stuck_at=NOW)
    assert out[0].startswith("Slowest status: sent on \\x1b[31mred\\x1b]0;pwned\\x07, ")
    assert out[1].startswith("Worst network by failure rate: \\x1b[31mred")
    assert not any(ch in line for line in out for ch in "\x1b\x07")
