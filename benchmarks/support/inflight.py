"""Estimates for operations still in flight against the values their cohort has once finished (issue 13, section 1).

A sandbox with a frozen clock is synced through its in-process transport (the service's answers, byte for byte,
without a socket: nothing here is about the network); failure rates and finality shares (by network) are computed
for the last hours before its clock; the clock moves 10 days on, every operation of those cohorts finishes, and the
final values are read from the raw answers (:mod:`benchmarks.support.rawhistory`, plain httpx), not from the
metrics. Used by ``tests/integration/test_inflight_estimates.py`` and ``benchmarks/inflight_check.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.support import rawhistory as raw
from benchmarks.support.km_reference import km_percentile
from toolkit import metrics
from toolkit.api import Client
from toolkit.loader import sync
from toolkit.sandbox import Sandbox
from toolkit.sandbox.inprocess import BASE_URL

KEY = "ck_test_inflight-5e1d0a7c93"
START = 1_795_000_000
PERIOD_HOURS = (1, 3)
MIN_OPERATIONS = 20
ADVANCE_SECONDS = 10 * 86400
SHARES = ("latest", "safe", "finalized", "failed")
#: A live sandbox's clock speed: it holds nearly still (no wall-clock drift in a run) while the workload stays live,
#: so drafts in flight at the first reading are later signed, cancelled or left to expire as the clock advances.
LIVE_SPEED = 1e-9


@dataclass
class Row:
    """One (seed, period, network) row with at least :data:`MIN_OPERATIONS` relayed operations."""

    seed: int
    hours: int
    network: str
    relayed: int
    in_flight: int
    #: measure -> (final value, point estimate, low, high, finished-only reading)
    values: dict[str, tuple[float, float, float, float, float]] = field(default_factory=dict)
    #: stage -> (final median, estimated median or NaN)
    medians: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: status -> (final median time in it, estimated p50 or NaN), for the statuses first entered in the window
    latency_medians: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass
class Figures:
    """The comparison over every row."""

    rows: list[Row]

    def pairs(self) -> list[tuple[Row, str, tuple[float, float, float, float, float]]]:
        """Every (row, measure, values)."""
        return [(r, m, v) for r in self.rows for m, v in r.values.items()]

    @property
    def coverage(self) -> float:
        """Share of (row, measure) whose first interval holds the final value."""
        pairs = self.pairs()
        held = sum(_within(v[0], v[2], v[3]) for _, _, v in pairs)
        return held / len(pairs) if pairs else math.nan

    def misses(self) -> list[str]:
        """The (row, measure) whose interval missed, described."""
        return [
            f"seed {r.seed} {r.hours}h {r.network} {m}: final {v[0]:.4f} not in [{v[2]:.4f}, {v[3]:.4f}]"
            for r, m, v in self.pairs()
            if not _within(v[0], v[2], v[3])
        ]

    @property
    def mae_estimate(self) -> float:
        """Mean absolute error of the point estimates against the final values."""
        errors = [abs(v[1] - v[0]) if not math.isnan(v[1]) else 1.0 for _, _, v in self.pairs()]
        return sum(errors) / len(errors) if errors else math.nan

    @property
    def mae_finished_only(self) -> float:
        """Mean absolute error of the finished-only reading (nothing finished counts as an error of 1)."""
        errors = [abs(v[4] - v[0]) if not math.isnan(v[4]) else 1.0 for _, _, v in self.pairs()]
        return sum(errors) / len(errors) if errors else math.nan

    @property
    def median_within(self) -> float:
        """Share of (row, stage) whose estimated median is within 20% of the final one (NULL is a miss)."""
        checks = [_close(est, final) for r in self.rows for final, est in r.medians.values()]
        return sum(checks) / len(checks) if checks else math.nan

    def columns(self) -> dict[str, dict[str, float]]:
        """Per measure: ``rows``, ``containment`` (share whose interval holds the final value), ``mae`` of the
        estimate and ``mae_finished_only`` (a reading with nothing finished counts as an error of 1)."""
        out: dict[str, dict[str, float]] = {}
        for name in dict.fromkeys(m for _, m, _ in self.pairs()):
            values = [v for _, m, v in self.pairs() if m == name]
            out[name] = {
                "rows": len(values),
                "containment": sum(_within(v[0], v[2], v[3]) for v in values) / len(values),
                "mae": sum(abs(v[1] - v[0]) if not math.isnan(v[1]) else 1.0 for v in values) / len(values),
                "mae_finished_only": sum(abs(v[4] - v[0]) if not math.isnan(v[4]) else 1.0 for v in values)
                / len(values),
            }
        return out

    def median_columns(self) -> dict[str, dict[str, float]]:
        """Per stage: ``rows``, ``shown`` (estimated median not NULL), ``within_20`` (share of the shown within 20%
        of the final median), ``outside_2x`` (shown medians more than twice or less than half the final one)."""
        out: dict[str, dict[str, float]] = {}
        found = [(f"to_{s}", s, "medians") for s in dict.fromkeys(s for r in self.rows for s in r.medians)]
        statuses = dict.fromkeys(s for r in self.rows for s in r.latency_medians)
        found += [(f"in {s}", s, "latency_medians") for s in statuses]
        for stage, key, kind in found:
            pairs = [getattr(r, kind)[key] for r in self.rows if key in getattr(r, kind)]
            shown = [(f, e) for f, e in pairs if not (e is None or pd.isna(e))]
            out[stage] = {
                "rows": len(pairs),
                "shown": len(shown),
                "within_20": sum(_close(e, f) for f, e in shown) / len(shown) if shown else math.nan,
                "outside_2x": sum(f > 0 and not (f / 2 <= e <= 2 * f) for f, e in shown),
            }
        return out

    def summary(self) -> str:
        """The figures in one paragraph."""
        medians = sum(len(r.medians) for r in self.rows)
        return (
            f"{len(self.rows)} network rows with >= {MIN_OPERATIONS} operations "
            f"({sum(r.in_flight for r in self.rows)} operations in flight at the first reading); "
            f"interval coverage {self.coverage:.1%} of {len(self.pairs())}; "
            f"MAE estimate {self.mae_estimate:.4f} vs finished-only {self.mae_finished_only:.4f}; "
            f"median time to stage within 20%: {self.median_within:.1%} of {medians}"
        )


def _within(value: float, low: float, high: float) -> bool:
    return not (math.isnan(low) or math.isnan(high)) and low - 1e-9 <= value <= high + 1e-9


def _close(estimate: float, final: float) -> bool:
    if estimate is None or pd.isna(estimate):
        return False
    return abs(estimate - final) <= 0.2 * final if final > 0 else estimate == final


def _num(row: pd.Series, col: str) -> float:
    value = row.get(col, math.nan)
    return math.nan if value is None or pd.isna(value) else float(value)


def _sync(sandbox: Sandbox, path: Path) -> None:
    with Client(BASE_URL, KEY, transport=sandbox.transport()) as client:
        result = sync(client=client, warehouse=str(path), quiet=True)
    assert result.outcome == "ok", result.summary()


def _first_reading(
    path: Path, since: pd.Timestamp, until: pd.Timestamp
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rates = metrics.failure_rates(str(path), since=since, until=until).set_index("network")
    finality = metrics.finality_breakdown(str(path), since=since, until=until).set_index("network")
    latency = metrics.status_latency(str(path), since=since, until=until).set_index(["network", "status"])
    return rates, finality, latency


#: Statuses whose time-in-status median the check compares (the waits an analyst reads most).
LATENCY_STATUSES = ("pending_signature", "broadcasting", "confirmed_latest")


def _final_latency_median(ops: list[raw.RawOperation], status: str, since: int, until: int, as_of: int) -> float:
    """Median time in ``status`` of its first entries in ``[since, until)``, from the late raw answers (to the next
    status first entered; those still in it censored at ``as_of``); NaN when the curve does not reach 50%."""
    durations, censored = [], []
    for op in ops:
        first: dict[str, int] = {}
        for s, ts in op.entries():
            first.setdefault(s, ts)
        steps = sorted(first.items(), key=lambda e: (e[1], raw.STAGE_RANK.get(e[0], 1000)))
        for i, (s, ts) in enumerate(steps):
            if s == status and since <= ts < until:
                if i + 1 < len(steps):
                    durations.append(float(steps[i + 1][1] - ts))
                    censored.append(False)
                elif op.last_status() not in raw.TERMINAL:
                    durations.append(float(as_of - ts))
                    censored.append(True)
    return km_percentile(durations, censored, 0.5, rule=False) if durations else math.nan


@dataclass
class Observation:
    """One seed's sandbox read twice: at ``START`` (the metrics of every period and the raw answers) and after the
    clock moved on (the raw answers, and the newest event time they are as of)."""

    seed: int
    periods: tuple[float, ...]
    first: dict[float, tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]]
    early_ops: list[raw.RawOperation]
    late_ops: list[raw.RawOperation]
    late_as_of: int


def observe(
    seed: int,
    workdir: Path,
    days: float = 1,
    per_day: float = 3600,
    *,
    shape: str = "default",
    live: bool = False,
    periods: tuple[float, ...] = PERIOD_HOURS,
    advance: int = ADVANCE_SECONDS,
) -> Observation:
    """Sync and read at ``START``; advance ``advance`` seconds (a ``live`` sandbox keeps its workload moving: drafts
    are signed, cancelled or expire, new work arrives), sync, read the truth."""
    speed = LIVE_SPEED if live else 0.0
    sandbox = Sandbox(
        orgs=(KEY,), seed=seed, days=days, operations_per_day=per_day, start=START, shape=shape, speed=speed
    )
    path = workdir / f"inflight-{shape}-{int(live)}-{seed}.duckdb"
    until = pd.Timestamp(START, unit="s", tz="UTC")
    _sync(sandbox, path)
    early_ops = raw.read_operations(BASE_URL, KEY, sandbox.transport())
    first = {h: _first_reading(path, until - pd.Timedelta(hours=h), until) for h in periods}
    sandbox.advance(advance)
    _sync(sandbox, path)
    late_ops, late_as_of = raw.read_history(BASE_URL, KEY, sandbox.transport())
    return Observation(seed, tuple(periods), first, early_ops, late_ops, late_as_of)


def run_seed(seed: int, workdir: Path, days: float = 1, per_day: float = 3600, **options: Any) -> list[Row]:
    """:func:`observe` one seed (``options`` as it takes them) and answer the rows of every period."""
    return rows_of(observe(seed, workdir, days, per_day, **options))


def rows_of(observation: Observation) -> list[Row]:
    """The rows of every period of one observation: each network's estimates at ``START`` against the final values
    of its cohort."""
    seed, periods, first = observation.seed, observation.periods, observation.first
    early_ops, late_ops, late_as_of = observation.early_ops, observation.late_ops, observation.late_as_of
    early_lo, late_lo = raw.latest_only_networks(early_ops), raw.latest_only_networks(late_ops)
    early = {o.operation_id: o for o in early_ops}
    rows = []
    for hours in periods:
        rates, finality, latency = first[hours]
        created = [o for o in late_ops if START - hours * 3600 <= o.created_at < START]
        cohort = [o for o in created if o.relayed()]
        for network in sorted({o.network for o in cohort}):
            ops = [o for o in cohort if o.network == network]
            if len(ops) < MIN_OPERATIONS:
                continue
            # what was already relayed at the first reading, and what of it had finished
            then = [early[o.operation_id] for o in ops if o.operation_id in early and early[o.operation_id].relayed()]
            done = [o for o in then if raw.outcome(o, early_lo) is not None]
            row = Row(seed, hours, network, len(ops), len(then) - len(done))
            final_failed = sum(raw.outcome(o, late_lo) == "failed" for o in ops) / len(ops)
            done_failed = sum(raw.outcome(o, early_lo) == "failed" for o in done) / len(done) if done else math.nan
            r = rates.loc[network] if network in rates.index else pd.Series(dtype=float)
            row.values["failure_rate"] = (
                final_failed,
                _num(r, "failure_rate"),
                _num(r, "failure_rate_low"),
                _num(r, "failure_rate_high"),
                done_failed,
            )
            # drafts: expired or cancelled unsigned, over every operation of the network created in the period
            every = [o for o in created if o.network == network]
            seen = [early[o.operation_id] for o in every if o.operation_id in early]
            seen_done = [o for o in seen if raw.outcome(o, early_lo) is not None]
            for rate, outcome in (("draft_expiry_rate", "draft_expired"), ("draft_cancel_rate", "draft_cancelled")):
                row.values[rate] = (
                    sum(raw.outcome(o, late_lo) == outcome for o in every) / len(every),
                    _num(r, rate),
                    _num(r, f"{rate}_low"),
                    _num(r, f"{rate}_high"),
                    sum(raw.outcome(o, early_lo) == outcome for o in seen_done) / len(seen_done)
                    if seen_done
                    else math.nan,
                )
            f = finality.loc[network] if network in finality.index else pd.Series(dtype=float)
            for share in SHARES:
                if share == "failed":
                    final, finished = final_failed, done_failed
                else:
                    final = sum(raw.reached(o, share) for o in ops) / len(ops)
                    finished = sum(raw.reached(o, share) for o in done) / len(done) if done else math.nan
                row.values[f"{share}_share"] = (
                    final,
                    _num(f, f"{share}_share"),
                    _num(f, f"{share}_share_low"),
                    _num(f, f"{share}_share_high"),
                    finished,
                )
            for stage in ("latest", "safe", "finalized"):
                final_median = raw.median([t for o in ops if (t := raw.time_to(o, stage)) is not None])
                if final_median is not None:
                    row.medians[stage] = (final_median, _num(f, f"to_{stage}_p50_s"))
            late_of_network = [o for o in late_ops if o.network == network]
            for status in LATENCY_STATUSES:
                final = _final_latency_median(late_of_network, status, START - int(hours * 3600), START, late_as_of)
                if not math.isnan(final) and (network, status) in latency.index:
                    row.latency_medians[status] = (final, _num(latency.loc[(network, status)], "p50_s"))
            rows.append(row)
    return rows


def run(seeds: list[int], workdir: Path, days: float = 1, per_day: float = 3600, **options: Any) -> Figures:
    """The comparison over several seeds (``options``: :func:`observe`'s shape, live, periods, advance)."""
    return Figures([row for seed in seeds for row in run_seed(seed, workdir, days, per_day, **options)])
