"""chainops toolkit: sync a Channel-Based Chain Operations Service into DuckDB and measure how operations behave.

>>> import toolkit as tk
>>> result = tk.sync()                                  # doctest: +SKIP
>>> tk.metrics.status_latency("data/chainops.duckdb")   # doctest: +SKIP

Nothing here imports plotting, widget or sandbox code.
"""

import logging

from . import errors, metrics, spec
from .api import Client
from .config import Settings
from .errors import ChainopsError
from .loader import SyncResult, sync
from .metrics import status_latency
from .present import show
from .warehouse import Warehouse

__version__ = "0.1.0"

# the toolkit logs its decisions (see toolkit.logs): silent unless the application configures logging
logging.getLogger(__name__).addHandler(logging.NullHandler())


def dashboard(warehouse: str | Warehouse | None = None, **options: object) -> object:
    """The ipywidgets dashboard over ``warehouse`` (see :func:`toolkit.dashboard_app.dashboard`).

    :mod:`toolkit.dashboard_app` is imported on first call, so ``import toolkit`` loads no widget or plotting code.
    Returns the :class:`~toolkit.dashboard_app.Dashboard`.
    """
    from . import dashboard_app

    return dashboard_app.dashboard(warehouse, **options)


__all__ = [
    "ChainopsError",
    "Client",
    "Settings",
    "SyncResult",
    "Warehouse",
    "__version__",
    "dashboard",
    "errors",
    "metrics",
    "show",
    "spec",
    "status_latency",
    "sync",
]
