"""The process's standard streams, made to write whatever text they are given.

It imports nothing heavy (the command line calls it before parsing, and ``chainops --help`` must answer at once) and
nothing of the toolkit.
"""

from __future__ import annotations

import sys
from typing import Any


def encodable_streams(*streams: Any) -> None:
    """Make standard output and error (or ``streams``) write what their encoding cannot hold as backslash escapes
    (``caf\\xe9``) instead of raising ``UnicodeEncodeError``: a POSIX locale or ``PYTHONIOENCODING=ascii`` with
    a non-ASCII channel name must not end a command with a traceback (after a sync's commit, say). UTF-8 streams,
    and streams that cannot be reconfigured, are left alone."""
    for stream in streams or (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
        if encoding in ("utf-8", "utf8") or not hasattr(stream, "reconfigure"):
            continue
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # a stream already closed, or not a text wrapper
            continue
