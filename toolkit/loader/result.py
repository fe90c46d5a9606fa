"""What one sync run did: :class:`SyncResult`, the run's audit row (see :mod:`.audit`) and its summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass
class SyncResult:
    """What one sync run did: the audit row of ``sync_runs``."""

    run_id: str
    started_at: datetime
    full: bool = False
    finished_at: datetime | None = None
    outcome: str = "running"
    requests: int = 0
    retries: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    updated: Counter[str] = field(default_factory=Counter)
    rejected: list[str] = field(default_factory=list)
    gaps: dict[str, list[list[int]]] = field(default_factory=dict)
    #: Pages the service answered wrongly (offsets going backwards, has_more with nothing new, unreadable), each
    #: naming its request and what the run did about it, and work left undone (models not refreshed); any makes the
    #: outcome ``partial``.
    problems: list[str] = field(default_factory=list)
    message: str | None = None
    #: Wall seconds per phase of the run (small lists, watchers, full lists, events, refetch, ...).
    phases: dict[str, float] = field(default_factory=dict)
    #: The event window asked for and each windowed channel's (``sync_runs.event_window``); None when all read whole
    #: (see :mod:`toolkit.loader.event_window`).
    event_window: dict[str, Any] | None = None
    #: The model refresh at the end of the run (``sync_runs.models``): operations, transitions, rebuilt, pieces,
    #: retries, memory_limit, seconds; None when it did not run.
    models: dict[str, Any] | None = None
    #: The summary's line about the event windows.
    window_line: str | None = None

    @property
    def seconds(self) -> float:
        """Wall time of the run."""
        end = self.finished_at or datetime.now(UTC)
        return (end - self.started_at).total_seconds()

    def summary(self) -> str:
        """A few human lines: rows new/updated per table, requests, retries, time."""
        tables = sorted(set(self.rows) | set(self.updated))
        rows = ", ".join(f"{t} +{self.rows[t]:,}/~{self.updated[t]:,}" for t in tables) or "nothing changed"
        lines = [
            f"sync {self.outcome} in {self.seconds:.1f}s: {self.requests:,} requests, {self.retries:,} retries",
            f"rows new/updated: {rows}",
        ]
        if self.problems:
            lines.append(f"{len(self.problems)} problems (see sync_runs.message); first: {self.problems[0]}")
        if self.rejected:
            lines.append(f"{len(self.rejected)} records rejected (see sync_runs.message); first: {self.rejected[0]}")
        if self.gaps:
            lines.append(f"event offset gaps still open after a re-read: {self.gaps}")
        if self.window_line:
            lines.append(self.window_line)
        return "\n".join(lines)

    def _repr_html_(self) -> str:  # notebooks
        import html

        return "<pre>" + html.escape(self.summary()) + "</pre>"
