"""Verification benchmark: ``chainops verify`` against a bare recovery loop over the same signatures, phase by phase.

Run ``.venv/bin/python -m benchmarks.verify_bench`` (``--path PATH --reuse`` keeps and reuses the warehouse;
``--before DIR`` also measures another copy of the code, e.g. ``git archive`` of an older commit unpacked in DIR,
in the same runs; ``--repeat N`` runs everything N times and prints medians). The warehouse is a query-heavy
sandbox synced over HTTP on 127.0.0.1 (``--days`` x ``--per-day`` operations; the defaults give about 20,800
proof-bearing events and 83,000 signatures, 1% of the proofs forged), then, in each round:

- the bare loop: coincurve's ``PublicKey.from_signature_and_message`` over every signature of every proof, on 1
  and on 2 processes (each process half the signatures, timed from a common start once both are ready: no JSON,
  no hashing, no DuckDB, no start-up counted);
- ``verify_warehouse(..., all_events=True)`` on a fresh copy of the warehouse, in a fresh process, with 1 and 2
  processes: wall and CPU seconds (the verifier's and its workers'), events per second and the ratio to the loop's
  on as many processes, the peak RSS of each process and of all of them at once (sampled from /proc every 10 ms),
  and where the verifier's own process spent its time (``VerifyResult.phases``, when the code has it);
- the per-event work apart, in one process over the same rows: reading them from DuckDB, decoding the JSON texts,
  the three Keccak-256 hashes an event needs, the key recovery (verify's and the loop's), the rest of the rules;
- the verdicts of the last run of each code compared column by column (``checked_at`` aside).

Not a timed test: it reports, it does not assert. The machine's load average is printed with each round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench-key"

#: Builds the warehouse: a query-heavy sandbox synced over HTTP, its signers and organisation saved beside it.
_BUILD = """
import json, sys, httpx
from pathlib import Path
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.sandbox import Sandbox
days, per_day, forge, path = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
sandbox = Sandbox(orgs=("bench-key",), seed=3, days=days, operations_per_day=per_day, shape="query-heavy",
                  forge_share=forge)
with sandbox.serve(host="127.0.0.1", port=0) as server:
    info = httpx.get(server.base_url.replace("/v1", "/sandbox/signers"),
                     headers={"Authorization": "Apikey bench-key"}).json()
    settings = Settings.load(base_url=server.base_url, api_key="bench-key", warehouse=path, environ={})
    assert sync(settings, quiet=True).outcome == "ok"
Path(str(path) + ".signers.json").write_text(json.dumps(info))
"""

#: One verification in a fresh process: its imports timed apart, then the call; prints one JSON line.
_VERIFY = """
import json, resource, sys, time
began = time.perf_counter()
from toolkit.verify import resolve_policy
from toolkit.verify.run import verify_warehouse
imported = time.perf_counter() - began
info = json.load(open(sys.argv[2]))
policy = resolve_policy(org_id=info["org_id"], signers=",".join(info["signers"]), env={})
def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime
sys.stdout.write("ready\\n"); sys.stdout.flush(); sys.stdin.readline()
wall, own, children = time.perf_counter(), cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
result = verify_warehouse(sys.argv[1], policy, all_events=True, workers=int(sys.argv[3]))
print(json.dumps({
    "wall": time.perf_counter() - wall, "cpu": cpu(resource.RUSAGE_SELF) - own,
    "workers_cpu": cpu(resource.RUSAGE_CHILDREN) - children, "checked": result.checked, "imports": imported,
    "phases": getattr(result, "phases", {}), "processes": result.workers,
}))
"""

#: The bare loop's share in one process: waits for "go", recovers every signature, prints its wall and CPU.
_LOOP = """
import pickle, sys, time
from coincurve import PublicKey
sigs = pickle.load(open(sys.argv[1], "rb"))[int(sys.argv[2])::int(sys.argv[3])]
sys.stdout.write("ready\\n"); sys.stdout.flush(); sys.stdin.readline()
wall, cpu = time.perf_counter(), time.process_time()
for sig, digest in sigs:
    PublicKey.from_signature_and_message(sig, digest, hasher=None)
print(time.perf_counter() - wall, time.process_time() - cpu)
"""

#: The per-event work apart, in one process over the same rows, with the code on the path; prints one JSON line.
_APART = """
import json, sys, time
from coincurve import PublicKey
from toolkit.verify import resolve_policy, run
from toolkit.verify.crypto import keccak256, recover_address
from toolkit.verify.rules import decode_bytes, normalised_signatures, blob_field
from toolkit.verify.texts import read_payload, read_proofs
from toolkit.warehouse import Warehouse
info = json.load(open(sys.argv[2]))
policy = resolve_policy(org_id=info["org_id"], signers=",".join(info["signers"]), env={})
out = {}
def timed(name, fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    out[name] = [time.perf_counter() - wall, time.process_time() - cpu]
    return value
with Warehouse(sys.argv[1], read_only=True) as wh:
    sql = ("SELECT e.type, e.payload, e.proofs FROM events e WHERE " + run.requires_proof_sql("e"))
    def read():
        result = wh.con.sql(sql)
        method = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
        rows = []
        for batch in method(2000):
            rows.extend(zip(*(batch.column(c).to_pylist() for c in ("type", "payload", "proofs"))))
        return rows
    rows = timed("read from DuckDB (Arrow batches to lists)", read)
decoded = timed("decode the JSON texts", lambda: [(t, read_payload(p), read_proofs(q)) for t, p, q in rows])
jobs = []
for t, payload, proofs in decoded:
    ocr = [p for p in proofs or [] if isinstance(p, dict) and "ocr_report" in p]
    blob = payload.get(blob_field(t)) if isinstance(payload, dict) else None
    if len(ocr) == 1 and isinstance(blob, str):
        report, context = decode_bytes(ocr[0]["ocr_report"]), decode_bytes(ocr[0]["ocr_context"])
        sigs = normalised_signatures(ocr[0]["signatures"])
        if report is not None and context is not None and not isinstance(sigs, str):
            jobs.append((blob.encode(), report, context, sigs))
def hashes():
    return [keccak256(keccak256(r) + c) for b, r, c, s in jobs if keccak256(b)]
digests = timed("Keccak-256, 3 an event", hashes)
def recover(fn):
    n = 0
    for (_, _, _, sigs), digest in zip(jobs, digests):
        for sig in sigs:
            try:
                fn(sig, digest)
            except ValueError:
                pass
            n += 1
    return n
out["signatures"] = timed("key recovery and address, as verify does it", lambda: recover(recover_address))
def bare(sig, digest):
    return PublicKey.from_signature_and_message(sig, digest, hasher=None)
timed("key recovery, the bare loop's call", lambda: recover(bare))
timed("the whole check (run.verify_rows)", lambda: run.verify_rows(rows, policy))
out["events"] = len(rows)
print(json.dumps(out))
"""


def build(path: Path, days: float, per_day: float, forge: float) -> None:
    """The query-heavy sandbox synced into ``path`` (its signers beside it, in ``path.signers.json``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", _BUILD, str(days), str(per_day), str(forge), str(path)], check=True, env=env)


def signatures(path: Path, out: Path) -> int:
    """Pickle (65-byte signature with v as 0/1, signing digest) of every signature of every proof-bearing event's
    OCR proof into ``out``, for the bare loop; returns the events."""
    import pickle

    from toolkit.verify.crypto import keccak256
    from toolkit.verify.run import requires_proof_sql
    from toolkit.warehouse import Warehouse

    with Warehouse(path, read_only=True) as wh:
        rows = wh.con.execute(f"SELECT proofs FROM events e WHERE {requires_proof_sql('e')}").fetchall()
    sigs = []
    for (text,) in rows:
        for proof in json.loads(text or "[]"):
            if not isinstance(proof, dict) or "ocr_report" not in proof:
                continue
            report, context = bytes.fromhex(proof["ocr_report"][2:]), bytes.fromhex(proof["ocr_context"][2:])
            digest = keccak256(keccak256(report) + context)
            for sig in proof["signatures"]:
                raw = bytes.fromhex(sig[2:])
                sigs.append((raw[:64] + bytes((raw[64] - 27 if raw[64] >= 27 else raw[64],)), digest))
    out.write_bytes(pickle.dumps(sigs))
    return len(rows)


#: The PSS is read every this many samples (every 200 ms): see :class:`TreeSampler`.
PSS_EVERY = 20


class TreeSampler:
    """Peak RSS of a process and its descendants, each and all at once, sampled from /proc every 10 ms, and the peak
    of their PSS summed (shared pages, such as the code of libraries, counted once across the processes), every
    :data:`PSS_EVERY` samples.

    Reading a process's PSS (``smaps_rollup``) walks its page tables: 3.5 ms of CPU for a 200 MB process. Read every
    10 ms, as until session 19, it took a third of a core from the two processes it measured, and verify on two
    processes ran about 15% longer than it does unwatched (the loop, unwatched, lost nothing)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_each: dict[int, int] = {}
        self.peak_total = 0
        self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _tree(self) -> list[int]:
        pids, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    todo.extend(int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split())
            except OSError:
                pass
        return pids

    def _run(self) -> None:
        sample = 0
        while not self._stop.is_set():
            total = pss = 0
            with_pss = sample % PSS_EVERY == 0
            sample += 1
            for pid in self._tree():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text() if with_pss else ""
                except OSError:
                    continue
                fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
                rss = int(fields.get("VmRSS", "0 kB").split()[0])
                hwm = int(fields.get("VmHWM", "0 kB").split()[0])
                total += rss
                pss += sum(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:"))
                self.peak_each[pid] = max(self.peak_each.get(pid, 0), hwm, rss)
            self.peak_total = max(self.peak_total, total)
            self.peak_pss = max(self.peak_pss, pss)
            self._stop.wait(0.01)

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()


class Others:
    """CPU seconds spent by every other process of the machine from now on: all cores' busy time (/proc/stat) less
    what the run measured for itself and what this process (its memory sampler) spent. Nonzero when other work
    shared the cores with a run; its wall time then says more about that work than about the run."""

    def __init__(self) -> None:
        self._busy, self._self = _busy(), time.process_time()

    def spent(self, run_cpu: float) -> float:
        """The others' CPU seconds since this was made, given the run's own."""
        return max(0.0, _busy() - self._busy - (time.process_time() - self._self) - run_cpu)


def _busy() -> float:
    """CPU seconds all cores have spent busy since boot (0 where /proc/stat is missing)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _start(code: str, args: list[str], tree: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(  # not in the repository: ``-c`` puts the working directory first on the path
        [sys.executable, "-c", code, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd="/"
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit(f"the process did not start: {proc.communicate()}")
    return proc


def bare_loop(sigs: Path, processes: int) -> dict[str, float]:
    """The loop on ``processes`` processes, each a share of the signatures: wall from a common start to the last
    one's end, and CPU seconds of all."""
    procs = [_start(_LOOP, [str(sigs), str(i), str(processes)], ROOT) for i in range(processes)]
    others = Others()
    began = time.perf_counter()
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    cpu = 0.0
    for p in procs:
        out, _ = p.communicate()
        cpu += float(out.split()[1])
    return {"wall": time.perf_counter() - began, "cpu": cpu, "others": others.spent(cpu)}


def verify(path: Path, signers: Path, processes: int, tree: Path) -> dict[str, Any]:
    """One ``verify_warehouse(all_events=True)`` in a fresh process running the code in ``tree``, its memory
    sampled."""
    proc = _start(_VERIFY, [str(path), str(signers), str(processes)], tree)
    others = Others()
    sampler = TreeSampler(proc.pid)
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    out, _ = proc.communicate()
    sampler.stop()
    if proc.returncode:
        raise SystemExit(f"verify failed ({proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    result["others"] = others.spent(result["cpu"] + result["workers_cpu"])
    workers = sorted((kib for pid, kib in sampler.peak_each.items() if pid != proc.pid), reverse=True)
    result["rss_verifier"] = sampler.peak_each.get(proc.pid, 0) / 1024
    result["rss_workers"] = [kib / 1024 for kib in workers]
    result["rss_total"] = sampler.peak_total / 1024
    result["pss_total"] = sampler.peak_pss / 1024
    return result


def apart(path: Path, signers: Path, tree: Path) -> dict[str, Any]:
    """The per-event work apart, in one process running the code in ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", _APART, str(path), str(signers)], capture_output=True, text=True, env=env, cwd="/"
    )
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def verdicts(path: Path) -> list[tuple[Any, ...]]:
    """Every stored verdict, ``checked_at`` aside, in event order."""
    from toolkit.warehouse import Warehouse

    with Warehouse(path, read_only=True) as wh:
        return wh.con.execute(
            "SELECT event_id, verdict, reason, valid_signers, event_hash_matches, signers, min_signatures, "
            "workflow_owner, event_write_seq FROM event_verifications ORDER BY event_id"
        ).fetchall()


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    """Build (or reuse) the warehouse, run the rounds, print each and the medians, compare the verdicts."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=float, default=3)
    ap.add_argument("--per-day", type=float, default=300)
    ap.add_argument("--forge-share", type=float, default=0.01)
    ap.add_argument("--path", type=Path, default=None)
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--before", type=Path, default=None, help="another copy of the code to measure beside this one")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    work = Path(tmp.name)
    path = args.path or work / "verify.duckdb"
    signers = Path(str(path) + ".signers.json")
    if not (args.reuse and path.exists() and signers.exists()):
        path.unlink(missing_ok=True)
        began = time.perf_counter()
        build(path, args.days, args.per_day, args.forge_share)
        print(f"built a query-heavy sandbox warehouse in {time.perf_counter() - began:.1f} s")
    sigs = work / "signatures.pickle"
    events = signatures(path, sigs)
    n_sigs = len(__import__("pickle").loads(sigs.read_bytes()))
    print(f"cores: {os.cpu_count()}; proof-bearing events: {events:,}; signatures: {n_sigs:,}")
    trees = {"after": ROOT} if args.before is None else {"before": args.before, "after": ROOT}
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    loops: dict[int, list[dict[str, float]]] = defaultdict(list)
    for round_ in range(1, args.repeat + 1):
        print(f"\n== round {round_} of {args.repeat}; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
        for processes in (1, 2):
            loop = bare_loop(sigs, processes)
            loops[processes].append(loop)
            rate = events / loop["wall"]
            print(
                f"bare loop, {processes} process(es): {loop['wall']:.2f} s, {loop['cpu']:.2f} CPU s, "
                f"{rate:,.0f} events/s; other processes used {loop['others']:.2f} CPU s meanwhile"
            )
            for name, tree in trees.items():
                copy = work / f"{name}-{processes}.duckdb"
                shutil.copy(path, copy)
                r = verify(copy, signers, processes, tree)
                r["ratio"] = (r["checked"] / r["wall"]) / rate
                r["loop_others"] = loop["others"]
                runs[f"{name}:{processes}"].append(r)
                _print_run(name, processes, r, loop)
    print(f"\n== medians of {args.repeat} round(s); load average now {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for processes in (1, 2):
        loop_wall = _median([x["wall"] for x in loops[processes]])
        loop_cpu = _median([x["cpu"] for x in loops[processes]])
        print(
            f"bare loop, {processes} process(es): {loop_wall:.2f} s, {loop_cpu:.2f} CPU s, "
            f"{events / loop_wall:,.0f} events/s"
        )
        for name in trees:
            _print_medians(name, runs[f"{name}:{processes}"], loop_cpu)
    print(
        "  (others: CPU seconds other processes of the machine used during each round's run of verify, then of the "
        f"loop; a round where either is well above 0 measured the sharing as much as the code; undisturbed: both "
        f"below {UNDISTURBED})"
    )
    print("\n== the per-event work apart, one process (wall s, CPU s)")
    for name, tree in trees.items():
        parts = apart(path, signers, tree)
        n = parts.pop("events")
        parts.pop("signatures")
        for what, (wall, cpu) in parts.items():
            print(f"  {name:>6} {what}: {wall:.2f} s, {cpu:.2f} CPU s ({cpu / n * 1e6:.1f} CPU µs an event)")
    if args.before is not None:
        before, after = verdicts(work / "before-2.duckdb"), verdicts(work / "after-2.duckdb")
        before1, after1 = verdicts(work / "before-1.duckdb"), verdicts(work / "after-1.duckdb")
        print(
            f"\nverdicts, before against after (2 processes): {_compared(before, after)}; 1 process: "
            f"{'identical to 2' if before1 == before and after1 == after else 'not the same as 2'}; "
            f"by verdict after: {_by_verdict(after)}"
        )


def _compared(before: list[tuple[Any, ...]], after: list[tuple[Any, ...]]) -> str:
    """Two versions' verdicts compared event by event: how many events both judged, how many of those differ, and
    the events only one judged (a rule of which events owe a proof that changed between them)."""
    old, new = {r[0]: r for r in before}, {r[0]: r for r in after}
    both = old.keys() & new.keys()
    differ = sum(1 for e in both if old[e] != new[e])
    only = f"{len(old.keys() - new.keys()):,} only before, {len(new.keys() - old.keys()):,} only after"
    return f"{len(both):,} events judged by both, {'all identical' if not differ else f'{differ:,} differ'}; {only}"


def _by_verdict(rows: list[tuple[Any, ...]]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        counts[row[1]] += 1
    return ", ".join(f"{n:,} {v}" for v, n in sorted(counts.items()))


#: Other processes' CPU seconds during a run (and its round's loop) below which the round counts as undisturbed.
UNDISTURBED = 0.2


def _print_medians(name: str, rs: list[dict[str, Any]], loop_cpu: float) -> None:
    cpu = _median([r["cpu"] + r["workers_cpu"] for r in rs])
    each = ", ".join(f"{r['ratio']:.2f} (others {r['others']:.2f}/{r['loop_others']:.2f})" for r in rs)
    calm = [r["ratio"] for r in rs if max(r["others"], r["loop_others"]) < UNDISTURBED]
    print(
        f"  {name:>6} verify: {_median([r['wall'] for r in rs]):.2f} s, "
        f"{_median([r['checked'] / r['wall'] for r in rs]):,.0f} events/s, "
        f"{_median([r['ratio'] for r in rs]):.2f}x the loop (rounds: {each}); "
        f"CPU {cpu:.2f} s "
        f"({loop_cpu / cpu:.2f}x the loop's events per CPU s); peak RSS MiB: "
        f"verifier {_median([r['rss_verifier'] for r in rs]):.0f}, "
        f"largest worker {_median([max(r['rss_workers'], default=0) for r in rs]):.0f}, "
        f"all at once {_median([r['rss_total'] for r in rs]):.0f} (PSS {_median([r['pss_total'] for r in rs]):.0f}); "
        f"imports {_median([r['imports'] for r in rs]):.2f} s; "
        f"undisturbed rounds: {', '.join(f'{x:.2f}x' for x in calm) or 'none'}"
    )


def _print_run(name: str, processes: int, r: dict[str, Any], loop: dict[str, float]) -> None:
    cpu = r["cpu"] + r["workers_cpu"]
    workers = ", ".join(f"{w:.0f}" for w in r["rss_workers"]) or "none"
    print(
        f"  {name:>6} verify, {processes} process(es) asked, {r['processes']} used: {r['wall']:.2f} s, "
        f"{r['checked'] / r['wall']:,.0f} events/s, {r['ratio']:.2f}x the loop (other processes used "
        f"{r['others']:.2f} CPU s meanwhile); CPU {r['cpu']:.2f} s verifier + "
        f"{r['workers_cpu']:.2f} s workers ({loop['cpu'] / cpu:.2f}x the loop's events per CPU s); peak RSS MiB: "
        f"verifier {r['rss_verifier']:.0f}, workers {workers}, all at once {r['rss_total']:.0f} "
        f"(PSS {r['pss_total']:.0f}); "
        f"imports {r['imports']:.2f} s (not in the rate)"
    )
    if r["phases"]:
        print(
            "         the verifier's phases (wall s / CPU s): "
            + ", ".join(f"{k} {w:.2f}/{c:.2f}" for k, (w, c) in r["phases"].items())
        )


if __name__ == "__main__":
    main()
