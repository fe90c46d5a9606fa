"""The values a sync run is tuned with, in one frozen object passed to :func:`toolkit.loader.sync`.

Every field has the default the toolkit was measured with (the reason beside each); a caller (a test, a benchmark)
passes its own instance, ``dataclasses.replace(DEFAULT_TUNING, sync_memory_limit="8MB")``, instead of changing a
module global.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from ..warehouse.memory import parse_bytes


@dataclass(frozen=True)
class Tuning:
    """DuckDB's settings while a sync writes and while it builds the models, the concurrency of its fetches, and
    Arrow's memory pool."""

    #: DuckDB's memory ceiling while loading, so a long history never grows the process (an out-of-memory error
    #: doubles it, up to :func:`toolkit.warehouse.memory.memory_ceiling`, and the load continues).
    sync_memory_limit: str = "96MB"
    #: DuckDB's memory limit while the model tables are built (their first build needs more than loading: at ten
    #: million events 256 MB lets it run on two threads in 38 s, where 128 MB took one thread and 60 s), lowered to
    #: what :attr:`peak_budget_mib` leaves (:func:`models_memory_limit`).
    models_memory_limit: str = "256MB"
    #: The least the models are given (MiB), whatever the budget leaves (their build at 128 MB: see above).
    models_memory_floor_mib: int = 122
    #: The process's resident memory a sync keeps to (MiB): the models get what is left of it once the load is over (its
    #: Python heap is still resident then, about 265 MB at 200,000 events), between the floor and
    #: :attr:`models_memory_limit`. With the whole 256 MB a sync of 200,000 events peaked at 445–458 MB, with 128 MB
    #: at 341–343 MB, its models taking 3.3–4.9 s instead of 2.5–3.1 s (benchmarks.cpu_bench). ``None``: no budget.
    peak_budget_mib: int | None = 400
    #: What the process grows by while the models build, beyond the memory limit DuckDB is given (what it allocates
    #: outside its buffer manager, the allocator's slack), kept out of what the budget leaves them (MiB): without it
    #: a sync of 200,000 events peaked at 374–401 MiB under the 400 of the budget (issue 40, seventeen runs).
    models_overshoot_mib: int = 8
    #: DuckDB's threads for the models, built once fetching is over.
    models_threads: int = 2
    #: DuckDB's threads while loading: appends gain nothing from a second, which only takes CPU from the fetching.
    sync_threads: int = 1
    #: DuckDB's checkpoint threshold while loading. A commit larger than it (a full transaction of rows) is
    #: checkpointed straight into the file, compressed, instead of being written to the WAL first and copied again
    #: later: measured at 1M events, commits cost a third less than with 128 MB.
    checkpoint_threshold: str = "16MB"
    #: Whether a first sync (into a warehouse without events) lets DuckDB's checkpoints merge the row groups its
    #: transactions leave partly filled (DuckDB's vacuum, ``max_vacuum_tasks``). Every transaction of events leaves
    #: one, and merging them compresses those rows again: at 200,000 events the checkpoint after the events took
    #: 0.65 CPU-s with it and 0.12 without, the whole sync about 0.8 CPU-s less (benchmarks.cpu_bench), for 14 row
    #: groups of events instead of 13. A later sync merges as DuckDB does by default (it also vacuums the rows its
    #: upserts delete), so the merging a first sync leaves is done once, by the next one.
    first_sync_merges_row_groups: bool = False
    #: Concurrent fetches (threads sharing one client) from a remote service, where they hide network latency; on
    #: loopback one (:func:`toolkit.loader.run.default_workers`).
    workers: int = 4
    #: Arrow's memory pool while a sync runs (the process default is restored after). pyarrow's default, mimalloc,
    #: keeps the pages it has used for the many short-lived batches a sync converts: with the system allocator, which
    #: hands them back, a 1M-event sync peaks about 30 MB lower (355 against 387 MB, four alternating runs), no slower.
    arrow_pool: Callable[[], pa.MemoryPool] = pa.system_memory_pool


def resident_mib() -> float | None:
    """The process's resident memory in MiB (``VmRSS``), or ``None`` where ``/proc`` does not tell it."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def models_memory_limit(tuning: Tuning, resident: float | None) -> str:
    """DuckDB's memory limit for the models' build, given the process's ``resident`` MiB when it begins: what
    :attr:`Tuning.peak_budget_mib` leaves once :attr:`Tuning.models_overshoot_mib` is set aside, at least
    :attr:`Tuning.models_memory_floor_mib`, never more than :attr:`Tuning.models_memory_limit` (that limit as set
    when the budget leaves as much, when the limit is below the floor, or without a budget or a reading)."""
    if tuning.peak_budget_mib is None or resident is None:
        return tuning.models_memory_limit
    most = parse_bytes(tuning.models_memory_limit) / 2**20
    given = max(tuning.models_memory_floor_mib, tuning.peak_budget_mib - tuning.models_overshoot_mib - resident)
    return tuning.models_memory_limit if given >= most else f"{int(given)}MiB"


#: The tuning every sync uses unless given another.
DEFAULT_TUNING = Tuning()
