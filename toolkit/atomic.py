"""Output files and directories that appear whole or not at all.

Each is written under a temporary name beside its target and renamed into place once complete (a device or a FIFO
is written through instead, never replaced: see :func:`atomic_file`); whatever fails on
the way (a full disk, an interrupted run, a renderer that raises) removes the temporary file or directory, so a
failed report or export leaves nothing half-written behind. This module imports nothing of the toolkit but its
errors.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from .errors import ChainopsError
from .signals import held


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
    """Yield a temporary path to write; when the block ends its bytes go to ``path``. If the block raises, the
    temporary file is removed and ``path`` is left as it was.

    Only a regular file is ever replaced. What ``path`` names decides how:

    - nothing, or a regular file: the temporary file is written beside it and renamed over it (atomic on one file
      system);
    - a symlink to a regular file (or to nothing yet): the file it points to is replaced that way, and the link
      stays; a link that resolves through ``/proc`` (``/dev/stdout``, ``/proc/self/fd/1``) is written through, as
      a shell redirection would;
    - a character device (``/dev/null``, a terminal) or a FIFO: written through, in place, once the block has
      written the whole output (a FIFO waits for its reader, as it does for a shell);
    - anything else (a directory, a block device, a socket) is refused with an error naming what it is.
    """
    target = Path(path)
    through = _written_through(target)
    if through:
        fd, name = tempfile.mkstemp(prefix=".chainops-out.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
    else:
        if target.is_symlink():
            target = Path(os.path.realpath(target))
        tmp = _temp_name(target, "tmp")
    try:
        yield tmp
        if through:
            with tmp.open("rb") as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
        else:
            os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def check_file_target(path: str | os.PathLike[str]) -> None:
    """Raise the :class:`OSError` that :func:`atomic_file` would raise for ``path`` (a directory, a block device,
    a socket), before anything is computed for it: a command that takes minutes to build its output refuses such a
    target at once."""
    _written_through(Path(path))


def check_output_place(path: str | os.PathLike[str], *, directory: bool = False) -> None:
    """Raise the :class:`OSError` that writing ``path`` (a file, or with ``directory`` a directory of files) would
    meet in the place it goes, before anything is computed for it: a path under a regular file, a directory that
    takes no new file (read-only, ``/proc``), a directory output named as an existing file. The nearest existing
    directory on the way gets a temporary file, removed at once; a target written in place (a character device,
    a FIFO) is only checked as :func:`check_file_target` checks it."""
    target = Path(path)
    if not directory:
        check_file_target(target)
        if _written_through(target):
            return
        if target.is_symlink():
            target = Path(os.path.realpath(target))
    elif target.exists() and not target.is_dir():
        raise OSError(errno.ENOTDIR, "it is a file, and the output is a directory of files", str(target))
    place = target if directory and target.is_dir() else target.parent
    while not place.exists() and place != place.parent:
        place = place.parent
    if not place.is_dir():
        raise OSError(errno.ENOTDIR, "Not a directory", str(place))
    fd, name = tempfile.mkstemp(prefix=".chainops-probe.", suffix=".tmp", dir=place)
    os.close(fd)
    os.unlink(name)


def _written_through(target: Path) -> bool:
    """Whether ``target`` is written in place (a character device, a FIFO, or a link through ``/proc``) rather than
    replaced; raises :class:`OSError` for what is neither that nor a regular file (or nothing yet)."""
    try:
        mode = target.stat().st_mode  # follows links: what is written to in the end
    except FileNotFoundError:
        return False
    except OSError:
        return False  # the write itself says what is wrong (a loop of links, a path under a file, ...)
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return True
    if stat.S_ISREG(mode):
        return _through_proc(target)
    kind = "a directory" if stat.S_ISDIR(mode) else "a block device" if stat.S_ISBLK(mode) else "a special file"
    # an OSError, so each command says what it was writing (the report, the output) as for any file failure
    code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
    raise OSError(code, f"it is {kind}; only a regular file, a character device or a FIFO is written to", str(target))


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging directory to fill; when the block ends its entries take their places in ``path``.

    A ``path`` that did not exist appears whole (the staging directory is renamed to it). In an existing ``path``
    each entry replaces the one of the same name (a directory by two renames) and other files are left alone; the
    swap runs with Ctrl-C and SIGTERM held (:func:`~toolkit.signals.held`), so a signal leaves the whole old set or
    the whole new one, and an error part-way puts the old entries back. If the block raises, the staging directory
    is removed and ``path`` is left as it was.
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
        # Ctrl-C or SIGTERM during the swap is delivered once it is done: the directory holds the old set or the
        # new one, never a mix. The entries replaced go into the staging directory, removed with it below.
        with held():
            trash = staging / ".replaced"
            trash.mkdir()
            moved: list[tuple[Path, Path | None]] = []
            try:
                for entry in sorted(p for p in staging.iterdir() if p != trash):
                    moved.append(_move_into_place(entry, target / entry.name, trash))
            except BaseException:  # an error part-way (a disk error): the replaced entries go back
                for final, replaced in reversed(moved):
                    _remove(final)
                    if replaced is not None:
                        replaced.rename(final)
                raise
    finally:
        with held():
            shutil.rmtree(staging, ignore_errors=True)


def _through_proc(path: Path, *, hops: int = 40) -> bool:
    """Whether ``path`` reaches what it names through ``/proc`` (``/dev/stdout`` -> ``/proc/self/fd/1``): its
    components and links followed one by one, since the end of such a chain is a process's open file, which a
    rename must not replace (a shell's redirection would keep the old one)."""
    pending = list(Path(os.path.abspath(path)).parts[1:])
    current = "/"
    while pending:
        candidate = os.path.normpath(os.path.join(current, pending.pop(0)))
        if candidate == "/proc" or candidate.startswith("/proc/"):
            return True
        if hops > 0 and os.path.islink(candidate):
            hops -= 1
            link = os.readlink(candidate)
            pending = list(Path(link).parts[1:] if os.path.isabs(link) else Path(link).parts) + pending
            current = "/" if os.path.isabs(link) else current
        else:
            current = candidate
    return False


def _move_into_place(entry: Path, final: Path, trash: Path) -> tuple[Path, Path | None]:
    """Put ``entry`` in ``final``'s place, the entry it replaces (if any) moved into ``trash``; returns ``(final,
    where the replaced entry went)``."""
    replaced: Path | None = None
    if final.exists() or final.is_symlink():
        replaced = trash / final.name
        final.rename(replaced)
    try:
        entry.rename(final)
    except BaseException:
        if replaced is not None:
            replaced.rename(final)
        raise
    return final, replaced


def _remove(path: Path) -> None:
    """Remove a file or a directory tree (what a failed swap had put in place)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


__all__ = ["atomic_dir", "atomic_file", "output_error"]
