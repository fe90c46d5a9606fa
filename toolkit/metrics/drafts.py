"""The fate of drafts still waiting for their signature, on the clock of their own deadline (``draft_expiry_rate``).

A draft (an operation that entered ``pending_signature``) ends in one of three ways: it is signed and relayed, it
is cancelled, or it expires at its deadline. The generic projection (:mod:`.inflight`) learns from drafts that have
*finished*, and with long deadlines those are biased towards short deadlines and quick signatures: the drafts that
will expire are exactly the ones that have not finished yet. Here the fate is read on the draft's own clock, the
share of its deadline window that has passed, ``u = (t − created) / (deadline − created)`` in ``[0, 1]``:

- every draft with a deadline in the warehouse's history is one observation: it *leaves* (is relayed or cancelled)
  at its ``u``, or reaches ``u = 1`` and expires, or is still waiting and is **censored** at its current ``u``;
- the product-limit estimate of staying a draft, ``S(u) = Π (1 − d_i / n_i)`` over the leaving times, is the
  Aalen–Johansen estimate of this competing-risks picture (expiry can only happen at ``u = 1``, so its cumulative
  incidence is ``S(1−)``);
- a draft still waiting at ``u0`` expires with probability ``S(1−) / S(u0)``, the product over the leaving times
  after ``u0``; a draft past its deadline without an expiry yet, with probability 1; a draft without a deadline
  never expires by it (probability 0); an operation already relayed, 0.

Curves are per network when the network has at least :data:`~.inflight.MIN_REFERENCE` drafts with a deadline, else
from every network. The interval is :func:`~.inflight.ratio_interval`'s, with the units grouped into cells of the
same curve and twentieth of the window, each cell's estimation error from the drafts still at risk after it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..warehouse import Warehouse
from .common import WarehouseLike, latest_event_time, params_in, run
from .inflight import EVERY, MIN_REFERENCE, Ratio, ratio_interval

#: The rate this module estimates, as a share of every operation of the cohort.
DRAFT_EXPIRY = Ratio("draft_expiry_rate", "draft_expired")
_X = DRAFT_EXPIRY.numerator
#: Cells of the window for the estimation error: units in the same twentieth share their reference's error.
_CELLS = 20
_LEFT = (
    "least(accepted_at, sending_at, sent_at, broadcasting_at, confirmed_latest_at, confirmed_safe_at, confirmed_at, "
    "failed_at)"
)


def _reference(warehouse: WarehouseLike, ctes: str, params: dict, as_of: float) -> pd.DataFrame:
    """Every draft with a deadline: ``chain_selector``, ``u`` (when it left, reached its deadline, or was read) and
    ``left`` (1 relayed or cancelled at ``u``, 0 expired at 1 or still waiting: censored at ``u``)."""
    sql = f"""
        WITH {ctes}, drafts AS (
            SELECT * FROM ops_all o WHERE o.pending_signature_at IS NOT NULL OR o.last_status = 'pending_signature'
        ),
        dl AS (SELECT operation_id AS oid, any_value(deadline_at) AS deadline_at FROM operations
               WHERE operation_id IN (SELECT operation_id FROM drafts) GROUP BY 1)
        SELECT o.chain_selector, epoch(o.created_at) AS c, epoch(dl.deadline_at) AS d, o.outcome,
            epoch({_LEFT}) AS relayed_s, epoch(o.terminal_at) AS terminal_s
        FROM drafts o JOIN dl ON dl.oid = o.operation_id
        WHERE dl.deadline_at > o.created_at
    """
    used = params_in(sql, params)
    if isinstance(warehouse, Warehouse):  # the same for every question a report asks of an open warehouse
        key = ("drafts.reference", sql, tuple(sorted((k, repr(v)) for k, v in used.items())), as_of)
        return warehouse.memoized(key, lambda: _reference_from(run(warehouse, sql, used), as_of))
    return _reference_from(run(warehouse, sql, used), as_of)


def _reference_from(df: pd.DataFrame, as_of: float) -> pd.DataFrame:
    """The reference of :func:`_reference` from the drafts' times and outcomes read from the warehouse."""
    window = (df["d"] - df["c"]).to_numpy(dtype=float)
    relayed = df["relayed_s"].to_numpy(dtype=float, na_value=np.nan)
    outcome = df["outcome"].astype(object).where(df["outcome"].notna(), None)
    ended = np.where(outcome == "draft_cancelled", df["terminal_s"].to_numpy(dtype=float, na_value=np.nan), relayed)
    waiting = outcome.isna().to_numpy() & np.isnan(relayed)
    expired = (outcome == "draft_expired").to_numpy()
    left = ~np.isnan(ended) & ~expired & ~waiting
    u = np.where(left, (ended - df["c"].to_numpy(dtype=float)) / window, np.nan)
    u = np.where(waiting, (as_of - df["c"].to_numpy(dtype=float)) / window, u)
    u = np.where(expired, 1.0, u)
    keep = left | waiting | expired
    out = pd.DataFrame({"chain_selector": df["chain_selector"].to_numpy()[keep], "u": u[keep], "left": left[keep]})
    # leaving exactly at (or, by rounding, after) the deadline is leaving just before it
    out["u"] = np.where(out["left"], np.clip(out["u"], 0.0, 1.0 - 1e-9), np.clip(out["u"], 0.0, 1.0))
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


def _curve(ref: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The leaving times ``t``, ``S`` just after each (the product-limit estimate) and the drafts at risk at each."""
    u, left = ref["u"].to_numpy(dtype=float), ref["left"].to_numpy(dtype=bool)
    times, deaths = np.unique(u[left], return_counts=True)
    ordered = np.sort(u)
    at_risk = len(u) - np.searchsorted(ordered, times, side="left")  # exits at or after t (censored at t included)
    surv = np.cumprod(1.0 - deaths / at_risk)
    return times, surv, at_risk


def _expiry_probability(
    curve: tuple[np.ndarray, np.ndarray, np.ndarray], u0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """P(expire | still waiting at ``u0``) = S(1−) / S(u0), and the drafts of the reference at risk after ``u0``."""
    times, surv, at_risk = curve
    if len(times) == 0:
        return np.ones(len(u0)), np.zeros(len(u0))
    end = surv[-1]
    idx = np.searchsorted(times, u0, side="right") - 1  # the last leaving time at or before u0
    s0 = np.where(idx >= 0, surv[np.maximum(idx, 0)], 1.0)
    nxt = np.minimum(idx + 1, len(times) - 1)
    n_after = np.where(idx + 1 < len(times), at_risk[nxt], 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(s0 > 0, end / s0, np.nan)
    return np.where(u0 >= 1.0, 1.0, p), n_after.astype(float)


def draft_expiry_rates(
    warehouse: WarehouseLike, ctes: str, units: str, keys: Sequence[tuple[str, str]], params: dict
) -> pd.DataFrame:
    """``draft_expiry_rate`` with ``_low``/``_high`` per group, drafts in flight projected on their deadline's clock.

    Arguments: ``ctes`` and ``units`` of an operation cohort (:func:`~.outcomes.operation_cohort`: its ``ops_all``
    relation and its units' SELECT), ``keys`` its grouping (SQL, name), ``params`` the bound parameters. Returns
    one row per group, in the order of the keys: the key names and the three columns.

    Only the units still open come back one row each; the finished ones are counted per group in the database.
    """
    names = [name for _, name in keys]
    as_of_ts = latest_event_time(warehouse)
    as_of = float((as_of_ts or pd.Timestamp.now(tz="UTC")).timestamp())
    keyed = "".join(f"{expr} AS k{i}, " for i, (expr, _) in enumerate(keys))
    order = ", ".join(f"k{i}" for i in range(len(keys)))
    # a finished unit only counts (known, done), so the database counts those per group
    counted = f"""
        WITH {ctes}
        SELECT {keyed}count(*) FILTER (WHERE u.finished AND u.outcome = 'draft_expired') AS known,
            count(*) FILTER (WHERE u.finished) AS done
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
    pooled = _curve(ref)
    counts = ref.groupby("chain_selector").size()
    curves = {c: _curve(ref[ref["chain_selector"] == c]) for c, n in counts.items() if n >= MIN_REFERENCE}

    waiting = df["waiting"].fillna(False).to_numpy(dtype=bool)
    window = (df["d"] - df["c"]).to_numpy(dtype=float, na_value=np.nan)
    u0 = np.clip((as_of - df["c"].to_numpy(dtype=float)) / window, 0.0, 1.0)
    has_deadline = waiting & (window > 0)
    p = np.zeros(len(df))
    n_ref = np.ones(len(df))
    curve_id = np.full(len(df), "", dtype=object)
    # its own name: a grouping by chain_selector is a column of that name already
    chains = df["unit_chain"].astype(object).to_numpy()
    for chain in pd.unique(chains[has_deadline]):
        rows = np.flatnonzero(has_deadline & (chains == chain))
        use, cid = (curves[chain], chain) if chain in curves else (pooled, "*")
        prob, after = _expiry_probability(use, u0[rows])
        if cid != "*" and np.isnan(prob).any():  # nobody of the network at risk there: every network's curve
            bad = np.isnan(prob)
            prob[bad], after[bad] = _expiry_probability(pooled, u0[rows][bad])
        p[rows], n_ref[rows], curve_id[rows] = np.nan_to_num(prob, nan=1.0), np.maximum(after, 1.0), cid
    df["p"], df["n_ref"], df["curve"] = np.where(has_deadline, p, 0.0), n_ref, curve_id
    df["cell"] = np.floor(u0 * _CELLS).astype("float")
    df["known"], df["done"], df["open"] = 0.0, 0.0, 1.0
    df["p2"] = df["p"] ** 2
    gkeys = names or ["_all"]
    if not names:
        df["_all"] = summary["_all"] = 0
    # each group's counts first: a leading zero leaves the (compensated) sums of p and p² as over the open units
    summary = summary.assign(known=summary["known"].astype(float), done=summary["done"].astype(float))
    summary["p"], summary["open"], summary["p2"] = 0.0, 0.0, 0.0
    units_df = pd.concat([summary, df[summary.columns]], ignore_index=True) if len(df) else summary
    moments = units_df.groupby(gkeys, dropna=False, sort=False).agg(
        **{
            f"known_{_X}": ("known", "sum"),
            f"known_{EVERY}": ("done", "sum"),
            f"e_{_X}": ("p", "sum"),
            f"e_{EVERY}": ("open", "sum"),
            f"e_{_X}__{_X}": ("p2", "sum"),
        }
    )
    moments[f"e_{EVERY}__{EVERY}"] = moments[f"e_{EVERY}"]
    moments[f"e_{_X}__{EVERY}"] = moments[f"e_{_X}"]
    # estimation error: units of one curve and cell share it (m² p_x p_y / n over the cells)
    cells = df.groupby([*gkeys, "curve", "cell"], dropna=False, sort=False).agg(
        m=("p", "size"), p=("p", "mean"), n=("n_ref", "min")
    )
    cells["w1"] = cells["m"] ** 2 / cells["n"]
    cells[f"w_{_X}"] = cells["w1"] * cells["p"]
    cells[f"w_{_X}__{_X}"] = cells["w1"] * cells["p"] ** 2
    cells[f"w_{EVERY}"] = cells["w1"]
    cells[f"w_{EVERY}__{EVERY}"] = cells["w1"]
    cells[f"w_{_X}__{EVERY}"] = cells[f"w_{_X}"]
    wcols = [f"w_{_X}", f"w_{_X}__{_X}", f"w_{EVERY}", f"w_{EVERY}__{EVERY}", f"w_{_X}__{EVERY}"]
    moments = moments.join(cells.groupby(gkeys, dropna=False)[wcols].sum()).fillna(0.0).reset_index()
    moments["unprojected"] = 0.0
    est, low, high = ratio_interval(moments, DRAFT_EXPIRY)
    out = moments[gkeys].copy()
    out["draft_expiry_rate"], out["draft_expiry_rate_low"], out["draft_expiry_rate_high"] = est, low, high
    return out.drop(columns=["_all"], errors="ignore")
