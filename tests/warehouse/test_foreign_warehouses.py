"""Warehouses from elsewhere (issue 38, item 8): one a newer chainops wrote, and one whose blocks fail DuckDB's
checksum, are refused by every command that would write to them, with nothing written; a reader meeting the damage
is told the file is damaged and how to recover. Real DuckDB files; the sync is over real HTTP to the sandbox."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.conftest import TEST_KEY
from tests.support.cli import run_in_process
from toolkit.errors import WarehouseError
from toolkit.verify import resolve_policy
from toolkit.verify.run import verify_warehouse
from toolkit.warehouse import Warehouse
from toolkit.warehouse.identity import SCHEMA_VERSION

pytestmark = pytest.mark.slow  # a sync over HTTP


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy(template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    shutil.copy(template, path)
    return path


def _sync(server, path: Path):
    env = {"CREC_BASE_URL": server.base_url, "CREC_API_KEY": TEST_KEY}
    return run_in_process("sync", "--warehouse", str(path), "--quiet", env=env)


def _verify(path: Path):
    return run_in_process("verify", "--warehouse", str(path), "--org-id", "org-under-test", env={})


def test_a_warehouse_of_a_newer_schema_is_refused_untouched(synced_template, server, tmp_path) -> None:
    path = _copy(synced_template, tmp_path)
    con = duckdb.connect(str(path))
    con.execute("UPDATE chainops_meta SET value = ? WHERE key = 'schema_version'", [str(int(SCHEMA_VERSION) + 1)])
    con.close()
    before = digest(path)
    synced, verified = _sync(server, path), _verify(path)
    for ran in (synced, verified):
        assert ran.returncode == 1, ran.stderr
        assert "was written by a newer chainops" in ran.stderr and "Nothing was written to it" in ran.stderr
        assert "Upgrade chainops-toolkit" in ran.stderr and "Traceback" not in ran.stderr
    with pytest.raises(WarehouseError, match="newer chainops"):
        verify_warehouse(path, resolve_policy(org_id="org-under-test", env={}), workers=1)
    assert digest(path) == before
    with Warehouse(path, read_only=True) as wh:  # reading is not refused
        assert wh.count("events") > 0


def _flip_a_payload_bit(path: Path) -> None:
    con = duckdb.connect(str(path), read_only=True)
    ((block_size,),) = con.execute("SELECT block_size FROM pragma_database_size()").fetchall()
    ((block,),) = con.execute(
        "SELECT min(block_id) FROM pragma_storage_info('events') WHERE column_name = 'payload' AND block_id >= 0"
    ).fetchall()
    con.close()
    offset = 3 * 4096 + block * block_size + 1000  # past the block's checksum, inside its data
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ 0x10]))


def test_a_damaged_warehouse_is_never_synced_into_and_every_command_meeting_it_says_so(
    synced_template, server, tmp_path
) -> None:
    path = _copy(synced_template, tmp_path)
    with Warehouse(path, read_only=True) as wh:
        runs = wh.con.execute("SELECT count(*) FROM sync_runs").fetchall()[0][0]
    _flip_a_payload_bit(path)
    before = digest(path)
    synced = _sync(server, path)
    verified = _verify(path)
    read = run_in_process("sql", "select sum(length(payload)) as n from events", "--warehouse", str(path), env={})
    exported = run_in_process("export", "--warehouse", str(path), "--out", str(tmp_path / "export"), env={})
    for ran in (synced, verified, read, exported):
        assert ran.returncode == 1, (ran.stdout, ran.stderr)
        assert "is damaged: a block of it fails DuckDB's checksum" in ran.stderr, ran.stderr
        assert "fresh sync into a new file" in ran.stderr and "last `chainops export`" in ran.stderr
        assert "Traceback" not in ran.stderr
    assert digest(path) == before  # the sync and verify wrote nothing: no run recorded at all, let alone `ok`
    with Warehouse(path, read_only=True) as wh:
        assert wh.con.execute("SELECT count(*) FROM sync_runs").fetchall()[0][0] == runs


def test_the_block_check_reads_under_its_own_small_limit_and_puts_the_connections_back(tmp_path, monkeypatch) -> None:
    """Under DuckDB's default limit every block the check read stayed cached: a sync or verify opening a 1.4 GB
    warehouse grew to 1.6 GB before it began. The check reads under CHECK_MEMORY_LIMIT, doubled where a table needs
    more (here 4 MB of text in rows of 400 kB against a 1 MB start), and the connection's own limit and threads are
    as they were after it, also for a reader sharing DuckDB's instance of the file in this process."""
    from toolkit.warehouse import identity, memory

    path = tmp_path / "big.duckdb"
    with duckdb.connect(str(path)) as con:
        letter = "chr(CAST(65 + i % 26 AS INTEGER))"
        con.execute(f"CREATE TABLE t AS SELECT i, repeat({letter}, 400000) || i AS text FROM range(10) r(i)")
    seen: list[str] = []
    real = identity._read_every_block

    def spied(con, where):
        seen.append(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
        real(con, where)

    monkeypatch.setattr(identity, "CHECK_MEMORY_LIMIT", "1MB")
    monkeypatch.setattr(identity, "_read_every_block", spied)
    with duckdb.connect(str(path), read_only=True) as reader:
        reader.execute("SET memory_limit = '300MB'")
        reader.execute("SET threads = 2")
        settings = "SELECT current_setting('memory_limit'), current_setting('threads')"
        before = reader.execute(settings).fetchall()[0]
        with duckdb.connect(str(path), read_only=True) as con:  # the same instance as the reader's
            identity.check_blocks(con, path)
        after = reader.execute(settings).fetchall()[0]
    assert seen and memory.parse_bytes(seen[0]) <= 1_000_000
    # put back as DuckDB shows it (to a tenth of a MiB: 300MB reads 286.1 MiB, and set so, 286.0)
    assert abs(memory.parse_bytes(after[0]) - memory.parse_bytes(before[0])) <= 2**20 and after[1] == before[1] == 2
