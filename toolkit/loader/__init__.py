"""The loader: a sync run of the organisation's resources into the DuckDB warehouse (see :func:`sync`).

``toolkit.sync`` is the function :func:`sync`; this package holds the code behind it (module map in
docs/architecture.md, "The sync").
"""

from .run import COMMIT_ROWS, WORKERS, SyncResult, default_workers, sync

__all__ = ["COMMIT_ROWS", "WORKERS", "SyncResult", "default_workers", "sync"]
