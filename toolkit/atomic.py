"""Output files and directories that appear whole or not at all.

Each is written under a temporary name beside its target and renamed into place once complete; whatever fails on
the way (a full disk, an interrupted run, a renderer that raises) removes the temporary file or directory, so a
failed report or export leaves nothing half-written behind. This module imports nothing of the toolkit but its
errors.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from .errors import ChainopsError


def output_error(path: str | os.PathLike[str], exc: OSError, what: str = "the output") -> ChainopsError:
    """A clear error for an output that could not be written: names the path, the reason and what to do."""
    reason = exc.strerror or str(exc)
    return ChainopsError(
        f"Cannot write {what} to {path}: {reason}. Check that the directory exists, is writable "
        "and has free space, or choose another --out."
    )


def _temp_name(path: Path, suffix: str) -> Path:
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.{suffix}")


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write; when the block ends it replaces ``path`` (atomically, on
    one file system). If the block raises, the temporary file is removed and ``path`` is left as it was."""
    target = Path(path)
    tmp = _temp_name(target, "tmp")
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging directory to fill; when the block ends its entries take their places in ``path``.

    A ``path`` that did not exist appears whole (the staging directory is renamed to it). In an existing ``path``
    each entry replaces the one of the same name (a directory by two renames) and other files are left alone. If
    the block raises, the staging directory is removed and ``path`` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    exists = target.is_dir()
    staging = (target / f".staging.{uuid.uuid4().hex[:8]}.tmp") if exists else _temp_name(target, "tmp")
    staging.mkdir()
    try:
        yield staging
        if not exists:
            staging.rename(target)
            return
        for entry in sorted(staging.iterdir()):
            _move_into_place(entry, target / entry.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _move_into_place(entry: Path, final: Path) -> None:
    if not entry.is_dir() or not final.exists():
        os.replace(entry, final)
        return
    old = _temp_name(final, "old")
    final.rename(old)
    try:
        entry.rename(final)
    except BaseException:
        old.rename(final)
        raise
    shutil.rmtree(old, ignore_errors=True)


__all__ = ["atomic_dir", "atomic_file", "output_error"]
