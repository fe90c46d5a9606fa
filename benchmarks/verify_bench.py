"""Verification benchmark: events verified per second by ``chainops verify`` against a bare recovery loop.

Run ``.venv/bin/python -m benchmarks.verify_bench`` (``--events N``, default 20,000; ``--path PATH --reuse`` to keep
and reuse the generated warehouse). It builds a warehouse of N proof-bearing ``watcher.event`` events, each with
an OCR proof signed by 4 of the sandbox's 10 nodes (the sandbox's own signing code), straight into DuckDB (no
HTTP), then prints, in the same run over the same signatures:

- the bare loop: coincurve public-key recovery of every signature, one process, nothing else (the floor of the
  cost: no JSON, no hashing, no DuckDB);
- ``verify_warehouse(..., all_events=True)`` with 1 and with 2 processes: seconds, events per second, and the
  ratio to the bare loop's events per second (the issue aims at 0.6x or better on two processes);
- the peak RSS of a fresh process verifying a quarter of the events and all of them (flat in the number of events:
  batches are streamed from DuckDB).

Not a timed test: it reports, it does not assert.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from coincurve import PublicKey

from toolkit.sandbox.don import committee, keccak256, workflow_owner
from toolkit.sandbox.proofs import ocr_proof
from toolkit.verify import resolve_policy
from toolkit.verify.run import verify_warehouse
from toolkit.warehouse import Warehouse
from toolkit.warehouse.event_batches import events_batch

SEED = 3
ORG_ID = "bench-org"
T0 = 1_760_000_000


def build(path: Path, events: int) -> None:
    """A warehouse of ``events`` signed watcher events (in transactions of 5,000)."""
    rng = random.Random(SEED)
    don = committee(SEED)
    owner = workflow_owner(ORG_ID)
    with Warehouse(path) as wh:
        for start in range(0, events, 5000):
            records = []
            for i in range(start, min(events, start + 5000)):
                decoded = {"service": "_crec", "name": "WatcherEvent", "data": {"n": i, "pad": "x" * 400}}
                blob = base64.b64encode(json.dumps(decoded).encode()).decode()
                digest = "0x" + keccak256(blob.encode()).hex()
                payload = {"watcher_id": "w", "event_hash": digest, "verifiable_event": blob, "timestamp": T0 + i}
                records.append(
                    {
                        "event_id": f"{i:08d}-0000-4000-8000-000000000000",
                        "headers": {
                            "type": "watcher.event",
                            "offset": i,
                            "proofs": [ocr_proof(rng, don, owner, digest, T0 + i)],
                        },
                        "payload": payload,
                    }
                )
            batch, _ = events_batch(records, channel_id="bench", stream_channel=True)
            with wh.transaction():
                wh.upsert("events", batch)


def signatures(path: Path) -> list[tuple[bytes, bytes]]:
    """(65-byte signature with v as 0/1, signing digest) of every proof, for the bare loop."""
    with Warehouse(path, read_only=True) as wh:
        rows = wh.con.execute("SELECT proofs FROM events").fetchall()
    out = []
    for (text,) in rows:
        (proof,) = json.loads(text)
        report, context = bytes.fromhex(proof["ocr_report"][2:]), bytes.fromhex(proof["ocr_context"][2:])
        digest = keccak256(keccak256(report) + context)
        for sig in proof["signatures"]:
            raw = bytes.fromhex(sig[2:])
            out.append((raw[:64] + bytes((raw[64] - 27,)), digest))
    return out


def _cpu() -> float:
    """CPU seconds of this process and of its children that have ended (the verifier's pool is shut down)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def bare_loop(sigs: list[tuple[bytes, bytes]]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) to recover every signature's public key, one process."""
    began, cpu = time.perf_counter(), _cpu()
    for sig, digest in sigs:
        PublicKey.from_signature_and_message(sig, digest, hasher=None)
    return time.perf_counter() - began, _cpu() - cpu


def policy():
    signers = ",".join(committee(SEED).addresses)
    return resolve_policy(org_id=ORG_ID, signers=signers, env={})


def timed_verify(path: Path, workers: int) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of every process, events checked) of one verification of every event."""
    began, cpu = time.perf_counter(), _cpu()
    result = verify_warehouse(path, policy(), all_events=True, workers=workers)
    return time.perf_counter() - began, _cpu() - cpu, result.checked


_PEAK = """
import resource, sys
from benchmarks.verify_bench import policy
from toolkit.verify.run import verify_warehouse
result = verify_warehouse(sys.argv[1], policy(), all_events=True, workers=int(sys.argv[2]))
own, child = (resource.getrusage(r).ru_maxrss for r in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(result.checked, own, child)
"""


def peak_rss(path: Path, workers: int) -> tuple[int, int, int]:
    """(events checked, peak RSS KiB of the process, of its largest worker) of a fresh process verifying ``path``."""
    out = subprocess.run([sys.executable, "-c", _PEAK, str(path), str(workers)], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    checked, own, child = out.stdout.split()
    return int(checked), int(own), int(child)


def main() -> None:
    """Build (or reuse) the warehouse, then print the bare loop, the verifier at 1 and 2 processes, and peak RSS."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--path", type=Path, default=None)
    ap.add_argument("--reuse", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    path = args.path or Path(tmp.name) / "verify.duckdb"
    small = path.with_name(path.stem + "-quarter.duckdb")
    if not (args.reuse and path.exists() and small.exists()):
        for p in (path, small):
            p.unlink(missing_ok=True)
        began = time.perf_counter()
        build(path, args.events)
        build(small, args.events // 4)
        print(f"built {args.events:,} + {args.events // 4:,} signed events in {time.perf_counter() - began:.1f} s")
    sigs = signatures(path)
    events = len(sigs) // 4
    print(f"cores: {os.cpu_count()}; events: {events:,}; signatures: {len(sigs):,}")
    print(f"load average at start: {os.getloadavg()[0]:.1f} (wall-clock rates are shared with whatever else runs)")
    bare, bare_cpu = bare_loop(sigs)
    bare_rate = events / bare
    per_sig = bare_cpu / len(sigs) * 1e6
    print(
        f"bare recovery loop, 1 process: {bare:.2f} s, {bare_rate:,.0f} events/s; {bare_cpu:.2f} CPU s "
        f"({per_sig:.1f} CPU µs a signature)"
    )
    for workers in (1, 2):
        seconds, cpu, checked = timed_verify(path, workers)
        rate = checked / seconds
        print(
            f"chainops verify, {workers} process(es): {seconds:.2f} s, {rate:,.0f} events/s, "
            f"{rate / bare_rate:.2f}x the bare loop; {cpu:.2f} CPU s in all, {bare_cpu / cpu:.2f}x the bare loop's "
            "events per CPU second"
        )
    for p in (small, path):
        checked, own, child = peak_rss(p, 2)
        print(
            f"peak RSS verifying {checked:,} events (2 processes): parent {own / 1024:.0f} MiB, "
            f"largest worker {child / 1024:.0f} MiB"
        )


if __name__ == "__main__":
    main()
