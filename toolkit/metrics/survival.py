"""Censoring-aware percentiles of durations: the Kaplan–Meier product-limit estimator, per group, vectorised.

The database does the heavy part: it reduces the observations to one row per group and distinct duration, with the
number of observations that ended at that duration (``events``) and of those still going when the data was read
(``censored``, right-censored at the as-of time). numpy then computes every group's survival curve at once (no loop
over observations or groups in Python) and reads the percentiles off it.

Definitions (``docs/metrics.md``, "Durations: censoring-aware percentiles"):

- survival ``S(t) = Π_{t_i ≤ t} (1 − d_i / n_i)`` over the distinct event times ``t_i``, with ``d_i`` events and
  ``n_i`` observations still at risk just before ``t_i``. Ties: at one duration, events come before censorings (an
  observation censored at ``t_i`` is still at risk at ``t_i``).
- percentile ``q`` is the smallest event time ``t`` with ``S(t) ≤ 1 − q``; where ``S(t)`` equals ``1 − q`` (to float
  tolerance) it is the midpoint between ``t`` and the next event time (R's ``quantile.survfit``). With nothing
  censored this is numpy's ``quantile(x, q, method="averaged_inverted_cdf")`` (Hyndman–Fan type 2). Where the curve
  stays at exactly ``1 − q`` to the end (every later observation censored) there is no next event time: the
  percentile lies somewhere from ``t`` on, so under the rules below it is NULL with the reason (without them, as
  in :func:`km_quantile`, it is ``t``, the lower end of the flat stretch).
- a percentile is **final** where no observation still open can change it: every censored observation of the
  group has lasted at least as long as the event time it is read at (for a midpoint, the next event time too).
  The curve up to a time ``t`` is final when every open stay has lasted ``t`` or longer (censored at ``t`` itself:
  still at risk at ``t``, so it ends after it), and so is a percentile read off that part of it. A final percentile
  is shown, exact, whatever the two rules below say, and where one of them would have hidden it the notes say so
  (``"p90: n=7 < 10, final (nothing open can change it)"``). With nothing censored every percentile the curve
  reaches is final; with stays open, a final percentile always meets both rules (see :func:`final_note`), so the
  rules hide exactly the percentiles an open stay could still move.
- the sample-size rule (:func:`min_observations`): a percentile ``q`` that is not final is shown only for groups
  with at least ``ceil(1 / (1 − q))`` observations (p50 from 2, p90 from 10, p99 from 100) whose curve reaches
  ``1 − q``; otherwise it is NULL and the row's notes say why.
- the at-risk rule (:func:`min_at_risk`): and only where, at the event time it is read at, at least
  ``max(2, ceil(n × (1 − q) / 2))`` of the group's ``n`` observations are still at risk (half of what a group with
  nothing censored has there), and at least 10 once any was censored before that time; otherwise NULL, and the
  notes give the number at risk and the number needed. (Only open stays censored before that time can make a
  group fail it: with none, more than ``n × (1 − q)`` are still at risk there.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pandas as pd

from .. import spec

#: Float tolerance of "S(t) equals 1 − q".
TOLERANCE = 1e-9


def min_observations(q: float) -> int:
    """The sample-size rule: the fewest observations a group needs for its percentile ``q`` to be shown.

    ``ceil(1 / (1 − q))``: p50 from 2, p90 from 10, p99 from 100 observations (a group smaller than that has no
    observation beyond the percentile even when nothing is censored). Arguments: ``q`` in ``[0, 1)``. Returns the
    count.
    """
    if not 0 <= q < 1:
        raise ValueError(f"a percentile is in [0, 1): {q}")
    return max(1, math.ceil(1 / (1 - q) - TOLERANCE))


#: The fewest still at risk where a percentile is read once observations were censored before it.
MIN_AT_RISK_CENSORED = 10


def min_at_risk(q: float, observations: int, censored_before: int = 0) -> int:
    """The at-risk rule: the fewest observations still at risk at the event time percentile ``q`` is read at.

    ``max(2, ceil(observations × (1 − q) / 2))``: at least half of the operations an uncensored group of this size
    would still have at risk there (more than ``observations × (1 − q)``), and at least two; and when any
    observation was censored before that time (``censored_before``), at least :data:`MIN_AT_RISK_CENSORED` (a
    censored curve resting on fewer moves by more than a tenth at each event, and read live it put medians outside
    half to twice the final one). A group with nothing censored always meets it; a group whose stays were mostly
    censored before the percentile does not (16 stays of which 15 are censored at under an hour cannot say where
    their median lies: the one that ended is the fastest, not the typical). Arguments: ``q`` in ``[0, 1)``, the
    group's ``observations``, ``censored_before``. Returns the count.
    """
    need = max(2, math.ceil(observations * (1 - q) / 2 - TOLERANCE))
    return max(need, MIN_AT_RISK_CENSORED) if censored_before > 0 else need


def percentile_name(q: float) -> str:
    """The short name of percentile ``q`` used in column names and notes: ``p50``, ``p90``, ``p99``, ``p99.9``."""
    return f"p{100 * q:g}"


def km_percentiles(
    counts: pd.DataFrame,
    keys: Sequence[str],
    probs: Sequence[float] = (0.5, 0.9),
    *,
    duration: str = "duration",
    events: str = "events",
    censored: str = "censored",
    label: str = "",
    pending: str = "still in status",
    rule: bool = True,
) -> pd.DataFrame:
    """Kaplan–Meier percentiles per group, with the sample-size rule and a note for every NULL percentile.

    Arguments: ``counts`` one row per group of ``keys`` and distinct ``duration`` (seconds) with the counts
    ``events`` (ended at that duration) and ``censored`` (still going, censored at that duration); rows whose
    duration is NULL are not observations but keep their group in the answer. ``probs`` the percentiles. ``label``
    prefixes the notes (``"to_safe"`` gives ``"to_safe p90: n=7 < 10"``); ``pending`` words the censored ones in
    them (``"p50: 12 of 20 still in status; survival stays above 50%"``). ``rule=False`` skips the sample-size
    and at-risk rules (tests and references only); by default they hide only percentiles that are not final.

    Returns one row per group: the keys, ``observations``, ``events``, ``censored``, one ``p<q>_s`` column per
    percentile (NaN when not shown) and ``notes`` (the reasons, and the final percentiles shown below the sample-size
    rule, ``"; "``-joined; ``""`` when none).
    """
    keys = list(keys)
    names = [percentile_name(q) for q in probs]
    cols = [*keys, "observations", "events", "censored", *(f"{n}_s" for n in names), "notes"]
    if counts.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c in (*keys, "notes") else float) for c in cols})
    t = pd.to_numeric(counts[duration], errors="coerce").to_numpy(dtype=float)
    observed = ~np.isnan(t)
    d = np.where(observed, counts[events].to_numpy(dtype=float), 0.0)
    c = np.where(observed, counts[censored].to_numpy(dtype=float), 0.0)
    gid = counts.groupby(keys, dropna=False, sort=False).ngroup().to_numpy() if keys else np.zeros(len(t), int)
    groups = int(gid.max()) + 1
    firsts = pd.Series(np.arange(len(t))).groupby(gid).first().to_numpy()
    out = counts.iloc[firsts][keys].reset_index(drop=True) if keys else pd.DataFrame(index=range(1))

    n_events = np.bincount(gid, weights=d, minlength=groups)
    n_censored = np.bincount(gid, weights=c, minlength=groups)
    n_obs = n_events + n_censored
    out["observations"] = n_obs.astype(int)
    out["events"] = n_events.astype(int)
    out["censored"] = n_censored.astype(int)

    # the curve: observed rows sorted by group then duration
    rows = np.flatnonzero(observed & (d + c > 0))
    order = rows[np.lexsort((t[rows], gid[rows]))]
    g, tt, dd, cc = gid[order], t[order], d[order], c[order]
    # durations may repeat within a group when the caller did not aggregate: merge them (events before censorings)
    if len(g):
        new = np.r_[True, (g[1:] != g[:-1]) | (tt[1:] != tt[:-1])]
        seg = np.cumsum(new) - 1
        g, tt = g[new], tt[new]
        dd = np.bincount(seg, weights=dd)
        cc = np.bincount(seg, weights=cc)
    leaving = dd + cc
    before = pd.Series(leaving).groupby(g).cumsum().to_numpy() - leaving  # left the risk set earlier in the group
    at_risk = n_obs[g] - before
    censored_before = pd.Series(cc).groupby(g).cumsum().to_numpy() - cc  # censored at shorter durations
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = np.where(dd > 0, 1.0 - dd / at_risk, 1.0)
    surv = pd.Series(factor).groupby(g).cumprod().to_numpy()
    # the next event time after each row, within its group
    event_t = pd.Series(np.where(dd > 0, tt, np.nan))
    next_event = event_t.groupby(g).shift(-1).groupby(g).bfill().to_numpy()
    lowest = np.full(groups, 1.0)
    shortest_open = np.full(groups, np.inf)  # the shortest censored duration of each group (inf: none censored)
    if len(g):
        np.minimum.at(lowest, g, surv)
        np.minimum.at(shortest_open, g[cc > 0], tt[cc > 0])

    notes: list[list[str]] = [[] for _ in range(groups)]
    prefix = f"{label} " if label else ""
    for q, name in zip(probs, names, strict=True):
        target = 1.0 - q
        value = np.full(groups, np.nan)
        risk = np.full(groups, np.nan)  # still at risk at the event time the percentile is read at
        early = np.zeros(groups)  # censored before that time
        read_at = np.full(groups, np.nan)
        open_end = np.zeros(groups, bool)  # S is exactly 1 - q from the read time on and no event follows
        depends = np.full(groups, np.nan)  # the latest event time the value rests on (the next one for a midpoint)
        hit = np.flatnonzero((dd > 0) & (surv <= target + TOLERANCE))
        if len(hit):
            first = pd.Series(hit).groupby(g[hit]).first()
            idx, grp = first.to_numpy(), first.index.to_numpy()
            exact = np.abs(surv[idx] - target) <= TOLERANCE
            nxt = next_event[idx]
            value[grp] = np.where(exact & ~np.isnan(nxt), (tt[idx] + nxt) / 2, tt[idx])
            depends[grp] = np.where(exact & ~np.isnan(nxt), nxt, tt[idx])
            open_end[grp] = exact & np.isnan(nxt)
            risk[grp], read_at[grp], early[grp] = at_risk[idx], tt[idx], censored_before[idx]
        # final: no stay still open can move it (each has lasted at least as long as every event time it rests on)
        with np.errstate(invalid="ignore"):
            final = ~np.isnan(value) & ~open_end & (shortest_open >= depends)
        need = min_observations(q) if rule else 1
        small = (n_obs < need) & ~final
        need_risk = np.array([min_at_risk(q, int(n), int(e)) for n, e in zip(n_obs, early, strict=True)])
        need_risk = need_risk if rule else np.zeros(groups)
        thin = ~small & ~final & ~np.isnan(value) & (risk < need_risk)
        exempt = final & ((n_obs < need) | (risk < need_risk))  # shown only because it is final
        flat = ~small & ~np.isnan(value) & ~thin & open_end if rule else np.zeros(groups, bool)
        unreached = ~small & np.isnan(value)
        read = value.copy()
        value[small | thin | flat] = np.nan
        out[f"{name}_s"] = value
        for i in np.flatnonzero(small | unreached | thin | flat | exempt):
            if n_obs[i] == 0:
                if not notes[i]:
                    notes[i].append(f"{label or 'all'}: no observations")
            elif exempt[i]:
                notes[i].append(final_note(f"{prefix}{name}", int(n_obs[i]), need))
            elif small[i]:
                notes[i].append(f"{prefix}{name}: n={int(n_obs[i])} < {need}")
            elif thin[i]:
                notes[i].append(
                    f"{prefix}{name}: {int(risk[i])} at risk at {seconds_text(read_at[i])} s < {int(need_risk[i])} "
                    f"needed ({int(n_censored[i])} of {int(n_obs[i])} {pending})"
                )
            elif flat[i]:
                notes[i].append(
                    f"{prefix}{name}: survival is exactly {100 * target:g}% from {seconds_text(read[i])} s on and "
                    f"nothing ended after it, so {name} is somewhere above {seconds_text(read[i])} s "
                    f"({int(n_censored[i])} of {int(n_obs[i])} {pending})"
                )
            else:
                notes[i].append(
                    f"{prefix}{name}: {int(n_censored[i])} of {int(n_obs[i])} {pending}; survival stays above "
                    f"{100 * target:g}% (lowest {100 * lowest[i]:.0f}%)"
                )
    out["notes"] = ["; ".join(n) for n in notes]
    return out[cols]


def seconds_text(seconds: float) -> str:
    """Seconds as a note writes them, as the tables do: ``4,019`` and ``1,234,567`` (``:g`` wrote
    ``1.23457e+06``), ``0.25`` below ten."""
    return f"{seconds:,.0f}" if abs(seconds) >= 10 else f"{seconds:.3g}"


def final_note(name: str, observations: int, need: int) -> str:
    """The note of a percentile shown below the sample-size rule because it is final: ``name`` (prefixed, such as
    ``"to_safe p90"``), the group's ``observations`` and the count the rule needs. Returns ``"p90: n=7 < 10, final
    (nothing open can change it)"``. Only a group with nothing open gets it: where stays are open and all have
    lasted past the time a percentile is read at, the curve there is still at least ``open / n > 1 − q`` unless
    ``n`` meets the rule, and more than ``n × (1 − q)`` are at risk there, so neither rule would hide it."""
    return f"{name}: n={observations} < {need}, final (nothing open can change it)"


def km_quantile(durations: Sequence[float], censored: Sequence[bool] | None = None, q: float = 0.5) -> float:
    """The Kaplan–Meier percentile ``q`` of one sample, without the sample-size rule (a reference and test helper).

    Arguments: ``durations``; ``censored`` True where the duration is a censoring time (default: none are); ``q``.
    Returns the percentile, NaN where the curve never reaches ``1 − q``.
    """
    x = np.asarray(durations, dtype=float)
    cens = np.zeros(len(x), bool) if censored is None else np.asarray(censored, dtype=bool)
    frame = pd.DataFrame({"duration": x, "events": (~cens).astype(int), "censored": cens.astype(int)})
    if frame.empty:
        return math.nan
    res = km_percentiles(frame, [], (q,), rule=False)
    return float(res[f"{percentile_name(q)}_s"].iloc[0])


def join_notes(*parts: pd.Series | Sequence[str]) -> list[str]:
    """Row-wise ``"; "``-join of several notes columns, skipping empty ones. Returns the joined notes."""
    columns = [list(pd.Series(p).fillna("").astype(str)) for p in parts]
    return ["; ".join(x for x in row if x) for row in zip(*columns, strict=True)]


def attach(df: pd.DataFrame, extra: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """``df`` with the columns of ``extra`` (one row per group of ``keys``) joined on by the keys, keeping
    ``df``'s rows and order; with no keys, ``extra``'s single row is broadcast (NaN when it has none)."""
    keys = list(keys)
    if keys:
        return df.merge(extra, on=keys, how="left")
    df = df.copy()
    for col in extra.columns:
        df[col] = extra[col].iloc[0] if len(extra) else np.nan
    return df


def in_flight_operations_sql() -> str:
    """SQL of the ids of the operations still in flight: no terminal status, not ``confirmed_latest`` on a
    latest-only network (that is their final stage), and not ended in a status the vocabulary does not know (the
    outcome ``unknown``: it is never in flight for ever, so it is never censored either). It reads a
    ``latest_only`` relation (chain selectors; see :func:`~.outcomes.latest_only_sql`) that the statement must
    define."""
    known = ", ".join(f"'{s}'" for s in spec.OPERATION_STATUSES)
    return f"""
    SELECT operation_id FROM operation_lifecycle
    WHERE terminal_status IS NULL
      AND NOT (coalesce(last_status, '') = 'confirmed_latest'
               AND chain_selector IN (SELECT chain_selector FROM latest_only))
      AND (last_status IS NULL OR last_status IN ({known}))
    """


def with_km_times(
    df: pd.DataFrame,
    counts: pd.DataFrame,
    keys: Sequence[str],
    names: Sequence[str],
    probs: Sequence[float],
    *,
    pending: str,
) -> pd.DataFrame:
    """``df`` (one row per group of ``keys``) with the Kaplan–Meier percentiles of several durations.

    Arguments: ``counts`` one row per group, duration name (column ``time``, one of ``names``) and distinct
    ``duration``, with ``events`` and ``censored`` counts; ``probs`` the percentiles; ``pending`` how the notes
    word the censored. Adds ``<name>_p50_s``, ... per name, then ``<name>_censored`` per name, then ``notes``
    (every name's reasons joined). Returns the new frame, rows in ``df``'s order.
    """
    keys = list(keys)
    gkeys = keys or ["_all"]
    if not keys:
        counts = counts.assign(_all=0)
        df = df.assign(_all=0)
    notes, censored = [], []
    for name in names:
        km = km_percentiles(counts[counts["time"] == name], gkeys, probs, label=name, pending=pending)
        km = km.rename(columns={f"{percentile_name(p)}_s": f"{name}_{percentile_name(p)}_s" for p in probs})
        km = km.rename(columns={"censored": f"{name}_censored", "notes": f"_{name}_notes"})
        df = attach(df, km.drop(columns=["observations", "events"]), gkeys)
        df[f"{name}_censored"] = df[f"{name}_censored"].fillna(0).astype("int64")
        censored.append(f"{name}_censored")
        notes.append(df.pop(f"_{name}_notes").fillna(f"{name}: no observations"))
    df["notes"] = join_notes(*notes)
    times = [f"{name}_{percentile_name(p)}_s" for name in names for p in probs]
    df = df.drop(columns=["_all"], errors="ignore")
    return df[[c for c in df.columns if c not in (*times, *censored, "notes")] + [*times, *censored, "notes"]]


def uncensored_percentiles_sql(counts: str, keys: Sequence[str], probs: Sequence[float]) -> str:
    """SQL of the Kaplan–Meier percentiles of durations none of which is censored, one row per group, computed by
    the database: what :func:`km_percentiles` reads off the same counts without the sample-size rule (apply it
    with :func:`uncensored_notes`).

    ``counts`` is a relation (an internal SQL text) with the ``keys``, ``duration`` (not NULL) and ``k``, the number
    of observations of that duration in the group. With nothing censored the curve after the distinct durations up
    to ``t`` is ``(n − c(t)) / n`` (``c`` the running count), so percentile ``q`` is the smallest ``t`` with
    ``c(t) ≥ q·n``, and the midpoint of ``t`` and the next duration where ``c(t) = q·n`` exactly (R's
    ``quantile.survfit``; numpy's ``averaged_inverted_cdf``). Both comparisons are made in integers (``q`` as a
    fraction), which is what :func:`km_percentiles`' float curve and tolerance decide for groups of fewer than ten
    million observations. Returns columns: the keys, ``observations``, and ``p<q>_s`` per percentile.
    """
    keys = list(keys)
    part = f"PARTITION BY {', '.join(keys)}" if keys else ""
    key_list = "".join(f"{k}, " for k in keys)
    picks = []
    for q in probs:
        frac = Fraction(str(q))
        num, den = frac.numerator, frac.denominator
        reached = f"{den} * cum >= {num} * n"
        value = f"CASE WHEN {den} * cum = {num} * n THEN (duration + next_duration) / 2 ELSE duration END"
        picks.append(f"arg_min({value}, duration) FILTER (WHERE {reached}) AS {percentile_name(q)}_s")
    return f"""
        SELECT {key_list}any_value(n) AS observations, {", ".join(picks)}
        FROM (
            SELECT *,
                sum(k) OVER ({part} ORDER BY duration ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum,
                sum(k) OVER ({part}) AS n,
                lead(duration) OVER ({part} ORDER BY duration) AS next_duration
            FROM ({counts}) AS counted
        ) AS curve
        GROUP BY {", ".join(keys) or "()"}"""


def uncensored_notes(
    df: pd.DataFrame, probs: Sequence[float], *, label: str = "", observations: str = "observations"
) -> pd.DataFrame:
    """``df`` (from :func:`uncensored_percentiles_sql`) with the notes :func:`km_percentiles` gives the same
    groups: with nothing censored every percentile is final, so it is shown whatever the group's size, and a group
    smaller than :func:`min_observations` says so in the same words (``"since_created p90: n=7 < 10, final (nothing
    open can change it)"``; ``"<label>: no observations"`` for an empty group). With nothing censored the at-risk
    rule always holds and the curve always reaches every level. Returns the new frame."""
    df = df.copy()
    n = df[observations].to_numpy(dtype=float, na_value=0.0)
    prefix = f"{label} " if label else ""
    notes: list[list[str]] = [[] for _ in range(len(df))]
    for q in probs:
        name = percentile_name(q)
        need = min_observations(q)
        col = f"{name}_s"
        values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        small = n < need
        # nothing is censored: every percentile read is final, so the sample-size rule does not hide it
        df[col] = values
        for i in np.flatnonzero(small):
            if n[i] == 0:
                if not notes[i]:
                    notes[i].append(f"{label or 'all'}: no observations")
            else:
                notes[i].append(final_note(f"{prefix}{name}", int(n[i]), need))
    df["notes"] = ["; ".join(x) for x in notes]
    return df
