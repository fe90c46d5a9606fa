"""The modelled views of the warehouse contract, built from the vocabulary in :mod:`toolkit.spec`.

- ``operation_transitions``: one row per status an operation entered, from ``operation.status`` events deduplicated
  by event id (the table key) and by (operation, status), ordered by payload time then stage order.
- ``operation_lifecycle``: one row per operation, one ``<status>_at`` column per operation status.
- ``query_lifecycle``: one row per query, one ``<status>_at`` column per query status.

Network names come from ``networks``; an unknown selector shows as itself.
"""

from __future__ import annotations

from .. import spec


def _order_values(order: dict[str, int]) -> str:
    return ", ".join(f"('{status}', {rank})" for status, rank in order.items())


def _quoted(values: object) -> str:
    return ", ".join(f"'{v}'" for v in values)  # type: ignore[attr-defined]


UNKNOWN_RANK = 1000


def view_statements() -> list[str]:
    """``CREATE OR REPLACE VIEW`` statements for every modelled view, in dependency order."""
    op_status_cols = ",\n    ".join(
        f"min(entered_at) FILTER (WHERE status = '{s}') AS {s}_at" for s in spec.OPERATION_STATUSES
    )
    query_status_cols = ",\n    ".join(
        f"coalesce(q.{s}_at, ev.{s}_at) AS {s}_at" for s in spec.QUERY_STATUSES
    )
    query_event_cols = ",\n        ".join(
        f"min(ts) FILTER (WHERE status = '{s}') AS {s}_at" for s in spec.QUERY_STATUSES
    )
    return [
        f"""
CREATE OR REPLACE VIEW operation_status_order AS
SELECT * FROM (VALUES {_order_values(spec.OPERATION_STAGE_ORDER)}) AS t(status, stage_rank)
""",
        f"""
CREATE OR REPLACE VIEW operation_transitions AS
WITH entered AS (
    SELECT
        operation_id,
        status,
        min(ts) AS entered_at,
        any_value(channel_id) AS channel_id,
        any_value(chain_selector) AS chain_selector,
        arg_min(status_reason, ts) AS status_reason
    FROM events
    WHERE type = 'operation.status' AND operation_id IS NOT NULL AND status IS NOT NULL AND ts IS NOT NULL
    GROUP BY operation_id, status
),
ranked AS (
    SELECT
        e.*,
        coalesce(o.stage_rank, {UNKNOWN_RANK}) AS stage_rank
    FROM entered e LEFT JOIN operation_status_order o USING (status)
)
SELECT
    r.operation_id,
    coalesce(r.channel_id, op.channel_id) AS channel_id,
    coalesce(r.chain_selector, op.chain_selector) AS chain_selector,
    coalesce(n.name, coalesce(r.chain_selector, op.chain_selector)) AS network,
    r.status,
    r.stage_rank,
    r.entered_at,
    lead(r.entered_at) OVER w AS exited_at,
    lead(r.status) OVER w AS next_status,
    epoch(lead(r.entered_at) OVER w) - epoch(r.entered_at) AS seconds_in_status,
    epoch(r.entered_at) - epoch(op.created_at) AS seconds_since_created,
    r.status_reason
FROM ranked r
LEFT JOIN operations op USING (operation_id)
LEFT JOIN networks n ON n.chain_selector = coalesce(r.chain_selector, op.chain_selector)
WINDOW w AS (PARTITION BY r.operation_id ORDER BY r.entered_at, r.stage_rank)
""",
        f"""
CREATE OR REPLACE VIEW operation_lifecycle AS
WITH per_op AS (
    SELECT
    operation_id,
    any_value(channel_id) AS channel_id,
    any_value(chain_selector) AS chain_selector,
    any_value(network) AS network,
    {op_status_cols},
    arg_max(status, (entered_at, stage_rank)) AS last_status,
    max(entered_at) AS last_status_at,
    arg_max(status_reason, (entered_at, stage_rank))
        FILTER (WHERE status IN ({_quoted(sorted(spec.OPERATION_TERMINAL))})) AS terminal_reason
    FROM operation_transitions
    GROUP BY operation_id
)
SELECT
    coalesce(p.operation_id, op.operation_id) AS operation_id,
    coalesce(op.channel_id, p.channel_id) AS channel_id,
    coalesce(op.chain_selector, p.chain_selector) AS chain_selector,
    coalesce(n.name, p.network, op.chain_selector) AS network,
    op.address,
    coalesce(op.created_at, p.pending_signature_at, p.accepted_at) AS created_at,
    {", ".join(f"p.{s}_at" for s in spec.OPERATION_STATUSES)},
    coalesce(p.last_status, op.status) AS last_status,
    op.status AS current_status,
    CASE WHEN coalesce(p.last_status, op.status) IN ({_quoted(sorted(spec.OPERATION_TERMINAL))})
         THEN coalesce(p.last_status, op.status) END AS terminal_status,
    CASE WHEN coalesce(p.last_status, op.status) IN ({_quoted(sorted(spec.OPERATION_TERMINAL))})
         THEN coalesce(p.last_status_at, op.updated_at) END AS terminal_at,
    p.terminal_reason AS status_reason
FROM per_op p
FULL OUTER JOIN operations op USING (operation_id)
LEFT JOIN networks n ON n.chain_selector = coalesce(op.chain_selector, p.chain_selector)
""",
        f"""
CREATE OR REPLACE VIEW query_lifecycle AS
WITH ev AS (
    SELECT
        query_id,
        any_value(channel_id) AS channel_id,
        any_value(chain_selector) AS chain_selector,
        {query_event_cols}
    FROM events
    WHERE type = 'query.status' AND query_id IS NOT NULL
    GROUP BY query_id
)
SELECT
    coalesce(q.query_id, ev.query_id) AS query_id,
    coalesce(q.channel_id, ev.channel_id) AS channel_id,
    coalesce(q.chain_selector, ev.chain_selector) AS chain_selector,
    coalesce(n.name, q.chain_selector, ev.chain_selector) AS network,
    q.status,
    q.query_kind,
    q.created_at,
    {query_status_cols},
    epoch(coalesce(q.completed_at, ev.completed_at, q.failed_at, ev.failed_at, q.expired_at, ev.expired_at))
        - epoch(coalesce(q.accepted_at, ev.accepted_at, q.created_at)) AS seconds_accepted_to_terminal
FROM queries q
FULL OUTER JOIN ev USING (query_id)
LEFT JOIN networks n ON n.chain_selector = coalesce(q.chain_selector, ev.chain_selector)
""",
    ]
