"""Metrics benchmark: synthetic warehouses of 1M, 3M and 10M operation events; the models' refresh and every metric.

Run ``.venv/bin/python -m benchmarks.metrics_bench`` (about 15 minutes here at the three sizes with
``--skip-pandas``; ``--events 10000000`` for one size, ``--dir DIR --reuse`` to keep and reuse the generated
warehouses, ``--path PATH`` for one size's file). For each size it prints:

- ``refresh_models`` as a sync runs it (the models' memory limit and threads): the first build, a run with nothing
  new, and a run after a sync batch (the events of 5,000 recent operations again under new ids, and every in-flight
  operation record stored again unchanged, as the sync's re-list does), with its pieces and out-of-memory retries;
- per metric case (defaults, groupings, buckets, filters), each in a fresh process as a command runs it (a
  read-only warehouse under the reader's memory limit): the first and best warm call in seconds, the process's
  peak RSS and its growth during the calls, and the rows returned;
- unless ``--skip-pandas``, the seconds of a straightforward pandas implementation of the cases that have one (the
  columns it needs, every row, read into pandas, then filtered, deduplicated, windowed and aggregated in pandas),
  split into load and compute, and the ratios of the metric's first call to them;

and at the end the curve of cost against history: each case's first call and peak RSS at every size.

Not a timed test: it reports, it does not assert. The warehouse is generated straight into DuckDB (no HTTP):
operations on ten networks with per-network timing, drafts, failures with realistic reasons, test networks that stop
at ``confirmed_latest``, operations still in flight at the end and a few stuck ones, duplicates under new event
ids, events synced late (out of order), queries, watchers with their events and status history; every row carries
the ``write_seq`` of the hourly sync that would have stored it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from toolkit import spec
from toolkit.warehouse import Warehouse

T0 = 1_730_000_000
UNKNOWN_SELECTOR = "4444444444444444444"

# name -> (weight %, inclusion s (lo, hi), safe after inclusion (lo, hi) or None, final after inclusion, fail rate)
_NETWORK_TIMING: dict[str, tuple[int, tuple[int, int], tuple[int, int] | None, tuple[int, int] | None, float]] = {
    "Ethereum Mainnet": (20, (6, 30), (370, 430), (750, 840), 0.030),
    "Arbitrum One": (14, (1, 3), (150, 600), (900, 1200), 0.020),
    "Avalanche": (8, (1, 4), (0, 2), (0, 2), 0.015),
    "Polygon": (10, (2, 8), (30, 90), (1000, 1150), 0.040),
    "Base": (14, (2, 6), (60, 240), (900, 1200), 0.025),
    "Ethereum Sepolia": (10, (6, 40), None, None, 0.050),
    "Arbitrum Sepolia": (8, (1, 3), None, None, 0.045),
    "Avalanche Fuji": (5, (1, 4), None, None, 0.040),
    "Polygon Amoy": (5, (2, 8), None, None, 0.060),
    "Base Sepolia": (6, (2, 6), None, None, 0.045),
}
PRE_BROADCAST_FAILURES = (
    "nonce too low",
    "intrinsic gas too low",
    "insufficient funds for gas * price + value",
    "replacement transaction underpriced",
    "max fee per gas less than block base fee",
    "chain unavailable: RPC endpoint timeout",
)
ON_CHAIN_FAILURES = (
    "execution reverted: ERC20: transfer amount exceeds balance",
    "execution reverted: ERC20: insufficient allowance",
    "execution reverted: SafeERC20: low-level call failed",
    "execution reverted: Ownable: caller is not the owner",
    "out of gas",
    "execution reverted",
)
STAGE_REASONS = {
    "pending_signature": "draft created; awaiting signature",
    "accepted": "operation accepted for relay",
    "sending": "relayer picked up the operation",
    "sent": "transaction submitted to the mempool",
    "broadcasting": "awaiting block inclusion",
    "confirmed_latest": "included in block",
    "confirmed_safe": "block reached safe confidence",
    "confirmed": "block finalized",
    "cancelled": "draft cancelled",
    "expired": "deadline elapsed",
}
EVENTS_PER_OP = 6.18
GENERATOR_MEMORY = "6GB"  # measured average of the mix below (drafts, failures, test networks, duplicates)


def _uuid_sql(expr: str) -> str:
    """SQL for a UUID-shaped text made from the md5 of ``expr`` (deterministic ids)."""
    m = f"md5({expr})"
    return (
        f"substr({m}, 1, 8) || '-' || substr({m}, 9, 4) || '-4' || substr({m}, 14, 3) || '-8' || "
        f"substr({m}, 18, 3) || '-' || substr({m}, 21, 12)"
    )


def _u(k: int, key: str = "i") -> str:
    """SQL for a deterministic uniform number in [0, 1) from the row key and a stream number ``k``."""
    return f"((hash({key}, {k}, $seed) % 1000003) / 1000003.0)"


def _network_table(con: duckdb.DuckDBPyConnection) -> None:
    rows = []
    for idx, known in enumerate(spec.KNOWN_NETWORKS):
        weight, inc, safe, final, fail = _NETWORK_TIMING[known.name]
        rows.append(
            (
                idx,
                known.chain_selector,
                known.name,
                known.type,
                weight,
                *inc,
                *(safe or (None, None)),
                *(final or (None, None)),
                fail,
            )
        )
    con.execute("""CREATE OR REPLACE TEMP TABLE g_net (net INTEGER, chain_selector VARCHAR, name VARCHAR,
        net_type VARCHAR, weight INTEGER, inc_lo DOUBLE, inc_hi DOUBLE, safe_lo DOUBLE, safe_hi DOUBLE,
        fin_lo DOUBLE, fin_hi DOUBLE, fail DOUBLE)""")
    con.executemany("INSERT INTO g_net VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    picks = [r[0] for r in rows for _ in range(r[4])]
    con.execute(
        "CREATE OR REPLACE TEMP TABLE g_pick AS SELECT unnest(?::INTEGER[]) AS net, "
        "generate_subscripts(?::INTEGER[], 1) - 1 AS slot",
        [picks, picks],
    )


def _operations_plan(con: duckdb.DuckDBPyConnection, n_ops: int, span: int, seed: int) -> None:
    """One row per operation with the (fractional) time of every status it will reach, NULL when it will not."""
    con.execute(
        f"""
CREATE OR REPLACE TEMP TABLE g_ops AS
WITH base AS (
    SELECT i, $t0 + i * ($span / $n_ops) + {_u(1)} * 30 AS c,
        CASE WHEN {_u(2)} < 0.04 THEN 'draft_ok' WHEN {_u(2)} < 0.06 THEN 'draft_cancel'
             WHEN {_u(2)} < 0.08 THEN 'draft_expire' ELSE 'signed' END AS kind,
        CAST(floor({_u(3)} * 100) AS INTEGER) AS slot,
        {_u(4)} AS u_fail, {_u(5)} AS u_pre, {_u(6)} AS u_stuck, {_u(7)} AS u7, {_u(8)} AS u8, {_u(9)} AS u9,
        {_u(10)} AS u10, {_u(11)} AS u11, {_u(12)} AS u12, {_u(13)} AS u13, {_u(14)} AS u14,
        CAST(floor({_u(15)} * 20) AS INTEGER) AS channel, CAST(floor({_u(16)} * 400) AS INTEGER) AS wallet,
        CAST(floor({_u(17)} * 6) AS INTEGER) AS reason_idx
    FROM range($n_ops) r(i)
),
timed AS (
    SELECT b.*, n.chain_selector, n.fail, n.safe_lo IS NULL AS testnet,
        CASE WHEN b.u14 < 0.0005 THEN '{UNKNOWN_SELECTOR}' ELSE n.chain_selector END AS selector,
        b.u_fail < n.fail AS failing, b.u_pre < 0.4 AS pre_broadcast,
        CASE b.kind WHEN 'signed' THEN b.c WHEN 'draft_ok' THEN b.c + 30 + b.u7 * 3000 END AS t_acc,
        n.inc_lo + b.u11 * (n.inc_hi - n.inc_lo) AS inclusion,
        n.safe_lo + b.u12 * (n.safe_hi - n.safe_lo) AS safe,
        n.fin_lo + b.u13 * (n.fin_hi - n.fin_lo) AS final
    FROM base b JOIN g_pick p USING (slot) JOIN g_net n ON n.net = p.net
),
ladder AS (
    SELECT *,
        t_acc + 0.5 + u8 * 3.5 AS t_send,
        t_acc + 1 + u8 * 3.5 + u9 * 2.5 AS t_sent,
        t_acc + 1 + u8 * 3.5 + u9 * 2.5 + u10 * 2 AS t_bc
    FROM timed
)
SELECT i, c, kind, selector, testnet, channel, wallet, reason_idx, u_stuck,
    CASE WHEN kind LIKE 'draft%' THEN c END AS t_ps,
    t_acc,
    CASE WHEN kind = 'draft_cancel' THEN c + 10 + u7 * 600 END AS t_cancel,
    CASE WHEN kind = 'draft_expire' THEN c + 3600 END AS t_exp,
    t_send,
    CASE WHEN NOT (failing AND pre_broadcast) THEN t_sent END AS t_sent,
    CASE WHEN NOT (failing AND pre_broadcast) THEN t_bc END AS t_bc,
    CASE WHEN failing AND pre_broadcast THEN t_sent WHEN failing THEN t_bc + inclusion END AS t_fail,
    CASE WHEN NOT failing THEN t_bc + inclusion END AS t_latest,
    CASE WHEN NOT failing AND NOT testnet THEN t_bc + inclusion + safe END AS t_safe,
    CASE WHEN NOT failing AND NOT testnet THEN t_bc + inclusion + greatest(safe, final) END AS t_final,
    failing AND pre_broadcast AS pre_fail
FROM ladder
""",
        {"t0": T0, "span": span, "n_ops": n_ops, "seed": seed},
    )


def _operation_events(con: duckdb.DuckDBPyConnection, t_end: int, seed: int) -> None:
    """Unpivot the plan into ``operation.status`` rows; stuck operations stop early; nothing after ``t_end``."""
    reasons_pre = "[" + ", ".join(f"'{r}'" for r in PRE_BROADCAST_FAILURES) + "]"
    reasons_chain = "[" + ", ".join(f"'{r}'" for r in ON_CHAIN_FAILURES) + "]"
    stage_reason = "CASE s " + " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in STAGE_REASONS.items()) + " END"
    con.execute(
        f"""
CREATE OR REPLACE TEMP TABLE g_op_events AS
WITH moves AS (
    SELECT i, selector, channel, wallet, reason_idx, pre_fail, u_stuck,
        unnest([
            {{'s': 'pending_signature', 'r': 0, 't': t_ps}}, {{'s': 'accepted', 'r': 1, 't': t_acc}},
            {{'s': 'cancelled', 'r': 9, 't': t_cancel}}, {{'s': 'expired', 'r': 10, 't': t_exp}},
            {{'s': 'sending', 'r': 2, 't': t_send}}, {{'s': 'sent', 'r': 3, 't': t_sent}},
            {{'s': 'broadcasting', 'r': 4, 't': t_bc}}, {{'s': 'failed', 'r': 8, 't': t_fail}},
            {{'s': 'confirmed_latest', 'r': 5, 't': t_latest}}, {{'s': 'confirmed_safe', 'r': 6, 't': t_safe}},
            {{'s': 'confirmed', 'r': 7, 't': t_final}}
        ]) AS m
    FROM g_ops
),
kept AS (
    SELECT i, selector, channel, wallet, reason_idx, pre_fail, m.s AS status, m.r AS rank,
        CAST(floor(m.t) AS BIGINT) AS ts
    FROM moves
    WHERE m.t IS NOT NULL AND m.t <= $t_end
      -- 0.3% of operations get stuck after sending, sent or broadcasting and never move again
      AND NOT (u_stuck < 0.003 AND m.r > 2 + CAST(floor(u_stuck * 1000) AS INTEGER) AND m.r < 8)
)
SELECT i, selector, channel, wallet, status, rank, ts,
    CASE WHEN status = 'failed' AND pre_fail THEN {reasons_pre}[reason_idx + 1]
         WHEN status = 'failed' THEN {reasons_chain}[reason_idx + 1]
         ELSE {stage_reason.replace("CASE s", "CASE status")} END AS status_reason,
    0 AS dup
FROM kept
""",
        {"t_end": t_end},
    )
    # 1% of moves are delivered twice under another event id
    con.execute(
        f"INSERT INTO g_op_events SELECT i, selector, channel, wallet, status, rank, ts, status_reason, 1 "
        f"FROM g_op_events WHERE {_u(20, 'i * 16 + rank')} < 0.01",
        {"seed": seed},
    )


def _insert_operation_events(con: duckdb.DuckDBPyConnection, seed: int) -> None:
    op_id = _uuid_sql("'op-' || i")
    ev_id = _uuid_sql("'ev-' || i || '-' || rank || '-' || dup")
    channel_id = _uuid_sql("'channel-' || channel")
    address = "'0x' || md5('wallet-' || wallet) || substr(md5('w2-' || wallet), 1, 8)"
    payload = (
        f'\'{{"operation_id":"\' || {op_id} || \'","status":"\' || status || \'","status_reason":"\' || '
        f'status_reason || \'","wallet_operation_id":"\' || i || \'","address":"\' || {address} || '
        f'\'","chain_selector":"\' || selector || \'","timestamp":\' || ts || \'}}\''
    )
    proof = "status IN ('confirmed_latest', 'confirmed_safe', 'confirmed')"
    con.execute(
        f"""
INSERT INTO events BY NAME
SELECT {ev_id} AS event_id, {channel_id} AS channel_id, 'operation.status' AS type, to_timestamp(ts) AS ts,
    status, status_reason, {op_id} AS subject_id, {op_id} AS operation_id, selector AS chain_selector,
    {address} AS address,
    CASE WHEN {proof} THEN md5('hash-' || i || status) END AS event_hash,
    CASE WHEN {proof} AND {_u(21, "i * 16 + rank")} >= 0.003 THEN 1 ELSE 0 END AS proof_count,
    CASE WHEN {proof} AND {_u(21, "i * 16 + rank")} >= 0.003
         THEN CASE WHEN {_u(22, "i * 16 + rank")} < 0.002 THEN 3 ELSE 4 + CAST(floor({_u(23, "i * 16 + rank")} * 4)
              AS INTEGER) END END AS signature_count,
    {payload} AS payload,
    -- hourly syncs; 2% of events are synced a few hours late (stored out of order)
    date_trunc('hour', to_timestamp(ts)) + INTERVAL 1 HOUR
        + CASE WHEN dup = 1 OR {_u(24, "i * 16 + rank")} < 0.02 THEN INTERVAL 3 HOUR ELSE INTERVAL 0 HOUR END
        AS synced_at
FROM g_op_events
ORDER BY synced_at, channel_id, ts
""",
        {"seed": seed},
    )


def _insert_operations(con: duckdb.DuckDBPyConnection, t_end: int) -> None:
    con.execute(
        f"""
INSERT INTO operations BY NAME
WITH last AS (
    SELECT i, arg_max(status, (ts, rank)) AS status, max(ts) AS updated FROM g_op_events GROUP BY i
)
SELECT {_uuid_sql("'op-' || o.i")} AS operation_id, {_uuid_sql("'channel-' || o.channel")} AS channel_id,
    l.status, o.selector AS chain_selector, '0x' || md5('wallet-' || o.wallet) || substr(md5('w2-' || o.wallet), 1, 8)
        AS address,
    CAST(o.i AS VARCHAR) AS wallet_operation_id, CAST(floor(o.c) AS BIGINT) + 7200 AS deadline,
    to_timestamp(CAST(floor(o.c) AS BIGINT) + 7200) AS deadline_at, 1 AS transaction_count,
    to_timestamp(CAST(floor(o.c) AS BIGINT)) AS created_at, to_timestamp(l.updated) AS updated_at,
    least(to_timestamp(l.updated) + INTERVAL 1 HOUR, to_timestamp($t_end)) AS synced_at
FROM g_ops o JOIN last l USING (i)
""",
        {"t_end": t_end},
    )


def _insert_queries(con: duckdb.DuckDBPyConnection, n_queries: int, span: int, t_end: int, seed: int) -> None:
    con.execute(
        f"""
CREATE OR REPLACE TEMP TABLE g_q AS
WITH b AS (
    SELECT i, $t0 + i * ($span / $n) AS c, p.net, CAST(floor({_u(31)} * 20) AS INTEGER) AS channel,
        {_u(32)} AS roll, {_u(33)} AS u3, {_u(34)} AS u4, {_u(35)} AS u5
    FROM range($n) r(i) JOIN g_pick p ON p.slot = CAST(floor({_u(30)} * 100) AS INTEGER)
)
SELECT i, channel, n.chain_selector, c AS t_accepted, c + 0.2 + u3 * 1.8 AS t_sending,
    c + 0.7 + u3 * 1.8 + u4 * 2.5 AS t_sent,
    CASE WHEN roll >= 0.06 THEN c + 3.7 + u3 * 1.8 + u4 * 2.5 + u5 * 37 END AS t_completed,
    CASE WHEN roll >= 0.02 AND roll < 0.06 THEN c + 3.7 + u3 * 1.8 + u4 * 2.5 + u5 * 37 END AS t_failed,
    CASE WHEN roll < 0.02 THEN c + 300 END AS t_expired
FROM b JOIN g_net n USING (net)
""",
        {"t0": T0, "span": span, "n": n_queries, "seed": seed},
    )
    for s in ("completed", "failed", "expired"):
        con.execute(f"UPDATE g_q SET t_{s} = NULL WHERE t_{s} > ?", [t_end])
    qid = _uuid_sql("'q-' || i")
    ch = _uuid_sql("'channel-' || channel")
    ts = {s: f"to_timestamp(CAST(floor(t_{s}) AS BIGINT))" for s in spec.QUERY_STATUSES}
    status = "CASE " + " ".join(f"WHEN t_{s} IS NOT NULL THEN '{s}'" for s in reversed(spec.QUERY_STATUSES)) + " END"
    con.execute(f"""
INSERT INTO queries BY NAME
SELECT {qid} AS query_id, {ch} AS channel_id, {status} AS status, 'evm_call' AS query_kind, chain_selector,
    {ts["accepted"]} AS created_at, {", ".join(f"{v} AS {s}_at" for s, v in ts.items())},
    to_timestamp(CAST(floor(t_accepted) AS BIGINT) + 300) AS expires_at,
    to_timestamp(CAST(floor(t_accepted) AS BIGINT) + 400) AS synced_at
FROM g_q
""")
    moves = ", ".join(f"{{'s': '{s}', 't': t_{s}}}" for s in spec.QUERY_STATUSES)
    con.execute(
        f"""
INSERT INTO events BY NAME
WITH m AS (SELECT i, channel, chain_selector, unnest([{moves}]) AS m FROM g_q)
SELECT {_uuid_sql("'qev-' || i || m.s")} AS event_id, {ch} AS channel_id, 'query.status' AS type,
    to_timestamp(CAST(floor(m.t) AS BIGINT)) AS ts, m.s AS status, {qid} AS subject_id, {qid} AS query_id,
    chain_selector,
    CASE WHEN m.s IN ('completed', 'failed') THEN 1 ELSE 0 END AS proof_count,
    CASE WHEN m.s IN ('completed', 'failed') THEN 4 + CAST(floor({_u(36)} * 3) AS INTEGER) END AS signature_count,
    date_trunc('hour', to_timestamp(CAST(floor(m.t) AS BIGINT))) + INTERVAL 1 HOUR AS synced_at
FROM m WHERE m.t IS NOT NULL
""",
        {"seed": seed},
    )


def _insert_watchers(con: duckdb.DuckDBPyConnection, n_watcher_events: int, span: int, seed: int) -> None:
    con.execute(
        f"""
CREATE OR REPLACE TEMP TABLE g_w AS
SELECT i, {_uuid_sql("'watcher-' || i")} AS watcher_id, {_uuid_sql("'channel-' || (i % 20)")} AS channel_id,
    n.chain_selector, 'watcher-' || i AS name,
    CASE WHEN i % 29 = 3 THEN 'failed' WHEN i % 13 = 5 THEN 'archived' ELSE 'active' END AS final_status,
    $t0 + i * 600 AS t_created
FROM range(40) r(i) JOIN g_net n ON n.net = i % 10
""",
        {"t0": T0},
    )
    con.execute("""INSERT INTO watchers BY NAME SELECT watcher_id, channel_id, name, final_status AS status,
        chain_selector, '0x' || md5(name) || '00000000' AS address, 'erc20' AS service,
        to_timestamp(t_created) AS created_at FROM g_w""")
    history = """[{'s': 'pending', 't': t_created}, {'s': CASE WHEN final_status = 'failed' THEN 'failed'
        ELSE 'active' END, 't': t_created + 30}]
        || CASE WHEN final_status = 'archived' THEN [{'s': 'archiving', 't': t_created + $span // 2},
           {'s': 'archived', 't': t_created + $span // 2 + 40}] ELSE [] END"""
    con.execute(
        f"""
INSERT INTO events BY NAME
WITH h AS (SELECT watcher_id, channel_id, chain_selector, unnest({history}) AS m FROM g_w)
SELECT {_uuid_sql("'wst-' || watcher_id || m.s")} AS event_id, channel_id, 'watcher.status' AS type,
    to_timestamp(m.t) AS ts, m.s AS status, watcher_id AS subject_id, watcher_id, chain_selector, 0 AS proof_count,
    to_timestamp(m.t) + INTERVAL 1 HOUR AS synced_at
FROM h
""",
        {"span": span},
    )
    con.execute(
        f"""
INSERT INTO events BY NAME
WITH e AS (
    SELECT r.i, w.watcher_id, w.channel_id, w.chain_selector,
        $t0 + 60 + CAST(floor({_u(40, "r.i")} * ($span - 120)) AS BIGINT) AS t
    FROM range($n) r(i) JOIN g_w w ON w.i = CAST(floor({_u(41, "r.i")} * 40) AS INTEGER)
    WHERE w.final_status <> 'failed'
)
SELECT {_uuid_sql("'wev-' || i")} AS event_id, channel_id, 'watcher.event' AS type, to_timestamp(t) AS ts,
    watcher_id AS subject_id, watcher_id, chain_selector, md5('wev' || i) AS event_hash,
    CASE WHEN {_u(42)} < 0.001 THEN 0 ELSE 1 END AS proof_count,
    CASE WHEN {_u(42)} >= 0.001 THEN 4 + CAST(floor({_u(43)} * 4) AS INTEGER) END AS signature_count,
    date_trunc('hour', to_timestamp(t)) + INTERVAL 1 HOUR AS synced_at
FROM e ORDER BY t
""",
        {"t0": T0, "span": span, "n": n_watcher_events, "seed": seed},
    )


def _insert_reference(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""INSERT INTO networks BY NAME SELECT chain_selector, name, 'evm' AS chain_family,
        net_type AS network_type, to_timestamp(1700000000) AS created_at FROM g_net""")
    con.execute(
        f"""INSERT INTO channels BY NAME SELECT {_uuid_sql("'channel-' || i")} AS channel_id,
        'channel ' || i AS name, 'active' AS status, to_timestamp($t0) AS created_at FROM range(20) r(i)""",
        {"t0": T0},
    )


def generate(path: str | os.PathLike[str], *, n_events: int = 10_000_000, days: int = 30, seed: int = 7) -> dict:
    """Write a synthetic warehouse with about ``n_events`` operation events over ``days`` days; returns its counts."""
    span = days * 86_400
    n_ops = max(int(n_events / EVENTS_PER_OP), 10)
    t_end = T0 + span
    with Warehouse(path, memory_limit=GENERATOR_MEMORY) as wh:
        con = wh.con
        con.execute("SET preserve_insertion_order = true")
        con.execute("SET enable_progress_bar = false")
        _network_table(con)
        _operations_plan(con, n_ops, span, seed)
        _operation_events(con, t_end, seed)
        _insert_operation_events(con, seed)
        _insert_operations(con, t_end)
        _insert_queries(con, max(n_ops // 8, 10), span, t_end, seed)
        _insert_watchers(con, max(n_events // 20, 100), span, seed)
        _insert_reference(con)
        _number_writes(con)
        counts = dict(con.execute("SELECT type, count(*) FROM events GROUP BY type").fetchall())
        counts["operations"] = con.execute("SELECT count(*) FROM operations").fetchone()[0]
        for t in ("g_ops", "g_op_events", "g_q", "g_w", "g_net", "g_pick"):
            con.execute(f"DROP TABLE IF EXISTS {t}")
        con.execute("CHECKPOINT")
    return counts


def _number_writes(con: duckdb.DuckDBPyConnection) -> None:
    """Give every generated row the ``write_seq`` a sync would have given it: one number per (hourly) write, in the
    order of ``synced_at`` (``toolkit.warehouse.write_seq``), and the counter the next write continues from.
    Without it every row looks unrefreshed to the models (``write_seq`` NULL), which no sync leaves behind. Also the
    patch's watermark at the newest event: the generated operations and queries already hold what their events say
    (applying all 10.8M events of the 10M warehouse again changed no row), and without it the first real sync into
    the file applied every event again (22 s)."""
    from toolkit.warehouse.patch import PATCH_STREAM
    from toolkit.warehouse.schema import WRITE_SEQ_TABLES
    from toolkit.warehouse.write_seq import STREAM

    seq = f"(CAST(epoch(synced_at) AS BIGINT) - {T0}) // 60 + 1"
    for table in WRITE_SEQ_TABLES:
        con.execute(f"UPDATE {table} SET write_seq = {seq} WHERE synced_at IS NOT NULL")
    top = max(
        con.execute(f"SELECT coalesce(max(write_seq), 0) FROM {table}").fetchone()[0] for table in WRITE_SEQ_TABLES
    )
    con.execute("DELETE FROM sync_state WHERE stream = ?", [STREAM])
    con.execute("INSERT INTO sync_state VALUES (?, json_object('last', ?), now())", [STREAM, int(top)])
    patched = con.execute("SELECT coalesce(max(write_seq), 0) FROM events").fetchone()[0]
    con.execute("DELETE FROM sync_state WHERE stream = ?", [PATCH_STREAM])
    con.execute("INSERT INTO sync_state VALUES (?, json_object('write_seq', ?), now())", [PATCH_STREAM, int(patched)])


# ---- the sync-time refresh -----------------------------------------------------------------------------------------


def new_sync_batch(path: str | os.PathLike[str], operations: int = 5_000) -> tuple[int, int]:
    """What an hourly sync adds: the events of ``operations`` recent operations delivered again under new event ids
    (so those operations are stale and recomputed, as when their next moves arrive), and every operation still in a
    non-terminal status stored again unchanged (the sync re-lists them). Returns (events added, records stored)."""
    terminal = sorted(spec.OPERATION_TERMINAL)
    with Warehouse(path) as wh:
        con = wh.con
        con.execute("SET enable_progress_bar = false")
        with wh.transaction():  # one sync transaction: its rows carry its write_seq, as a sync's do
            seq = wh._current_write_seq()
            con.execute(
                f"""
                INSERT INTO events BY NAME
                SELECT {_uuid_sql("'again-' || event_id || $salt")} AS event_id, channel_id, type, ts, status,
                    status_reason, subject_id, operation_id, chain_selector, address, event_hash, proof_count,
                    signature_count, payload, now() AS synced_at, $seq AS write_seq
                FROM events
                WHERE operation_id IN (SELECT operation_id FROM operations ORDER BY created_at DESC LIMIT $n)
                  AND synced_at < now() - INTERVAL 1 DAY  -- the generated history, not earlier copies
            """,
                {"salt": str(time.time_ns()), "n": operations, "seq": seq},
            )
            n_events = int(con.execute("SELECT count(*) FROM events WHERE write_seq = ?", [seq]).fetchone()[0])
            con.execute(
                "CREATE OR REPLACE TEMP TABLE _relist AS SELECT * FROM operations WHERE NOT list_contains(?, status)",
                [terminal],
            )
            con.execute("DELETE FROM operations WHERE operation_id IN (SELECT operation_id FROM _relist)")
            con.execute(
                "INSERT INTO operations SELECT * REPLACE (now() AS synced_at, ? AS write_seq) FROM _relist", [seq]
            )
            n_records = int(con.execute("SELECT count(*) FROM _relist").fetchone()[0])
        return n_events, n_records


def time_refresh(path: str | os.PathLike[str], *, full: bool = False) -> tuple[float, object]:
    """Run one ``refresh_models`` as a sync runs it (``toolkit.loader.run``: the models' memory limit and threads).
    Returns (seconds, its result)."""
    from toolkit.loader.tuning import DEFAULT_TUNING
    from toolkit.warehouse.model_tables import refresh_models

    with Warehouse(path, memory_limit=DEFAULT_TUNING.models_memory_limit) as wh:
        started = time.perf_counter()
        result = refresh_models(wh, full=full, threads=DEFAULT_TUNING.models_threads)
        return time.perf_counter() - started, result


# ---- metric calls, each in a fresh process ---------------------------------------------------------------------

#: (label, metric name, keyword arguments) of every timed call: each metric's defaults, and the groupings, buckets
#: and filters a report or a dashboard asks for ("NETWORK" is replaced by the busiest network's name, "LAST7D" by the
#: week up to the newest event, as a report's default period).
CASES: tuple[tuple[str, str, dict], ...] = (
    ("status-latency", "status-latency", {}),
    ("status-latency, daily buckets", "status-latency", {"bucket": "1d"}),
    ("status-latency by channel", "status-latency", {"by": ["channel_id", "status"]}),
    ("status-latency, one network, 7d", "status-latency", {"network": "NETWORK", "since": "LAST7D"}),
    ("failure-rates", "failure-rates", {}),
    ("failure-rates, daily buckets", "failure-rates", {"bucket": "1d"}),
    ("failure-rates by channel", "failure-rates", {"by": ["channel_id"]}),
    ("failure-rates, whole, 7d", "failure-rates", {"by": [], "since": "LAST7D"}),
    ("failure-reasons", "failure-reasons", {}),
    ("finality-breakdown", "finality-breakdown", {}),
    ("finality-breakdown by channel", "finality-breakdown", {"by": ["channel_id"]}),
    ("query-latency", "query-latency", {}),
    ("stuck-operations", "stuck-operations", {}),
    ("stuck-operations by network", "stuck-operations", {"by": ["network"]}),
    ("revisits", "revisits", {}),
    ("overdue-queries", "overdue-queries", {}),
    ("proof-coverage", "proof-coverage", {}),
    ("watcher-activity", "watcher-activity", {}),
    ("watcher-status-history", "watcher-status-history", {}),
)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_bytes() -> int:
    """This process's peak RSS (``VmHWM``: unlike ``ru_maxrss`` it does not inherit the parent's peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(path: str, label: str, repeats: int = 3) -> dict:
    """Run one case in this (fresh) process. Returns first and best warm seconds, RSS before and peak, rows."""
    from toolkit import metrics

    _, name, kwargs = next(c for c in CASES if c[0] == label)
    func = metrics.METRICS[name]
    with Warehouse(path, read_only=True) as wh:
        if kwargs.get("network") == "NETWORK":
            busiest = wh.con.execute(
                "SELECT n.name FROM operations o JOIN networks n USING (chain_selector) GROUP BY 1 "
                "ORDER BY count(*) DESC LIMIT 1"
            ).fetchall()
            kwargs = {**kwargs, "network": busiest[0][0]}
        if kwargs.get("since") == "LAST7D":
            kwargs = {**kwargs, "since": metrics.latest_event_time(wh) - pd.Timedelta(days=7)}
        before = _rss_bytes()
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            df = func(wh, **kwargs)
            times.append(time.perf_counter() - started)
        peak = _peak_rss_bytes()
    return {"first": times[0], "warm": min(times[1:] or times), "rss_before": before, "peak": peak, "rows": len(df)}


def run_child(path: str, label: str) -> dict:
    """Run one case in a fresh Python process; returns what :func:`child` measured."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.metrics_bench", "--child", label, "--path", path],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- straightforward pandas implementations from the raw events ------------------------------------------------


def _raw(con: duckdb.DuckDBPyConnection, table: str, columns: str) -> pd.DataFrame:
    """The raw table's columns, every row, as pandas (the baselines filter and compute in pandas)."""
    return con.sql(f"SELECT {columns} FROM {table}").df()


def _of_type(ev: pd.DataFrame, event_type: str) -> pd.DataFrame:
    return ev[ev["type"] == event_type]


def _pd_transitions(ev: pd.DataFrame, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """Transitions from raw ``operation.status`` rows: first time per (operation, status), then the next status."""
    g = ev.groupby(["operation_id", "status"], sort=False, as_index=False).agg(
        entered_at=("ts", "min"), chain_selector=("chain_selector", "first")
    )
    g["rank"] = g["status"].map(spec.OPERATION_STAGE_ORDER).fillna(1000)
    g = g.sort_values(["operation_id", "entered_at", "rank"], kind="stable")
    nxt = g.groupby("operation_id", sort=False)["entered_at"].shift(-1)
    g["seconds"] = (nxt - g["entered_at"]).dt.total_seconds()
    g["exited_at"] = nxt
    if ops is not None:
        created = g["operation_id"].map(ops.set_index("operation_id")["created_at"])
        g["since_created"] = (g["entered_at"] - created).dt.total_seconds()
    return g


def _first_seen(ev: pd.DataFrame, key: str, names: dict[str, str]) -> pd.DataFrame:
    """One row per ``key``: the first time it entered each status (a column per status), and its network."""
    first = ev.groupby([key, "status"], sort=False)["ts"].min().unstack()
    chain = ev.groupby(key, sort=False)["chain_selector"].first()
    first["network"] = chain.map(names).fillna(chain)
    return first


def _pd_names(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return dict(con.execute("SELECT chain_selector, name FROM networks").fetchall())


_OP_COLUMNS = "type, operation_id, status, ts, chain_selector"


def pd_status_latency(con: duckdb.DuckDBPyConnection, bucket: str | None = None) -> tuple[pd.DataFrame, float]:
    """status-latency in pandas from the raw events. Returns (frame, load seconds)."""
    t0 = time.perf_counter()
    ev = _raw(con, "events", _OP_COLUMNS)
    ops = _raw(con, "operations", "operation_id, created_at")
    names = _pd_names(con)
    load = time.perf_counter() - t0
    ev = _of_type(ev, "operation.status")
    tr = _pd_transitions(ev, ops)
    tr["network"] = tr["chain_selector"].map(names).fillna(tr["chain_selector"])
    keys = ["network", "status"]
    if bucket:
        tr["bucket"] = tr["entered_at"].dt.floor("D")
        keys.append("bucket")
    grouped = tr.groupby(keys, sort=True)
    out = grouped["seconds"].agg(["size", "count", "mean", "max"])
    for q in (0.5, 0.9, 0.99):
        out[f"p{round(q * 100)}"] = grouped["seconds"].quantile(q)
    for q in (0.5, 0.9):
        out[f"created_p{round(q * 100)}"] = grouped["since_created"].quantile(q)
    return out.reset_index(), load


def _pd_outcomes(con: duckdb.DuckDBPyConnection) -> tuple[pd.DataFrame, float]:
    """Per operation: network, created_at and outcome (latest-only networks: confirmed_latest is confirmed)."""
    t0 = time.perf_counter()
    ev = _raw(con, "events", _OP_COLUMNS)
    ops = _raw(con, "operations", "operation_id, created_at")
    nets = _raw(con, "networks", "chain_selector, name, network_type")
    load = time.perf_counter() - t0
    ev = _of_type(ev, "operation.status")
    tr = _pd_transitions(ev)
    last = tr.drop_duplicates("operation_id", keep="last").set_index("operation_id")
    reached = tr.groupby("chain_selector")["status"].agg(set)
    mainnets = set(nets.loc[nets["network_type"] == "mainnet", "chain_selector"])
    latest_only = {
        c
        for c, s in reached.items()
        if "confirmed_latest" in s and not s & {"confirmed_safe", "confirmed"} and c not in mainnets
    }
    outcome = last["status"].where(last["status"].isin(list(spec.OPERATION_TERMINAL)))
    outcome = outcome.mask(
        (last["status"] == "confirmed_latest") & last["chain_selector"].isin(latest_only), "confirmed"
    )
    per_op = pd.DataFrame({"chain_selector": last["chain_selector"], "outcome": outcome})
    per_op["network"] = per_op["chain_selector"].map(dict(zip(nets["chain_selector"], nets["name"], strict=True)))
    per_op["network"] = per_op["network"].fillna(per_op["chain_selector"])
    per_op["created_at"] = per_op.index.map(ops.set_index("operation_id")["created_at"])
    return per_op, load


def pd_failure_rates(con: duckdb.DuckDBPyConnection, bucket: str | None = None) -> tuple[pd.DataFrame, float]:
    """failure-rates in pandas from the raw events. Returns (frame, load seconds)."""
    per_op, load = _pd_outcomes(con)
    keys = ["network"]
    if bucket:
        per_op["bucket"] = per_op["created_at"].dt.floor("D")
        keys.append("bucket")
    counts = per_op.groupby(keys)["outcome"].value_counts().unstack(fill_value=0)
    counts["terminal"] = counts.sum(axis=1)
    counts["operations"] = per_op.groupby(keys).size()
    z = 1.959963984540054
    for col in ("failed", "expired", "cancelled"):
        k, n = counts.get(col, 0), counts["terminal"]
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        counts[f"{col}_rate"], counts[f"{col}_low"], counts[f"{col}_high"] = p, centre - half, centre + half
    return counts.reset_index(), load


def pd_failure_reasons(con: duckdb.DuckDBPyConnection) -> tuple[pd.DataFrame, float]:
    """failure-reasons in pandas from the raw events. Returns (frame, load seconds)."""
    t0 = time.perf_counter()
    ev = _raw(con, "events", "type, operation_id, status, status_reason, ts")
    load = time.perf_counter() - t0
    ev = _of_type(ev, "operation.status")
    ev = ev.sort_values(["operation_id", "ts"], kind="stable")
    last = ev.drop_duplicates("operation_id", keep="last")
    failed = last[last["status"].isin(["failed", "expired"])]
    from toolkit.metrics import classify_failure

    counts = failed.groupby(["status", "status_reason"]).size().rename("operations").reset_index()
    counts["category"] = [
        classify_failure(r, s) for r, s in zip(counts["status_reason"], counts["status"], strict=True)
    ]
    return counts.sort_values("operations", ascending=False).head(10), load


def pd_finality(con: duckdb.DuckDBPyConnection) -> tuple[pd.DataFrame, float]:
    """finality-breakdown in pandas from the raw events. Returns (frame, load seconds)."""
    t0 = time.perf_counter()
    ev = _raw(con, "events", _OP_COLUMNS)
    names = _pd_names(con)
    load = time.perf_counter() - t0
    ev = _of_type(ev, "operation.status")
    first = _first_seen(ev, "operation_id", names)
    relay = [
        c
        for c in (
            "accepted",
            "sending",
            "sent",
            "broadcasting",
            "confirmed_latest",
            "confirmed_safe",
            "confirmed",
            "failed",
        )
        if c in first
    ]
    first = first[first[relay].notna().any(axis=1)]
    latest = first[["confirmed_latest", "confirmed_safe", "confirmed"]].notna().any(axis=1)
    safe = first[["confirmed_safe", "confirmed"]].notna().any(axis=1)
    rows = first.assign(latest=latest, safe=safe, final=first["confirmed"].notna())
    spans = {
        "to_latest": ("confirmed_latest", "accepted"),
        "to_safe": ("confirmed_safe", "accepted"),
        "to_final": ("confirmed", "accepted"),
        "l2s": ("confirmed_safe", "confirmed_latest"),
        "s2f": ("confirmed", "confirmed_safe"),
        "l2f": ("confirmed", "confirmed_latest"),
    }
    for name, (end, start) in spans.items():
        rows[name] = (rows[end] - rows[start]).dt.total_seconds()
    grouped = rows.groupby("network")
    out = grouped[["latest", "safe", "final"]].sum()
    out["operations"] = grouped.size()
    for col in ("to_latest", "to_safe", "to_final", "l2s", "s2f", "l2f"):
        out[f"{col}_p50"] = grouped[col].quantile(0.5)
        out[f"{col}_p90"] = grouped[col].quantile(0.9)
    return out.reset_index(), load


def pd_query_latency(con: duckdb.DuckDBPyConnection) -> tuple[pd.DataFrame, float]:
    """query-latency in pandas from the raw events. Returns (frame, load seconds)."""
    t0 = time.perf_counter()
    ev = _raw(con, "events", "type, query_id, status, ts, chain_selector")
    names = _pd_names(con)
    load = time.perf_counter() - t0
    ev = _of_type(ev, "query.status")
    first = _first_seen(ev, "query_id", names)
    terminal = first[["completed", "failed", "expired"]]
    first["outcome"] = terminal.notna().idxmax(axis=1).where(terminal.notna().any(axis=1), "in_flight")
    first["terminal_at"] = terminal.min(axis=1)
    spans = {
        "a2s": ("sending", "accepted"),
        "s2s": ("sent", "sending"),
        "s2t": ("terminal_at", "sent"),
        "a2t": ("terminal_at", "accepted"),
    }
    for name, (end, start) in spans.items():
        first[name] = (first[end] - first[start]).dt.total_seconds()
    grouped = first.groupby(["network", "outcome"])
    out = grouped.size().rename("queries").to_frame()
    for name in spans:
        out[f"{name}_p50"] = grouped[name].quantile(0.5)
        out[f"{name}_p90"] = grouped[name].quantile(0.9)
    per_net = first.groupby("network")["outcome"].value_counts().unstack(fill_value=0)
    finished = per_net[["completed", "failed", "expired"]].sum(axis=1)
    out = out.join((per_net["failed"] / finished).rename("failure_rate"), on="network")
    out = out.join((per_net["expired"] / finished).rename("expiry_rate"), on="network")
    return out.reset_index(), load


def pd_stuck(con: duckdb.DuckDBPyConnection) -> tuple[pd.DataFrame, float]:
    """stuck-operations in pandas from the raw events. Returns (frame, load seconds)."""
    t0 = time.perf_counter()
    ev = _raw(con, "events", _OP_COLUMNS)
    nets = _raw(con, "networks", "chain_selector, network_type")
    load = time.perf_counter() - t0
    ev = _of_type(ev, "operation.status")
    now = ev["ts"].max()
    tr = _pd_transitions(ev)
    p90 = tr[tr["exited_at"] <= now].groupby(["chain_selector", "status"])["seconds"].quantile(0.9).rename("p90")
    current = tr[tr["exited_at"].isna() & ~tr["status"].isin(list(spec.OPERATION_TERMINAL))]
    reached = tr.groupby("chain_selector")["status"].agg(set)
    mainnets = set(nets.loc[nets["network_type"] == "mainnet", "chain_selector"])
    latest_only = {
        c
        for c, s in reached.items()
        if "confirmed_latest" in s and not s & {"confirmed_safe", "confirmed"} and c not in mainnets
    }
    current = current[~((current["status"] == "confirmed_latest") & current["chain_selector"].isin(latest_only))]
    current = current.join(p90, on=["chain_selector", "status"])
    current["threshold"] = np.maximum(3 * current["p90"], 60).where(current["p90"].notna())
    current["age"] = (now - current["entered_at"]).dt.total_seconds()
    return current[current["age"] > current["threshold"]], load


def pd_proof_coverage(con: duckdb.DuckDBPyConnection) -> tuple[pd.DataFrame, float]:
    """proof-coverage in pandas from the raw events. Returns (frame, load seconds)."""
    t0 = time.perf_counter()
    ev = _raw(con, "events", "type, status, proof_count, signature_count")
    load = time.perf_counter() - t0
    must = (
        ev["type"].eq("watcher.event")
        | (ev["type"].eq("operation.status") & ev["status"].isin(list(spec.OPERATION_PROOF_STATUSES)))
        | (ev["type"].eq("query.status") & ev["status"].isin(list(spec.QUERY_PROOF_STATUSES)))
    )
    proof = ev["proof_count"].fillna(0) > 0
    enough = ev["signature_count"] >= spec.PROOF_MIN_SIGNATURES
    frame = pd.DataFrame(
        {
            "type": ev["type"],
            "must": must,
            "with": must & proof,
            "enough": must & proof & enough,
            "unexpected": ~must & proof,
            "sigs": ev["signature_count"].where(must & proof),
        }
    )
    grouped = frame.groupby("type")
    out = grouped[["must", "with", "enough", "unexpected"]].sum()
    out["events"] = grouped.size()
    out["sig_min"], out["sig_p50"], out["sig_max"] = (
        grouped["sigs"].min(),
        grouped["sigs"].median(),
        grouped["sigs"].max(),
    )
    return out.reset_index(), load


def pd_watcher_activity(con: duckdb.DuckDBPyConnection) -> tuple[pd.DataFrame, float]:
    """watcher-activity in pandas from the raw events. Returns (frame, load seconds)."""
    t0 = time.perf_counter()
    ev = _raw(con, "events", "watcher_id, type, status, ts, proof_count")
    load = time.perf_counter() - t0
    obs = ev[ev["type"] == "watcher.event"].assign(hour=lambda d: d["ts"].dt.floor("h"))
    counts = obs.groupby(["watcher_id", "hour"]).size().rename("events").reset_index()
    history = ev[ev["type"] == "watcher.status"].sort_values("ts")[["watcher_id", "ts", "status"]]
    counts["end"] = counts["hour"] + pd.Timedelta(hours=1)
    merged = pd.merge_asof(
        counts.sort_values("end"), history, left_on="end", right_on="ts", by="watcher_id", allow_exact_matches=False
    )
    return merged, load


BASELINES: dict[str, Callable[[duckdb.DuckDBPyConnection], tuple[pd.DataFrame, float]]] = {
    "status-latency": pd_status_latency,
    "status-latency, daily buckets": lambda con: pd_status_latency(con, bucket="1d"),
    "failure-rates": pd_failure_rates,
    "failure-rates, daily buckets": lambda con: pd_failure_rates(con, bucket="1d"),
    "failure-reasons": pd_failure_reasons,
    "finality-breakdown": pd_finality,
    "query-latency": pd_query_latency,
    "stuck-operations": pd_stuck,
    "proof-coverage": pd_proof_coverage,
    "watcher-activity": pd_watcher_activity,
}


def run_baseline(path: str, label: str) -> tuple[float, float, int]:
    """Run the pandas implementation of one case. Returns (load seconds, compute seconds, rows)."""
    con = duckdb.connect(path, read_only=True)
    con.execute("SET TimeZone = 'UTC'")
    try:
        started = time.perf_counter()
        df, load = BASELINES[label](con)
        return load, time.perf_counter() - started - load, len(df)
    finally:
        con.close()


# ---- the report --------------------------------------------------------------------------------------------------


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def main(argv: list[str] | None = None) -> int:
    """Generate (or reuse) the warehouses, time the refresh and every metric case at each size, print the figures.

    Returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--events",
        default="1000000,3000000,10000000",
        help="operation events to generate: one size or several, comma-separated (default 1M, 3M and 10M)",
    )
    parser.add_argument("--dir", help="keep the warehouses here (bench-<events>.duckdb; default: a temporary folder)")
    parser.add_argument("--path", help="the warehouse file of a single size")
    parser.add_argument("--reuse", action="store_true", help="reuse the warehouses found instead of generating them")
    parser.add_argument("--skip-pandas", action="store_true", help="time the metrics only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.path, args.child)))
        return 0
    sizes = [int(float(x)) for x in str(args.events).split(",") if x.strip()]
    if args.path and len(sizes) != 1:
        parser.error("--path is for one size; use --dir for several")
    curve: dict[int, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n_events in sizes:
            folder = Path(args.dir or tmp)
            folder.mkdir(parents=True, exist_ok=True)
            path = args.path or str(folder / f"bench-{n_events}.duckdb")
            print(f"==== {n_events:,} operation events: {path}", flush=True)
            refresh = _prepare(path, n_events, reuse=args.reuse)
            curve[n_events] = {**refresh, **_compare(path, skip_pandas=args.skip_pandas)}
            if not args.dir and not args.path:
                Path(path).unlink(missing_ok=True)
    if len(sizes) > 1:
        _print_curve(curve)
    return 0


def _prepare(path: str, n_events: int, *, reuse: bool) -> dict[str, dict]:
    """Generate the warehouse (unless reused) and time the three refreshes; returns them by name."""
    out: dict[str, dict] = {}
    if not (reuse and Path(path).exists()):
        Path(path).unlink(missing_ok=True)
        started = time.perf_counter()
        counts = generate(path, n_events=n_events)
        print(f"generated {path}: {counts} in {time.perf_counter() - started:.1f} s", flush=True)
        seconds, result = time_refresh(path)
        print(f"refresh_models, first build: {seconds:.1f} s, {result}", flush=True)
        out["refresh: first build"] = {"first": seconds, "retries": result.retries}
    seconds, result = time_refresh(path)
    print(f"refresh_models, nothing new: {seconds:.2f} s, {result}", flush=True)
    out["refresh: nothing new"] = {"first": seconds, "retries": result.retries}
    added, relisted = new_sync_batch(path)
    seconds, result = time_refresh(path)
    print(
        f"refresh_models after a sync batch of {added:,} events and {relisted:,} unchanged in-flight records: "
        f"{seconds:.2f} s, {result}",
        flush=True,
    )
    out["refresh: after a sync batch"] = {"first": seconds, "retries": result.retries}
    with Warehouse(path, read_only=True) as wh:
        n = wh.con.execute("SELECT count(*) FROM events WHERE type = 'operation.status'").fetchall()[0][0]
    print(f"operation events in the warehouse: {n:,}; {os.cpu_count()} cores\n", flush=True)
    return out


def _compare(path: str, *, skip_pandas: bool) -> dict[str, dict]:
    """Time every case in a fresh process (and its pandas baseline); print a line each. Returns them by label."""
    header = (
        f"{'metric':34} {'first s':>8} {'warm s':>8} {'peak RSS':>9} {'+call':>8} {'rows':>7} "
        f"{'pandas s':>9} {'(load':>7} {'+compute)':>9} {'ratio':>7} {'vs compute':>10}"
    )
    print(header)
    print("-" * len(header))
    results: dict[str, dict] = {}
    ratios = []
    for label, _, _ in CASES:
        m = run_child(path, label)
        results[label] = m
        line = (
            f"{label:34} {m['first']:8.2f} {m['warm']:8.2f} {_gb(m['peak']):>9} "
            f"{_gb(m['peak'] - m['rss_before']):>8} {m['rows']:7,}"
        )
        if not skip_pandas and label in BASELINES:
            load, compute, _ = run_baseline(path, label)
            ratio, compute_ratio = (load + compute) / m["first"], compute / m["first"]
            ratios.append(ratio)
            line += f" {load + compute:9.2f} {load:7.2f} {compute:9.2f} {ratio:6.1f}x {compute_ratio:9.1f}x"
        print(line, flush=True)
    worst = max(m["first"] for m in results.values())
    print(f"\nslowest metric call (first call, in process): {worst:.2f} s (target <= 1 s)")
    print(f"largest peak RSS of a metric process: {_gb(max(m['peak'] for m in results.values()))} (target <= 1 GB)")
    if ratios:
        print(f"smallest speed-up over pandas (load + compute): {min(ratios):.1f}x")
    print(flush=True)
    return results


def _print_curve(curve: dict[int, dict[str, dict]]) -> None:
    """The cost against history: per case, the first call (s) and peak RSS (GB) at every size, and their growth."""
    sizes = sorted(curve)
    labels = list(next(iter(curve.values())))
    for other in curve.values():
        labels += [label for label in other if label not in labels]
    head = "".join(f"{f'{n / 1e6:g}M s':>9}" for n in sizes) + "".join(f"{f'{n / 1e6:g}M GB':>9}" for n in sizes)
    print(f"==== cost against history\n{'case':34}{head}{'s growth':>10}")
    for label in labels:
        cells = [curve[n].get(label) for n in sizes]
        secs = "".join(f"{c['first']:9.2f}" if c else f"{'-':>9}" for c in cells)
        peaks = "".join(f"{c['peak'] / 1e9:9.2f}" if c and "peak" in c else f"{'-':>9}" for c in cells)
        first, last = cells[0], cells[-1]
        growth = f"{last['first'] / first['first']:9.1f}x" if first and last and first["first"] > 0 else f"{'-':>10}"
        print(f"{label:34}{secs}{peaks}{growth}")


if __name__ == "__main__":
    raise SystemExit(main())
