"""The percentiles of uncensored durations computed by the database (``uncensored_percentiles_sql`` with
``uncensored_notes``) are those of the Kaplan–Meier reading in numpy (``km_percentiles``), value for value and note
for note: ties, groups of every size around the sample-size rule (nothing censored is final, so none is hidden),
whole and fractional q·n, negative durations."""

from __future__ import annotations

import random

import duckdb
import numpy as np
import pandas as pd
import pytest

from toolkit.metrics.survival import km_percentiles, uncensored_notes, uncensored_percentiles_sql

PROBS = (0.5, 0.9, 0.99)


def _groups(seed: int) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    sizes = [1, 2, 3, 9, 10, 11, 19, 20, 21, 99, 100, 101, 250]
    for g, n in enumerate(sizes * 2):
        pool = [rng.choice([-3, 0, 1, 2, 5, 8, 13]) for _ in range(4)] if g % 2 else None
        for _ in range(n):
            value = rng.choice(pool) if pool else round(rng.uniform(-10, 5000), rng.choice([0, 3]))
            rows.append((f"g{g}", "x" if g % 3 else None, float(value)))
    return pd.DataFrame(rows, columns=["grp", "sub", "duration"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_database_reads_the_same_percentiles_as_the_curve(seed: int) -> None:
    raw = _groups(seed)
    counts = raw.groupby(["grp", "sub", "duration"], dropna=False).size().reset_index(name="k")
    con = duckdb.connect()
    con.register("raw_counts", counts)
    got = con.execute(uncensored_percentiles_sql("SELECT * FROM raw_counts", ["grp", "sub"], PROBS)).df()
    got = uncensored_notes(got, PROBS).sort_values(["grp"]).reset_index(drop=True)
    expected = km_percentiles(counts.assign(events=counts["k"], censored=0), ["grp", "sub"], PROBS)
    expected = expected.sort_values(["grp"]).reset_index(drop=True)
    assert got["observations"].astype(int).tolist() == expected["observations"].tolist()
    for q in ("p50_s", "p90_s", "p99_s"):
        a, b = got[q].to_numpy(dtype=float), expected[q].to_numpy(dtype=float)
        assert np.array_equal(a, b, equal_nan=True), q
    assert got["notes"].tolist() == expected["notes"].tolist()
    # nothing censored: every percentile is final and shown, and the groups below the sample-size rule say so
    assert got[["p50_s", "p90_s", "p99_s"]].notna().all().all()
    small = got["observations"] < 100
    assert small.sum() >= 4 and got["notes"][small].str.contains(r"p99: n=\d+ < 100, final").all()
    assert not got["notes"][~small].str.contains("p99").any()
