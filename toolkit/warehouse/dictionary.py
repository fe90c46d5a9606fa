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

import tempfile
from pathlib import Path

import duckdb

from .. import spec

UTC = "TIMESTAMPTZ, UTC"

#: What a column means wherever it appears, unless its table says otherwise (:data:`COLUMNS`).
COMMON: dict[str, str] = {
    "channel_id": "The channel's id (UUID, text), from the service.",
    "chain_selector": "The network's chain selector (decimal text: selectors exceed signed 64 bits); join networks "
    "on it for the name.",
    "network": "The network's name from networks (the chain selector when networks does not know it).",
    "address": "The contract or account address (0x-prefixed hex, as the service sent it).",
    "operation_id": "The operation's id (UUID, text), from the service.",
    "query_id": "The chain query's id (UUID, text), from the service.",
    "watcher_id": "The watcher's id (UUID, text), from the service.",
    "wallet_id": "The wallet's id (UUID, text), from the service.",
    "name": "Name given in the service.",
    "description": "Description given in the service.",
    "status": "Status as the service reports it (an unknown value is kept as text).",
    "status_reason": "The service's reason for the status (free text; empty when none).",
    "created_at": f"When the service created the record ({UTC}; from its unix seconds).",
    "updated_at": f"When the service last changed the record ({UTC}).",
    "extra": "Fields of the service's record that this toolkit version does not know, as JSON (NULL when none).",
    "synced_at": f"When a sync last wrote this row ({UTC}; the start of that sync's transaction).",
    "write_seq": "The number of the transaction that last wrote this row: increases with every writing transaction, "
    "whatever the clock does (the sync decides with it which rows are new, never with synced_at).",
    "workflow_id": "The service's workflow id that handles the record (text).",
    "workflow_execution_id": "The service's workflow execution id (text).",
    "event_hash": "Hash of the on-chain event or answer (hex text), from the service.",
    "entered_at": f"When the status was first entered ({UTC}; payload time of its operation.status event).",
    "exited_at": f"When the next status was entered ({UTC}); NULL for the last status entered.",
    "next_status": "The status entered after this one; NULL for the last status entered.",
    "seconds_in_status": "Seconds from entering this status to entering the next; NULL for the last status "
    "(terminal, or still in it).",
    "seconds_since_created": "Seconds from the operation's creation to entering this status.",
    "stage_rank": "The status's position in the operation lifecycle (toolkit.spec order: pending_signature = 0 ... "
    "expired); unknown statuses rank after every known one.",
    "last_status": "The last status the operation entered, by its events (else the operations record's status).",
    "last_status_at": f"When last_status was entered ({UTC}).",
    "current_status": "The status on the operations record as last listed or patched from events.",
    "terminal_status": "The terminal status reached (confirmed, failed, cancelled, expired; for queries completed, "
    "failed, expired); NULL while in flight.",
    "terminal_at": f"When the terminal status was entered ({UTC}); NULL while in flight.",
    "query_kind": "What the query asks the chain (the service's query type, text).",
}

_OP_AT = {
    f"{s}_at": f"When the operation first entered {s} ({UTC}; from operation.status events); NULL if it never did."
    for s in spec.OPERATION_STATUSES
}
_QUERY_AT = {
    f"{s}_at": f"When the query entered {s} ({UTC}; from the record, else from query.status events); NULL if never."
    for s in spec.QUERY_STATUSES
}

#: One sentence per table and view: what one row is and where it comes from.
TABLES: dict[str, str] = {
    "chainops_meta": "The marker that makes the file a chainops warehouse: key/value rows (format, schema_version; "
    "made_by for a demo's warehouse). Written by the toolkit.",
    "networks": "One row per network the service supports (GET /networks), upserted by chain_selector.",
    "channels": "One row per channel of the organisation, archived ones too (GET /channels), by channel_id.",
    "wallets": "One row per wallet of the organisation (GET /wallets), by wallet_id.",
    "watchers": "One row per watcher of each channel (GET /channels/{id}/watchers), by watcher_id.",
    "operations": "One row per operation (GET /channels/{id}/operations), by operation_id; statuses patched from "
    "operation.status events between listings. Key kept unique by the loader (no PRIMARY KEY constraint).",
    "operation_transactions": "One row per transaction of an operation, by (operation_id, idx); from the operation "
    "record's transactions.",
    "queries": "One row per chain query (GET /channels/{id}/queries), by query_id; statuses patched from "
    "query.status events between listings.",
    "events": "One row per event of every channel's event log (GET /channels/{id}/events), by event_id; the payload "
    "kept verbatim.",
    "sync_state": "One row per sync stream: its saved cursor, written in the same transaction as the rows it covers.",
    "sync_runs": "One audit row per sync run: start, end, outcome, requests, rows written, gaps and messages.",
    "sync_refetch": "Records events named that the warehouse lacks (or holds incompletely): the next sync fetches "
    "them one by one, then deletes the row. Internal to the sync.",
    "event_verifications": "One row per proof-bearing event verified by chainops verify (or sync --verify), by "
    "event_id: the verdict of its DON proof by the official SDK's rules, and against which signer set, minimum and "
    "workflow owner. A change of any of them, or of the event, re-verifies.",
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
}

_TRANSITIONS: dict[str, str] = {"status": "The status entered (an unknown value is kept as text)."}
_LIFECYCLE: dict[str, str] = {
    **_OP_AT,
    "created_at": f"When the service created the operation ({UTC}).",
    "status_reason": "The reason the service gave with the last status (free text).",
}
_LIFECYCLE_MODEL = {
    **_LIFECYCLE,
    "record_hash": "Fingerprint of the operations record's fields the model uses, so a record stored again "
    "unchanged leaves the model row fresh (internal).",
}

#: Columns whose meaning is particular to their table (everything else comes from :data:`COMMON`).
COLUMNS: dict[str, dict[str, str]] = {
    "chainops_meta": {"key": "Marker key: format, schema_version or made_by.", "value": "Marker value (text)."},
    "networks": {
        "network_id": "The service's id of the network (text).",
        "name": "The network's display name (for example Ethereum Mainnet).",
        "chain_id": "The chain's own id (EVM chain id, as text).",
        "chain_family": "The chain family (for example evm).",
        "network_type": "mainnet or testnet; decides whether operations may stop at confirmed_latest.",
    },
    "channels": {"status": f"The channel's status ({', '.join(spec.CHANNEL_STATUSES)})."},
    "wallets": {
        "address": "The wallet's on-chain address (0x-prefixed hex).",
        "wallet_owner_address": "The address that owns the wallet (0x-prefixed hex).",
        "wallet_type": "The wallet's type, as the service names it.",
        "status": f"The wallet's status ({', '.join(spec.WALLET_STATUSES)}).",
        "status_channel_id": "The channel that receives the wallet's status events.",
        "configuration": "The wallet's configuration object, as JSON.",
    },
    "watchers": {
        "status": f"The watcher's status ({', '.join(spec.WATCHER_STATUSES)}).",
        "address": "The watched contract's address (0x-prefixed hex).",
        "service": "The watcher's service (what it watches for), as the service names it.",
        "event_names": "The contract event names watched, as a JSON array.",
        "don_family": "The DON family that signs the watcher's events.",
    },
    "operations": {
        "status": f"The operation's status ({', '.join(spec.OPERATION_STATUSES)}; unknown values kept as text).",
        "address": "The account or contract the operation acts for (0x-prefixed hex).",
        "wallet_operation_id": "The wallet's operation number (decimal text, up to 78 digits).",
        "deadline": "The operation's deadline as the service sent it (unix seconds, UTC).",
        "deadline_at": f"The deadline as a time ({UTC}).",
        "transaction_count": "How many transactions the operation carries (see operation_transactions).",
        "signature": "The operation's signature (hex text); NULL until signed.",
        "digest": "The digest that was signed (hex text).",
        "initiator": "Who created the operation, as JSON.",
        "signer": "Who signed it, as JSON; NULL until signed.",
        "canceller": "Who cancelled it, as JSON; NULL unless cancelled.",
        "signed_at": f"When it was signed ({UTC}); NULL until signed.",
        "cancelled_at": f"When it was cancelled ({UTC}); NULL unless cancelled.",
        "confirmed_at": f"When it was confirmed ({UTC}) according to the record; NULL until confirmed.",
        "operation_writer_workflow_id": "The service's writer workflow id (text).",
        "operation_writer_workflow_execution_id": "The service's writer workflow execution id (text).",
        "operation_status_workflow_id": "The service's status workflow id (text).",
        "operation_status_workflow_execution_id": "The service's status workflow execution id (text).",
    },
    "operation_transactions": {
        "idx": "Position of the transaction in the operation (0-based).",
        "to_address": "The transaction's destination address (0x-prefixed hex; the service's field `to`).",
        "value": "Value sent, in wei, as exact decimal text.",
        "data_size": "Size of the calldata in bytes.",
        "selector": "The calldata's 4-byte function selector (0x-prefixed hex); NULL without calldata.",
        "function_signature": "The called function's signature from the service's preview (for example "
        "transfer(address,uint256)); NULL when the service gave none.",
        "extra": "Fields of the transaction that this toolkit version does not know, as JSON (NULL when none).",
    },
    "queries": {
        "status": f"The query's status ({', '.join(spec.QUERY_STATUSES)}; unknown values kept as text).",
        "target": "The contract address the query reads (0x-prefixed hex text), the service's string `target` "
        "(API 0.8); from a service that sent an object, its contract_address (the object is kept in extra.target).",
        "extra": "Fields of the query that this toolkit version does not know, as JSON (NULL when none); an object "
        "`target` (before API 0.8) is kept whole under extra.target.",
        "has_proof": "Whether the answer carried DON proofs.",
        "expires_at": f"When the query's time-to-live ends ({UTC}).",
        **_QUERY_AT,
    },
    "events": {
        "event_id": "The event's id (UUID, text), unique across the organisation.",
        "type": "The event type (for example operation.status, query.status, watcher.event, wallet.status).",
        "offset": "The event's message offset in its channel's log (headers.offset; contiguous per channel).",
        "ts": f"The event's time ({UTC}; the payload's timestamp).",
        "status": "The status the event reports, for status events; NULL otherwise.",
        "status_reason": "The reason given with the status (free text); NULL when none.",
        "subject_id": "The id of the resource the event is about (operation, query, watcher or wallet).",
        "operation_id": "The operation's id for operation events; NULL otherwise.",
        "query_id": "The query's id for query events; NULL otherwise.",
        "watcher_id": "The watcher's id for watcher events; NULL otherwise.",
        "wallet_id": "The wallet's id for wallet events; NULL otherwise.",
        "address": "The address in the payload (0x-prefixed hex); NULL when none.",
        "event_hash": "The event's hash (hex text) from its headers.",
        "proof_count": "How many DON proofs the event carries.",
        "signature_count": "How many signatures its proofs carry in all.",
        "proofs": "The event's DON proofs (headers.proofs), verbatim JSON text as the service sent it "
        "(ZSTD-compressed); NULL in rows synced before proofs were kept (chainops sync --full re-reads them).",
        "payload": "The event's payload, verbatim JSON text as the service sent it (ZSTD-compressed).",
        "extra": "Header fields this toolkit version does not know, as JSON text (NULL when none).",
    },
    "sync_state": {
        "stream": (
            "The sync stream (for example events:<channel_id>, operations:<channel_id>, models; "
            "events_window:<channel_id> for a channel's event window, events_window for the warehouse's default)."
        ),
        "cursor": "The stream's saved position, as JSON (an offset, a list position, a watermark).",
        "updated_at": f"When the cursor was last saved ({UTC}).",
    },
    "sync_runs": {
        "run_id": "The run's id (UUID, text).",
        "started_at": f"When the run started ({UTC}).",
        "finished_at": f"When it ended ({UTC}); NULL while running or if killed.",
        "outcome": "ok, partial, failed or interrupted; NULL while running or if killed.",
        "base_url": "The service's base URL the run read (never the key).",
        "full_sync": "Whether the run ignored the saved cursors (--full).",
        "requests": "HTTP requests sent.",
        "retries": "Requests retried (429, 5xx, timeouts).",
        "rows_written": "Rows new and updated per table, as JSON ({table: {new, updated}}).",
        "rejected": "Records refused (no usable key); described in message.",
        "gaps": "Event offsets still missing after a re-read, per channel, as JSON.",
        "message": "What went wrong or was rejected, with the requests that brought it; NULL when nothing.",
        "event_window": (
            "The event window asked for (--since, --event-type) and each windowed channel's window after the run "
            "(held: since and types, read_to, poll_from, walks left), as JSON; NULL when every channel is read whole."
        ),
    },
    "event_verifications": {
        "event_id": "The verified event's id (events.event_id).",
        "verdict": "verified, invalid, or missing_proof (an event that must carry a DON proof carries none).",
        "reason": "The rule that failed, short and specific (for example 'workflow owner 0x... is not the expected "
        "one'); NULL when verified.",
        "valid_signers": "Distinct trusted signers recovered from the proof's signatures.",
        "event_hash_matches": "Whether the payload's own event_hash (not signed; the SDK ignores it) equals the "
        "hash of its verifiable text; NULL when the payload has none or the proof was not read that far.",
        "checked_at": f"When the event was verified ({UTC}).",
        "signers": "The trusted signer set it was verified against: sorted addresses, comma-separated.",
        "min_signatures": "The minimum of distinct trusted signers it was verified against.",
        "workflow_owner": "The workflow owner the report had to carry (0x hex).",
        "event_write_seq": "events.write_seq of the event row verified (a re-synced event is verified again).",
    },
    "sync_refetch": {
        "kind": "What to fetch: operation, query, watcher or wallet.",
        "id": "The record's id.",
        "channel_id": "The channel it belongs to.",
    },
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
    "model_stale_operations": {
        "new_events": "Whether new events arrived for it (else only its operations record was stored again).",
    },
    "query_lifecycle": {
        **_QUERY_AT,
        "status": "The query's status: the record's, or a terminal status its events reached first.",
        "late_answer": "Whether an answer (completed) came after the query had expired; such a query is expired.",
        "seconds_accepted_to_terminal": "Seconds from accepted to the terminal status; NULL while in flight.",
    },
}


def column_comment(table: str, column: str) -> str | None:
    """The comment of ``table.column``: the table's own, else the common one; None when there is none."""
    return COLUMNS.get(table, {}).get(column) or COMMON.get(column)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


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
        wanted = TABLES.get(name)
        if wanted is not None and comment != wanted:
            statements.append(f"COMMENT ON {kind} {_quote(name)} IS {_literal(wanted)}")
    for table, column, comment in columns:
        wanted = column_comment(table, column) if table in TABLES else None
        if wanted is not None and comment != wanted:
            statements.append(f"COMMENT ON COLUMN {_quote(table)}.{_quote(column)} IS {_literal(wanted)}")
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


def build_document() -> str:
    """The Markdown dictionary of a new, empty warehouse made by this version (created in a temporary directory)."""
    from .store import Warehouse

    with tempfile.TemporaryDirectory() as tmp, Warehouse(Path(tmp) / "dictionary.duckdb") as wh:
        dictionary = read_dictionary(wh.con)
    return render_markdown(dictionary)


__all__ = ["COLUMNS", "COMMON", "TABLES", "apply_comments", "build_document", "column_comment", "read_dictionary"]
