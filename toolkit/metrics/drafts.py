"""The fate of drafts still waiting for their signature, read from every draft's exit from ``pending_signature``
(``draft_expiry_rate`` and ``draft_cancel_rate``).

A draft (an operation that entered ``pending_signature``) ends in one of three ways: it is signed and relayed, it
is cancelled, or it expires at its deadline. The generic projection (:mod:`.inflight`) learns from operations that
have *finished*, in age bins a factor of two wide, and for drafts that is biased. Expiry: with long deadlines the
finished drafts are those with short deadlines and quick signatures; the drafts that will expire are exactly the
ones that have not finished yet. Cancellation: a cancelled draft is finished the moment it is cancelled, a signed
one only once its transaction is confirmed (so the signings of the last hours are missing from the reference), and
a bin reaching back to half the draft's age counts cancellations the draft has already outlived. Cancellations come
early (minutes), signings late (hours), so a young draft was given the cancellation share of the quick ones and
``draft_cancel_rate`` read high (issue 39: above the final value in 20 of 27 rows with drafts in flight, never
below). Here every draft, finished or not, is an observation from the moment it *left* ``pending_signature``, which
is known as soon as it happens; it leaves (is relayed or cancelled), or expires at its deadline, or is still
waiting and is **censored**. The product-limit estimate of staying a draft, ``S = Π (1 − d_i / n_i)`` over the
leaving times, with the share ``c_i / d_i`` of each time's exits that were cancellations, is the Aalen–Johansen
estimate of these competing risks. Each rate is read on its own clock:

- expiry, on the deadline's clock: the share of its deadline window passed, ``u = (t − created) / (deadline −
  created)`` in ``[0, 1]``, over the drafts with a deadline. Expiry can only happen at ``u = 1``, so a draft still
  waiting at ``u0`` expires with probability ``S(1−) / S(u0)``; past its deadline without an expiry yet, 1;
  without a deadline (``deadline: 0``), 0.
- cancellation, on the seconds since creation, over every draft, each at risk until its deadline (an expired draft
  is censored there): whether someone cancels a draft is a decision in time, which the deadline only cuts short. A
  draft still waiting ``a0`` seconds after its creation is cancelled with probability ``Σ_{a0 < t_i < deadline}
  S(t_i−) c_i / n_i / S(a0)``; where the curve stays above 0 a draft without a deadline may stay a draft for good.
- an operation already relayed: 0 for both.

Curves are per network when the network has at least :data:`~.inflight.MIN_REFERENCE` drafts on that clock, else
from every network.

The point of ``draft_expiry_rate`` is the mean, ``(known + Σ p) / operations``. The point of ``draft_cancel_rate``
is ``(known + m) / operations`` with ``m`` the **median** number of the waiting drafts that will be cancelled,
each independently with its chance (:func:`~.stats.count_median`): the guess off by the least in expectation.
The chances are calibrated (issue 39: projected 20.0 cancellations, 20.5 by the sandbox's own plan, 22 happened,
over 938 waiting drafts of six messy seeds), but a cancellation is a rare outcome of a few young drafts, so in most
cohorts none happens, and the mean sat above the final value in most rows and below it in the few with one.

The interval (of both) is :func:`~.inflight.ratio_interval`'s around the mean, with the units grouped into cells of
the same curve and twentieth of the window (cancellation: doubling of age), each cell's estimation error from the
drafts still at risk after it. The median point is kept inside that interval (clipped to it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..warehouse import Warehouse
from .common import WarehouseLike, deadlines_sql, latest_event_time, params_in, run
from .inflight import EVERY, MIN_REFERENCE, Ratio, ratio_interval
from .stats import count_median

#: The rates this module estimates, as shares of every operation of the cohort.
DRAFT_EXPIRY = Ratio("draft_expiry_rate", "draft_expired")
DRAFT_CANCEL = Ratio("draft_cancel_rate", "draft_cancelled")
DRAFT_RATES = (DRAFT_EXPIRY, DRAFT_CANCEL)
#: Cells of the window for the estimation error: units in the same twentieth share their reference's error.
_CELLS = 20
_LEFT = (
    "least(accepted_at, sending_at, sent_at, broadcasting_at, confirmed_latest_at, confirmed_safe_at, confirmed_at, "
    "failed_at)"
)
#: The curve key of the drafts without a deadline (timed in seconds), prefixed to the network.
_WALL = "wall:"


def _reference(warehouse: WarehouseLike, ctes: str, params: dict, as_of: float) -> pd.DataFrame:
    """Every draft: ``chain_selector``, ``left`` (relayed or cancelled), ``cancelled`` (left cancelled), and its
    times on both clocks: ``u`` the share of its deadline window when it left, reached its deadline (expired) or was
    read (still waiting), NaN without a deadline; ``a`` the seconds from its creation to when it left, or to when it
    was last seen waiting before its deadline (censored there: at its deadline when it expired)."""
    sql = f"""
        WITH {ctes}, drafts AS (
            SELECT * FROM ops_all o WHERE o.pending_signature_at IS NOT NULL OR o.last_status = 'pending_signature'
        ),
        dl AS ({deadlines_sql("SELECT operation_id FROM drafts")})
        SELECT o.chain_selector, epoch(o.created_at) AS c,
            CASE WHEN dl.deadline_at > o.created_at THEN epoch(dl.deadline_at) END AS d, o.outcome,
            epoch({_LEFT}) AS relayed_s, epoch(o.terminal_at) AS terminal_s
        FROM drafts o LEFT JOIN dl ON dl.operation_id = o.operation_id
    """
    used = params_in(sql, params)
    if isinstance(warehouse, Warehouse):  # the same for every question a report asks of an open warehouse
        key = ("drafts.reference", sql, tuple(sorted((k, repr(v)) for k, v in used.items())), as_of)
        return warehouse.memoized(key, lambda: _reference_from(run(warehouse, sql, used), as_of))
    return _reference_from(run(warehouse, sql, used), as_of)


def _reference_from(df: pd.DataFrame, as_of: float) -> pd.DataFrame:
    """The reference of :func:`_reference` from the drafts' times and outcomes read from the warehouse."""
    created = df["c"].to_numpy(dtype=float)
    window = df["d"].to_numpy(dtype=float, na_value=np.nan) - created
    timed = window > 0  # NaN (no deadline) compares False
    relayed = df["relayed_s"].to_numpy(dtype=float, na_value=np.nan)
    outcome = df["outcome"].astype(object).where(df["outcome"].notna(), None)
    cancelled = (outcome == "draft_cancelled").to_numpy()
    ended = np.where(cancelled, df["terminal_s"].to_numpy(dtype=float, na_value=np.nan), relayed)
    waiting = outcome.isna().to_numpy() & np.isnan(relayed)
    expired = (outcome == "draft_expired").to_numpy()
    left = ~np.isnan(ended) & ~expired & ~waiting
    span = np.where(timed, window, np.inf)
    a = np.where(left, ended - created, np.nan)
    a = np.where(waiting, np.minimum(as_of - created, span), a)
    a = np.where(expired & timed, span, a)
    with np.errstate(invalid="ignore"):
        u = np.where(timed, a / np.where(timed, window, 1.0), np.nan)
    keep = (left | waiting | (expired & timed)) & ~np.isnan(a)
    out = pd.DataFrame(
        {
            "chain_selector": df["chain_selector"].to_numpy()[keep],
            "u": u[keep],
            "a": np.maximum(a[keep], 0.0),
            "left": left[keep],
            "cancelled": (left & cancelled)[keep],
        }
    )
    # leaving exactly at (or, by rounding, after) the deadline is leaving just before it
    out["u"] = np.clip(out["u"].to_numpy(dtype=float), 0.0, np.where(out["left"], 1.0 - 1e-9, 1.0))
    return out


def _deadlines(warehouse: WarehouseLike, ids: pd.Series) -> pd.Series:
    """The deadline (epoch seconds) of each of the operations ``ids`` that has one, indexed by operation id."""
    ids = ids.dropna()
    if ids.empty:
        return pd.Series(dtype=float)
    sql = f"SELECT operation_id, epoch(deadline_at) AS d FROM ({deadlines_sql('SELECT unnest($ids::VARCHAR[])')})"
    df = run(warehouse, sql, {"ids": ids.astype(str).tolist()})
    return df.set_index("operation_id")["d"]


Curve = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _curve(t: np.ndarray, left: np.ndarray, cancelled: np.ndarray) -> Curve:
    """The leaving times, ``S`` just after each (the product-limit estimate of staying a draft), the drafts at risk
    at each, and the cumulative incidence of cancellation up to and including each, ``Σ_{t_j ≤ t} S(t_j−) c_j /
    n_j``. Arguments: each draft's time ``t`` (leaving or censoring), ``left``, ``cancelled`` (left cancelled)."""
    times, idx, deaths = np.unique(t[left], return_inverse=True, return_counts=True)
    cancels = np.bincount(idx, weights=cancelled[left].astype(float), minlength=len(times))
    ordered = np.sort(t)
    at_risk = len(t) - np.searchsorted(ordered, times, side="left")  # exits at or after t (censored at t included)
    surv = np.cumprod(1.0 - deaths / at_risk)
    incidence = np.cumsum(np.r_[1.0, surv[:-1]] * cancels / at_risk)
    return times, surv, at_risk, incidence


def _at(curve: Curve, t0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``S``, the cancellation incidence, and the drafts at risk just after ``t0`` (each of ``t0``)."""
    times, surv, at_risk, incidence = curve
    idx = np.searchsorted(times, t0, side="right") - 1  # the last leaving time at or before t0
    s0 = np.where(idx >= 0, surv[np.maximum(idx, 0)], 1.0)
    f0 = np.where(idx >= 0, incidence[np.maximum(idx, 0)], 0.0)
    n_after = np.where(idx + 1 < len(times), at_risk[np.minimum(idx + 1, len(times) - 1)], 0)
    return s0, f0, n_after.astype(float)


def _expiry_probability(curve: Curve, u0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(expire | still waiting at ``u0`` of the deadline window) = S(1−) / S(u0), and the drafts of the reference
    at risk after ``u0``. NaN where nobody of the reference is at risk at ``u0``."""
    if len(curve[0]) == 0:
        return np.ones(len(u0)), np.zeros(len(u0))
    s0, _, n_after = _at(curve, u0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(s0 > 0, curve[1][-1] / s0, np.nan)
    return np.where(u0 >= 1.0, 1.0, p), n_after


def _cancel_probability(curve: Curve, a0: np.ndarray, span: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(cancelled | still waiting ``a0`` seconds after creation, deadline ``span`` seconds after it (inf: none))
    = the cancellation incidence between ``a0`` and the deadline over S(a0), and the drafts of the reference at
    risk after ``a0``. NaN where nobody of the reference is at risk at ``a0``."""
    times, _, _, incidence = curve
    if len(times) == 0:
        return np.zeros(len(a0)), np.zeros(len(a0))
    s0, f0, n_after = _at(curve, a0)
    end = np.searchsorted(times, span, side="left") - 1  # the last leaving time before the deadline
    f_end = np.where(end >= 0, incidence[np.maximum(end, 0)], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(s0 > 0, np.maximum(f_end - f0, 0.0) / s0, np.nan)
    return np.where(a0 >= span, 0.0, np.minimum(p, 1.0)), n_after


def _curves(ref: pd.DataFrame, column: str) -> dict[str, Curve]:
    """The curves on one clock (``column`` ``u`` or ``a``): every network's (``*``) and each network's with at
    least :data:`~.inflight.MIN_REFERENCE` drafts on it."""
    ref = ref[ref[column].notna()]

    def curve(part: pd.DataFrame) -> Curve:
        return _curve(part[column].to_numpy(dtype=float), part["left"].to_numpy(bool), part["cancelled"].to_numpy(bool))

    counts = ref.groupby("chain_selector").size()
    out = {"*": curve(ref)}
    out |= {c: curve(ref[ref["chain_selector"] == c]) for c, n in counts.items() if n >= MIN_REFERENCE}
    return out


def _project(
    curves: dict[str, Curve], chains: np.ndarray, rows_of: np.ndarray, fate, *args: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``fate(curve, *args)`` for the units ``rows_of`` (a mask), each on its network's curve, or every network's
    where its network has too few drafts or none at risk there. Returns (probability, at risk after, curve id)
    over all units (0, 1 and ``""`` outside the mask)."""
    p, n_ref = np.zeros(len(chains)), np.ones(len(chains))
    curve_id = np.full(len(chains), "", dtype=object)
    for chain in pd.unique(chains[rows_of]):
        rows = np.flatnonzero(rows_of & (chains == chain))
        cid = chain if chain in curves else "*"
        prob, after = fate(curves[cid], *(x[rows] for x in args))
        if cid != "*" and np.isnan(prob).any():  # nobody of the network at risk there: every network's curve
            bad = np.isnan(prob)
            prob[bad], after[bad] = (x[bad] for x in fate(curves["*"], *(x[rows] for x in args)))
        p[rows], n_ref[rows], curve_id[rows] = prob, np.maximum(after, 1.0), cid
    return p, n_ref, curve_id


def draft_expiry_rates(
    warehouse: WarehouseLike, ctes: str, units: str, keys: Sequence[tuple[str, str]], params: dict
) -> pd.DataFrame:
    """``draft_expiry_rate`` and ``draft_cancel_rate`` with ``_low``/``_high`` per group, drafts in flight projected
    on their own clocks (the module docstring).

    Arguments: ``ctes`` and ``units`` of an operation cohort (:func:`~.outcomes.operation_cohort`: its ``ops_all``
    relation and its units' SELECT), ``keys`` its grouping (SQL, name), ``params`` the bound parameters. Returns
    one row per group, in the order of the keys: the key names and the six columns.

    Only the units still open come back one row each; the finished ones are counted per group in the database.
    """
    summary, df = projected_units(warehouse, ctes, units, keys, params)
    return _moments_table(summary, df, [name for _, name in keys])


def projected_units(
    warehouse: WarehouseLike, ctes: str, units: str, keys: Sequence[tuple[str, str]], params: dict
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What :func:`draft_expiry_rates` reads its rates from (arguments as it takes them): each group's finished
    units counted (the key names, ``known_draft_expired``, ``known_draft_cancelled``, ``done``), and the open units
    one row each (the key names, ``unit_id``, ``unit_chain``, ``waiting``, ``c`` and ``d`` its creation and
    deadline in epoch seconds, ``age`` in seconds at the newest event, and per rate ``p_<outcome>`` the probability
    that it ends that way, ``n_``/``curve_``/``cell_<outcome>`` its estimation error's cell)."""
    names = [name for _, name in keys]
    as_of_ts = latest_event_time(warehouse)
    as_of = float((as_of_ts or pd.Timestamp.now(tz="UTC")).timestamp())
    keyed = "".join(f"{expr} AS k{i}, " for i, (expr, _) in enumerate(keys))
    order = ", ".join(f"k{i}" for i in range(len(keys)))
    known = ", ".join(
        f"count(*) FILTER (WHERE u.finished AND u.outcome = '{r.numerator}') AS known_{r.numerator}"
        for r in DRAFT_RATES
    )
    # a finished unit only counts (known, done), so the database counts those per group
    counted = f"""
        WITH {ctes}
        SELECT {keyed}{known}, count(*) FILTER (WHERE u.finished) AS done
        FROM ({units}) AS u GROUP BY ALL HAVING count(*) > 0 {f"ORDER BY {order}" if order else ""}
    """
    # the open units in the units' own order (no join to reorder them): the sums over them keep their order
    open_sql = f"""
        WITH {ctes}
        SELECT {keyed}u.operation_id AS unit_id, u.chain_selector AS unit_chain,
            u.status = 'pending_signature' AND NOT u.relayed AS waiting, epoch(u.created_at) AS c
        FROM ({units}) AS u WHERE NOT u.finished
    """
    renames = {f"k{i}": n for i, n in enumerate(names)}
    summary = run(warehouse, counted, params).rename(columns=renames)
    df = run(warehouse, open_sql, params).rename(columns=renames)
    df["d"] = df["unit_id"].map(_deadlines(warehouse, df["unit_id"])).astype(float)
    ref = _reference(warehouse, ctes, params, as_of)

    waiting = df["waiting"].fillna(False).to_numpy(dtype=bool)
    created = df["c"].to_numpy(dtype=float)
    window = df["d"].to_numpy(dtype=float, na_value=np.nan) - created
    timed = waiting & (window > 0)
    span = np.where(window > 0, window, np.inf)
    age = np.maximum(as_of - created, 0.0)
    u0 = np.clip(age / np.where(timed, window, 1.0), 0.0, 1.0)
    # its own name: a grouping by chain_selector is a column of that name already
    chains = df["unit_chain"].astype(object).to_numpy()
    p_exp, n_exp, c_exp = _project(_curves(ref, "u"), chains, timed, _expiry_probability, u0)
    p_can, n_can, c_can = _project(_curves(ref, "a"), chains, waiting, _cancel_probability, age, span)
    df["p_draft_expired"] = np.where(timed, np.nan_to_num(p_exp, nan=1.0), 0.0)
    df["p_draft_cancelled"] = np.where(waiting, np.nan_to_num(p_can, nan=0.0), 0.0)
    df["n_draft_expired"], df["curve_draft_expired"] = n_exp, c_exp
    df["n_draft_cancelled"], df["curve_draft_cancelled"] = n_can, c_can
    df["cell_draft_expired"] = np.floor(u0 * _CELLS)
    df["cell_draft_cancelled"] = np.floor(np.log2(1.0 + age))
    df["age"] = age
    return summary, df


def _moments_table(summary: pd.DataFrame, df: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Both rates with their intervals from the finished units' counts (``summary``) and the open units'
    probabilities (``df``), through :func:`~.inflight.ratio_interval`'s moments."""
    inds = [r.numerator for r in DRAFT_RATES]
    gkeys = names or ["_all"]
    if not names:
        df["_all"] = summary["_all"] = 0
    # each group's counts first: a leading zero leaves the (compensated) sums of p and p² as over the open units
    summary = summary.assign(done=summary["done"].astype(float), open=0.0)
    df = df.assign(done=0.0, open=1.0)
    for x in inds:
        summary[f"known_{x}"] = summary[f"known_{x}"].astype(float)
        summary[f"p_{x}"] = summary[f"p2_{x}"] = 0.0
        df[f"known_{x}"] = 0.0
        df[f"p2_{x}"] = df[f"p_{x}"] ** 2
    columns = list(summary.columns)
    units_df = pd.concat([summary, df[columns]], ignore_index=True) if len(df) else summary
    aggs = {f"known_{EVERY}": ("done", "sum"), f"e_{EVERY}": ("open", "sum")}
    for x in inds:
        aggs |= {f"known_{x}": (f"known_{x}", "sum"), f"e_{x}": (f"p_{x}", "sum"), f"e_{x}__{x}": (f"p2_{x}", "sum")}
    aggs[f"median_{DRAFT_CANCEL.numerator}"] = (f"p_{DRAFT_CANCEL.numerator}", count_median)  # the finished add 0s
    moments = units_df.groupby(gkeys, dropna=False, sort=False).agg(**aggs)
    moments[f"e_{EVERY}__{EVERY}"] = moments[f"e_{EVERY}"]
    for x in inds:
        moments[f"e_{x}__{EVERY}"] = moments[f"e_{x}"]
    # estimation error: units of one curve and cell share it (m² p_x p_y / n over the cells); each rate has its own
    # curves and cells, and the ratio's variance reads only w_x − w_xx of them (w_x·y = w_x for y every unit)
    parts = []
    for x in inds:
        cells = df.groupby([*gkeys, f"curve_{x}", f"cell_{x}"], dropna=False, sort=False).agg(
            m=("open", "size"), n=(f"n_{x}", "min"), p=(f"p_{x}", "mean")
        )
        w1 = cells["m"] ** 2 / cells["n"]
        w = pd.DataFrame({f"w_{x}": w1 * cells["p"], f"w_{x}__{x}": w1 * cells["p"] ** 2})
        w[f"w_{x}__{EVERY}"] = w[f"w_{x}"]
        parts.append(w.groupby(gkeys, dropna=False).sum())
    wsum = pd.concat(parts, axis=1)
    wsum[f"w_{EVERY}"] = wsum[f"w_{EVERY}__{EVERY}"] = 0.0
    moments = moments.join(wsum).fillna(0.0).reset_index()
    moments["unprojected"] = 0.0
    out = moments[gkeys].copy()
    operations = (moments[f"known_{EVERY}"] + moments[f"e_{EVERY}"]).to_numpy(dtype=float)
    for r in DRAFT_RATES:
        est, low, high = ratio_interval(moments, r)
        if r is DRAFT_CANCEL:  # the known count and the median count of the waiting drafts (the module docstring)
            waiting = moments[f"median_{r.numerator}"].to_numpy(dtype=float)
            with np.errstate(invalid="ignore", divide="ignore"):
                point = (moments[f"known_{r.numerator}"].to_numpy(dtype=float) + waiting) / operations
            est = np.clip(point, low, high)
        out[r.name], out[f"{r.name}_low"], out[f"{r.name}_high"] = est, low, high
    return out.drop(columns=["_all"], errors="ignore")
