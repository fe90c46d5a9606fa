"""The warehouse's data dictionary: a ``COMMENT ON`` for every table, view and column, and ``docs/warehouse.md``.

The comments live in the DuckDB file itself, so ``duckdb_tables()``, ``duckdb_views()``, ``duckdb_columns()``,
DBeaver's column list and ``chainops sql "describe TABLE"`` show what each column means, its unit, time zone and
where it comes from. :func:`apply_comments` writes them whenever a writer opens the warehouse (a warehouse made by an
earlier version gets them at its next sync) and after the model tables are rebuilt; it only writes a comment that
differs from the one stored.

``python -m toolkit.warehouse.write_dictionary [PATH]`` writes the Markdown document (default
``docs/warehouse.md``) from the comments of a new, empty warehouse; a test fails when a column has no comment or the
document is stale.
"""

from __future__ import annotations

import duckdb

from .schema import (
    COMMON,
    DECLARED_TABLES,
    OPERATION_ENTERED_AT,
    QUERY_ENTERED_AT,
    UTC,
    column_doc,
    quote_identifier,
)

#: One sentence per view and model table (their own modules create them): what one row is and where it comes from.
#: The tables' come from their declarations (:mod:`.schema`).
VIEW_COMMENTS: dict[str, str] = {
    "operation_status_order": "The operation lifecycle's statuses in order (toolkit.spec): status and stage_rank.",
    "operation_transitions": "One row per status an operation entered (first entry), from operation.status events "
    "deduplicated by event id and (operation, status), ordered by payload time then stage order. Query this view.",
    "operation_lifecycle": "One row per operation: creation, when it first entered each status, its last and "
    "terminal status. Query this view.",
    "query_lifecycle": "One row per chain query: when it entered each status, its terminal status and latency.",
    "model_operation_transitions": "Materialised operation_transitions, refreshed incrementally at the end of each "
    "sync (internal: query operation_transitions, which adds what arrived since).",
    "model_operation_lifecycle": "Materialised operation_lifecycle, refreshed incrementally at the end of each sync "
    "(internal: query operation_lifecycle).",
    "model_operation_transitions_live": "operation_transitions computed live for the operations changed since the "
    "last model refresh (internal).",
    "model_operation_lifecycle_live": "operation_lifecycle computed live for the operations changed since the last "
    "model refresh (internal).",
    "model_stale_operations": "Operations changed since the last model refresh (internal).",
    "operation_stay_reference": "Every ended stay of an operation in a status, counted per network, status, age bin "
    "and the outcome attributes of its operation: the reference the metrics project operations in flight from "
    "(toolkit.metrics.inflight).",
    "model_stay_reference": "Materialised operation_stay_reference, moved by each model refresh by what the "
    "operations it recomputed took away and brought (internal: query operation_stay_reference).",
}

#: One sentence per table and view the dictionary documents: what one row is and where it comes from.
OBJECT_COMMENTS: dict[str, str] = {**{name: t.doc for name, t in DECLARED_TABLES.items()}, **VIEW_COMMENTS}

_TRANSITIONS: dict[str, str] = {
    "status": "The status entered (an unknown value is kept as text).",
    "entries": "How many times the operation entered this status: 1, more when it came back to it after a later "
    "status (a revisit; its time in status still runs from the first entry to the next new status).",
    "reorg_entries": "Of those entries, the moves back from a finality stage (confirmed_latest, confirmed_safe, "
    "confirmed) to this status, broadcasting or earlier: reorganisations.",
}
_LIFECYCLE: dict[str, str] = {
    **OPERATION_ENTERED_AT,
    "created_at": f"When the service created the operation ({UTC}).",
    "status_reason": "The reason the service gave with the last status (free text).",
    "revisits": "Entries into a status the operation had already entered and left (0 when none).",
    "reorgs": "Moves from a finality stage back to broadcasting or an earlier status (0 when none).",
}
_REFERENCE: dict[str, str] = {
    "chain_selector": "The network of the stays (as the transitions give it; decimal text).",
    "status": "The status the operations stayed in.",
    "bin": "The stays' age bin: floor(log2(1 + seconds in status)), 0 below 1 s.",
    "op_chain_selector": "The operations' network (as operation_lifecycle gives it): whether they have finished "
    "depends on whether it is latest-only.",
    "terminal_status": "The operations' terminal status; NULL while in flight.",
    "last_status": "The last status the operations entered.",
    "relayed": "Whether the operations were relayed (reached accepted or a later stage, by events or record).",
    "stage_relayed": "Whether the operations have the time of a relay stage or of their failure.",
    "reached_latest": "Whether the operations reached confirmed_latest or a later finality stage.",
    "reached_safe": "Whether the operations reached confirmed_safe or confirmed.",
    "reached_finalized": "Whether the operations reached confirmed.",
    "stays": "How many stays share these values.",
}
_LIFECYCLE_MODEL = {
    **_LIFECYCLE,
    "record_hash": "Fingerprint of the operations record's fields the model uses, so a record stored again "
    "unchanged leaves the model row fresh (internal).",
}

#: The columns of the views and model tables whose meaning is particular to them (everything else comes from
#: :data:`~.schema.COMMON`); the tables' columns are documented where they are declared (:mod:`.schema`).
VIEW_COLUMNS: dict[str, dict[str, str]] = {
    "operation_status_order": {
        "status": "An operation status (toolkit.spec).",
        "stage_rank": "Its position in the lifecycle (0 = pending_signature).",
    },
    "operation_transitions": _TRANSITIONS,
    "model_operation_transitions": _TRANSITIONS,
    "model_operation_transitions_live": _TRANSITIONS,
    "operation_lifecycle": _LIFECYCLE,
    "model_operation_lifecycle": _LIFECYCLE_MODEL,
    "model_operation_lifecycle_live": _LIFECYCLE_MODEL,
    "operation_stay_reference": _REFERENCE,
    "model_stay_reference": _REFERENCE,
    "model_stale_operations": {
        "new_events": "Whether new events arrived for it (else only its operations record was stored again).",
    },
    "query_lifecycle": {
        **QUERY_ENTERED_AT,
        "status": "The query's status: the record's, or a terminal status its events reached first.",
        "late_answer": "Whether an answer (completed) came after the query had expired; such a query is expired.",
        "seconds_accepted_to_terminal": "Seconds from accepted to the terminal status; NULL while in flight.",
    },
}


def column_comment(table: str, column: str) -> str | None:
    """The comment of ``table.column``: a declared table's from :mod:`.schema`; a view's own, else the common one;
    None when there is none."""
    if table in DECLARED_TABLES:
        return column_doc(table, column)
    return VIEW_COLUMNS.get(table, {}).get(column) or COMMON.get(column)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def apply_comments(con: duckdb.DuckDBPyConnection) -> int:
    """Write the dictionary's comment on every table, view and column of the current database that lacks it (or
    has another), in one transaction of its own (call between transactions); returns how many comments were
    written. Objects the dictionary does not know are left alone."""
    objects = con.execute(
        "SELECT table_name, 'TABLE', comment FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT temporary UNION ALL "
        "SELECT view_name, 'VIEW', comment FROM duckdb_views() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT temporary AND NOT internal"
    ).fetchall()
    columns = con.execute(
        "SELECT table_name, column_name, comment FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT internal"
    ).fetchall()
    statements = []
    for name, kind, comment in objects:
        wanted = OBJECT_COMMENTS.get(name)
        if wanted is not None and comment != wanted:
            statements.append(f"COMMENT ON {kind} {quote_identifier(name)} IS {_literal(wanted)}")
    for table, column, comment in columns:
        wanted = column_comment(table, column) if table in OBJECT_COMMENTS else None
        if wanted is not None and comment != wanted:
            target = f"{quote_identifier(table)}.{quote_identifier(column)}"
            statements.append(f"COMMENT ON COLUMN {target} IS {_literal(wanted)}")
    if statements:  # one call: a catalog change per statement costs far less inside one batch
        con.execute("BEGIN TRANSACTION;\n" + ";\n".join(statements) + ";\nCOMMIT")
    return len(statements)


def read_dictionary(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str | None, list[tuple[str, str, str]]]]:
    """Every table and view of the current database with its kind, comment and columns (name, type, comment), as
    the file itself holds them, tables first, each group by name."""
    objects = con.execute(
        "SELECT table_name, 'table' AS kind, comment FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT temporary UNION ALL "
        "SELECT view_name, 'view', comment FROM duckdb_views() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT temporary AND NOT internal ORDER BY kind, 1"
    ).fetchall()
    out = []
    for name, kind, comment in objects:
        cols = con.execute(
            "SELECT column_name, data_type, coalesce(comment, '') FROM duckdb_columns() "
            "WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ? "
            "ORDER BY column_index",
            [name],
        ).fetchall()
        out.append((name, kind, comment, [(c, t, m) for c, t, m in cols]))
    return out


_INTRO = """# The warehouse: tables, views and columns

Generated from the comments stored in the warehouse file (`python -m toolkit.warehouse.write_dictionary`); do not
edit by
hand. The same text is in the file: `select table_name, column_name, comment from duckdb_columns()`,
`chainops sql "describe operations"`, or the column list of DBeaver.

Every timestamp is `TIMESTAMPTZ` in UTC. Ids, chain selectors and wei amounts are text (exact). Query the views
`operation_transitions`, `operation_lifecycle` and `query_lifecycle`, not the `model_*` objects (the sync's
internal materialisation, exact through the views whether or not a refresh has run).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(dictionary: list[tuple[str, str, str | None, list[tuple[str, str, str]]]]) -> str:
    """The Markdown document of :func:`read_dictionary`'s result."""
    parts = [_INTRO, "\n## Contents\n"]
    for kind, title in (("table", "Tables"), ("view", "Views")):
        names = [f"[`{n}`](#{n})" for n, k, _, _ in dictionary if k == kind]
        parts.append(f"- {title}: {', '.join(names)}\n")
    for name, kind, comment, columns in dictionary:
        parts.append(f"\n## {name}\n\n{kind.capitalize()}. {_cell(comment or '')}\n\n")
        parts.append("| column | type | meaning |\n|---|---|---|\n")
        parts.extend(f"| `{c}` | {_cell(t)} | {_cell(m)} |\n" for c, t, m in columns)
    return "".join(parts)


__all__ = [
    "OBJECT_COMMENTS",
    "VIEW_COLUMNS",
    "VIEW_COMMENTS",
    "apply_comments",
    "column_comment",
    "read_dictionary",
]
