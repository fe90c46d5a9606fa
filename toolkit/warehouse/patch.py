"""Moving resource rows forward from the events that report their moves.

Every status move of an operation or a query emits an event (API.md: "Lifecycle state can also be observed by
fetching the resource again instead of reading events"), so a sync reads the event log and applies it to the
``operations`` and ``queries`` rows, instead of re-listing history. :func:`apply_new_events` does it set-wise for
every event stored since its watermark (kept in ``sync_state`` under ``patch``, written in the same transaction), so
a run killed before it runs leaves the work to the next run. "Since" is by ``write_seq``, the number of the
transaction that stored an event (:mod:`.write_seq`), never by the clock.
Moves only go forward (by stage order; terminal statuses are final). Ids the warehouse does not know yet, and drafts
whose finalize or cancel changed fields that events do not carry, are queued in ``sync_refetch`` for a one-by-one
fetch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import duckdb

from .. import spec
from .memory import is_out_of_memory, raise_memory_limit, rollback_quietly
from .write_seq import next_write_seq


def _list(values: object) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"  # type: ignore[attr-defined]


_OP_TERMINAL = _list(sorted(spec.OPERATION_TERMINAL))
_Q_TERMINAL = _list(sorted(spec.QUERY_TERMINAL))
_KNOWN_TESTNETS = _list(
    sorted(n.chain_selector for n in spec.KNOWN_NETWORKS if n.type == spec.ChainEnvironment.TESTNET)
)
#: Chain selectors of test networks: a network's type from the networks list, or else the published list.
_TESTNETS = f"""
    SELECT chain_selector FROM networks WHERE network_type = '{spec.ChainEnvironment.TESTNET.value}'
    UNION
    SELECT unnest({_KNOWN_TESTNETS})
    EXCEPT
    SELECT chain_selector FROM networks WHERE network_type = '{spec.ChainEnvironment.MAINNET.value}'
"""


def _rank(expr: str, order: dict[str, int]) -> str:
    """SQL for the stage rank of a status expression (NULL for an unknown status)."""
    return f"(CASE {expr} " + " ".join(f"WHEN '{s}' THEN {r}" for s, r in order.items()) + " END)"


def _op_rank(expr: str) -> str:
    return _rank(expr, spec.OPERATION_STAGE_ORDER)


def _q_rank(expr: str) -> str:
    return _rank(expr, spec.QUERY_STAGE_ORDER)


#: Workflow ids an ``operation.status`` payload carries for the move it reports; the record keeps the latest.
_WORKFLOW_FIELDS = (
    "operation_writer_workflow_id",
    "operation_writer_workflow_execution_id",
    "operation_status_workflow_id",
    "operation_status_workflow_execution_id",
)
#: Workflow ids a ``query.status`` payload carries with the answer.
_QUERY_WORKFLOW_FIELDS = ("workflow_id", "workflow_execution_id")


def _payload_fields(
    con: duckdb.DuckDBPyConnection,
    view: str,
    *,
    into: str,
    moves: str,
    id_column: str,
    event_type: str,
    rank: Callable[[str], str],
    fields: Sequence[str],
    row: str,
) -> str:
    """Fill temp table ``into`` with, per id of ``moves``, each of ``fields`` from the payload of its latest event
    (by stage, then time) that carries it (arg_max skips the payloads without it); return the ``SET`` clauses (the
    updated table aliased ``row``, the new values ``l``) that keep a row's value where the payloads have none.
    Only the moving ids' payloads are parsed: parsing every payload of a long history would cost more than the
    rest of the patch."""
    picks = ",\n".join(
        f"arg_max(json_extract_string(e.payload, '$.{f}'), ({rank('e.status')}, e.ts)) AS {f}" for f in fields
    )
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE {into} AS
        SELECT e.{id_column}, {picks}
        FROM {view} e SEMI JOIN {moves} m ON e.{id_column} = m.{id_column}
        WHERE e.type = '{event_type}' AND e.ts IS NOT NULL AND {rank("e.status")} IS NOT NULL
        GROUP BY e.{id_column}
    """)
    return ",\n".join(f"{f} = coalesce(l.{f}, {row}.{f})" for f in fields)


PATCH_STREAM = "patch"
#: New events applied per part (see :func:`apply_new_events`): a part's working set fits the sync's memory limit.
PATCH_PART_EVENTS = 200_000
#: The smallest parts an out-of-memory retry splits the patch into before it raises the memory limit instead.
MIN_PART_EVENTS = 5_000


def apply_new_events(con: duckdb.DuckDBPyConnection) -> int:
    """Apply every event stored since the last call (by ``write_seq``) to operations and queries, in one
    transaction with the new watermark; returns how many events it looked at.

    An out-of-memory error rolls the transaction back and the patch is done again in four times as many parts, and
    once parts are as small as :data:`MIN_PART_EVENTS`, under a doubled memory limit (see :mod:`.memory`)."""
    rows = con.execute("SELECT cursor->>'write_seq' FROM sync_state WHERE stream = ?", [PATCH_STREAM]).fetchall()
    since = int(rows[0][0]) if rows and rows[0][0] is not None else 0
    part_events = PATCH_PART_EVENTS
    limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    try:
        while True:
            try:
                return _apply_in_parts(con, since, part_events)
            except duckdb.Error as exc:
                if not is_out_of_memory(exc):
                    raise
                if part_events > MIN_PART_EVENTS:
                    part_events = max(part_events // 4, MIN_PART_EVENTS)
                elif not raise_memory_limit(con):
                    raise
    finally:
        con.execute("SET memory_limit = ?", [limit])


def _apply_in_parts(con: duckdb.DuckDBPyConnection, since: int, part_events: int) -> int:
    """One try of :func:`apply_new_events` with parts of about ``part_events`` events."""
    con.execute("BEGIN TRANSACTION")
    try:
        seq = next_write_seq(con)  # the rows it moves are written by this transaction
        # new events are the whole history on a first sync: a view rather than a temporary table (each statement
        # scans them), and applied in parts of about PATCH_PART_EVENTS events, split by subject id so that every
        # event of one operation or query lands in the same part: memory stays flat however long the history
        # (in one piece, 2M events ran out of the sync's 96 MB)
        con.execute(
            "CREATE OR REPLACE TEMP VIEW _new_events AS SELECT type, operation_id, query_id, channel_id, status, ts, "
            "event_hash, proof_count, write_seq, payload FROM events "
            f"WHERE write_seq > {int(since)} "
            "AND type IN ('operation.status', 'query.status')"
        )
        counted = con.execute("SELECT count(*), max(write_seq) FROM _new_events").fetchall()[0]
        if counted[0]:
            parts = -(-int(counted[0]) // part_events)
            for part in range(parts):
                con.execute(
                    "CREATE OR REPLACE TEMP VIEW _new_events_part AS SELECT * FROM _new_events "
                    "WHERE hash(CASE type WHEN 'operation.status' THEN operation_id ELSE query_id END) "
                    f"% {parts} = {part}"
                )
                apply_operation_events(con, "_new_events_part", write_seq=seq)
                apply_query_events(con, "_new_events_part", write_seq=seq)
            con.execute(
                "INSERT OR REPLACE INTO sync_state VALUES (?, json_object('write_seq', ?), now())",
                [PATCH_STREAM, int(counted[1])],
            )
        con.execute("DROP VIEW IF EXISTS _new_events_part")
        con.execute("DROP VIEW IF EXISTS _new_events")
    except BaseException:
        rollback_quietly(con)
        raise
    con.execute("COMMIT")
    return int(counted[0])


def apply_operation_events(con: duckdb.DuckDBPyConnection, view: str, *, write_seq: int | None = None) -> None:
    """Apply the ``operation.status`` events of ``view`` (a table or view with a ``payload`` column) to
    ``operations``; queue unknown ids. Moved rows get ``write_seq`` (by default a number of their own).

    The workflow ids a move carries are read from the payloads of the operations that move (see
    :func:`_payload_fields`).
    """
    latest = f"""
        SELECT operation_id,
               any_value(channel_id) AS channel_id,
               arg_max(status, ({_op_rank("status")}, ts)) AS status,
               max(ts) AS ts,
               max({_op_rank("status")}) AS rank
        FROM {view}
        WHERE type = 'operation.status' AND operation_id IS NOT NULL AND ts IS NOT NULL
          AND {_op_rank("status")} IS NOT NULL
        GROUP BY operation_id
    """
    con.execute(f"CREATE OR REPLACE TEMP TABLE _latest_operation_moves AS {latest}")
    if not con.execute("SELECT count(*) FROM _latest_operation_moves").fetchall()[0][0]:
        return
    con.execute("""
        INSERT OR IGNORE INTO sync_refetch
        SELECT 'operation', l.channel_id, l.operation_id
        FROM _latest_operation_moves l LEFT JOIN operations o USING (operation_id)
        WHERE o.operation_id IS NULL OR (o.status = 'pending_signature' AND l.status <> 'pending_signature')
    """)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _operation_moves AS
        SELECT l.* FROM _latest_operation_moves l JOIN operations o USING (operation_id)
        WHERE NOT list_contains({_OP_TERMINAL}, o.status)
          AND {_op_rank("o.status")} IS NOT NULL
          AND (list_contains({_OP_TERMINAL}, l.status) OR l.rank > {_op_rank("o.status")})
    """)
    if not con.execute("SELECT count(*) FROM _operation_moves").fetchall()[0][0]:
        return
    workflow_sets = _payload_fields(
        con,
        view,
        into="_operation_workflows",
        moves="_operation_moves",
        id_column="operation_id",
        event_type="operation.status",
        rank=_op_rank,
        fields=_WORKFLOW_FIELDS,
        row="o",
    )
    # on a test network confirmed_latest is the last stage (WIRE.md: finality), and the record says it was confirmed
    # then
    con.execute(f"""
        UPDATE operations AS o SET
            status = l.status,
            updated_at = greatest(coalesce(o.updated_at, l.ts), l.ts),
            confirmed_at = CASE
                WHEN l.status = 'confirmed' THEN coalesce(o.confirmed_at, l.ts)
                WHEN l.status = 'confirmed_latest' AND o.chain_selector IN ({_TESTNETS})
                    THEN coalesce(o.confirmed_at, l.ts)
                ELSE o.confirmed_at END,
            cancelled_at = CASE WHEN l.status = 'cancelled' THEN coalesce(o.cancelled_at, l.ts) ELSE o.cancelled_at END,
            {workflow_sets},
            synced_at = now(),
            write_seq = {int(write_seq if write_seq is not None else next_write_seq(con))}
        FROM (SELECT * FROM _operation_moves LEFT JOIN _operation_workflows USING (operation_id)) l
        WHERE o.operation_id = l.operation_id
    """)


def apply_query_events(con: duckdb.DuckDBPyConnection, view: str, *, write_seq: int | None = None) -> None:
    """Apply the ``query.status`` events of ``view`` to ``queries`` (status, each ``<status>_at``, the event hash
    and the workflow ids the answer carries); queue unknown ids. Moved rows get ``write_seq`` (by default a number
    of their own)."""
    per_status = ",\n".join(f"min(ts) FILTER (WHERE status = '{s}') AS {s}_at" for s in spec.QUERY_STATUSES)
    latest = f"""
        SELECT query_id,
               any_value(channel_id) AS channel_id,
               arg_max(status, ({_q_rank("status")}, ts)) AS status,
               max(ts) AS ts,
               max({_q_rank("status")}) AS rank,
               arg_max(event_hash, ts) FILTER (WHERE event_hash IS NOT NULL) AS event_hash,
               bool_or(proof_count > 0) AS has_proof,
               {per_status}
        FROM {view}
        WHERE type = 'query.status' AND query_id IS NOT NULL AND ts IS NOT NULL AND {_q_rank("status")} IS NOT NULL
        GROUP BY query_id
    """
    sets = ",\n".join(f"{s}_at = coalesce(q.{s}_at, l.{s}_at)" for s in spec.QUERY_STATUSES)
    con.execute(f"CREATE OR REPLACE TEMP TABLE _latest_query_moves AS {latest}")
    if not con.execute("SELECT count(*) FROM _latest_query_moves").fetchall()[0][0]:
        return
    con.execute("""
        INSERT OR IGNORE INTO sync_refetch
        SELECT 'query', l.channel_id, l.query_id
        FROM _latest_query_moves l LEFT JOIN queries q USING (query_id)
        WHERE q.query_id IS NULL
    """)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _query_moves AS
        SELECT l.* FROM _latest_query_moves l JOIN queries q USING (query_id)
        WHERE NOT list_contains({_Q_TERMINAL}, q.status)
          AND {_q_rank("q.status")} IS NOT NULL
          AND (list_contains({_Q_TERMINAL}, l.status) OR l.rank > {_q_rank("q.status")})
    """)
    if not con.execute("SELECT count(*) FROM _query_moves").fetchall()[0][0]:
        return
    # the answer's workflow ids come with the payload of the move that carries the proof (WIRE.md: query.status)
    workflow_sets = _payload_fields(
        con,
        view,
        into="_query_workflows",
        moves="_query_moves",
        id_column="query_id",
        event_type="query.status",
        rank=_q_rank,
        fields=_QUERY_WORKFLOW_FIELDS,
        row="q",
    )
    con.execute(f"""
        UPDATE queries AS q SET
            status = l.status,
            updated_at = greatest(coalesce(q.updated_at, l.ts), l.ts),
            event_hash = coalesce(l.event_hash, q.event_hash),
            has_proof = coalesce(q.has_proof, false) OR coalesce(l.has_proof, false),
            {sets},
            {workflow_sets},
            synced_at = now(),
            write_seq = {int(write_seq if write_seq is not None else next_write_seq(con))}
        FROM (SELECT * FROM _query_moves LEFT JOIN _query_workflows USING (query_id)) l
        WHERE q.query_id = l.query_id
    """)
