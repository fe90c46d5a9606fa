"""The warehouse's tables, declared once: every column with its type and its documentation.

Each table is a :class:`TableSpec`: its columns (name, kind, the DuckDB type when it is not the kind's, the wire
field it reads and, for raw tables, how a record gives its value), its key, and the sentence that says what one row
is. From these declarations come

- the DDL (:func:`schema_sql`, ``CREATE TABLE IF NOT EXISTS`` of every table, in :data:`ALL_TABLES` order);
- the Arrow schema of a converted batch (:attr:`TableSpec.schema`; :mod:`toolkit.warehouse.arrow` converts records);
- the data dictionary's comments on the tables and their columns (:func:`table_doc`, :func:`column_doc`;
  :mod:`toolkit.warehouse.dictionary` writes them into the file and docs/warehouse.md, and adds the views').

What the tables hold: one row per resource, upserted by key. Timestamps are TIMESTAMPTZ (UTC) from unix seconds.
Ids, chain selectors and wei amounts are text (exact; selectors exceed signed 64 bits). Unknown fields of a record
are kept in ``extra`` (JSON); ``synced_at`` is when this row was last written by a sync, ``write_seq`` the number of
the transaction that wrote it (increasing whatever the clock does: :mod:`toolkit.warehouse.write_seq`).

``operations``, ``operation_transactions``, ``queries`` and ``events`` carry no PRIMARY KEY constraint, on purpose:
the loader keeps their key unique (each batch is deduplicated, and rows with the batch's keys are deleted before it
is inserted, in one transaction). DuckDB holds such an index in memory while rows are upserted, and over a long
history it outgrows a sync's memory ceiling (a first sync of 3.5M events ran out of memory in the operations pass).
Warehouses made while the first three had their keys lose them when first opened for writing (the migration
``drop_primary_keys`` of :mod:`toolkit.warehouse.migrations`, which also brings every older shape up to this one).

The tables, their columns and the views are the PUBLIC CONTRACT (DESIGN.md): a fresh warehouse is held to a
snapshot of them (``tests/warehouse/test_schema_snapshot.py``), comments included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from .. import spec

Record = dict[str, Any]
#: The Arrow type of a timestamp column (microseconds, UTC).
TIMESTAMP = pa.timestamp("us", tz="UTC")
UTC = "TIMESTAMPTZ, UTC"

#: The DuckDB type of each column kind, unless the column names its own (:attr:`Column.sql`).
SQL_TYPES = {"text": "VARCHAR", "ts": "TIMESTAMPTZ", "int": "BIGINT", "bool": "BOOLEAN", "json": "JSON"}
#: The Arrow type of each column kind in a converted batch (JSON travels as text).
ARROW_TYPES = {"text": pa.string(), "ts": TIMESTAMP, "int": pa.int64(), "bool": pa.bool_(), "json": pa.string()}

# ---- what a column means wherever it appears ----------------------------------------------------------------------

#: What a column means wherever it appears (tables and views), unless it says otherwise (:attr:`Column.doc`).
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

#: When an operation first entered each status (the lifecycle views' and models' columns).
OPERATION_ENTERED_AT = {
    f"{s}_at": f"When the operation first entered {s} ({UTC}; from operation.status events); NULL if it never did."
    for s in spec.OPERATION_STATUSES
}
#: When a query entered each status (queries' and query_lifecycle's columns).
QUERY_ENTERED_AT = {
    f"{s}_at": f"When the query entered {s} ({UTC}; from the record, else from query.status events); NULL if never."
    for s in spec.QUERY_STATUSES
}


# ---- declarations -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One warehouse column: its name, kind, the wire field it reads, how to get it from a record, its DuckDB type
    when not the kind's, and what it means (None: its :data:`COMMON` meaning)."""

    name: str
    kind: str  # text | ts | int | bool | json
    source: str | None = None  # wire field name when it differs from `name`
    getter: Callable[[Record], Any] | None = None  # for nested or derived values
    #: The DuckDB column type when it is not the kind's (:data:`SQL_TYPES`).
    sql: str | None = None
    #: The column's comment in the data dictionary; None: :data:`COMMON`'s for its name.
    doc: str | None = None

    @property
    def field(self) -> str:
        """The wire field the column reads."""
        return self.source or self.name


@dataclass(frozen=True)
class TableSpec:
    """One warehouse table, declared once: its columns and key, how records of one resource become its rows (Arrow),
    what its DDL holds, and what one row is (its comment)."""

    name: str
    key: tuple[str, ...]
    columns: tuple[Column, ...]
    #: Wire fields read by the columns (anything else is "extra").
    consumed: frozenset[str]
    #: Consumed fields whose column holds text taken from an object value: such an object is also kept whole in
    #: ``extra`` under the field's name (a query's ``target`` before 0.8).
    object_fields: frozenset[str] = frozenset()
    #: The key is a PRIMARY KEY constraint; otherwise the loader keeps it unique (see the module's docstring).
    primary_key: bool = False
    #: A warehouse made before may still hold a PRIMARY KEY on this loader-keyed table (dropped when opened to write).
    had_primary_key: bool = False
    #: The DuckDB type of the trailing ``extra`` column (unknown fields, JSON text); None: the table has none.
    extra_sql: str | None = "JSON"
    #: The table ends with ``synced_at`` (when a sync last wrote the row) and ``write_seq`` (by which transaction),
    #: set by the writer, not by the conversion.
    synced_at: bool = True
    #: What one row is and where it comes from (the table's comment).
    doc: str = ""
    #: The ``extra`` column's comment when it is not :data:`COMMON`'s.
    extra_doc: str | None = None

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of a converted batch: the columns, then ``extra`` (``synced_at`` is the writer's)."""
        fields = [pa.field(c.name, ARROW_TYPES[c.kind]) for c in self.columns]
        if self.extra_sql is not None:
            fields.append(pa.field("extra", pa.string()))
        return pa.schema(fields)

    def column_names(self) -> list[str]:
        """Every column of the table as created, in order (with ``extra``, ``synced_at`` and ``write_seq``)."""
        names = [c.name for c in self.columns]
        names += ["extra"] * (self.extra_sql is not None) + ["synced_at", "write_seq"] * self.synced_at
        return names


def _table(
    name: str,
    key: tuple[str, ...],
    columns: Sequence[Column],
    also_consumed: Iterable[str] = (),
    object_fields: Iterable[str] = (),
    **more: Any,
) -> TableSpec:
    """A raw table (records of one resource become its rows)."""
    consumed = frozenset(c.field for c in columns if c.getter is None) | frozenset(also_consumed)
    return TableSpec(name, key, tuple(columns), consumed | frozenset(object_fields), frozenset(object_fields), **more)


def _t(name: str, source: str | None = None, doc: str | None = None) -> Column:
    return Column(name, "text", source, doc=doc)


def _ts(name: str, source: str | None = None, doc: str | None = None) -> Column:
    return Column(name, "ts", source, doc=doc)


def _j(name: str, source: str | None = None, doc: str | None = None) -> Column:
    return Column(name, "json", source, doc=doc)


def _i(name: str, source: str | None = None, doc: str | None = None) -> Column:
    return Column(name, "int", source, doc=doc)


def _statuses(what: str, values: Iterable[str], unknown: bool = False) -> str:
    return f"The {what}'s status ({', '.join(values)}{'; unknown values kept as text' if unknown else ''})."


# ---- raw tables: records of the service ---------------------------------------------------------------------------

NETWORKS = _table(
    "networks",
    ("chain_selector",),
    [
        _t("chain_selector"),
        _t("network_id", "id", doc="The service's id of the network (text)."),
        _t("name", doc="The network's display name (for example Ethereum Mainnet)."),
        _t("chain_id", doc="The chain's own id (EVM chain id, as text)."),
        _t("chain_family", doc="The chain family (for example evm)."),
        # 0.8 names it `type` (ChainEnvironment); older answers may say `network_type`
        Column(
            "network_type",
            "text",
            getter=lambda r: r.get("type", r.get("network_type")),
            doc="mainnet or testnet; decides whether operations may stop at confirmed_latest.",
        ),
        _ts("created_at"),
        _ts("updated_at"),
    ],
    also_consumed={"type", "network_type"},
    primary_key=True,
    doc="One row per network the service supports (GET /networks), upserted by chain_selector.",
)

CHANNELS = _table(
    "channels",
    ("channel_id",),
    [
        _t("channel_id"),
        _t("name"),
        _t("description"),
        _t("status", doc=_statuses("channel", spec.CHANNEL_STATUSES)),
        _ts("created_at"),
    ],
    primary_key=True,
    doc="One row per channel of the organisation, archived ones too (GET /channels), by channel_id.",
)

WALLETS = _table(
    "wallets",
    ("wallet_id",),
    [
        _t("wallet_id"),
        _t("name"),
        _t("description"),
        _t("address", doc="The wallet's on-chain address (0x-prefixed hex)."),
        _t("wallet_owner_address", doc="The address that owns the wallet (0x-prefixed hex)."),
        _t("chain_selector"),
        _t("wallet_type", doc="The wallet's type, as the service names it."),
        _t("status", doc=_statuses("wallet", spec.WALLET_STATUSES)),
        _t("status_channel_id", doc="The channel that receives the wallet's status events."),
        _j("configuration", doc="The wallet's configuration object, as JSON."),
        _ts("created_at"),
    ],
    primary_key=True,
    doc="One row per wallet of the organisation (GET /wallets), by wallet_id.",
)

WATCHERS = _table(
    "watchers",
    ("watcher_id",),
    [
        _t("watcher_id"),
        _t("channel_id"),
        _t("name"),
        _t("status", doc=_statuses("watcher", spec.WATCHER_STATUSES)),
        _t("chain_selector"),
        _t("address", doc="The watched contract's address (0x-prefixed hex)."),
        _t("service", doc="The watcher's service (what it watches for), as the service names it."),
        _j("event_names", "events", doc="The contract event names watched, as a JSON array."),
        _t("don_family", doc="The DON family that signs the watcher's events."),
        _t("workflow_id"),
        _ts("created_at"),
    ],
    primary_key=True,
    doc="One row per watcher of each channel (GET /channels/{id}/watchers), by watcher_id.",
)


def _tx_count(record: Record) -> int | None:
    txs = record.get("transactions")
    return len(txs) if isinstance(txs, list) else None


OPERATIONS = _table(
    "operations",
    ("operation_id",),
    [
        _t("operation_id"),
        _t("channel_id"),
        _t("status", doc=_statuses("operation", spec.OPERATION_STATUSES, unknown=True)),
        _t("chain_selector"),
        _t("address", doc="The account or contract the operation acts for (0x-prefixed hex)."),
        _t("wallet_operation_id", doc="The wallet's operation number (decimal text, up to 78 digits)."),
        _i("deadline", doc="The operation's deadline as the service sent it (unix seconds, UTC)."),
        Column("deadline_at", "ts", getter=lambda r: r.get("deadline") or None, doc=f"The deadline as a time ({UTC})."),
        Column(
            "transaction_count",
            "int",
            getter=_tx_count,
            sql="INTEGER",
            doc="How many transactions the operation carries (see operation_transactions).",
        ),
        _t("signature", doc="The operation's signature (hex text); NULL until signed."),
        _t("digest", doc="The digest that was signed (hex text)."),
        _j("initiator", doc="Who created the operation, as JSON."),
        _j("signer", doc="Who signed it, as JSON; NULL until signed."),
        _j("canceller", doc="Who cancelled it, as JSON; NULL unless cancelled."),
        _ts("signed_at", doc=f"When it was signed ({UTC}); NULL until signed."),
        _ts("cancelled_at", doc=f"When it was cancelled ({UTC}); NULL unless cancelled."),
        _ts("confirmed_at", doc=f"When it was confirmed ({UTC}) according to the record; NULL until confirmed."),
        _ts("created_at"),
        _ts("updated_at"),
        _t("operation_writer_workflow_id", doc="The service's writer workflow id (text)."),
        _t("operation_writer_workflow_execution_id", doc="The service's writer workflow execution id (text)."),
        _t("operation_status_workflow_id", doc="The service's status workflow id (text)."),
        _t("operation_status_workflow_execution_id", doc="The service's status workflow execution id (text)."),
    ],
    also_consumed={"transactions"},
    had_primary_key=True,
    doc="One row per operation (GET /channels/{id}/operations), by operation_id; statuses patched from "
    "operation.status events between listings. Key kept unique by the loader (no PRIMARY KEY constraint).",
)


def _data_size(data: Any) -> int | None:
    if not isinstance(data, str):
        return None
    hexpart = data[2:] if data.startswith(("0x", "0X")) else data
    return len(hexpart) // 2


def _selector(data: Any) -> str | None:
    if not isinstance(data, str):
        return None
    hexpart = data[2:] if data.startswith(("0x", "0X")) else data
    return "0x" + hexpart[:8].lower() if len(hexpart) >= 8 else None


OPERATION_TRANSACTIONS = _table(
    "operation_transactions",
    ("operation_id", "idx"),
    [
        _t("operation_id"),
        Column("idx", "int", sql="INTEGER", doc="Position of the transaction in the operation (0-based)."),
        _t(
            "to_address", "to", doc="The transaction's destination address (0x-prefixed hex; the service's field `to`)."
        ),
        _t("value", doc="Value sent, in wei, as exact decimal text."),
        Column(
            "data_size",
            "int",
            getter=lambda r: _data_size(r.get("data")),
            sql="INTEGER",
            doc="Size of the calldata in bytes.",
        ),
        Column(
            "selector",
            "text",
            getter=lambda r: _selector(r.get("data")),
            doc="The calldata's 4-byte function selector (0x-prefixed hex); NULL without calldata.",
        ),
        Column(
            "function_signature",
            "text",
            getter=lambda r: (
                (r.get("preview_snapshot") or {}).get("function_signature")
                if isinstance(r.get("preview_snapshot"), dict)
                else None
            ),
            doc="The called function's signature from the service's preview (for example "
            "transfer(address,uint256)); NULL when the service gave none.",
        ),
    ],
    also_consumed={"data", "preview_snapshot"},
    synced_at=False,
    had_primary_key=True,
    doc="One row per transaction of an operation, by (operation_id, idx); from the operation record's transactions.",
    extra_doc="Fields of the transaction that this toolkit version does not know, as JSON (NULL when none).",
)


def _query_target(value: Any) -> Any:
    """A query's ``target`` as its column holds it: the contract address (0.8 sends the string; an older object
    gives its ``contract_address``). Any other value goes on to the text column's checks."""
    return spec.query_target_address(value) if isinstance(value, dict) else value


QUERIES = _table(
    "queries",
    ("query_id",),
    [
        _t("query_id"),
        _t("channel_id"),
        _t("status", doc=_statuses("query", spec.QUERY_STATUSES, unknown=True)),
        _t("query_kind"),
        _t("chain_selector"),
        Column(
            "target",
            "text",
            getter=lambda r: _query_target(r.get("target")),
            doc="The contract address the query reads (0x-prefixed hex text), the service's string `target` "
            "(API 0.8); from a service that sent an object, its contract_address (the object is kept in "
            "extra.target).",
        ),
        _t("event_hash"),
        Column(
            "has_proof", "bool", getter=lambda r: bool(r.get("proof")), doc="Whether the answer carried DON proofs."
        ),
        _ts("created_at"),
        _ts("updated_at"),
        _ts("expires_at", doc=f"When the query's time-to-live ends ({UTC})."),
        *(_ts(f"{s}_at", doc=QUERY_ENTERED_AT[f"{s}_at"]) for s in spec.QUERY_STATUSES),
        _t("workflow_id"),
        _t("workflow_execution_id"),
    ],
    also_consumed={"proof", "verifiable_result"},
    object_fields={"target"},
    had_primary_key=True,
    doc="One row per chain query (GET /channels/{id}/queries), by query_id; statuses patched from query.status "
    "events between listings.",
    extra_doc="Fields of the query that this toolkit version does not know, as JSON (NULL when none); an object "
    "`target` (before API 0.8) is kept whole under extra.target.",
)


# The events table is converted by its own module (event_batches.py, a fast and a careful path); these columns give
# its schema and the kind of each value. Nested wire fields are named by the column.
EVENTS = _table(
    "events",
    ("event_id",),
    [
        _t(
            "event_id",
            doc="The event's id (UUID, text), unique across the organisation; for an event sent without one, "
            "offset:<channel_id>:<offset>, made from where it was served.",
        ),
        _t("channel_id"),
        _t("type", doc="The event type (for example operation.status, query.status, watcher.event, wallet.status)."),
        _i("offset", doc="The event's message offset in its channel's log (headers.offset; contiguous per channel)."),
        _ts("ts", doc=f"The event's time ({UTC}; the payload's timestamp)."),
        _t("status", doc="The status the event reports, for status events; NULL otherwise."),
        _t("status_reason", doc="The reason given with the status (free text); NULL when none."),
        _t("subject_id", doc="The id of the resource the event is about (operation, query, watcher or wallet)."),
        _t("operation_id", doc="The operation's id for operation events; NULL otherwise."),
        _t("query_id", doc="The query's id for query events; NULL otherwise."),
        _t("watcher_id", doc="The watcher's id for watcher events; NULL otherwise."),
        _t("wallet_id", doc="The wallet's id for wallet events; NULL otherwise."),
        _t("chain_selector"),
        _t("address", doc="The address in the payload (0x-prefixed hex); NULL when none."),
        _t("event_hash", doc="The event's hash (hex text) from its headers."),
        Column("proof_count", "int", sql="INTEGER", doc="How many DON proofs the event carries."),
        Column("signature_count", "int", sql="INTEGER", doc="How many signatures its proofs carry in all."),
        # headers.proofs as sent (verified by toolkit.verify); JSON text as the payload, for the same reasons
        Column(
            "proofs",
            "json",
            sql="VARCHAR USING COMPRESSION zstd",
            doc="The event's DON proofs (headers.proofs), verbatim JSON text as the service sent it "
            "(ZSTD-compressed); NULL in rows synced before proofs were kept (chainops sync --full re-reads them).",
        ),
        # JSON text kept as VARCHAR on this high-volume table: DuckDB's JSON functions and ->> read it the same,
        # and loading skips a second validation of every payload (about 20% of the insert time)
        Column(
            "payload",
            "json",
            sql="VARCHAR USING COMPRESSION zstd",
            doc="The event's payload, verbatim JSON text as the service sent it (ZSTD-compressed).",
        ),
    ],
    extra_sql="VARCHAR",
    doc="One row per event of every channel's event log (GET /channels/{id}/events), by event_id; the payload kept "
    "verbatim.",
    extra_doc="Header fields this toolkit version does not know, as JSON text (NULL when none).",
)

#: The raw tables, into which the service's records are converted (:func:`toolkit.warehouse.batches.to_batch`).
RAW_TABLES: dict[str, TableSpec] = {
    t.name: t for t in (NETWORKS, CHANNELS, WALLETS, WATCHERS, OPERATIONS, OPERATION_TRANSACTIONS, QUERIES, EVENTS)
}


# ---- the sync's own tables ----------------------------------------------------------------------------------------


def _bookkeeping(name: str, key: tuple[str, ...], columns: list[Column], doc: str) -> TableSpec:
    return TableSpec(name, key, tuple(columns), frozenset(), primary_key=True, extra_sql=None, synced_at=False, doc=doc)


#: The sync's own tables: cursors, the audit of each run, proof verdicts, and records to fetch one by one.
BOOKKEEPING_TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        _bookkeeping(
            "sync_state",
            ("stream",),
            [
                Column(
                    "stream",
                    "text",
                    doc="The sync stream (for example events:<channel_id>, operations:<channel_id>, models; "
                    "events_window:<channel_id> for a channel's event window, events_window for the warehouse's "
                    "default).",
                ),
                Column(
                    "cursor",
                    "json",
                    doc="The stream's saved position, as JSON (an offset, a list position, a watermark).",
                ),
                Column("updated_at", "ts", doc=f"When the cursor was last saved ({UTC})."),
            ],
            doc="One row per sync stream: its saved cursor, written in the same transaction as the rows it covers.",
        ),
        _bookkeeping(
            "sync_runs",
            ("run_id",),
            [
                Column("run_id", "text", doc="The run's id (UUID, text)."),
                Column("started_at", "ts", doc=f"When the run started ({UTC})."),
                Column("finished_at", "ts", doc=f"When it ended ({UTC}); NULL while running or if killed."),
                Column("outcome", "text", doc="ok, partial, failed or interrupted; NULL while running or if killed."),
                Column("base_url", "text", doc="The service's base URL the run read (never the key)."),
                Column("full_sync", "bool", doc="Whether the run ignored the saved cursors (--full)."),
                Column("requests", "int", doc="HTTP requests sent."),
                Column("retries", "int", doc="Requests retried (429, 5xx, timeouts)."),
                Column(
                    "rows_written", "json", doc="Rows new and updated per table, as JSON ({table: {new, updated}})."
                ),
                Column("rejected", "int", doc="Records refused (no usable key); described in message."),
                Column("gaps", "json", doc="Event offsets still missing after a re-read, per channel, as JSON."),
                Column(
                    "message",
                    "text",
                    doc="What went wrong or was rejected, with the requests that brought it; NULL when nothing.",
                ),
                Column(
                    "event_window",
                    "json",
                    doc="The event window asked for (--since, --event-type) and each windowed channel's window after "
                    "the run (held: since and types, read_to, poll_from, walks left), as JSON; NULL when every channel "
                    "is read whole.",
                ),
                Column(
                    "models",
                    "json",
                    doc="The model tables' refresh at the end of the run, as JSON (operations recomputed, transitions "
                    "written, whether they were rebuilt, pieces, out-of-memory retries, the highest memory limit "
                    "used, seconds); NULL when it did not run.",
                ),
            ],
            doc="One audit row per sync run: start, end, outcome, requests, rows written, gaps and messages.",
        ),
        # The verdict of each proof-bearing event's DON proof (toolkit.verify), by event id.
        _bookkeeping(
            "event_verifications",
            ("event_id",),
            [
                Column("event_id", "text", doc="The verified event's id (events.event_id)."),
                Column(
                    "verdict",
                    "text",
                    doc="verified, invalid, or missing_proof (an event that owes a DON proof carries none; a query "
                    "failed in dispatch owes none).",
                ),
                Column(
                    "reason",
                    "text",
                    doc="The rule that failed, short and specific (for example 'workflow owner 0x... is not the "
                    "expected one'); NULL when verified.",
                ),
                Column(
                    "valid_signers",
                    "int",
                    sql="INTEGER",
                    doc="Distinct trusted signers recovered from the proof's signatures.",
                ),
                Column(
                    "event_hash_matches",
                    "bool",
                    doc="Whether the payload's own event_hash (not signed; the SDK ignores it) equals the hash of its "
                    "verifiable text; NULL when the payload has none or the proof was not read that far.",
                ),
                Column("checked_at", "ts", doc=f"When the event was verified ({UTC})."),
                Column(
                    "signers",
                    "text",
                    doc="The trusted signer set it was verified against: sorted addresses, comma-separated.",
                ),
                Column(
                    "min_signatures",
                    "int",
                    sql="INTEGER",
                    doc="The minimum of distinct trusted signers it was verified against.",
                ),
                Column(
                    "workflow_owner",
                    "text",
                    doc="The workflow owner the report had to carry (0x hex), followed by +workflow_execution_id when "
                    "the report's workflow execution id had to be the event's too (chainops verify --check-workflow).",
                ),
                Column(
                    "event_write_seq",
                    "int",
                    doc="events.write_seq of the event row verified (a re-synced event is verified again).",
                ),
            ],
            doc="One row per proof-bearing event verified by chainops verify (or sync --verify), by event_id: the "
            "verdict of its DON proof by the official SDK's rules, and against which signer set, minimum and "
            "workflow owner. A change of any of them, or of the event, re-verifies.",
        ),
        # Records events named that the warehouse lacks (or holds incompletely): the next sync fetches them.
        _bookkeeping(
            "sync_refetch",
            ("kind", "id"),
            [
                Column("kind", "text", doc="What to fetch: operation, query, watcher or wallet."),
                Column("channel_id", "text", doc="The channel it belongs to."),
                Column("id", "text", doc="The record's id."),
            ],
            doc="Records events named that the warehouse lacks (or holds incompletely): the next sync fetches them "
            "one by one, then deletes the row. Internal to the sync.",
        ),
    )
}

#: The marker that makes a file a chainops warehouse (:mod:`toolkit.warehouse.identity` writes its rows); also
#: where the migrations a warehouse has are recorded (:mod:`toolkit.warehouse.migrations`).
MARKER = _bookkeeping(
    "chainops_meta",
    ("key",),
    [
        Column(
            "key",
            "text",
            doc="Marker key: format, schema_version or made_by; demo_org_id and demo_signers (what a demo's proofs "
            "are verified against); migration:<name> for each schema migration the file has.",
        ),
        Column("value", "text", doc="Marker value (text); for a migration, when it was applied (ISO 8601, UTC)."),
    ],
    doc="The marker that makes the file a chainops warehouse: key/value rows (format, schema_version; made_by, "
    "demo_org_id and demo_signers for a demo's warehouse; the schema migrations applied). Written by the toolkit.",
)

#: Every table :func:`schema_sql` creates, in the order it creates them.
ALL_TABLES: dict[str, TableSpec] = {**RAW_TABLES, **BOOKKEEPING_TABLES}
#: Every declared table, the marker too: the tables the data dictionary documents from here.
DECLARED_TABLES: dict[str, TableSpec] = {**ALL_TABLES, MARKER.name: MARKER}

#: The large tables whose key the loader keeps unique and that an older warehouse may still hold a PRIMARY KEY on.
KEYLESS_TABLES: tuple[str, ...] = tuple(name for name, t in ALL_TABLES.items() if t.had_primary_key)
#: The tables whose rows carry ``write_seq`` (every raw table with ``synced_at``; see :mod:`.write_seq`).
WRITE_SEQ_TABLES: tuple[str, ...] = tuple(name for name, t in RAW_TABLES.items() if t.synced_at)


# ---- the DDL and the dictionary's text ----------------------------------------------------------------------------


def quote_identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier (a table's or column's name, double quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def create_table_sql(table: TableSpec) -> str:
    """The ``CREATE TABLE IF NOT EXISTS`` statement of one declared table."""
    lines = []
    for column in table.columns:
        line = f"{quote_identifier(column.name)} {column.sql or SQL_TYPES[column.kind]}"
        if table.primary_key and table.key == (column.name,):
            line += " PRIMARY KEY"
        lines.append(line)
    if table.extra_sql is not None:
        lines.append(f'"extra" {table.extra_sql}')
    if table.synced_at:
        lines.append('"synced_at" TIMESTAMPTZ')
        lines.append('"write_seq" BIGINT')  # see toolkit.warehouse.write_seq
    if table.primary_key and len(table.key) > 1:
        lines.append(f"PRIMARY KEY ({', '.join(quote_identifier(k) for k in table.key)})")
    body = ",\n    ".join(lines)
    return f"CREATE TABLE IF NOT EXISTS {quote_identifier(table.name)} (\n    {body}\n);"


def schema_sql() -> str:
    """Every table's ``CREATE TABLE IF NOT EXISTS``, one script (the marker's is :mod:`.identity`'s)."""
    return "\n\n".join(create_table_sql(t) for t in ALL_TABLES.values()) + "\n"


def table_doc(table: str) -> str | None:
    """The comment of a declared table; None for anything else."""
    declared = DECLARED_TABLES.get(table)
    return declared.doc if declared is not None else None


def column_doc(table: str, column: str) -> str | None:
    """The comment of a declared table's column: its own, else :data:`COMMON`'s; None for anything else."""
    declared = DECLARED_TABLES.get(table)
    if declared is None:
        return None
    if column == "extra" and declared.extra_doc is not None:
        return declared.extra_doc
    for c in declared.columns:
        if c.name == column:
            return c.doc or COMMON.get(column)
    return COMMON.get(column)
