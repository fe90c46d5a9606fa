"""``--out`` of ``metrics``, ``sql`` and ``report`` never replaces anything but a regular file (issue 28 item 4): a
character device and a FIFO are written through, a symlink keeps pointing where it did (to the file now holding the
output, or through /proc to a process's open file), and a directory or block device is refused. Each special file is
made in the test's own directory (a character device with mknod, as root), never the system's."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from toolkit import cli

COMMANDS = {
    "metrics": ["metrics", "status-latency", "--format", "csv"],
    "sql": ["sql", "select channel_id, name from channels order by channel_id", "--format", "csv"],
    # a day before the sandbox's history: the whole page (every section, eight figures, ~130 kB) at about half the
    # cost of one over the synced history (~2.9 against ~5 CPU-s); what is tested is where the bytes go
    "report": ["report", "--format", "html", "--since", "2026-01-01", "--until", "2026-01-02"],
}


@pytest.fixture(scope="module")
def synced(synced_copy) -> Path:
    return synced_copy


def run(capsys, synced: Path, command: str, out: Path) -> tuple[int, str]:
    code = cli.main([*COMMANDS[command], "--warehouse", str(synced), "--out", str(out)])
    return code, capsys.readouterr().err


_PLAIN: dict[tuple[Path, str], bytes] = {}


def plain_output(capsys, synced: Path, command: str, tmp_path: Path) -> bytes:
    """What the command writes to a new regular file: the bytes any other target must receive (made once a module
    per command: the warehouse is never written, and the same command writes the same bytes)."""
    if (synced, command) not in _PLAIN:
        path = tmp_path / f"plain-{command}"
        code, err = run(capsys, synced, command, path)
        assert code == 0, err
        _PLAIN[synced, command] = path.read_bytes()
    return _PLAIN[synced, command]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_symlink_keeps_pointing_at_its_file_which_gets_the_output(command, synced, capsys, tmp_path) -> None:
    want = plain_output(capsys, synced, command, tmp_path)
    suffix = ".html" if command == "report" else ".out"  # a report is refused into a file named for another format
    real = tmp_path / f"real{suffix}"
    real.write_text("old")
    link = tmp_path / f"link{suffix}"
    link.symlink_to(real)
    code, err = run(capsys, synced, command, link)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == want


def test_a_dangling_symlink_creates_its_file_and_stays(synced, capsys, tmp_path) -> None:
    want = plain_output(capsys, synced, "sql", tmp_path)
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "made.csv")
    code, err = run(capsys, synced, "sql", link)
    assert code == 0, err
    assert link.is_symlink() and (tmp_path / "made.csv").read_bytes() == want


@pytest.mark.parametrize("command", COMMANDS)
def test_a_character_device_is_written_through_never_replaced(command, synced, capsys, tmp_path) -> None:
    device = tmp_path / "null"
    null = os.stat("/dev/null")
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, null.st_rdev)  # a copy of /dev/null, in this test's directory
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD)")
    code, err = run(capsys, synced, command, device)
    assert code == 0, err
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == null.st_rdev and after.st_ino == os.stat(device).st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temporary file left beside it


@pytest.mark.parametrize("command", ["metrics", "sql"])
def test_a_fifo_is_written_through_to_its_reader(command, synced, capsys, tmp_path) -> None:
    want = plain_output(capsys, synced, command, tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, err = run(capsys, synced, command, fifo)
    reader.join(60)
    assert code == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got == [want]


def test_a_link_through_proc_writes_to_the_open_file_behind_it(synced, capsys, tmp_path) -> None:
    # what --out /dev/stdout is when standard output is a file: a link to /proc/self/fd/N
    want = plain_output(capsys, synced, "sql", tmp_path)
    behind = tmp_path / "behind.csv"
    fd = os.open(behind, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        link = tmp_path / "stdout"
        link.symlink_to(f"/proc/self/fd/{fd}")
        code, err = run(capsys, synced, "sql", link)
    finally:
        os.close(fd)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == f"/proc/self/fd/{fd}"
    assert behind.read_bytes() == want


@pytest.mark.parametrize("kind", ["directory", "block device"])
def test_a_directory_or_block_device_is_refused_untouched(kind, synced, capsys, tmp_path) -> None:
    target = tmp_path / "target"
    if kind == "directory":
        target.mkdir()
        (target / "keep").write_text("kept")
    else:
        try:
            os.mknod(target, stat.S_IFBLK | 0o600, os.makedev(7, 0))  # a node like /dev/loop0, never opened
        except PermissionError:
            pytest.skip("mknod needs root (CAP_MKNOD)")
    before = os.lstat(target)
    for command in ("metrics", "sql"):
        code, err = run(capsys, synced, command, target)
        assert code == 1 and f"it is a {kind}" in err and "Traceback" not in err, err
    after = os.lstat(target)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
