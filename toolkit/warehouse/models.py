"""Modelled data kept up to date at sync time (materialised tables behind the views, when they pay off).

:func:`refresh_models` runs at the end of every sync, inside the sync's writer connection, after all raw rows are
committed. It must be incremental (cost in proportion to what changed) and idempotent.
"""

from __future__ import annotations

from .store import Warehouse


def refresh_models(wh: Warehouse) -> None:
    """Bring the modelled tables up to date with the raw tables (nothing to do while every model is a view)."""
    return None
