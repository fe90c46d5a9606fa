"""File-system failures of the warehouse as messages that say what happened and what to do.

DuckDB reports a full disk, a file size limit or a read-only directory as an ``IOException`` (or, when it happens at
``COMMIT``, a ``TransactionException`` carrying the same text), and Python as an ``OSError``; these turn them into
:class:`~toolkit.errors.WarehouseError`.
"""

from __future__ import annotations

import errno
import os

import duckdb

from ..errors import WarehouseError

#: The exceptions a write to the warehouse's files raises when the file system refuses it.
WRITE_FAILURES: tuple[type[BaseException], ...] = (duckdb.IOException, duckdb.TransactionException, OSError)

_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
_FULL_TEXT = ("no space left", "file too large", "disk quota")
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.ENOENT)
_DENIED_TEXT = (
    "permission denied",
    "read-only file system",
    "not a directory",
    "is a directory",
    "no such file or directory",
)


#: Failures that are not the disk's: too many open files, a loop of symbolic links, a name too long.
_LIMITS = {
    errno.EMFILE: "this process has too many files open: raise its limit (ulimit -n) or close other work",
    errno.ENFILE: "the system has too many files open: close other work",
    errno.ELOOP: "the path is a loop of symbolic links: point --warehouse / CHAINOPS_WAREHOUSE at the file itself",
    errno.ENAMETOOLONG: "the path or a name in it is too long: choose a shorter --warehouse path",
}
_LIMITS_TEXT = {
    "too many open files": errno.EMFILE,
    "too many levels of symbolic links": errno.ELOOP,
    "file name too long": errno.ENAMETOOLONG,
}


def _limit(exc: BaseException) -> int | None:
    code = exc.errno if isinstance(exc, OSError) else None
    if code in _LIMITS:
        return code
    text = str(exc).lower()
    return next((c for t, c in _LIMITS_TEXT.items() if t in text), None)


def _kind(exc: BaseException) -> str:
    text = str(exc).lower()
    code = exc.errno if isinstance(exc, OSError) else None
    if _limit(exc) is not None:
        return "limit"
    if code in _FULL or any(t in text for t in _FULL_TEXT):
        return "full"
    if code in _DENIED or any(t in text for t in _DENIED_TEXT):
        return "denied"
    return "other"


def write_failure(path: str | os.PathLike[str], exc: BaseException, *, command: str = "the sync") -> WarehouseError:
    """The :class:`WarehouseError` for ``exc``, raised while writing the warehouse at ``path``.

    A full disk says so and that ``command`` (what was writing: the sync, or `chainops verify`) can be run again
    (every committed batch is kept); a refused directory says to check it or choose another ``--warehouse``.
    """
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).strip()
    kind = _kind(exc)
    if kind == "limit":
        what = _LIMITS[_limit(exc) or errno.EMFILE]
        return WarehouseError(
            f"Cannot use the warehouse {path}: {detail}; {what}. Nothing committed is lost: run the command again."
        )
    if kind == "denied":
        return WarehouseError(
            f"Cannot write the warehouse {path}: {detail}. Check that its directory exists and is writable, or "
            "point warehouse= (Python), --warehouse (CLI) or CHAINOPS_WAREHOUSE at another file."
        )
    cause = (
        "the disk is full or a file size limit was reached"
        if kind == "full"
        else "the disk may be full, or the file system refused the write"
    )
    return WarehouseError(
        f"Writing to the warehouse {path} failed ({detail}): {cause}. Free some space and run {command} again: "
        "everything committed before the failure is kept and the next run continues from there."
    )


__all__ = ["WRITE_FAILURES", "write_failure"]
