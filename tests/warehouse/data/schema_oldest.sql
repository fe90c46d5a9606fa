-- The DDL of toolkit/warehouse/sql/schema.sql at commit d5e1139^ (before the large tables lost their PRIMARY KEYs,
-- queries.target became text, and write_seq, sync_runs.event_window, events.proofs and chainops_meta existed):
-- the oldest warehouse shape tests/warehouse/test_migrations.py upgrades. Frozen: never edit.

-- Raw tables: one row per resource, upserted by primary key. Timestamps are TIMESTAMPTZ (UTC) from unix seconds.
-- Ids, chain selectors and wei amounts are text (exact; selectors exceed signed 64 bits). Unknown fields of a
-- record are kept in `extra` (JSON); `synced_at` is when this row was last written by a sync.

CREATE TABLE IF NOT EXISTS networks (
    chain_selector VARCHAR PRIMARY KEY,
    network_id VARCHAR,
    name VARCHAR,
    chain_id VARCHAR,
    chain_family VARCHAR,
    network_type VARCHAR,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    extra JSON,
    synced_at TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS channels (
    channel_id VARCHAR PRIMARY KEY,
    name VARCHAR,
    description VARCHAR,
    status VARCHAR,
    created_at TIMESTAMPTZ,
    extra JSON,
    synced_at TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS wallets (
    wallet_id VARCHAR PRIMARY KEY,
    name VARCHAR,
    description VARCHAR,
    address VARCHAR,
    wallet_owner_address VARCHAR,
    chain_selector VARCHAR,
    wallet_type VARCHAR,
    status VARCHAR,
    status_channel_id VARCHAR,
    configuration JSON,
    created_at TIMESTAMPTZ,
    extra JSON,
    synced_at TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS watchers (
    watcher_id VARCHAR PRIMARY KEY,
    channel_id VARCHAR,
    name VARCHAR,
    status VARCHAR,
    chain_selector VARCHAR,
    address VARCHAR,
    service VARCHAR,
    event_names JSON,
    don_family VARCHAR,
    workflow_id VARCHAR,
    created_at TIMESTAMPTZ,
    extra JSON,
    synced_at TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS operations (
    operation_id VARCHAR PRIMARY KEY,
    channel_id VARCHAR,
    status VARCHAR,
    chain_selector VARCHAR,
    address VARCHAR,
    wallet_operation_id VARCHAR,
    deadline BIGINT,
    deadline_at TIMESTAMPTZ,
    transaction_count INTEGER,
    signature VARCHAR,
    digest VARCHAR,
    initiator JSON,
    signer JSON,
    canceller JSON,
    signed_at TIMESTAMPTZ,
    cancelled_at TIMESTAMPTZ,
    confirmed_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    operation_writer_workflow_id VARCHAR,
    operation_writer_workflow_execution_id VARCHAR,
    operation_status_workflow_id VARCHAR,
    operation_status_workflow_execution_id VARCHAR,
    extra JSON,
    synced_at TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS operation_transactions (
    operation_id VARCHAR,
    idx INTEGER,
    to_address VARCHAR,
    value VARCHAR,
    data_size INTEGER,
    selector VARCHAR,
    function_signature VARCHAR,
    extra JSON,
    PRIMARY KEY (operation_id, idx)
);

CREATE TABLE IF NOT EXISTS queries (
    query_id VARCHAR PRIMARY KEY,
    channel_id VARCHAR,
    status VARCHAR,
    query_kind VARCHAR,
    chain_selector VARCHAR,
    target JSON,
    event_hash VARCHAR,
    has_proof BOOLEAN,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    expires_at TIMESTAMPTZ,
    accepted_at TIMESTAMPTZ,
    sending_at TIMESTAMPTZ,
    sent_at TIMESTAMPTZ,
    completed_at TIMESTAMPTZ,
    failed_at TIMESTAMPTZ,
    expired_at TIMESTAMPTZ,
    workflow_id VARCHAR,
    workflow_execution_id VARCHAR,
    extra JSON,
    synced_at TIMESTAMPTZ
);

-- events: event_id is the key, kept unique by the loader (each batch is deduplicated, and rows with the batch's ids
-- are deleted before it is inserted, in one transaction). It is not a PRIMARY KEY constraint on purpose: DuckDB keeps
-- such an index in memory, which for millions of events costs more than the whole rest of a sync.
CREATE TABLE IF NOT EXISTS events (
    event_id VARCHAR,
    channel_id VARCHAR,
    type VARCHAR,
    "offset" BIGINT,
    ts TIMESTAMPTZ,
    status VARCHAR,
    status_reason VARCHAR,
    subject_id VARCHAR,
    operation_id VARCHAR,
    query_id VARCHAR,
    watcher_id VARCHAR,
    wallet_id VARCHAR,
    chain_selector VARCHAR,
    address VARCHAR,
    event_hash VARCHAR,
    proof_count INTEGER,
    signature_count INTEGER,
    -- JSON text kept as VARCHAR on this high-volume table: DuckDB's JSON functions and ->> read it the same,
    -- and loading skips a second validation of every payload (about 20% of the insert time)
    payload VARCHAR USING COMPRESSION zstd,
    extra VARCHAR,
    synced_at TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS sync_state (
    stream VARCHAR PRIMARY KEY,
    cursor JSON,
    updated_at TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS sync_runs (
    run_id VARCHAR PRIMARY KEY,
    started_at TIMESTAMPTZ,
    finished_at TIMESTAMPTZ,
    outcome VARCHAR,
    base_url VARCHAR,
    full_sync BOOLEAN,
    requests BIGINT,
    retries BIGINT,
    rows_written JSON,
    rejected BIGINT,
    gaps JSON,
    message VARCHAR
);

-- Records the loaders must fetch one by one: seen in events but not (or not fully) in the warehouse yet.
CREATE TABLE IF NOT EXISTS sync_refetch (
    kind VARCHAR,
    channel_id VARCHAR,
    id VARCHAR,
    PRIMARY KEY (kind, id)
);
