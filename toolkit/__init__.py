"""chainops toolkit: sync a Channel-Based Chain Operations Service into DuckDB and measure how operations behave.

>>> import toolkit as tk
>>> result = tk.sync()                                  # doctest: +SKIP
>>> tk.metrics.status_latency("data/chainops.duckdb")   # doctest: +SKIP

Nothing here imports plotting, widget or sandbox code.
"""

from . import errors, metrics, spec
from .api import Client
from .config import Settings
from .errors import ChainopsError
from .metrics import status_latency
from .sync import SyncResult, sync
from .warehouse import Warehouse

__version__ = "0.1.0"

__all__ = [
    "ChainopsError",
    "Client",
    "Settings",
    "SyncResult",
    "Warehouse",
    "__version__",
    "errors",
    "metrics",
    "spec",
    "status_latency",
    "sync",
]
