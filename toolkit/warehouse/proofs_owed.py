"""Which stored events owe a DON proof: SQL over the warehouse's ``events`` (:func:`toolkit.spec.event_requires_proof`).

Every ``watcher.event``, ``operation.status`` at a finality stage and ``query.status`` at ``completed`` owes one. A
``failed`` query owes one only when the failure came from the DON: API.md's query table has ``any → failed`` "by DON
callback or dispatch", carrying a proof "when from the DON". A failure came from dispatch (and owes no proof) when
the query's events never reached ``sent`` (no ``sent`` nor ``completed`` event of that query) and the failed event
carries no DON result (no ``event_hash``: the hash of the DON's ``verifiable_result``). A proof-less failure that
came from the DON (its query was ``sent``, or it carries the DON's result) still owes one: ``missing_proof``.

``chainops verify`` (:mod:`toolkit.verify.run`) and the proof metrics (:mod:`toolkit.metrics.proofs`) both judge by it.
"""

from __future__ import annotations

from .. import spec


def _quoted(values: frozenset[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in sorted(values))


def dispatched_queries_sql() -> str:
    """SQL: the ids of the queries whose events show them dispatched to the DON (a ``sent`` or ``completed``
    event), one row each (column ``query_id``)."""
    return (
        f"SELECT DISTINCT s.query_id FROM events s WHERE s.type = '{spec.EventType.QUERY_STATUS}' "
        f"AND s.status IN ({_quoted(spec.QUERY_DISPATCHED_STATUSES)}) AND s.query_id IS NOT NULL"
    )


def failed_in_dispatch_sql(alias: str = "e", dispatched: str | None = None) -> str:
    """SQL: whether the event ``alias`` is a query that failed in dispatch (owes no proof; module docstring).
    ``dispatched``: the alias of :func:`dispatched_queries_sql` LEFT JOINed on ``query_id`` (engines without
    subqueries in expressions); without it, a subquery reads the events."""
    never_sent = (
        f"{dispatched}.query_id IS NULL" if dispatched else f"{alias}.query_id NOT IN ({dispatched_queries_sql()})"
    )
    return (
        f"({alias}.type = '{spec.EventType.QUERY_STATUS}' AND {alias}.status = '{spec.QueryStatus.FAILED}' "
        f"AND {alias}.event_hash IS NULL AND {alias}.query_id IS NOT NULL AND {never_sent})"
    )


def requires_proof_sql(alias: str = "e") -> str:
    """SQL: whether the event ``alias`` owes a DON proof (module docstring)."""
    return (
        f"({alias}.type = '{spec.EventType.WATCHER_EVENT}' "
        f"OR ({alias}.type = '{spec.EventType.OPERATION_STATUS}' "
        f"AND {alias}.status IN ({_quoted(spec.OPERATION_PROOF_STATUSES)})) "
        f"OR ({alias}.type = '{spec.EventType.QUERY_STATUS}' "
        f"AND {alias}.status IN ({_quoted(spec.QUERY_PROOF_STATUSES)}) AND NOT {failed_in_dispatch_sql(alias)}))"
    )
