"""The p90 behind ``stuck_operations``' thresholds, against a plain reading of its definition (Hyndman–Fan type 2:
with ``n`` ended stays and ``k = 0.9 n``, the ``k``-th smallest rounded up, or the mean of the ``k``-th and the next
when ``k`` is whole), written here with a sorted list: ties, whole and fractional ``0.9 n``, groups of one stay."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from tests.support.builders import ETHEREUM, SEPOLIA, T0, build, ladder, op_event, refresh
from toolkit import metrics
from toolkit.metrics.survival import uncensored_percentiles_sql

#: A chain with no network record and no history of its own: its thresholds come from the other networks.
ELSEWHERE = "4242"
NOW = 100_000
#: Ended stays per (chain, status), in seconds: 10 (0.9 n whole, ties at the 9th), 7, 1, 20 (whole, tied pair), 11.
STAYS = {
    (ETHEREUM, "accepted"): [5, 5, 5, 7, 9, 9, 9, 12, 12, 30],
    (ETHEREUM, "sending"): [3, 3, 4, 8, 8, 8, 20],
    (SEPOLIA, "accepted"): [2],
    (SEPOLIA, "sending"): [1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 6, 6, 7, 9, 9, 40],
    (SEPOLIA, "sent"): [10, 11, 11, 12, 13, 14, 15, 15, 16, 17, 90],
}
#: Ethereum `accepted` stays that end at 60,000 s, after the earlier ``now`` of the second reading.
LATE = [20_000, 20_001]


def type2_p90(values: list[float]) -> float:
    """The p90 by its definition, from the sorted values (1-based ranks in the comments)."""
    xs = sorted(values)
    n = len(xs)
    k = 9 * n // 10
    if 9 * n % 10 == 0:
        return (xs[k - 1] + xs[k]) / 2  # mean of the k-th and the (k+1)-th
    return xs[k]  # the (k+1)-th


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory):
    events = []
    start = 0
    for (chain, status), durations in STAYS.items():
        for i, d in enumerate(durations):
            start += 50
            events += ladder(f"{status}-{chain}-{i}", (status, "failed"), (start, start + d), chain=chain)
    for i, d in enumerate(LATE):
        events += ladder(f"late-{i}", ("accepted", "failed"), (60_000 - d, 60_000))
    # one operation per chain and status, sitting in it since long before ``now``: each is judged on its group's p90
    for chain in (ETHEREUM, SEPOLIA, ELSEWHERE):
        for status in ("accepted", "sending", "sent"):
            events.append(op_event(f"probe-{status}-{chain}", status, T0 + 1_000, chain=chain))
    events.append(op_event("clock", "broadcasting", T0 + NOW))
    return refresh(build(tmp_path_factory.mktemp("p90") / "w.duckdb", events=events))


def _judged(wh, **kwargs) -> pd.DataFrame:
    df = metrics.stuck_operations(wh, multiple=1.0, min_seconds=0.0, **kwargs)
    return df[df["operation_id"].str.startswith("probe-")].set_index("operation_id")


def test_the_network_p90_of_every_group_is_the_type_2_percentile(warehouse) -> None:
    stays = dict(STAYS)
    stays[(ETHEREUM, "accepted")] = STAYS[(ETHEREUM, "accepted")] + LATE
    every = {s: [d for (_, status), ds in stays.items() if status == s for d in ds] for _, s in stays}
    df = _judged(warehouse)
    for chain in (ETHEREUM, SEPOLIA, ELSEWHERE):
        for status in ("accepted", "sending", "sent"):
            row = df.loc[f"probe-{status}-{chain}"]
            if (chain, status) in stays:
                want = type2_p90(stays[(chain, status)])
                assert (row.threshold_basis, row.network_p90_s, row.threshold_s) == ("network", want, want)
            else:
                assert row.threshold_basis == "other networks" and pd.isna(row.network_p90_s)
                assert row.threshold_s == type2_p90(every[status])
    # the definition is numpy's averaged_inverted_cdf, read the long way here
    for values in stays.values():
        assert type2_p90(values) == pytest.approx(np.percentile(values, 90, method="averaged_inverted_cdf"))


def test_only_the_stays_ended_by_now_count(warehouse) -> None:
    """At 50,000 s the two late stays have not ended: Ethereum's `accepted` p90 is that of its ten early stays,
    (12 + 30) / 2; by the newest event, the 11th of the twelve, 20,000 s."""
    earlier = _judged(warehouse, now=pd.Timestamp(T0 + 50_000, unit="s", tz="UTC"))
    later = _judged(warehouse)
    assert earlier.loc[f"probe-accepted-{ETHEREUM}", "network_p90_s"] == 21.0
    assert later.loc[f"probe-accepted-{ETHEREUM}", "network_p90_s"] == 20_000.0
    assert earlier.loc[f"probe-sent-{ELSEWHERE}", "threshold_s"] == type2_p90(STAYS[(SEPOLIA, "sent")])


def test_fractional_durations_many_ties_and_every_group_size(tmp_path: Path) -> None:
    """The statement's SELECT over a table of stays (a real DuckDB file) for groups of 1 to 101 stays, durations
    drawn from a few fractions (many ties) or any double, per (chain, status) and per status."""
    rng = np.random.default_rng(7)
    rows = []
    for g, n in enumerate([1, 2, 3, 9, 10, 11, 19, 20, 21, 30, 37, 100, 101]):
        tied = g % 2 == 0
        values = rng.integers(0, 12, n) / 8 if tied else rng.exponential(30.0, n)
        rows += [(f"chain-{g % 5}", f"status-{g % 3}", float(v)) for v in values]
    stays = pd.DataFrame(rows, columns=["chain_selector", "status", "s"])
    con = duckdb.connect(str(tmp_path / "stays.duckdb"))
    con.register("stays_df", stays)
    con.execute("CREATE TABLE stays AS SELECT * FROM stays_df")
    for keys in (["chain_selector", "status"], ["status"]):
        counted = f"SELECT {', '.join(keys)}, s AS duration, count(*) AS k FROM stays GROUP BY ALL"
        got = con.execute(uncensored_percentiles_sql(counted, keys, [0.9])).df().set_index(keys)["p90_s"]
        want = stays.groupby(keys)["s"].agg(lambda v: type2_p90(list(v)))
        assert len(got) == len(want)
        for key, value in want.items():
            assert got.loc[key] == value, key
