"""The warehouse file opens in DuckDB clients other than the project's own: a real DuckDB 1.4 (the oldest release the
storage format promises), in its own environment, and the plain DuckDB API of the installed environment."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb
import pytest

from toolkit.warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[2]
#: Made by `make install` (see the Makefile): a virtual environment holding duckdb 1.4.x.
OLD_CLIENT = ROOT / ".venv-duckdb14" / "bin" / "python"

# what a DuckDB 1.4 client reads back: every table and view's row count, and a timestamp and the compressed payload
_READ = """
import json, sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
con.execute("SET TimeZone = 'UTC'")
names = [r[0] for r in con.execute("select table_name from information_schema.tables order by 1").fetchall()]
counts = {n: con.execute(f'select count(*) from "{n}"').fetchall()[0][0] for n in names}
ts, payload = con.execute("select ts::varchar, payload from events order by event_id limit 1").fetchall()[0]
print(json.dumps({"version": duckdb.__version__, "counts": counts, "ts": ts, "payload": payload}))
"""


@pytest.fixture(scope="module")
def synced(synced_copy) -> Path:
    return synced_copy


def test_a_duckdb_1_4_client_reads_every_table_and_view(synced: Path) -> None:
    assert OLD_CLIENT.exists(), (
        f"{OLD_CLIENT} is missing: run `make install`, which creates it with duckdb 1.4.x (this test checks that "
        "the warehouse opens in DuckDB 1.4, and must not pass without it)"
    )
    out = subprocess.run([str(OLD_CLIENT), "-c", _READ, str(synced)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["version"].startswith("1.4.")
    with Warehouse(synced, read_only=True) as wh:
        names = wh.tables()
        expected = {n: wh.count(n) for n in names}
        first = wh.con.execute("select ts::varchar, payload from events order by event_id limit 1").fetchall()[0]
    assert seen["counts"] == expected
    assert expected["events"] > 0
    assert [seen["ts"], seen["payload"]] == list(first)


def test_the_plain_duckdb_api_reads_timestamps(synced: Path) -> None:
    con = duckdb.connect(str(synced), read_only=True)
    try:
        rows = con.sql("select created_at from operations order by operation_id limit 3").fetchall()
    finally:
        con.close()
    assert len(rows) == 3
    assert all(r[0].utcoffset() is not None and r[0].utcoffset().total_seconds() == 0 for r in rows)


def test_a_warehouse_in_a_newer_storage_format_keeps_opening(tmp_path: Path) -> None:
    path = tmp_path / "new-format.duckdb"
    con = duckdb.connect(str(path))  # DuckDB's default format for a new file, newer than the warehouse's
    con.close()
    with Warehouse(path) as wh:
        wh.ensure_schema()
    with Warehouse(path, read_only=True) as wh:
        assert "events" in wh.tables()
