"""The fate of drafts still waiting for their signature, read on the drafts' own clock (``draft_expiry_rate`` and
``draft_cancel_rate``).

A draft (an operation that entered ``pending_signature``) ends in one of three ways: it is signed and relayed, it
is cancelled, or it expires at its deadline. The generic projection (:mod:`.inflight`) learns from operations that
have *finished*, in age bins a factor of two wide, and for drafts both are biased the same way: a cancelled draft
is finished the moment it is cancelled, a signed one only once its transaction is confirmed (so the signings of the
last hours are missing from the reference), and a bin reaching back to half the draft's age counts cancellations
the draft has already outlived. Cancellations come early (minutes), signings late (hours), so a young draft was
given the cancellation share of the quick and read high (issue 39: above the final value in 20 of 27 rows with
drafts in flight, never below). Here the fate is read from every draft, finished or not, at the moment it *left*
``pending_signature``, which is known as soon as it happens:

- a draft with a deadline is timed on the share of its deadline window passed, ``u = (t − created) / (deadline −
  created)`` in ``[0, 1]``: it *leaves* (is relayed or cancelled) at its ``u``, or reaches ``u = 1`` and expires,
  or is still waiting and is **censored** at its current ``u``;
- a draft without a deadline (``deadline: 0``) is timed in seconds since its creation: it leaves or is censored;
- the product-limit estimate of staying a draft, ``S = Π (1 − d_i / n_i)`` over the leaving times, with the share
  of each leaving time's exits that were cancellations, is the Aalen–Johansen estimate of this competing-risks
  picture: a draft still waiting at ``u0`` is cancelled with probability ``Σ_{t_i > u0} S(t_i−) c_i / n_i /
  S(u0)`` and expires with probability ``S(1−) / S(u0)`` (expiry can only happen at ``u = 1``); a draft past its
  deadline without an expiry yet expires with probability 1; a draft without a deadline never expires by it
  (probability 0) and, where the curve stays above 0, may stay a draft (neither cancelled nor expired); an
  operation already relayed, 0 for both.

Curves are per network when the network has at least :data:`~.inflight.MIN_REFERENCE` drafts on that clock, else
from every network. The interval is :func:`~.inflight.ratio_interval`'s, with the units grouped into cells of the
same curve and twentieth of the window (drafts without a deadline: doubling of age), each cell's estimation error
from the drafts still at risk after it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..warehouse import Warehouse
from .common import WarehouseLike, latest_event_time, params_in, run
from .inflight import EVERY, MIN_REFERENCE, Ratio, ratio_interval

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
    """Every draft: ``chain_selector``, ``clock`` (``deadline`` or ``wall``), ``u`` (when it left, reached its
    deadline, or was read: share of the deadline window, or seconds for a draft without one), ``left`` (relayed or
    cancelled at ``u``; else expired at 1 or still waiting: censored at ``u``) and ``cancelled`` (left cancelled)."""
    sql = f"""
        WITH {ctes}, drafts AS (
            SELECT * FROM ops_all o WHERE o.pending_signature_at IS NOT NULL OR o.last_status = 'pending_signature'
        ),
        dl AS (SELECT operation_id AS oid, any_value(deadline_at) AS deadline_at FROM operations
               WHERE operation_id IN (SELECT operation_id FROM drafts) GROUP BY 1)
        SELECT o.chain_selector, epoch(o.created_at) AS c,
            CASE WHEN dl.deadline_at > o.created_at THEN epoch(dl.deadline_at) END AS d, o.outcome,
            epoch({_LEFT}) AS relayed_s, epoch(o.terminal_at) AS terminal_s
        FROM drafts o LEFT JOIN dl ON dl.oid = o.operation_id
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
    scale = np.where(timed, window, 1.0)
    u = np.where(left, (ended - created) / scale, np.nan)
    u = np.where(waiting, (as_of - created) / scale, u)
    u = np.where(expired & timed, 1.0, u)
    keep = (left | waiting | (expired & timed)) & ~np.isnan(u)
    out = pd.DataFrame(
        {
            "chain_selector": df["chain_selector"].to_numpy()[keep],
            "clock": np.where(timed, "deadline", "wall")[keep],
            "u": u[keep],
            "left": left[keep],
            "cancelled": (left & cancelled)[keep],
        }
    )
    # leaving exactly at (or, by rounding, after) the deadline is leaving just before it
    top = np.where(out["clock"] == "deadline", np.where(out["left"], 1.0 - 1e-9, 1.0), np.inf)
    out["u"] = np.clip(out["u"].to_numpy(dtype=float), 0.0, top)
    return out


def _deadlines(warehouse: WarehouseLike, ids: pd.Series) -> pd.Series:
    """The deadline (epoch seconds) of each of the operations ``ids`` that has one, indexed by operation id."""
    ids = ids.dropna()
    if ids.empty:
        return pd.Series(dtype=float)
    sql = """
        SELECT operation_id, epoch(any_value(deadline_at)) AS d FROM operations
        WHERE operation_id IN (SELECT unnest($ids::VARCHAR[])) GROUP BY operation_id
    """
    df = run(warehouse, sql, {"ids": ids.astype(str).tolist()})
    return df.set_index("operation_id")["d"]


Curve = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _curve(ref: pd.DataFrame) -> Curve:
    """The leaving times ``t``, ``S`` just after each (the product-limit estimate), the drafts at risk at each, and
    the cumulative incidence of cancellation up to and including each, ``Σ_{t_j ≤ t} S(t_j−) c_j / n_j``."""
    u, left = ref["u"].to_numpy(dtype=float), ref["left"].to_numpy(dtype=bool)
    times, idx, deaths = np.unique(u[left], return_inverse=True, return_counts=True)
    cancels = np.bincount(idx, weights=ref["cancelled"].to_numpy(dtype=float)[left], minlength=len(times))
    ordered = np.sort(u)
    at_risk = len(u) - np.searchsorted(ordered, times, side="left")  # exits at or after t (censored at t included)
    surv = np.cumprod(1.0 - deaths / at_risk)
    before = np.r_[1.0, surv[:-1]]
    incidence = np.cumsum(before * cancels / at_risk)
    return times, surv, at_risk, incidence


def _fate_probability(curve: Curve, u0: np.ndarray, *, expires: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For drafts still waiting at ``u0``: P(expire) = S(1−) / S(u0) (0 when the clock has no deadline,
    ``expires`` False), P(cancelled) = the cancellation incidence after ``u0`` over S(u0), and the drafts of the
    reference at risk after ``u0``. NaN where nobody of the reference is at risk at ``u0``."""
    times, surv, at_risk, incidence = curve
    if len(times) == 0:
        return np.full(len(u0), 1.0 if expires else 0.0), np.zeros(len(u0)), np.zeros(len(u0))
    idx = np.searchsorted(times, u0, side="right") - 1  # the last leaving time at or before u0
    s0 = np.where(idx >= 0, surv[np.maximum(idx, 0)], 1.0)
    f0 = np.where(idx >= 0, incidence[np.maximum(idx, 0)], 0.0)
    nxt = np.minimum(idx + 1, len(times) - 1)
    n_after = np.where(idx + 1 < len(times), at_risk[nxt], 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        expire = np.where(s0 > 0, surv[-1] / s0, np.nan) if expires else np.zeros(len(u0))
        cancel = np.where(s0 > 0, (incidence[-1] - f0) / s0, np.nan)
    if expires:
        expire, cancel = np.where(u0 >= 1.0, 1.0, expire), np.where(u0 >= 1.0, 0.0, cancel)
    return expire, np.clip(cancel, 0.0, 1.0), n_after.astype(float)


def draft_expiry_rates(
    warehouse: WarehouseLike, ctes: str, units: str, keys: Sequence[tuple[str, str]], params: dict
) -> pd.DataFrame:
    """``draft_expiry_rate`` and ``draft_cancel_rate`` with ``_low``/``_high`` per group, drafts in flight projected
    on their own clock (the module docstring).

    Arguments: ``ctes`` and ``units`` of an operation cohort (:func:`~.outcomes.operation_cohort`: its ``ops_all``
    relation and its units' SELECT), ``keys`` its grouping (SQL, name), ``params`` the bound parameters. Returns
    one row per group, in the order of the keys: the key names and the six columns.

    Only the units still open come back one row each; the finished ones are counted per group in the database.
    """
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
    curves: dict[str, Curve] = {}
    for clock, prefix in (("deadline", ""), ("wall", _WALL)):
        on_clock = ref[ref["clock"] == clock]
        curves[f"{prefix}*"] = _curve(on_clock)
        counts = on_clock.groupby("chain_selector").size()
        curves |= {
            f"{prefix}{c}": _curve(on_clock[on_clock["chain_selector"] == c])
            for c, n in counts.items()
            if n >= MIN_REFERENCE
        }

    waiting = df["waiting"].fillna(False).to_numpy(dtype=bool)
    created = df["c"].to_numpy(dtype=float)
    window = df["d"].to_numpy(dtype=float, na_value=np.nan) - created
    timed = waiting & (window > 0)
    untimed = waiting & ~(window > 0)
    u0 = np.where(timed, np.clip((as_of - created) / np.where(timed, window, 1.0), 0.0, 1.0), 0.0)
    u0 = np.where(untimed, np.maximum(as_of - created, 0.0), u0)
    expire, cancel = np.zeros(len(df)), np.zeros(len(df))
    n_ref = np.ones(len(df))
    curve_id = np.full(len(df), "", dtype=object)
    # its own name: a grouping by chain_selector is a column of that name already
    chains = df["unit_chain"].astype(object).to_numpy()
    for on_clock, prefix in ((timed, ""), (untimed, _WALL)):
        expires = not prefix
        for chain in pd.unique(chains[on_clock]):
            rows = np.flatnonzero(on_clock & (chains == chain))
            cid = f"{prefix}{chain}" if f"{prefix}{chain}" in curves else f"{prefix}*"
            p_exp, p_can, after = _fate_probability(curves[cid], u0[rows], expires=expires)
            if not cid.endswith("*") and (np.isnan(p_exp) | np.isnan(p_can)).any():
                # nobody of the network at risk there: every network's curve
                bad = np.isnan(p_exp) | np.isnan(p_can)
                p_exp[bad], p_can[bad], after[bad] = (
                    x[bad] for x in _fate_probability(curves[f"{prefix}*"], u0[rows], expires=expires)
                )
            expire[rows] = np.nan_to_num(p_exp, nan=1.0 if expires else 0.0)
            cancel[rows] = np.nan_to_num(p_can, nan=0.0)
            n_ref[rows], curve_id[rows] = np.maximum(after, 1.0), cid
    df["p_draft_expired"], df["p_draft_cancelled"] = expire, cancel
    df["n_ref"], df["curve"] = n_ref, curve_id
    cell = np.where(untimed, np.floor(np.log2(1.0 + u0)), np.floor(u0 * _CELLS))
    df["cell"] = cell.astype("float")
    return _moments_table(summary, df, names)


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
    moments = units_df.groupby(gkeys, dropna=False, sort=False).agg(**aggs)
    moments[f"e_{EVERY}__{EVERY}"] = moments[f"e_{EVERY}"]
    for x in inds:
        moments[f"e_{x}__{EVERY}"] = moments[f"e_{x}"]
    # estimation error: units of one curve and cell share it (m² p_x p_y / n over the cells)
    cells = df.groupby([*gkeys, "curve", "cell"], dropna=False, sort=False).agg(
        m=("open", "size"), n=("n_ref", "min"), **{f"p_{x}": (f"p_{x}", "mean") for x in inds}
    )
    cells["w1"] = cells["m"] ** 2 / cells["n"]
    cells[f"w_{EVERY}"] = cells[f"w_{EVERY}__{EVERY}"] = cells["w1"]
    wcols = [f"w_{EVERY}", f"w_{EVERY}__{EVERY}"]
    for x in inds:
        cells[f"w_{x}"] = cells[f"w_{x}__{EVERY}"] = cells["w1"] * cells[f"p_{x}"]
        cells[f"w_{x}__{x}"] = cells["w1"] * cells[f"p_{x}"] ** 2
        wcols += [f"w_{x}", f"w_{x}__{x}", f"w_{x}__{EVERY}"]
    moments = moments.join(cells.groupby(gkeys, dropna=False)[wcols].sum()).fillna(0.0).reset_index()
    moments["unprojected"] = 0.0
    out = moments[gkeys].copy()
    for r in DRAFT_RATES:
        out[r.name], out[f"{r.name}_low"], out[f"{r.name}_high"] = ratio_interval(moments, r)
    return out.drop(columns=["_all"], errors="ignore")
