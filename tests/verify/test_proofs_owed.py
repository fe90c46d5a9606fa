"""A proof is owed only where the service owes one: a query that failed in dispatch owes none, a DON failure does.

API.md's query table: ``any → failed`` "by DON callback or dispatch", carrying a proof "when from the DON". The
expected counts below are worked out by hand from each query's history (written next to it), never from
``toolkit.spec`` or ``toolkit.warehouse.proofs_owed``; ``chainops verify``'s standing and ``proof_coverage`` (which
the report's ``proof_verified`` reads) must both agree with them.
"""

from __future__ import annotations

import pytest

from tests.support.builders import build, query_event, watcher_event
from toolkit import spec
from toolkit.metrics import proof_coverage
from toolkit.verify import resolve_policy
from toolkit.verify.run import verify_warehouse
from toolkit.warehouse import Warehouse


def _history() -> tuple[list[dict], dict[str, str]]:
    """Query histories and, by hand, each failed or completed query's due: 'none' (failed in dispatch), 'missing'
    (owed, carries none), 'carried' (owed, carries one)."""
    events = []
    # qa: failed as the dispatch worker picked it up (never sending, never sent, no result): owes none
    events += [query_event("qa", "accepted", 0), query_event("qa", "failed", 1, signatures=None)]
    # qb: the gateway rejected it while sending (never sent, no result): owes none
    events += [query_event("qb", s, t, signatures=None) for s, t in (("accepted", 0), ("sending", 1), ("failed", 2))]
    # qc: sent to the DON, the DON's failure arrived without its proof: missing
    events += [
        query_event("qc", s, t, signatures=None)
        for s, t in (("accepted", 0), ("sending", 1), ("sent", 2), ("failed", 9))
    ]
    # qd: its sent event is not here, but the failure carries the DON's result (event_hash): missing
    qd_failed = query_event("qd", "failed", 9, signatures=None)
    qd_failed["payload"]["event_hash"] = "0x" + "ab" * 32
    events += [query_event("qd", "accepted", 0), qd_failed]
    # qe: completed without its proof: missing
    events += [
        query_event("qe", s, t, signatures=None)
        for s, t in (("accepted", 0), ("sending", 1), ("sent", 2), ("completed", 9))
    ]
    # qf: a DON failure that carries a proof (not a real one: invalid when verified): carried
    events += [query_event("qf", s, t) for s, t in (("accepted", 0), ("sending", 1), ("sent", 2), ("failed", 9))]
    # a watcher event without proof: missing, as ever
    events.append(watcher_event("w", 3, signatures=None))
    return events, {"qa": "none", "qb": "none", "qc": "missing", "qd": "missing", "qe": "missing", "qf": "carried"}


def test_spec_owes_no_proof_for_a_failure_in_dispatch_only() -> None:
    assert spec.event_requires_proof("query.status", "failed")
    assert not spec.event_requires_proof("query.status", "failed", failed_in_dispatch=True)
    assert spec.event_requires_proof("query.status", "completed", failed_in_dispatch=True)
    assert spec.event_requires_proof("watcher.event", None, failed_in_dispatch=True)


def test_verify_counts_missing_proofs_only_where_owed(tmp_path) -> None:
    events, due = _history()
    path = tmp_path / "w.duckdb"
    build(path, events=events).close()
    policy = resolve_policy(workflow_owner="0x" + "11" * 20, env={})
    result = verify_warehouse(path, policy, workers=1)
    missing_queries = sum(1 for d in due.values() if d == "missing")
    assert result.standing == {spec.Verdict.MISSING_PROOF: missing_queries + 1, spec.Verdict.INVALID: 1}
    with Warehouse(path, read_only=True) as wh:
        judged = dict(
            wh.con.execute(
                "SELECT e.query_id, v.verdict FROM event_verifications v JOIN events e USING (event_id) "
                "WHERE e.type = 'query.status'"
            ).fetchall()
        )
    assert judged == {q: {"missing": "missing_proof", "carried": "invalid"}[d] for q, d in due.items() if d != "none"}


@pytest.mark.parametrize("verified", [False, True])
def test_proof_coverage_owes_what_verify_owes(tmp_path, verified) -> None:
    events, due = _history()
    path = tmp_path / "w.duckdb"
    build(path, events=events).close()
    if verified:
        verify_warehouse(path, resolve_policy(workflow_owner="0x" + "11" * 20, env={}), workers=1)
    df = proof_coverage(str(path), by=["type", "status"]).set_index(["type", "status"])
    failed = df.loc[("query.status", "failed")]
    # failed: qa qb (none), qc qd (missing), qf (carried)
    assert (failed.events, failed.must_have_proof, failed.with_proof, failed.missing_proof) == (5, 3, 1, 2)
    completed = df.loc[("query.status", "completed")]
    assert (completed.must_have_proof, completed.missing_proof) == (1, 1)
    everything = proof_coverage(str(path), by=[]).iloc[0]
    owed = sum(1 for d in due.values() if d != "none") + 1  # and the watcher event
    assert (everything.must_have_proof, everything.missing_proof) == (owed, owed - 1)
    if verified:  # proof_verified's share: nothing verified, of the owed events only
        assert (everything.verified, everything.invalid, everything.verified_share) == (0, 1, 0.0)
