"""The sync's CPU cost where there is no network: against a server that only sends pre-serialised pages.

1. A sandbox scenario of about ``--events`` events is served by `chainops sandbox` (its clock frozen), and one
   `chainops sync` runs against it through :class:`benchmarks.replay.RecordingTransport`: every answer it reads is
   recorded, in order. The sandbox then stops (``--recording PATH`` keeps the recording and reuses it next time).
2. :mod:`benchmarks.replay` serves the recording from memory, keyed by method, path and query, answering at once; a
   request it lacks fails loudly. So the sync and the baseline below have nearly both cores to themselves.
3. In the same run, ``--runs`` times: (a) the **baseline**, a hand-written fetch-and-parse loop over exactly the
   requests the sync made (one keep-alive ``httpx.Client``, ``orjson.loads`` of each answer, nothing else), before
   and after (b) a full `chainops sync` (``tk.sync``) into a fresh DuckDB file in a child process. Printed: pages,
   events, seconds, events/s, the sync's peak RSS (``VmHWM``) and phases, and the ratio baseline / sync, using the
   mean of the two baselines around it (this machine's speed drifts within minutes).

For each of the sync's threads (main, the writer, the request threads summed) it prints where the wall time went:
running, waiting for a core (runnable, no core free: ``/proc/thread-self/schedstat``) and blocked; for the main
thread also what it was blocked on (its requests, handing writes to the writer, waiting for the writer). Each run
prints the load average before and after it: on a shared machine, waiting for a core is the load of other work.

``--profile OUT`` runs the sync once more under cProfile and writes its stats to ``OUT`` (read them with
``python -m pstats OUT``).

``--ceiling`` also measures the best any sync storing these rows could do here (see :data:`CEILING`).

Usage: python -m benchmarks.cpu_bench [--events 1000000] [--days 10] [--runs 2] [--recording PATH] [--profile OUT]
       [--ceiling]
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson

from benchmarks._server import KEY, PEAK_RSS_MB, line_command, line_server, sandbox_server
from benchmarks.replay import read_records

ROOT = Path(__file__).resolve().parent.parent
EVENTS_PER_OPERATION = 8.6  # what the default scenario produces (operations, queries, watchers, wallets)


RECORD = """
import sys
from pathlib import Path
from benchmarks.replay import RecordingTransport
from toolkit.api import Client
from toolkit.loader import sync
transport = RecordingTransport(Path(sys.argv[3]))
with Client(sys.argv[1], sys.argv[2], transport=transport) as client:
    r = sync(client=client, warehouse=sys.argv[4], quiet=True)
print(r.summary(), file=sys.stderr)
"""

SYNC_AND_REPORT = (
    PEAK_RSS_MB
    + """
import json, sys, time
t0 = time.perf_counter()
from toolkit.config import Settings
from toolkit.loader import sync
settings = Settings.load(base_url=sys.argv[1], api_key=sys.argv[2], warehouse=sys.argv[3], environ={})
# CPU seconds of the whole process (every thread: DuckDB's too) and resident MB at the end of each phase
import toolkit.loader.run as run_module
phase_cpu, phase_rss, last_end = {}, {}, [0.0]
_timed = run_module.Run.timed
def timed(self, name, work):
    cpu = time.process_time()
    outer, current[0] = current[0], name
    try:
        return _timed(self, name, work)
    finally:
        phase_cpu[name] = round(phase_cpu.get(name, 0) + time.process_time() - cpu, 2)
        phase_cpu["(imports and opening)"] = phase_cpu.get("(imports and opening)", round(cpu, 2))
        last_end[0] = time.process_time()
        current[0] = outer if outer != "(opening)" else "(after the phases: models, checkpoint, audit)"
        with open("/proc/self/status") as status:
            phase_rss[name] = next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) // 1024
run_module.Run.timed = timed
# CPU seconds of the writer thread (the unit of work's: DuckDB runs there, SYNC_THREADS = 1), by phase
from toolkit.warehouse import writer as writer_module
writer_cpu, current = {}, ["(opening)"]
_submit = writer_module.Writer.submit
def submit(self, work):
    phase = current[0]
    def measured():
        cpu = time.thread_time()
        try:
            work()
        finally:
            writer_cpu[phase] = writer_cpu.get(phase, 0) + time.thread_time() - cpu
    t = time.perf_counter()
    _submit(self, measured)
    waits["handing a write to the writer (its queue full)"] += time.perf_counter() - t
writer_module.Writer.submit = submit
# where each thread's wall time went (Linux): running, waiting for a core (runnable; the run queue, from
# /proc/thread-self/schedstat) or blocked; and what the main thread was blocked on
import collections
def sched():
    try:
        with open("/proc/thread-self/schedstat") as f:
            ran, queued, _ = f.read().split()
        return time.perf_counter(), int(ran) / 1e9, int(queued) / 1e9
    except OSError:
        return time.perf_counter(), time.thread_time(), 0.0
walls = collections.defaultdict(lambda: collections.Counter())
waits = collections.Counter()
def spent(who, start):
    end = sched()
    walls[who].update(
        {"wall": end[0] - start[0], "running": end[1] - start[1], "waiting for a core": end[2] - start[2]}
    )
# a method with its wall seconds added to the main thread's waits[what]
def waited(what, method):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            waits[what] += time.perf_counter() - t
    return wrapper
# a method with where its thread's wall time went added to walls[who]
def scheduled(who, method):
    def wrapper(*args, **kwargs):
        start = sched()
        try:
            return method(*args, **kwargs)
        finally:
            spent(who, start)
    return wrapper
Writer = writer_module.Writer
Writer.drain = waited("waiting for the writer (commits, reads, the models)", Writer.drain)
Writer._run = scheduled("writer thread", Writer._run)
from toolkit.api import client as client_module, exchange as exchange_module
client_module.Client._send_once = waited(
    "in requests (sending, waiting for the answer, decoding it)", client_module.Client._send_once
)
_EXCHANGE_STEP = "send_and_read" if hasattr(exchange_module.Exchange, "send_and_read") else "run"
setattr(exchange_module.Exchange, _EXCHANGE_STEP,
        scheduled("request threads (all, summed)", getattr(exchange_module.Exchange, _EXCHANGE_STEP)))
# the highest resident MB seen in each phase (sampled every 20 ms)
import threading
phase_peak = {}
def sample():
    while True:
        with open("/proc/self/status") as status:
            rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) // 1024
        phase_peak[current[0]] = max(phase_peak.get(current[0], 0), rss)
        time.sleep(0.02)
threading.Thread(target=sample, daemon=True).start()
# the CPU seconds of the toolkit's own steps above the floor, on whichever thread runs them (a step that calls
# another counts it too): each function wrapped wherever a toolkit module holds it (a version without it: skipped)
import importlib
work_cpu, work_lock = {}, threading.Lock()
STEPS = {
    "typed decode of event pages": ("toolkit.api.wire", "decode_event_page"),
    "generic JSON parse (lists; event pages of another shape)": ("toolkit.api.exactjson", "loads"),
    "events' conversion to Arrow (the repeated-names check included)": ("toolkit.warehouse.event_batches",
                                                                         "columns_batch"),
    "repeated-names check": ("toolkit.warehouse.repeated_names", "settle_repeated_names"),
    "lists' conversion to Arrow": ("toolkit.warehouse.batches", "to_batch"),
}
OLDER_PLACES = {"toolkit.warehouse.batches": "toolkit.warehouse.arrow"}  # where an older version holds it

def measured_step(label, original):
    def step(*args, **kwargs):
        cpu = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent = time.thread_time() - cpu
            with work_lock:
                work_cpu[label] = work_cpu.get(label, 0) + spent
    return step
for label, (module_name, name) in STEPS.items():
    try:
        original = getattr(importlib.import_module(module_name), name, None)
    except ImportError:
        original = getattr(importlib.import_module(OLDER_PLACES[module_name]), name, None)
    if original is None:
        continue
    step = measured_step(label, original)
    for module in [m for n, m in list(sys.modules.items()) if n.startswith("toolkit") and m is not None]:
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, step)
main_start = sched()
if len(sys.argv) > 4:
    import cProfile
    profiler = cProfile.Profile()
    r = profiler.runcall(sync, settings, quiet=True)
    profiler.dump_stats(sys.argv[4])
else:
    r = sync(settings, quiet=True)
spent("main thread", main_start)
walls["main thread"].update(waits)
for counts in walls.values():
    counts["blocked"] = counts["wall"] - counts["running"] - counts["waiting for a core"]
phase_cpu["(after the phases: models, checkpoint, audit)"] = round(time.process_time() - last_end[0], 2)
print(json.dumps({"seconds": r.seconds, "wall": time.perf_counter() - t0, "requests": r.requests,
                  "rows": dict(r.rows), "phases": r.phases, "outcome": r.outcome, "peak_mb": peak_rss_mb(),
                  "phase_cpu": phase_cpu, "phase_rss_mb": phase_rss,
                  "writer_cpu": {k: round(v, 2) for k, v in writer_cpu.items()}, "phase_peak_mb": phase_peak,
                  "work_cpu": {k: round(v, 2) for k, v in work_cpu.items()},
                  "walls": {who: {k: round(v, 2) for k, v in c.items()} for who, c in walls.items()}}))
"""
)


#: The ceiling: what any sync that stores these rows in DuckDB could reach on this machine. In one child process,
#: the raw tables a sync stored are first read into memory as Arrow (untimed); then, timed, the baseline loop runs
#: on the main thread while a second thread appends those tables, already converted, to a fresh warehouse with the
#: sync's settings (DuckDB releases the GIL, so the two overlap on two cores), in the cheapest transaction size
#: measured (one per 200,000 rows: DuckDB then writes whole row groups instead of a write-ahead log it compresses
#: again at each checkpoint); then the models are built on it, as a sync does last. Nothing else of a sync is done:
#: no decoding into typed records, no conversion, no de-duplication, cursors or bookkeeping.
CEILING = (
    PEAK_RSS_MB
    + """
import json, sys, threading, time
import httpx, orjson
from toolkit.loader.tuning import DEFAULT_TUNING as T

MODELS_THREADS, SYNC_CHECKPOINT_THRESHOLD = T.models_threads, T.checkpoint_threshold
SYNC_MEMORY_LIMIT, SYNC_THREADS = T.sync_memory_limit, T.sync_threads
from toolkit.warehouse import Warehouse
from toolkit.warehouse.schema import RAW_TABLES as TABLES
from toolkit.warehouse.model_tables import refresh_models
base_url, key, targets_file, source, fresh = sys.argv[1:6]
targets = open(targets_file, "rb").read().split(b"\\n")
with Warehouse(source, read_only=True) as wh:
    tables = {t: wh.con.sql(f'SELECT * FROM "{spec.name}"').to_arrow_table() for t, spec in TABLES.items()}
wh = Warehouse(fresh, memory_limit=SYNC_MEMORY_LIMIT)
wh.configure(checkpoint_threshold=SYNC_CHECKPOINT_THRESHOLD, threads=SYNC_THREADS)
TX_ROWS = 200_000
store = {}
def append():
    t0, cpu = time.perf_counter(), time.thread_time()
    for name, table in tables.items():
        for start in range(0, max(table.num_rows, 1), TX_ROWS):
            wh.con.register("_part", table.slice(start, TX_ROWS))
            wh.con.execute("BEGIN")
            wh.con.execute(f'INSERT INTO "{TABLES[name].name}" BY NAME SELECT * FROM _part')
            wh.con.execute("COMMIT")
            wh.con.unregister("_part")
    store.update(seconds=time.perf_counter() - t0, cpu=time.thread_time() - cpu)
origin = base_url.rsplit("/v1", 1)[0]
with httpx.Client(base_url=origin, headers={"Authorization": f"Apikey {key}"}, timeout=60) as client:
    t0 = time.perf_counter()
    writer = threading.Thread(target=append)
    writer.start()
    for target in targets:
        orjson.loads(client.get(target.decode()).content)
    loop = time.perf_counter() - t0
    writer.join()
    both = time.perf_counter() - t0
t1 = time.perf_counter()
refresh_models(wh, threads=MODELS_THREADS)
models = time.perf_counter() - t1
wh.close()
print(json.dumps({"loop": loop, "store": store["seconds"], "store_cpu": store["cpu"], "both": both,
                  "models": models, "rows": {t: tables[t].num_rows for t in tables}, "peak_mb": peak_rss_mb()}))
"""
)


def record(events: int, days: int, shape: str, path: Path) -> None:
    """Serve a sandbox scenario and record every answer one full sync of it reads."""
    per_day = max(10, int(events / EVENTS_PER_OPERATION / days))
    print(f"scenario: {shape}, {days} days x {per_day} operations/day (about {events:,} events)", flush=True)
    t0 = time.perf_counter()
    with (
        sandbox_server(
            "--days", str(days), "--operations-per-day", str(per_day), "--seed", "3", "--shape", shape, core=None
        ) as (url, _),
        tempfile.TemporaryDirectory() as tmp,
    ):
        print(f"sandbox ready in {time.perf_counter() - t0:.1f}s; recording a sync", flush=True)
        t0 = time.perf_counter()
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, "-c", RECORD, url, KEY, str(partial), str(Path(tmp) / "record.duckdb")],
            check=True,
            cwd=ROOT,
            env=_clean_env(),
        )
        partial.rename(path)
        print(f"recorded in {time.perf_counter() - t0:.1f}s: {path} ({path.stat().st_size / 2**20:,.0f} MB)")


@contextmanager
def replay_server(path: Path) -> Iterator[subprocess.Popen[str]]:
    """:mod:`benchmarks.replay` serving ``path`` in its own process; yields it (``.base_url`` set)."""
    with line_server([sys.executable, "-m", "benchmarks.replay", str(path)], "replay server", cwd=ROOT) as proc:
        yield proc


def server_command(proc: subprocess.Popen[str], command: str) -> dict:
    """Send ``stats`` or ``reset`` to the replay server; its answer."""
    return json.loads(line_command(proc, command))


def check_no_misses(proc: subprocess.Popen[str], who: str) -> int:
    """The requests the server answered since the last reset; raises if any was not in the recording."""
    stats = server_command(proc, "stats")
    if stats["misses"]:
        raise SystemExit(f"{who} asked for answers the recording lacks (re-record): {stats['misses']}")
    server_command(proc, "reset")
    return int(stats["requests"])


def baseline(base_url: str, targets: list[bytes]) -> tuple[int, int, float]:
    """The hand-written loop: every recorded request in order, one keep-alive client, ``orjson.loads`` of each
    answer; returns (pages, events, seconds, CPU seconds)."""
    origin = base_url.rsplit("/v1", 1)[0]
    events = 0
    with httpx.Client(base_url=origin, headers={"Authorization": f"Apikey {KEY}"}, timeout=60) as client:
        t0, cpu = time.perf_counter(), time.process_time()
        for target in targets:
            page = orjson.loads(client.get(target.decode()).content)
            if type(page) is dict:
                events += len(page.get("events", ()))
        return len(targets), events, time.perf_counter() - t0, time.process_time() - cpu


def run_sync(base_url: str, warehouse: Path, profile: Path | None = None, toolkit: Path = ROOT) -> dict:
    """A full sync in a fresh process, with the toolkit found in ``toolkit``; its report, plus ``cpu``: the CPU
    seconds the process used (imports too)."""
    args = [sys.executable, "-c", SYNC_AND_REPORT, base_url, KEY, str(warehouse)]
    if profile is not None:
        args.append(str(profile))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(args, env=_clean_env(), capture_output=True, text=True, cwd=toolkit)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise SystemExit(f"the sync failed:\n{out.stderr[-3000:]}")
    report = json.loads(out.stdout.strip().splitlines()[-1])
    report["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return report


def run_ceiling(base_url: str, targets: list[bytes], source: Path, fresh: Path) -> dict:
    """:data:`CEILING` in a fresh process over the rows the sync stored in ``source``; its report."""
    listing = fresh.with_suffix(".targets")
    listing.write_bytes(b"\n".join(targets))
    args = [sys.executable, "-c", CEILING, base_url, KEY, str(listing), str(source), str(fresh)]
    out = subprocess.run(args, env=_clean_env(), capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        raise SystemExit(f"the ceiling measurement failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="approximate events in the scenario")
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--shape", default="default", help="the sandbox's scenario shape")
    parser.add_argument("--runs", type=int, default=2, help="baseline/sync pairs to time")
    parser.add_argument("--recording", type=Path, help="keep the recording here (reused when it exists)")
    parser.add_argument("--profile", type=Path, help="also run the sync under cProfile, stats written here")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also measure the ceiling: the baseline loop while the sync's rows, already converted, are appended "
        "to a fresh warehouse on a second thread, then the models built (the best any sync storing them could do)",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        help="a directory holding another version's toolkit/ package (e.g. `git archive REV toolkit | tar -x -C DIR`):"
        " each run also syncs with it, for before/after figures against the same baseline",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.recording or Path(tmp) / "recording.bin"
        if not path.exists():
            record(args.events, args.days, args.shape, path)
        targets = [key.split(b" ", 1)[1] for key, _, _ in read_records(path) if key.startswith(b"GET ")]
        with replay_server(path) as server:
            url = server.base_url  # type: ignore[attr-defined]
            print(f"replaying {len(targets):,} recorded requests from {url}", flush=True)
            ratios = []
            for run in range(1, args.runs + 1):
                load_before = os.getloadavg()[0]
                pages, events, before, before_cpu = baseline(url, targets)
                check_no_misses(server, "the baseline")
                other = None
                if args.compare:
                    other = run_sync(url, Path(tmp) / f"other{run}.duckdb", toolkit=args.compare)
                    check_no_misses(server, "the sync to compare with")
                sync = run_sync(url, Path(tmp) / f"sync{run}.duckdb")
                requests = check_no_misses(server, "the sync")
                _, _, after, after_cpu = baseline(url, targets)
                check_no_misses(server, "the baseline")
                base = (before + after) / 2
                stored = sync["rows"].get("events", 0)
                ratio = base / sync["seconds"]
                ratios.append(ratio)
                print(
                    f"run {run} (load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}): baseline (httpx "
                    f"keep-alive + orjson.loads): {pages:,} pages, {events:,} events in {before:.2f}s before and "
                    f"{after:.2f}s after the sync = {events / base:,.0f} events/s"
                )
                print(
                    f"  sync: {stored:,} events ({sum(sync['rows'].values()):,} rows, {requests:,} requests, "
                    f"outcome {sync['outcome']}) in {sync['seconds']:.2f}s = {stored / sync['seconds']:,.0f} "
                    f"events/s; process wall {sync['wall']:.2f}s with imports; peak RSS {sync['peak_mb']:.0f} MB"
                )
                print(f"  phases (s): {sync['phases']}")
                print(f"  phases (CPU-s, all threads; nested phases counted in theirs too): {sync['phase_cpu']}")
                print(f"  of which on the writer thread (DuckDB; CPU-s): {sync['writer_cpu']}")
                print(f"  resident MB at the end of each phase: {sync['phase_rss_mb']}")
                print(f"  highest resident MB in each phase (innermost): {sync['phase_peak_mb']}")
                print(f"  the toolkit's own steps (CPU-s, any thread): {sync['work_cpu']}")
                for who, spent in sync["walls"].items():
                    print(f"  {who}, seconds of the sync: {spent}")
                base_cpu = (before_cpu + after_cpu) / 2
                print(
                    f"  CPU seconds: baseline {base_cpu:.2f}, sync {sync['cpu']:.2f} (process, imports included) = "
                    f"{sync['cpu'] / base_cpu:.1f}x; {sync['cpu'] / sync['wall']:.2f} of "
                    f"{os.cpu_count()} cores busy on average"
                )
                print(f"  ratio baseline / sync = {base:.2f} / {sync['seconds']:.2f} = {ratio:.2f}x", flush=True)
                if args.ceiling:
                    top = run_ceiling(url, targets, Path(tmp) / f"sync{run}.duckdb", Path(tmp) / f"ceiling{run}.duckdb")
                    check_no_misses(server, "the ceiling's loop")
                    stored_rows = sum(top["rows"].values())
                    print(
                        f"  ceiling: the loop ({top['loop']:.2f}s) alongside appending the {stored_rows:,} stored rows "
                        f"already converted ({top['store']:.2f}s, {top['store_cpu']:.2f} CPU-s) took {top['both']:.2f}s"
                        f" = {base / top['both']:.2f}x; with the models ({top['models']:.2f}s) "
                        f"{top['both'] + top['models']:.2f}s = {base / (top['both'] + top['models']):.2f}x",
                        flush=True,
                    )
                if other is not None:
                    print(
                        f"  compared: the toolkit in {args.compare} synced in {other['seconds']:.2f}s "
                        f"({base / other['seconds']:.2f}x), CPU {other['cpu']:.2f}s, "
                        f"peak RSS {other['peak_mb']:.0f} MB; phases (s): {other['phases']}; phases (CPU-s): "
                        f"{other.get('phase_cpu')}",
                        flush=True,
                    )
                    print(
                        f"    compared: CPU seconds {other['cpu']:.2f} = {other['cpu'] / base_cpu:.1f}x the baseline; "
                        f"wall {other['seconds']:.2f}s; writer thread (CPU-s): {other['writer_cpu']}; "
                        f"the toolkit's own steps (CPU-s): {other['work_cpu']}",
                        flush=True,
                    )
                    for who, spent in other.get("walls", {}).items():
                        print(f"    compared: {who}, seconds of the sync: {spent}")
            print(f"ratios: {', '.join(f'{r:.2f}x' for r in ratios)}")
            if args.profile:
                run_sync(url, Path(tmp) / "profiled.duckdb", profile=args.profile)
                check_no_misses(server, "the profiled sync")
                print(f"profile of one sync written to {args.profile}")


if __name__ == "__main__":
    main()
