"""The toolkit's log: decisions worth knowing about (a request retried, a hole in an event log read again, a
refetch queued, a sync stepping aside for a reader, an out-of-memory retry; commits at debug level) go to loggers
under ``toolkit`` (``toolkit.api``, ``toolkit.loader``, ...).

Silent by default, as a library should be: ``toolkit/__init__.py`` attaches only a :class:`logging.NullHandler`.
``chainops -v`` shows them on standard error (:func:`show_on_stderr`); in Python, configure the ``toolkit`` logger
as usual. The API key never appears: requests are named by method and path, and problems pass through the client's
``redact``.
"""

from __future__ import annotations

import logging
import sys

ROOT = "toolkit"


def level_of(verbosity: int) -> int | None:
    """The level ``-v`` (INFO) or ``-vv`` (DEBUG) asks for; ``None`` without the flag."""
    if verbosity <= 0:
        return None
    return logging.INFO if verbosity == 1 else logging.DEBUG


_shown: list[logging.Handler] = []  # the handler show_on_stderr added, if any


def show_on_stderr(verbosity: int) -> logging.Handler | None:
    """Show the toolkit's log on standard error at the level ``verbosity`` asks for, replacing what an earlier call
    set up; returns the handler added (``None`` when ``verbosity`` is 0: then nothing is shown)."""
    logger = logging.getLogger(ROOT)
    while _shown:
        logger.removeHandler(_shown.pop())
    level = level_of(verbosity)
    logger.setLevel(level if level is not None else logging.NOTSET)
    if level is None:
        return None
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    logger.addHandler(handler)
    _shown.append(handler)
    return handler
