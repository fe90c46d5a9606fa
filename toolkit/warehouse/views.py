"""The modelled views of the warehouse contract, built from the vocabulary in :mod:`toolkit.spec`.

- ``operation_transitions``: one row per status an operation entered, from ``operation.status`` events deduplicated
  by event id (the table key) and by (operation, status), ordered by payload time then stage order.
- ``operation_lifecycle``: one row per operation, one ``<status>_at`` column per operation status.
- ``query_lifecycle``: one row per query, one ``<status>_at`` column per query status.

Network names come from ``networks``; an unknown selector shows as itself.

How they stay fast on big warehouses: the per-operation work (grouping events by operation and status, the window
over each operation's statuses, the pivot to one row per operation) is materialised at sync time into the tables
``model_operation_transitions`` and ``model_operation_lifecycle`` by
:func:`toolkit.warehouse.model_tables.refresh_models`.
It records a watermark (the newest ``write_seq`` of ``events`` and ``operations`` it has folded in) in
``sync_state`` under the stream ``models``. Every row written after the watermark marks its operation *stale*
(``model_stale_operations``). The public views read the materialised rows of every operation that is not stale and
compute the stale ones live from the raw tables (``model_operation_transitions_live``,
``model_operation_lifecycle_live``), so they are always exact, refreshed or not; the refresh only moves work from
query time to sync time. ``refresh_models`` writes exactly what the live views compute, so there is one definition.

What does not depend on a metric's question is modelled too: each status's ``entries`` (an operation may come back
to a status after a later one) and reorganisations, summed per operation into ``revisits`` and ``reorgs``; and
``operation_stay_reference``, the finished operations' time in each status counted per network, status and age bin
with the operation's outcome attributes, which the in-flight projection reads (``toolkit.metrics.inflight``). The
refresh keeps ``model_stay_reference`` up to date by adding and removing the contributions of the operations it
recomputes, so its cost follows what changed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import spec

if TYPE_CHECKING:
    import duckdb

#: Rank of a status the vocabulary does not know (kept, ordered after every known status).
UNKNOWN_RANK = 1000
#: Stream name of the models' watermark in ``sync_state``.
MODELS_STREAM = "models"
#: Bump when the model tables' definition changes: the next refresh rebuilds them from the raw tables, and until
#: then a reader computes the views from the raw tables (:func:`live_views`).
MODEL_VERSION = 3
TRANSITIONS_TABLE = "model_operation_transitions"
LIFECYCLE_TABLE = "model_operation_lifecycle"
REFERENCE_TABLE = "model_stay_reference"

_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")


def _ident(name: str) -> str:
    """A status used as part of a column name: only plain lowercase identifiers from the vocabulary."""
    if not _IDENTIFIER.match(name):
        raise ValueError(f"not a plain identifier: {name!r}")
    return name


def _literal(value: str) -> str:
    """A vocabulary value as an SQL string literal (vocabulary only: never a user value)."""
    if not _IDENTIFIER.match(value.replace(".", "_")):
        raise ValueError(f"not a vocabulary value: {value!r}")
    return f"'{value}'"


def _literals(values: object) -> str:
    return ", ".join(_literal(v) for v in values)  # type: ignore[attr-defined]


def _order_values(order: dict[str, int]) -> str:
    return ", ".join(f"({_literal(status)}, {rank})" for status, rank in order.items())


OPERATION_AT_COLUMNS: tuple[str, ...] = tuple(f"{_ident(s)}_at" for s in spec.OPERATION_STATUSES)
QUERY_AT_COLUMNS: tuple[str, ...] = tuple(f"{_ident(s)}_at" for s in spec.QUERY_STATUSES)

TRANSITION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("operation_id", "VARCHAR"),
    ("channel_id", "VARCHAR"),
    ("chain_selector", "VARCHAR"),
    ("address", "VARCHAR"),
    ("status", "VARCHAR"),
    ("stage_rank", "INTEGER"),
    ("entered_at", "TIMESTAMPTZ"),
    ("exited_at", "TIMESTAMPTZ"),
    ("next_status", "VARCHAR"),
    ("seconds_in_status", "DOUBLE"),
    ("seconds_since_created", "DOUBLE"),
    ("status_reason", "VARCHAR"),
    ("entries", "BIGINT"),
    ("reorg_entries", "BIGINT"),
)
LIFECYCLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("operation_id", "VARCHAR"),
    ("channel_id", "VARCHAR"),
    ("chain_selector", "VARCHAR"),
    ("address", "VARCHAR"),
    ("created_at", "TIMESTAMPTZ"),
    *((c, "TIMESTAMPTZ") for c in OPERATION_AT_COLUMNS),
    ("last_status", "VARCHAR"),
    ("last_status_at", "TIMESTAMPTZ"),
    ("current_status", "VARCHAR"),
    ("terminal_status", "VARCHAR"),
    ("terminal_at", "TIMESTAMPTZ"),
    ("status_reason", "VARCHAR"),
    ("revisits", "BIGINT"),
    ("reorgs", "BIGINT"),
)
#: What the in-flight projection needs of a finished operation's stays (:func:`stay_reference_select`): the stay's
#: network, status and age bin, the operation's attributes its outcome and indicators are read from, and a count.
REFERENCE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("chain_selector", "VARCHAR"),
    ("status", "VARCHAR"),
    ("bin", "INTEGER"),
    ("op_chain_selector", "VARCHAR"),
    ("terminal_status", "VARCHAR"),
    ("last_status", "VARCHAR"),
    ("relayed", "BOOLEAN"),
    ("stage_relayed", "BOOLEAN"),
    ("reached_latest", "BOOLEAN"),
    ("reached_safe", "BOOLEAN"),
    ("reached_finalized", "BOOLEAN"),
    ("stays", "BIGINT"),
)


#: Columns only the model table keeps: a fingerprint of the fields of the ``operations`` record the models use, so a
#: record stored again unchanged (every sync re-lists the operations still in flight) leaves its operation fresh.
LIFECYCLE_MODEL_COLUMNS: tuple[tuple[str, str], ...] = (*LIFECYCLE_COLUMNS, ("record_hash", "UBIGINT"))
RECORD_FIELDS = ("channel_id", "chain_selector", "address", "created_at", "status", "updated_at")


def record_hash(alias: str) -> str:
    """Returns SQL for the fingerprint of an ``operations`` row (alias ``alias``): NULL when there is no row."""
    fields = ", ".join(f"{alias}.{f}" for f in RECORD_FIELDS)
    return f"CASE WHEN {alias}.operation_id IS NOT NULL THEN hash({fields}) END"


def _table_ddl(name: str, columns: tuple[tuple[str, str], ...]) -> str:
    cols = ",\n    ".join(f"{c} {t}" for c, t in columns)
    return f"CREATE TABLE IF NOT EXISTS {name} (\n    {cols}\n)"


MODEL_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    TRANSITIONS_TABLE: TRANSITION_COLUMNS,
    LIFECYCLE_TABLE: LIFECYCLE_MODEL_COLUMNS,
    REFERENCE_TABLE: REFERENCE_COLUMNS,
}


def drop_outdated_models(con: duckdb.DuckDBPyConnection) -> bool:
    """Drop the model tables when another version of the toolkit made them (their columns differ from these), and
    forget the models' watermark: the views then compute every operation live until the next refresh rebuilds
    them, instead of failing on a missing column. ``con`` is a writable DuckDB connection; returns whether it
    dropped anything."""
    rows = con.execute(
        "SELECT table_name, list(column_name ORDER BY column_index) FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND list_contains(?, table_name) "
        "GROUP BY table_name",
        [list(MODEL_TABLES)],
    ).fetchall()
    stored = {name: list(cols) for name, cols in rows}
    if all(stored.get(name, [c for c, _ in cols]) == [c for c, _ in cols] for name, cols in MODEL_TABLES.items()):
        return False
    for name in stored:
        con.execute(f"DROP TABLE IF EXISTS {name}")
    con.execute("DELETE FROM sync_state WHERE stream = ?", [MODELS_STREAM])
    return True


def model_table_statements() -> list[str]:
    """Returns ``CREATE TABLE IF NOT EXISTS`` for the materialised model tables (empty until the first refresh)."""
    return [_table_ddl(name, columns) for name, columns in MODEL_TABLES.items()]


def _status_order_view() -> str:
    return f"CREATE OR REPLACE VIEW operation_status_order AS {_status_order_select()}"


def _status_order_select() -> str:
    return f"""
SELECT * FROM (VALUES {_order_values(spec.OPERATION_STAGE_ORDER)}) AS t(status, stage_rank)
"""


def _stale_view() -> str:
    """Operations whose raw rows were stored after the watermark (every operation before the first refresh), and
    whether events are among them (``new_events``; else only the ``operations`` record was stored again)."""
    return f"""
CREATE OR REPLACE VIEW model_stale_operations AS
WITH wm AS (
    SELECT
        coalesce(max(CAST(cursor->>'$.events_write_seq' AS BIGINT)), -1) AS events_wm,
        coalesce(max(CAST(cursor->>'$.operations_write_seq' AS BIGINT)), -1) AS ops_wm
    FROM sync_state WHERE stream = '{MODELS_STREAM}'
),
-- one row only when something arrived after the watermark (answered from column statistics): with no row, the
-- scans below stop at once, so an up-to-date warehouse pays nothing for this check
new_events AS (
    SELECT events_wm FROM wm
    WHERE (SELECT max(write_seq) FROM events) > events_wm OR EXISTS (SELECT 1 FROM events WHERE write_seq IS NULL)
),
new_ops AS (
    SELECT ops_wm FROM wm
    WHERE (SELECT max(write_seq) FROM operations) > ops_wm
       OR EXISTS (SELECT 1 FROM operations WHERE write_seq IS NULL)
)
SELECT operation_id, bool_or(by_event) AS new_events FROM (
    SELECT e.operation_id, true AS by_event FROM events e, new_events w
    WHERE e.operation_id IS NOT NULL AND (e.write_seq IS NULL OR e.write_seq > w.events_wm)
    UNION ALL
    SELECT o.operation_id, false AS by_event FROM operations o, new_ops w
    WHERE o.operation_id IS NOT NULL AND (o.write_seq IS NULL OR o.write_seq > w.ops_wm)
)
GROUP BY operation_id
"""


#: Scope of the live views: the operations whose raw rows changed after the models' watermark.
STALE_SCOPE = "model_stale_operations"


def _in_scope(alias: str, scope: str | None) -> str:
    """Predicate: the row's operation is in the relation ``scope`` (an internal table or view name), or TRUE."""
    return f"{alias}.operation_id IN (SELECT operation_id FROM {scope})" if scope else "TRUE"


def _rank_sql(column: str) -> str:
    """The stage rank of ``column`` (NULL for a status the vocabulary does not know)."""
    cases = " ".join(f"WHEN {_literal(s)} THEN {r}" for s, r in spec.OPERATION_STAGE_ORDER.items())
    return f"CASE {column} {cases} END"


#: Ranks of the statuses a reorganisation moves an operation back from (the finality stages) and to (broadcasting or
#: earlier).
_FINALITY_RANKS = (
    spec.OPERATION_STAGE_ORDER[spec.FINALITY_STAGES[0]],
    spec.OPERATION_STAGE_ORDER[spec.FINALITY_STAGES[-1]],
)
_BROADCASTING_RANK = spec.OPERATION_STAGE_ORDER["broadcasting"]


#: An event that moves an operation (``{e}`` its alias): the rows transitions and status steps are made of.
_OPERATION_STATUS_EVENT = (
    "{e}.type = 'operation.status' AND {e}.operation_id IS NOT NULL AND {e}.status IS NOT NULL AND {e}.ts IS NOT NULL"
)


def revisit_steps_sql(scope: str | None = None, *, source: str | None = None) -> str:
    """CTEs (``step_events``, ``step_ranked``) ending in ``steps``: one row per status step of every operation (of
    the relation ``scope``, an internal name, when given), from raw ``operation.status`` events: deduplicated by
    (operation, status, time) (the events table's key is the event id, so a duplicate delivery is one of these),
    ordered by time then stage, consecutive repeats of one status merged.

    Columns: operation_id, status, ts, rank, prev_status, prev_rank, visit (1 for the first entry of the status,
    2 for the second, ...). ``source``, when given, names a relation of those events already selected (with
    ``operation_id``, ``status`` and ``ts``), read instead of ``events``."""
    events = (
        source
        or f"""(SELECT * FROM events e
        WHERE {_OPERATION_STATUS_EVENT.format(e="e")} AND {_in_scope("e", scope)})"""
    )
    return f"""
    step_events AS (SELECT DISTINCT operation_id, status, ts FROM {events} AS se),
    step_ranked AS (
        SELECT *, {_rank_sql("status")} AS rank,
            lag(status) OVER (PARTITION BY operation_id ORDER BY ts, {_rank_sql("status")} NULLS LAST, status)
                AS before
        FROM step_events
    ),
    steps AS (
        SELECT operation_id, status, ts, rank,
            lag(status) OVER w AS prev_status, lag(rank) OVER w AS prev_rank,
            row_number() OVER (PARTITION BY operation_id, status ORDER BY ts, rank NULLS LAST) AS visit
        FROM step_ranked
        WHERE before IS DISTINCT FROM status
        WINDOW w AS (PARTITION BY operation_id ORDER BY ts, rank NULLS LAST, status)
    )"""


def reorg_step_sql(prev: str = "prev_rank", cur: str = "rank") -> str:
    """Whether a step is a reorganisation: a move from a finality stage (``confirmed_latest``, ``confirmed_safe``,
    ``confirmed``) back to ``broadcasting`` or an earlier status. ``prev`` and ``cur`` are the SQL of the stage
    ranks before and after the step (by default the columns of ``steps``, :func:`revisit_steps_sql`)."""
    low, high = _FINALITY_RANKS
    return f"({prev} >= {low} AND {prev} <= {high} AND {cur} <= {_BROADCASTING_RANK})"


def transitions_select(scope: str | None) -> str:
    """Returns the SELECT of the transitions of the operations listed in the relation ``scope`` (every operation
    when None), computed from the raw events: the single definition of a transition. ``scope`` is an internal
    name, never user input.

    Besides the first entry into each status and the time to the next new status, each row counts the ``entries``
    into the status (more than one when the operation came back to it after a later status: a revisit) and the
    ``reorg_entries`` among them (moves back from a finality stage), from the status steps of
    :func:`revisit_steps_sql`."""
    # For an operation whose every status has one time, the steps are its first entries in order: each entered
    # once, and a reorganisation is a first entry at broadcasting or earlier right after a finality stage, read off
    # the same window. Only the operations with a status at two times (a revisit, or a duplicate delivered later)
    # need the steps themselves; both read the operations' events once, through ``moves``.
    return f"""
WITH moves AS (
    SELECT e.operation_id, e.status, e.ts, e.status_reason, e.channel_id, e.chain_selector, e.address
    FROM events e
    WHERE {_OPERATION_STATUS_EVENT.format(e="e")} AND {_in_scope("e", scope)}
),
entered AS (
    SELECT
        e.operation_id,
        e.status,
        min(e.ts) AS entered_at,
        max(e.ts) AS last_entered_at,
        arg_min(e.status_reason, e.ts) AS status_reason,
        any_value(e.channel_id) AS channel_id,
        any_value(e.chain_selector) AS chain_selector,
        any_value(e.address) AS address
    FROM moves e
    GROUP BY e.operation_id, e.status
),
stepped AS (SELECT DISTINCT operation_id FROM entered WHERE last_entered_at > entered_at),
{revisit_steps_sql(source="(SELECT * FROM moves WHERE operation_id IN (SELECT operation_id FROM stepped))")},
step_counts AS (
    SELECT operation_id, status, count(*) AS entries, count(*) FILTER (WHERE {reorg_step_sql()}) AS reorg_entries
    FROM steps GROUP BY operation_id, status
),
ops AS (
    SELECT o.operation_id, o.channel_id, o.chain_selector, o.address, o.created_at
    FROM operations o WHERE {_in_scope("o", scope)}
),
ranked AS (
    SELECT e.*, coalesce(r.stage_rank, {UNKNOWN_RANK}) AS stage_rank
    FROM entered e LEFT JOIN operation_status_order r USING (status)
)
SELECT
    r.operation_id,
    coalesce(r.channel_id, op.channel_id) AS channel_id,
    coalesce(r.chain_selector, op.chain_selector) AS chain_selector,
    coalesce(op.address, r.address) AS address,
    r.status,
    r.stage_rank,
    r.entered_at,
    lead(r.entered_at) OVER w AS exited_at,
    lead(r.status) OVER w AS next_status,
    epoch(lead(r.entered_at) OVER w) - epoch(r.entered_at) AS seconds_in_status,
    epoch(r.entered_at) - epoch(coalesce(op.created_at, first_value(r.entered_at) OVER w)) AS seconds_since_created,
    r.status_reason,
    coalesce(c.entries, 1) AS entries,
    coalesce(
        c.reorg_entries,
        CASE WHEN {reorg_step_sql("lag(r.stage_rank) OVER w", "r.stage_rank")} THEN 1 ELSE 0 END
    ) AS reorg_entries
FROM ranked r
LEFT JOIN ops op USING (operation_id)
LEFT JOIN step_counts c ON c.operation_id = r.operation_id AND c.status = r.status
WINDOW w AS (PARTITION BY r.operation_id ORDER BY r.entered_at, r.stage_rank)
"""


def lifecycle_select(transitions: str, scope: str | None, *, record_hash_column: bool = True) -> str:
    """Returns the SELECT of one row per operation listed in the relation ``scope`` (every one when None): its
    transitions (from the relation ``transitions``) pivoted, completed by its ``operations`` record. Both
    arguments are internal names, never user input. ``record_hash_column`` adds the model table's
    ``record_hash`` (DuckDB's hash: an engine reading an export has no use for it)."""
    terminal = _literals(sorted(spec.OPERATION_TERMINAL))
    at_cols = ",\n    ".join(
        f"min(entered_at) FILTER (WHERE status = {_literal(s)}) AS {c}"
        for s, c in zip(spec.OPERATION_STATUSES, OPERATION_AT_COLUMNS, strict=True)
    )
    last = "coalesce(p.last_status, op.status)"
    return f"""
WITH per_op AS (
    SELECT
    operation_id,
    any_value(channel_id) AS channel_id,
    any_value(chain_selector) AS chain_selector,
    any_value(address) AS address,
    {at_cols},
    min(entered_at) AS first_at,
    arg_max(status, (entered_at, stage_rank)) AS last_status,
    max(entered_at) AS last_status_at,
    arg_max(status_reason, (entered_at, stage_rank)) FILTER (WHERE status IN ({terminal})) AS terminal_reason,
    sum(entries - 1) AS revisits,
    sum(reorg_entries) AS reorgs
    FROM {transitions} t
    WHERE {_in_scope("t", scope)}
    GROUP BY operation_id
),
ops AS (
    SELECT o.* FROM operations o WHERE {_in_scope("o", scope)}
)
SELECT
    coalesce(p.operation_id, op.operation_id) AS operation_id,
    coalesce(op.channel_id, p.channel_id) AS channel_id,
    coalesce(op.chain_selector, p.chain_selector) AS chain_selector,
    coalesce(op.address, p.address) AS address,
    coalesce(op.created_at, p.first_at) AS created_at,
    {", ".join(f"p.{c}" for c in OPERATION_AT_COLUMNS)},
    {last} AS last_status,
    coalesce(p.last_status_at, op.updated_at) AS last_status_at,
    op.status AS current_status,
    CASE WHEN {last} IN ({terminal}) THEN {last}
         WHEN op.status IN ({terminal}) THEN op.status END AS terminal_status,
    CASE WHEN {last} IN ({terminal}) THEN coalesce(p.last_status_at, op.updated_at)
         WHEN op.status IN ({terminal}) THEN op.updated_at END AS terminal_at,
    p.terminal_reason AS status_reason,
    coalesce(p.revisits, 0)::BIGINT AS revisits,
    coalesce(p.reorgs, 0)::BIGINT AS reorgs{f", {record_hash('op')} AS record_hash" if record_hash_column else ""}
FROM per_op p
FULL OUTER JOIN ops op USING (operation_id)
"""


#: Statuses of an operation that was relayed (accepted for relay, or any later stage of the relay ladder).
RELAY_STATUSES: tuple[str, ...] = tuple(
    s
    for s in spec.OPERATION_STATUSES
    if s not in (spec.OperationStatus.PENDING_SIGNATURE, spec.OperationStatus.EXPIRED, spec.OperationStatus.CANCELLED)
)


def relayed_sql(alias: str = "") -> str:
    """Whether an operation of ``operation_lifecycle`` (alias ``alias``) was relayed: it reached ``accepted`` or a
    later stage, by its events or its record."""
    a = f"{alias}." if alias else ""
    ats = ", ".join(f"{a}{s}_at" for s in RELAY_STATUSES)
    relay = _literals(RELAY_STATUSES)
    return f"(coalesce({ats}) IS NOT NULL OR {a}last_status IN ({relay}) OR {a}current_status IN ({relay}))"


def stage_relayed_sql(alias: str = "") -> str:
    """Whether an operation of ``operation_lifecycle`` (alias ``alias``) has the time of a relay stage or of its
    failure (the finality metrics' cohort: ``toolkit.metrics.finality``)."""
    a = f"{alias}." if alias else ""
    stages = ("accepted", "sending", "sent", "broadcasting", *spec.FINALITY_STAGES, "failed")
    return f"coalesce({', '.join(f'{a}{_ident(s)}_at' for s in stages)}) IS NOT NULL"


def operation_attributes(alias: str = "") -> dict[str, str]:
    """What the metrics read of an operation besides its statuses' times, as name -> SQL over a row of
    ``operation_lifecycle`` (alias ``alias``): ``relayed``, ``stage_relayed`` and whether it reached each finality
    stage (a later stage implies the earlier ones, even when an event is missing). The one definition that both an
    operation (``toolkit.metrics.outcomes``) and the stays of :func:`stay_reference_select` are read with."""
    a = f"{alias}." if alias else ""
    stages = [f"{a}{_ident(s)}_at" for s in spec.FINALITY_STAGES]
    return {
        "relayed": relayed_sql(alias),
        "stage_relayed": stage_relayed_sql(alias),
        "reached_latest": f"coalesce({', '.join(stages)}) IS NOT NULL",
        "reached_safe": f"coalesce({', '.join(stages[1:])}) IS NOT NULL",
        "reached_finalized": f"{stages[-1]} IS NOT NULL",
    }


def age_bin_sql(seconds: str) -> str:
    """SQL of the logarithmic age bin of ``seconds`` (an SQL expression): ``floor(log2(1 + seconds))``, 0 below 0."""
    return f"floor(log2(1 + greatest({seconds}, 0)))::INTEGER"


def stay_reference_select(transitions: str, lifecycle: str) -> str:
    """Returns the SELECT of ``operation_stay_reference`` over the relations ``transitions`` and ``lifecycle``
    (internal names): every ended stay in a status (``seconds_in_status`` known), counted (``stays``) per network of
    the stay, status, age bin (:func:`age_bin_sql`) and the attributes of its operation that decide its outcome
    (its network ``op_chain_selector``, ``terminal_status``, ``last_status`` and :func:`operation_attributes`). It
    holds stays of operations still in flight too: whether an operation has finished depends on which networks are
    latest-only, which the metrics decide when they read it."""
    attrs = operation_attributes("l")
    cols = ",\n    ".join(f"{sql} AS {name}" for name, sql in attrs.items())
    return f"""
SELECT
    t.chain_selector,
    t.status,
    {age_bin_sql("t.seconds_in_status")} AS bin,
    l.chain_selector AS op_chain_selector,
    l.terminal_status,
    l.last_status,
    {cols},
    count(*) AS stays
FROM {transitions} t
JOIN {lifecycle} l ON l.operation_id = t.operation_id
WHERE t.seconds_in_status IS NOT NULL
GROUP BY ALL
"""


def _reference_view() -> str:
    """The stays reference computed from the public views (exact whatever the models' state; a reader whose models
    are current reads the model table instead: :func:`current_model_views`)."""
    return (
        "CREATE OR REPLACE VIEW operation_stay_reference AS "
        f"{stay_reference_select('operation_transitions', 'operation_lifecycle')}"
    )


def _transitions_live_view() -> str:
    """Transitions of the stale operations, computed from the raw events."""
    return f"CREATE OR REPLACE VIEW model_operation_transitions_live AS {transitions_select(STALE_SCOPE)}"


def _lifecycle_live_view() -> str:
    """One row per stale operation, from the live transitions and the ``operations`` records."""
    return (
        "CREATE OR REPLACE VIEW model_operation_lifecycle_live AS "
        f"{lifecycle_select('model_operation_transitions_live', STALE_SCOPE)}"
    )


def _named_transitions(rows: str) -> str:
    """The public transitions over the relation ``rows`` (an internal SQL text): the network named."""
    return f"""
SELECT
    t.operation_id,
    t.channel_id,
    t.chain_selector,
    coalesce(n.name, t.chain_selector) AS network,
    t.address,
    t.status,
    t.stage_rank,
    t.entered_at,
    t.exited_at,
    t.next_status,
    t.seconds_in_status,
    t.seconds_since_created,
    t.status_reason,
    t.entries,
    t.reorg_entries
FROM {rows} t
LEFT JOIN networks n ON n.chain_selector = t.chain_selector
"""


def _named_lifecycle(rows: str) -> str:
    """The public lifecycle over the relation ``rows`` (an internal SQL text): the network named."""
    cols = [c for c, _ in LIFECYCLE_COLUMNS]
    rest = ", ".join(f"l.{c}" for c in cols[4:])
    return f"""
SELECT
    l.operation_id,
    l.channel_id,
    l.chain_selector,
    coalesce(n.name, l.chain_selector) AS network,
    l.address,
    {rest}
FROM {rows} l
LEFT JOIN networks n ON n.chain_selector = l.chain_selector
"""


def _stored_or_live(table: str, live: str, columns: tuple[tuple[str, str], ...]) -> str:
    """The rows of the model ``table`` for fresh operations, and of the ``live`` view for stale ones."""
    cols = ", ".join(c for c, _ in columns)
    return f"""(
    SELECT {cols} FROM {table} m ANTI JOIN model_stale_operations s USING (operation_id)
    UNION ALL
    SELECT {cols} FROM {live}
)"""


def _transitions_view() -> str:
    rows = _stored_or_live(TRANSITIONS_TABLE, "model_operation_transitions_live", TRANSITION_COLUMNS)
    return f"CREATE OR REPLACE VIEW operation_transitions AS {_named_transitions(rows)}"


def _lifecycle_view() -> str:
    rows = _stored_or_live(LIFECYCLE_TABLE, "model_operation_lifecycle_live", LIFECYCLE_COLUMNS)
    return f"CREATE OR REPLACE VIEW operation_lifecycle AS {_named_lifecycle(rows)}"


def current_model_views() -> list[str]:
    """Returns the statements a reader runs on a warehouse whose models are current (no operation is stale): the
    temporary views ``operation_transitions`` and ``operation_lifecycle`` over the model tables alone.

    They hold exactly the rows of the stored views then (the live part is empty), and a statement over them is
    planned in about a third of the time: DuckDB binds and optimises the live part of every view on each query,
    even when it returns nothing. A read-only connection sees no write while it is open (DuckDB lets no writer in
    meanwhile), so they stay exact for its lifetime. Temporary objects come first in DuckDB's search path.
    """
    cols = ", ".join(c for c, _ in REFERENCE_COLUMNS)
    return [
        f"CREATE OR REPLACE TEMP VIEW operation_transitions AS {_named_transitions(TRANSITIONS_TABLE)}",
        f"CREATE OR REPLACE TEMP VIEW operation_lifecycle AS {_named_lifecycle(LIFECYCLE_TABLE)}",
        f"CREATE OR REPLACE TEMP VIEW operation_stay_reference AS SELECT {cols} FROM {REFERENCE_TABLE}",
    ]


def live_views() -> list[str]:
    """Returns the statements a reader runs on a warehouse whose model tables were made by another version of the
    toolkit (:data:`MODEL_VERSION`) and not rebuilt yet: temporary views computing every modelled view from the raw
    tables (:func:`plain_view_selects`), so the answers are this version's, only slower. The next sync rebuilds
    the models."""
    return [f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}" for name, sql in plain_view_selects().items()]


#: The version of the model tables a warehouse holds (the models' watermark records it), NULL before the first.
MODELS_VERSION_SQL = (
    f"SELECT max(CAST(cursor->>'$.version' AS INTEGER)) FROM sync_state WHERE stream = '{MODELS_STREAM}'"
)


#: True when no operation is stale: the model tables hold every operation's rows as the views would compute them.
MODELS_CURRENT_SQL = "SELECT NOT EXISTS (SELECT 1 FROM model_stale_operations)"


def _query_terminal_by_time() -> str:
    """SQL over ``j`` (the joined query): ``expired`` when it was answered (``completed``) at or after it expired;
    else the terminal status with the latest time, on equal times the later stage; NULL when no terminal status
    has a time."""
    ends = [s for s in spec.QUERY_STATUSES if s in spec.QUERY_TERMINAL]
    rank = spec.QUERY_STAGE_ORDER
    whens = []
    for s in ends:
        beats = [
            f"(j.{o}_at IS NULL OR j.{o}_at {'<=' if rank[o] < rank[s] else '<'} j.{s}_at)" for o in ends if o != s
        ]
        whens.append(f"WHEN j.{_ident(s)}_at IS NOT NULL AND {' AND '.join(beats)} THEN {_literal(s)}")
    expired, completed = spec.QueryStatus.EXPIRED.value, spec.QueryStatus.COMPLETED.value
    late = f"WHEN j.{completed}_at >= j.{expired}_at THEN {_literal(expired)}"  # an answer after its time-to-live
    return f"CASE {late} {' '.join(whens)} END"


def _query_lifecycle_view() -> str:
    return f"CREATE OR REPLACE VIEW query_lifecycle AS {query_lifecycle_select()}"


def query_lifecycle_select() -> str:
    """Returns the SELECT of ``query_lifecycle``: one row per query. Its outcome (``terminal_status``) is the
    terminal status with the latest event time (on equal times the later stage); a query that reached ``expired``
    and then ``completed`` (not before its expiry) is ``expired`` with ``late_answer``: an answer after its
    time-to-live is not a success."""
    terminal = _literals(s for s in spec.QUERY_STATUSES if s in spec.QUERY_TERMINAL)
    expired, completed = spec.QueryStatus.EXPIRED.value, spec.QueryStatus.COMPLETED.value
    at_of_outcome = " ".join(
        f"WHEN {_literal(s)} THEN o.{_ident(s)}_at" for s in spec.QUERY_STATUSES if s in spec.QUERY_TERMINAL
    )
    event_cols = ",\n        ".join(
        f"min(ts) FILTER (WHERE status = {_literal(s)}) AS {c}"
        for s, c in zip(spec.QUERY_STATUSES, QUERY_AT_COLUMNS, strict=True)
    )
    status_cols = ",\n    ".join(f"coalesce(q.{c}, ev.{c}) AS {c}" for c in QUERY_AT_COLUMNS)
    terminal_at = ", ".join(f"q.{s}_at, ev.{s}_at" for s in spec.QUERY_STATUSES if s in spec.QUERY_TERMINAL)
    query_rank = (
        "CASE status "
        + " ".join(f"WHEN {_literal(s)} THEN {r}" for s, r in spec.QUERY_STAGE_ORDER.items())
        + f" ELSE {UNKNOWN_RANK} END"
    )
    return f"""
WITH ev AS (
    SELECT
        query_id,
        any_value(channel_id) AS channel_id,
        any_value(chain_selector) AS chain_selector,
        {event_cols},
        arg_max(status, (ts, {query_rank})) AS last_status
    FROM events
    WHERE type = 'query.status' AND query_id IS NOT NULL AND ts IS NOT NULL
    GROUP BY query_id
),
joined AS (
    SELECT
        coalesce(q.query_id, ev.query_id) AS query_id,
        coalesce(q.channel_id, ev.channel_id) AS channel_id,
        coalesce(q.chain_selector, ev.chain_selector) AS chain_selector,
        CASE WHEN ev.last_status IN ({terminal}) AND coalesce(q.status, '') NOT IN ({terminal}) THEN ev.last_status
             ELSE coalesce(q.status, ev.last_status) END AS status,
        q.query_kind,
        coalesce(q.created_at, q.accepted_at, ev.accepted_at) AS created_at,
        {status_cols},
        coalesce({terminal_at}) AS first_terminal_at
    FROM queries q
    FULL OUTER JOIN ev USING (query_id)
),
outcome AS (
    SELECT j.*,
        coalesce({_query_terminal_by_time()}, CASE WHEN j.status IN ({terminal}) THEN j.status END) AS terminal_status
    FROM joined j
),
timed AS (
    SELECT o.*, coalesce(CASE o.terminal_status {at_of_outcome} END, o.first_terminal_at) AS terminal_at
    FROM outcome o
)
SELECT
    j.query_id,
    j.channel_id,
    j.chain_selector,
    coalesce(n.name, j.chain_selector) AS network,
    coalesce(j.terminal_status, j.status) AS status,
    j.query_kind,
    j.created_at,
    {", ".join(f"j.{c}" for c in QUERY_AT_COLUMNS)},
    j.terminal_status,
    j.terminal_at,
    coalesce(j.terminal_status = {_literal(expired)} AND j.{completed}_at >= j.{expired}_at, false) AS late_answer,
    epoch(j.terminal_at) - epoch(coalesce(j.accepted_at, j.created_at)) AS seconds_accepted_to_terminal
FROM timed j
LEFT JOIN networks n ON n.chain_selector = j.chain_selector
"""


def plain_view_selects() -> dict[str, str]:
    """Returns every modelled view as a plain SELECT over the raw tables, in dependency order, with nothing
    materialised: what an engine that reads the Parquet export (which has the raw tables but not the ``model_*``
    tables) builds the views from. The same definitions as the warehouse's views (:func:`transitions_select`,
    :func:`lifecycle_select`, :func:`query_lifecycle_select`); ``model_operation_*_live`` cover every operation."""
    return {
        "operation_status_order": _status_order_select(),
        "model_operation_transitions_live": transitions_select(None),
        "model_operation_lifecycle_live": lifecycle_select(
            "model_operation_transitions_live", None, record_hash_column=False
        ),
        "operation_transitions": _named_transitions("model_operation_transitions_live"),
        "operation_lifecycle": _named_lifecycle("model_operation_lifecycle_live"),
        "query_lifecycle": query_lifecycle_select(),
        "operation_stay_reference": stay_reference_select("operation_transitions", "operation_lifecycle"),
    }


def view_statements() -> list[str]:
    """Returns the statements that create the model tables (if missing) and (re)create every modelled view, in
    dependency order."""
    return [
        *model_table_statements(),
        _status_order_view(),
        _stale_view(),
        _transitions_live_view(),
        _lifecycle_live_view(),
        _transitions_view(),
        _lifecycle_view(),
        _query_lifecycle_view(),
        _reference_view(),
    ]
