"""Rates and shares that account for units (operations or queries) still in flight (``docs/metrics.md``).

A cohort selected by creation time holds units that have not finished by the time the data is as of
(:func:`~toolkit.metrics.common.latest_event_time`). Each of them gets, for every outcome indicator, the probability
that it ends that way, from the warehouse's own history: the finished units that were **in the same status on the
same network and spent at least as long in it** (ages in logarithmic bins, ``floor(log2(1 + seconds))``). With
fewer than :data:`MIN_REFERENCE` of those it backs off, in order, to the same status on every network at the same
age, the same network and status at any age, the status at any age, and the cohort's own finished units (and, when
the cohort has none, to the status at any age however few). A unit with no reference at all leaves its row's
estimates NaN.

A rate is a ratio ``N / D`` of two indicators where the numerator implies the denominator (``failed`` implies
``relayed``; a share's denominator is every unit). The point estimate is ``(known N + Σ p_N) / (known D + Σ p_D)``.
Its variance is the binomial sampling variance ``R(1-R)/D`` plus, by the delta method, the variance of the outcomes
still to come (``Σ Var(X_i - R·Y_i)/D²``) and of the estimated probabilities (units sharing a reference cell share
its error: ``Σ_cells m²·Var(X - R·Y)/n / D²``). The 95% interval is the Wilson score interval around ``R`` with the
sample size shrunk by the design effect ``V / (R(1-R)/D)``; with nothing in flight it is the plain Wilson interval.

Everything runs in one DuckDB statement: reference counts are aggregated per ``(chain_selector, status, age bin)``
and summed over the bins at or above each in-flight cell's bin; in-flight units are grouped into cells first, so
nothing is joined unit by unit with the history. An indicator an in-flight unit already shows (a finality stage it
reached, having been relayed) is kept with probability 1: indicators are final outcomes or stages that stay reached.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..warehouse.views import age_bin_sql
from .common import WarehouseLike, latest_event_time, params_in, run
from .stats import wilson_interval

#: Fewest reference units a level of the back-off must have before it is used.
MIN_REFERENCE = 20
#: Name of the implicit indicator that is 1 for every unit (the denominator of a share).
EVERY = "_every"


@dataclass(frozen=True)
class Ratio:
    """One projected rate: ``name`` = ``numerator`` / ``denominator`` (indicator columns of the units; the
    numerator must imply the denominator). ``denominator`` None means every unit of the cohort (a share)."""

    name: str
    numerator: str
    denominator: str | None = None

    @property
    def den(self) -> str:
        """The denominator's indicator (``_every`` for a share)."""
        return self.denominator or EVERY


@dataclass(frozen=True)
class Cohort:
    """What :func:`project` needs, as SQL.

    - ``units``: a SELECT of the cohort, one row per unit, with the key columns' inputs, ``chain_selector``,
      ``status`` (the status an in-flight unit is in), ``entered_at`` (when it entered it), ``finished`` (bool) and
      one 0/1 column per indicator (the final outcome; read only for finished units).
    - ``history``: a SELECT of the reference: the stays of the whole warehouse's finished units in a status,
      counted: ``chain_selector``, ``status``, ``bin`` (the age bin of the time spent in it, :func:`age_bin_sql`),
      ``stays`` (how many such stays) and the same indicator columns (one row may stand for many stays; for
      operations, ``operation_stay_reference``, which the sync keeps up to date).
    - ``keys``: (SQL expression over ``units``, output name) of each grouping column.
    - ``counts``: extra exact aggregates over the units (name -> SQL aggregate), such as ``count(*)``.
    - ``params``: the statement's bound parameters (``$p0``...), shared by both SELECTs.
    - ``ctes``: common table expressions (``name AS (...), ...``) both SELECTs may read.
    """

    units: str
    history: str
    keys: Sequence[tuple[str, str]]
    indicators: Sequence[str]
    counts: Mapping[str, str]
    params: dict
    ctes: str = ""


def project(warehouse: WarehouseLike, cohort: Cohort, ratios: Sequence[Ratio]) -> pd.DataFrame:
    """Each group's exact counts and its in-flight-aware rates with 95% intervals.

    Arguments: ``warehouse``; ``cohort`` the units, reference history and grouping (:class:`Cohort`); ``ratios``
    the rates to estimate. Returns one row per group: the keys, ``cohort.counts``, ``in_flight``, and per ratio
    ``<name>``, ``<name>_low``, ``<name>_high``.
    """
    as_of = latest_event_time(warehouse)
    params = dict(cohort.params)
    params["as_of"] = (as_of or pd.Timestamp.now(tz="UTC")).to_pydatetime()
    df = run(warehouse, projection_sql(cohort, ratios), params)
    df = df.rename(columns={f"k{i}": name for i, (_, name) in enumerate(cohort.keys)})
    return estimate(df, [name for _, name in cohort.keys], list(cohort.counts), ratios)


def cohort_counts(warehouse: WarehouseLike, cohort: Cohort) -> pd.DataFrame:
    """Each group's exact counts and ``in_flight`` (its units not finished), as :func:`project` gives them, for a
    caller that estimates no rate from the reference: one grouping of the units, no projection."""
    names = [f"k{i}" for i in range(len(cohort.keys))]
    keyed = "".join(f"{expr} AS {name}, " for (expr, _), name in zip(cohort.keys, names, strict=True))
    counts = "".join(f"{agg} AS {name}, " for name, agg in cohort.counts.items())
    sql = f"""
WITH {cohort.ctes + "," if cohort.ctes else ""}
keyed AS (SELECT {keyed} * FROM ({cohort.units}) AS u0)
SELECT {"".join(f"{n}, " for n in names)}{counts}count(*) FILTER (WHERE NOT finished) AS in_flight
FROM keyed GROUP BY {", ".join(names) or "()"}
"""
    df = run(warehouse, sql, params_in(sql, cohort.params))
    df = df.rename(columns={f"k{i}": name for i, (_, name) in enumerate(cohort.keys)})
    return estimate(df, [name for _, name in cohort.keys], list(cohort.counts), ())


def _indicators(cohort: Cohort) -> list[str]:
    return [*dict.fromkeys([*cohort.indicators, EVERY])]


def _pairs(ratios: Sequence[Ratio]) -> list[tuple[str, str]]:
    """The distinct (x, y) indicator products the variance needs."""
    out: list[tuple[str, str]] = []
    for r in ratios:
        for pair in ((r.numerator, r.numerator), (r.den, r.den), (r.numerator, r.den)):
            if pair not in out:
                out.append(pair)
    return out


def _on(names: Sequence[str], left: str, right: str) -> str:
    """Join condition on the key columns (NULL keys match), TRUE without keys."""
    if not names:
        return "TRUE"
    return " AND ".join(f"{left}.{n} IS NOT DISTINCT FROM {right}.{n}" for n in names)


def _sums(inds: Sequence[str], source: str = "", weight: str = "") -> str:
    return ", ".join(f"sum({weight}{source}{i})::DOUBLE AS s_{i}" for i in inds)


def _levels(inds: Sequence[str]) -> str:
    """CTEs of the back-off levels: l1 (network, status, age), l2 (status, age), l3 (network, status), l4 (status)."""
    s = _sums(inds, "r.s_")
    plain = _sums(inds, "s_")
    return f"""ref AS (
    SELECT chain_selector, status, bin, sum(stays)::DOUBLE AS n, {_sums(inds, weight="stays * ")}
    FROM hist WHERE bin IS NOT NULL GROUP BY ALL
),
demand AS (SELECT DISTINCT chain_selector, status, bin FROM cells),
ref_sb AS (SELECT status, bin, sum(n) AS n, {plain} FROM ref GROUP BY ALL),
l1 AS (
    SELECT d.chain_selector, d.status, d.bin, sum(r.n) AS n, {s}
    FROM demand d JOIN ref r ON r.chain_selector = d.chain_selector AND r.status = d.status AND r.bin >= d.bin
    GROUP BY ALL
),
l2 AS (
    SELECT d.status, d.bin, sum(r.n) AS n, {s}
    FROM (SELECT DISTINCT status, bin FROM demand) d JOIN ref_sb r ON r.status = d.status AND r.bin >= d.bin
    GROUP BY ALL
),
l3 AS (SELECT chain_selector, status, sum(n) AS n, {plain} FROM ref GROUP BY ALL),
l4 AS (SELECT status, sum(n) AS n, {plain} FROM ref GROUP BY ALL)"""


_LEVELS = (
    ("l1", f"l1.n >= {MIN_REFERENCE}"),
    ("l2", f"l2.n >= {MIN_REFERENCE}"),
    ("l3", f"l3.n >= {MIN_REFERENCE}"),
    ("l4", f"l4.n >= {MIN_REFERENCE}"),
    ("own", "own.n >= 1"),
    ("l4", "l4.n >= 1"),
)


def _chosen(inds: Sequence[str], names: Sequence[str]) -> str:
    """CTE ``chosen``: each in-flight cell with the reference size ``n_ref`` and probabilities ``p_<ind>`` of the
    first level of the back-off that has enough units. An indicator an in-flight unit already has (a stage it
    reached, being relayed) stays: its probability is 1."""

    def pick(value: str) -> str:
        whens = " ".join(f"WHEN {cond} THEN {value.format(lv=lv)}" for lv, cond in _LEVELS)
        return f"CASE {whens} END"

    probs = ", ".join(
        f"CASE WHEN c.now_{i} = 1 THEN 1.0 ELSE {pick('{lv}.s_' + i + ' / {lv}.n')} END AS p_{i}" for i in inds
    )
    return f"""chosen AS (
    SELECT c.*, {pick("{lv}.n")} AS n_ref, {probs}
    FROM cells c
    LEFT JOIN l1 ON l1.chain_selector = c.chain_selector AND l1.status = c.status AND l1.bin = c.bin
    LEFT JOIN l2 ON l2.status = c.status AND l2.bin = c.bin
    LEFT JOIN l3 ON l3.chain_selector = c.chain_selector AND l3.status = c.status
    LEFT JOIN l4 ON l4.status = c.status
    LEFT JOIN own ON {_on(names, "own", "c")}
)"""


def _moments(pairs: Sequence[tuple[str, str]], inds: Sequence[str]) -> list[tuple[str, str]]:
    """Aggregates of the in-flight cells, as (SQL, name): Σ m·p, Σ m·p_x·p_y and the same weighted by m²/n (the
    estimation error of units sharing a reference cell)."""
    out = [("sum(m)::BIGINT", "in_flight"), ("coalesce(sum(m) FILTER (WHERE n_ref IS NULL), 0)::BIGINT", "unprojected")]
    for i in inds:
        out += [(f"sum(m * p_{i})", f"e_{i}"), (f"sum(m * m / n_ref * p_{i})", f"w_{i}")]
    for x, y in pairs:
        out += [(f"sum(m * p_{x} * p_{y})", f"e_{x}__{y}"), (f"sum(m * m / n_ref * p_{x} * p_{y})", f"w_{x}__{y}")]
    return out


def projection_sql(cohort: Cohort, ratios: Sequence[Ratio]) -> str:
    """The one statement behind :func:`project` (parameter ``$as_of`` is the time ages are measured to). Group
    keys come out as ``k0``, ``k1``, ... in the order of ``cohort.keys``."""
    inds = _indicators(cohort)
    names = [f"k{i}" for i in range(len(cohort.keys))]
    keyed = "".join(f"{expr} AS {name}, " for (expr, _), name in zip(cohort.keys, names, strict=True))
    by = "".join(f"{n}, " for n in names)
    group = ", ".join(names) or "()"
    counts = "".join(f"{agg} AS {name}, " for name, agg in cohort.counts.items())
    known = ", ".join(f"coalesce(sum({i}) FILTER (WHERE finished), 0)::DOUBLE AS known_{i}" for i in inds)
    moments = _moments(_pairs(ratios), inds)
    return f"""
WITH {cohort.ctes + "," if cohort.ctes else ""}
units AS (SELECT *, 1 AS {EVERY} FROM ({cohort.units}) AS u0),
hist AS (SELECT *, 1 AS {EVERY} FROM ({cohort.history}) AS h0),
keyed AS (SELECT {keyed} * FROM units),
cells AS (
    SELECT {by}chain_selector, status, {age_bin_sql("epoch($as_of) - epoch(entered_at)")} AS bin,
        {", ".join(f"coalesce({i}, 0) AS now_{i}" for i in inds)}, count(*)::DOUBLE AS m
    FROM keyed WHERE NOT finished GROUP BY ALL
),
own AS (SELECT {by}count(*)::DOUBLE AS n, {_sums(inds)} FROM keyed WHERE finished GROUP BY {group}),
{_levels(inds)},
{_chosen(inds, names)},
moments AS (SELECT {by}{", ".join(f"{sql} AS {name}" for sql, name in moments)} FROM chosen GROUP BY {group}),
known AS (SELECT {by}{counts}{known} FROM keyed GROUP BY {group})
SELECT k.*, {", ".join(f"mo.{name}" for _, name in moments)}
FROM known k LEFT JOIN moments mo ON {_on(names, "k", "mo")}
"""


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    return df[name].to_numpy(dtype=float, na_value=0.0) if name in df.columns else np.zeros(len(df))


def _variance_terms(df: pd.DataFrame, r: Ratio, ratio: np.ndarray, prefix: str) -> np.ndarray:
    """Σ Var(X - R·Y) over the in-flight cells from the moments with ``prefix`` (``e`` outcomes, ``w`` estimates)."""
    x, y = r.numerator, r.den
    px, py = _col(df, f"{prefix}_{x}"), _col(df, f"{prefix}_{y}")
    pxx, pyy, pxy = (_col(df, f"{prefix}_{a}__{b}") for a, b in ((x, x), (y, y), (x, y)))
    return (px - pxx) - 2 * ratio * (px - pxy) + ratio**2 * (py - pyy)


def ratio_interval(df: pd.DataFrame, r: Ratio) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate and 95% interval of ``r`` per row of the moments ``df`` (see the module docstring).

    Arguments: ``df`` with ``known_*``, ``e_*`` and ``w_*`` columns; ``r`` the ratio. Returns (estimate, low,
    high) arrays; NaN where the denominator is 0 or a unit had no reference.
    """
    num = _col(df, f"known_{r.numerator}") + _col(df, f"e_{r.numerator}")
    den = _col(df, f"known_{r.den}") + _col(df, f"e_{r.den}")
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(den > 0, num / den, np.nan)
        sampling = est * (1 - est) / den
        extra = (_variance_terms(df, r, est, "e") + _variance_terms(df, r, est, "w")) / den**2
        extra = np.maximum(extra, 0.0)
        n_eff = np.where(sampling > 0, den * sampling / (sampling + extra), den)
    est = np.where(_col(df, "unprojected") > 0, np.nan, est)
    # the final count is a whole number: each bound is taken at the whole count on its side of the estimate, so a
    # cohort with no failure so far and a fraction of one expected keeps 0 inside its interval
    k = est * n_eff
    low, _ = wilson_interval(np.floor(k + 1e-9), n_eff)
    with np.errstate(invalid="ignore"):
        _, high = wilson_interval(np.minimum(np.ceil(k - 1e-9), n_eff), n_eff)
    # rounding can put a bound a hair past the estimate at 0 or 1: the interval always holds its estimate
    low, high = np.fmin(low, est), np.fmax(high, est)
    low, high = np.where(est <= 0, 0.0, low), np.where(est >= 1, 1.0, high)  # exact at the ends
    return est, np.where(np.isnan(est), np.nan, low), np.where(np.isnan(est), np.nan, high)


def estimate(df: pd.DataFrame, keys: Sequence[str], counts: Sequence[str], ratios: Sequence[Ratio]) -> pd.DataFrame:
    """The output frame of :func:`project` from its statement's result: keys, counts, ``in_flight``, ratios."""
    out = df[[*keys, *counts]].copy()
    out["in_flight"] = _col(df, "in_flight").astype("int64")
    for r in ratios:
        out[r.name], out[f"{r.name}_low"], out[f"{r.name}_high"] = ratio_interval(df, r)
    return out
