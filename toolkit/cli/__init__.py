"""The ``chainops`` command line: demo, sync, verify, metrics, report, sql, export, dashboard, sandbox.

A module per command declares its options beside its handler (``register`` adds its subparser); the option groups
several commands share are declared once in :mod:`toolkit.cli.options`, what they print in :mod:`toolkit.cli.output`,
and :mod:`toolkit.cli.app` puts the parser together and runs it (:func:`main`).

Exit codes: 0 done, 1 failed (the message says what and what to do), 2 usage, 3 a ``report --fail-on``
threshold was breached (the report is still written) or a DON proof is invalid (``verify``, ``sync --verify``).
The API key comes only from ``CREC_API_KEY``: flags end up in shell history and process lists.

pandas, DuckDB, Arrow and matplotlib are imported by the commands that use them, never at import or while parsing:
``chainops --help``, ``--version`` and usage errors answer at once (``benchmarks/cli_startup_bench.py``).
"""

from __future__ import annotations

from ..registry import METRIC_NAMES
from .app import build_parser, main
from .demo import DEMO_KEY, DEMO_START, _mark_demo, _program, _replace_demo_warehouse, demo_next_commands
from .output import EXIT_BROKEN_PIPE, EXIT_THRESHOLD, FORMATS_BY_EXTENSION, clean_for_terminal, output_format
from .sandbox import SANDBOX_SHAPES

__all__ = [
    "DEMO_KEY",
    "DEMO_START",
    "EXIT_BROKEN_PIPE",
    "EXIT_THRESHOLD",
    "FORMATS_BY_EXTENSION",
    "METRIC_NAMES",
    "SANDBOX_SHAPES",
    "_mark_demo",
    "_program",
    "_replace_demo_warehouse",
    "build_parser",
    "clean_for_terminal",
    "demo_next_commands",
    "main",
    "output_format",
]
