"""chainops toolkit: sync a Channel-Based Chain Operations Service into DuckDB and measure how operations behave.

>>> import toolkit as tk
>>> result = tk.sync()                                  # doctest: +SKIP
>>> tk.metrics.status_latency("data/chainops.duckdb")   # doctest: +SKIP

The names below are imported on first use (PEP 562): ``import toolkit`` itself loads neither pandas, DuckDB nor
Arrow, so the ``chainops`` command line (``toolkit.cli``, inside this package) answers ``--help`` at once. Nothing
here imports plotting, widget or sandbox code.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING

from .metrics import declare as _declare  # the metrics' declarations: pure data, no pandas or DuckDB

__version__ = "0.1.0"

# the toolkit logs its decisions (see toolkit.logs): silent unless the application configures logging
logging.getLogger(__name__).addHandler(logging.NullHandler())

#: Each public name: (the module that defines it, its name there; None for the module itself).
_LAZY: dict[str, tuple[str, str | None]] = {
    "ChainopsError": (".errors", "ChainopsError"),
    "Client": (".api", "Client"),
    "Settings": (".config", "Settings"),
    "SyncResult": (".loader", "SyncResult"),
    "Warehouse": (".warehouse", "Warehouse"),
    "errors": (".errors", None),
    "metrics": (".metrics", None),
    "show": (".presentation.tables", "show"),
    "spec": (".spec", None),
    "status_latency": (".metrics", "status_latency"),
    "sync": (".loader", "sync"),
}

if TYPE_CHECKING:  # for type checkers and the API reference (griffe reads this statically)
    from . import errors, metrics, spec
    from .api import Client
    from .config import Settings
    from .errors import ChainopsError
    from .loader import SyncResult, sync
    from .metrics import status_latency
    from .presentation.tables import show
    from .warehouse import Warehouse


def _show_in_notebook(result: object) -> None:
    """In a running IPython, a metric's result shows as every surface shows it (the presentation registers its
    formatter); the metrics call this through their result hooks and never import the presentation."""
    import sys

    if "IPython" in sys.modules:
        from .presentation.tables import use_in_notebook

        use_in_notebook()


_declare.RESULT_HOOKS.append(_show_in_notebook)


def __getattr__(name: str) -> object:
    """Import a public name on first use and keep it (``tk.sync``, ``tk.metrics``, ``tk.Warehouse``, ...)."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value: object = importlib.import_module(module, __name__)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def dashboard(warehouse: str | Warehouse | None = None, **options: object) -> object:
    """The ipywidgets dashboard over ``warehouse`` (see :func:`toolkit.presentation.dashboard_widgets.dashboard`).

    :mod:`toolkit.presentation.dashboard_widgets` is imported on first call, so ``import toolkit`` loads no widget
    or plotting code.
    It needs the ``[notebook]`` extra (``pip install 'chainops-toolkit[notebook]'``).
    Returns the :class:`~toolkit.presentation.dashboard_widgets.Dashboard`.
    """
    from .presentation import dashboard_widgets

    return dashboard_widgets.dashboard(warehouse, **options)


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
