"""The loader: a sync run of the organisation's resources into the DuckDB warehouse (see :func:`sync`).

``toolkit.sync`` is the function :func:`sync`; this package holds the code behind it (module map in
docs/architecture.md, "The sync"): :mod:`.run` the run and its lifecycle, :mod:`.tuning` the values it is tuned
with, :mod:`.outcome` how it ends when things fail, :mod:`.unit_of_work` the one owner of the warehouse connection,
:mod:`.fetchers` one module per phase, :mod:`.context` what fetchers share, :mod:`.audit` the ``sync_runs`` row,
:mod:`.result` :class:`SyncResult`, :mod:`.progress` the progress bars.
"""

from .fetchers.paged import COMMIT_ROWS
from .result import SyncResult
from .run import WORKERS, default_workers, sync
from .tuning import DEFAULT_TUNING, Tuning

__all__ = ["COMMIT_ROWS", "DEFAULT_TUNING", "WORKERS", "SyncResult", "Tuning", "default_workers", "sync"]
