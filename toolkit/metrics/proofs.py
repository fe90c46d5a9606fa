"""Events that must carry DON proofs and do, and their signatures."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .. import spec
from ..warehouse.proofs_owed import dispatched_queries_sql, failed_in_dispatch_sql
from .common import (
    NO_FILTERS,
    Filters,
    WarehouseLike,
    grouping,
    open_warehouse,
    select_groups,
    sort_rows,
    takes_filters,
)
from .declarations import BY_NAME
from .stats import rates

#: The columns it can group by, as declared (:mod:`.declarations`).
PROOF_GROUPS = BY_NAME["proof-coverage"].by

_PROOF_COLUMNS = (
    "events",
    "must_have_proof",
    "with_proof",
    "missing_proof",
    "coverage",
    "coverage_low",
    "coverage_high",
    "min_signatures",
    "enough_signatures",
    "too_few_signatures",
    "signatures_min",
    "signatures_p50",
    "signatures_max",
    "unexpected_proofs",
    "verified",
    "invalid",
    "verified_share",
    "verified_share_low",
    "verified_share_high",
)
#: Where ``chainops verify`` stores each proof-bearing event's verdict (toolkit.verify).
VERIFICATIONS = "event_verifications"


@takes_filters()
def proof_coverage(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
    by: Sequence[str] = ("type",),
) -> pd.DataFrame:
    """Events that must carry DON proofs (:mod:`toolkit.warehouse.proofs_owed`) and do, and their signatures.

    Events with ``ts`` in the period, grouped by ``by`` (any of ``type``, ``status``, ``network``,
    ``chain_selector``, ``channel_id``). Columns: ``events``, ``must_have_proof``, ``with_proof`` (of those),
    ``missing_proof``, ``coverage`` with its 95% Wilson interval, the ``min_signatures`` a verifier requires
    (:data:`toolkit.spec.PROOF_MIN_SIGNATURES`), ``enough_signatures`` and ``too_few_signatures`` among the proofs,
    ``signatures_min``/``signatures_p50``/``signatures_max``, ``unexpected_proofs`` (on events that need none), and
    what ``chainops verify`` found (``event_verifications``): ``verified`` and ``invalid`` among the events that must
    carry a proof, and ``verified_share`` = verified / must_have_proof with its 95% Wilson interval (an event not
    verified yet counts as not verified). The last three are NA on an engine without verification results (a
    warehouse never opened for writing since verification came, an export written before it).

    A ``failed`` query that failed in dispatch (it never reached ``sent`` and carries no DON result) owes no proof:
    it counts in ``events``, not in ``must_have_proof``; one whose failure came from the DON and carries no proof is
    ``missing_proof``.

    Returns the DataFrame.
    """
    cols = grouping(by, PROOF_GROUPS, "proof_coverage")
    q = where.events_sql().one_of(where.status, "e.status")
    keys = list(dict.fromkeys(["type", "status", *cols]))
    exprs = {"network": "coalesce(n.name, e.chain_selector)"}
    join = "LEFT JOIN networks n ON n.chain_selector = e.chain_selector" if "network" in keys else ""
    join += f" LEFT JOIN ({dispatched_queries_sql()}) d ON d.query_id = e.query_id"
    in_dispatch = failed_in_dispatch_sql("e", dispatched="d")
    select, group = select_groups(keys, exprs={k: exprs.get(k, f"e.{k}") for k in keys})
    with open_warehouse(warehouse) as wh:
        verified = VERIFICATIONS in getattr(wh, "tables", list)()
        verdict = "v.verdict" if verified else "CAST(NULL AS VARCHAR)"
        join += f" LEFT JOIN {VERIFICATIONS} v ON v.event_id = e.event_id" if verified else ""
        sql = f"""
            SELECT {select} coalesce(e.proof_count, 0) > 0 AS has_proof, e.signature_count, {verdict} AS verdict,
                {in_dispatch} AS in_dispatch, count(*) AS n
            FROM events e {join}
            {q.where()}
            GROUP BY {group}, coalesce(e.proof_count, 0) > 0, e.signature_count, {verdict}, {in_dispatch}
        """
        return _proof_table(wh.query(sql, dict(q.params)), cols, verified=verified)


def _proof_table(df: pd.DataFrame, cols: list[str], *, verified: bool = True) -> pd.DataFrame:
    """Fold (type, status, proof?, signatures, verdict, in dispatch?, n) rows into the coverage table, judging each
    (type, status, in dispatch?) with the spec; ``verified``: whether the engine holds verification results (else
    their columns are NA)."""
    dispatch = df["in_dispatch"].astype("boolean").fillna(False).astype(bool) if "in_dispatch" in df else False
    dispatch = pd.Series(dispatch, index=df.index, dtype=bool)
    triples = list(zip(df["type"], df["status"], dispatch, strict=True))
    need = {
        (t, s, d): spec.event_requires_proof(t, None if s is None or s is pd.NA or s != s else s, failed_in_dispatch=d)
        for t, s, d in set(triples)
    }
    must = pd.Series([need[k] for k in triples], index=df.index, dtype=bool)
    proof = df["has_proof"].astype(bool)
    enough = (df["signature_count"].astype("Float64") >= spec.PROOF_MIN_SIGNATURES).fillna(False).astype(bool)
    n = df["n"].astype("int64")
    verdict = df["verdict"].astype("string").fillna("")
    df = df.assign(
        events=n,
        must_have_proof=n.where(must, 0),
        with_proof=n.where(must & proof, 0),
        enough_signatures=n.where(must & proof & enough, 0),
        unexpected_proofs=n.where(~must & proof, 0),
        verified=n.where(must & (verdict == spec.Verdict.VERIFIED).to_numpy(dtype=bool), 0),
        invalid=n.where(must & (verdict == spec.Verdict.INVALID).to_numpy(dtype=bool), 0),
        _all=0,
    )
    keys = cols or ["_all"]
    counted = [
        "events",
        "must_have_proof",
        "with_proof",
        "enough_signatures",
        "unexpected_proofs",
        "verified",
        "invalid",
    ]
    out = df.groupby(keys, dropna=False)[counted].sum()
    stats = _signature_stats(df[must & proof], keys)
    out = out.join(stats, how="left").reset_index()
    out["missing_proof"] = out["must_have_proof"] - out["with_proof"]
    out["too_few_signatures"] = out["with_proof"] - out["enough_signatures"]
    out = rates(out, ("with_proof", "verified"), "must_have_proof", ("coverage", "verified_share"))
    if not verified:
        for name in ("verified", "invalid"):
            out[name] = pd.array([pd.NA] * len(out), dtype="Int64")
        for name in ("verified_share", "verified_share_low", "verified_share_high"):
            out[name] = float("nan")
    out["min_signatures"] = spec.PROOF_MIN_SIGNATURES
    return sort_rows(out[[*cols, *_PROOF_COLUMNS]], cols)


def _signature_stats(proved: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Min, median and max signature count per group, from (signature_count, n) rows (n = how many events)."""
    rows = []
    proved = proved.dropna(subset=["signature_count"])
    for key, g in proved.groupby(keys, dropna=False) if len(proved) else []:
        g = g.sort_values("signature_count")
        cum = g["n"].cumsum().to_numpy()
        values = g["signature_count"].to_numpy(dtype=float)
        middle = np.searchsorted(cum, [(cum[-1] - 1) // 2 + 1, cum[-1] // 2 + 1])  # the two middle positions
        median = float(values[middle].mean())
        rows.append((*(key if isinstance(key, tuple) else (key,)), values[0], median, values[-1]))
    names = ["signatures_min", "signatures_p50", "signatures_max"]
    return pd.DataFrame(rows, columns=[*keys, *names]).set_index(keys)


_INVALID_COLUMNS = (
    "event_id",
    "type",
    "status",
    "channel_id",
    "network",
    "ts",
    "reason",
    "valid_signers",
    "checked_at",
)


@takes_filters("channel", "network", "since", "until")
def invalid_proofs(
    warehouse: WarehouseLike = None,
    *,
    where: Filters = NO_FILTERS,
) -> pd.DataFrame:
    """The events whose DON proof ``chainops verify`` found invalid, with the rule that failed.

    Events with ``ts`` in the period, newest first. Columns: ``event_id``, ``type``, ``status``, ``channel_id``,
    ``network``, ``ts``, ``reason``, ``valid_signers`` (distinct trusted signers recovered), ``checked_at``. Empty
    on an engine without verification results. Returns the DataFrame.
    """
    q = where.events_sql()
    q.clauses.append(f"v.verdict = '{spec.Verdict.INVALID}'")
    with open_warehouse(warehouse) as wh:
        if VERIFICATIONS not in getattr(wh, "tables", list)():
            return pd.DataFrame({c: pd.Series(dtype="object") for c in _INVALID_COLUMNS})
        sql = f"""
            SELECT e.event_id, e.type, e.status, e.channel_id, coalesce(n.name, e.chain_selector) AS network, e.ts,
                v.reason, v.valid_signers, v.checked_at
            FROM events e JOIN {VERIFICATIONS} v ON v.event_id = e.event_id
            LEFT JOIN networks n ON n.chain_selector = e.chain_selector
            {q.where()}
            ORDER BY e.ts DESC, e.event_id
        """
        return wh.query(sql, dict(q.params)).reset_index(drop=True)
