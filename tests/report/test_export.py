"""`chainops export`: every table and view read back with pyarrow equals the warehouse, partitioned by network and
UTC day, with portable types only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from tests.conftest import TEST_KEY
from tests.support.cli import run_in_process
from toolkit.export import EXPORTS, NULL_PARTITION, export_parquet, portable_column
from toolkit.warehouse import Warehouse

KEYS = {
    "networks": ["chain_selector"],
    "channels": ["channel_id"],
    "wallets": ["wallet_id"],
    "watchers": ["watcher_id"],
    "operations": ["operation_id"],
    "operation_transactions": ["operation_id", "idx"],
    "queries": ["query_id"],
    "events": ["event_id"],
    "sync_state": ["stream"],
    "sync_runs": ["run_id"],
    "event_verifications": ["event_id"],
    "operation_transitions": ["operation_id", "entered_at", "status"],
    "operation_lifecycle": ["operation_id"],
    "query_lifecycle": ["query_id"],
}


@pytest.fixture(scope="module")
def synced(synced_copy, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A warehouse synced from the sandbox over HTTP (the suite's, copied), and its export."""
    root = tmp_path_factory.mktemp("export")
    wh = synced_copy
    out = subprocess.run(
        [sys.executable, "-m", "toolkit", "export", "--warehouse", str(wh), "--out", str(root / "parquet")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "events:" in out.stdout and TEST_KEY not in out.stdout + out.stderr
    return wh, root / "parquet"


def read_back(directory: Path) -> pa.Table:
    return ds.dataset(directory, format="parquet", partitioning="hive").to_table()


def test_every_table_and_view_is_exported(synced) -> None:
    _, out = synced
    assert {p.name for p in out.iterdir()} == {s.name for s in EXPORTS}
    assert set(KEYS) == {s.name for s in EXPORTS}
    assert not list(out.glob(".*"))  # no staging left behind


@pytest.mark.parametrize("table", list(KEYS))
def test_read_back_equals_the_warehouse(synced, table: str) -> None:
    wh_path, out = synced
    exported = read_back(out / table)
    with Warehouse(wh_path, read_only=True) as wh:
        original = wh.query(f'SELECT * FROM "{table}"')  # table names from the fixed list above
    assert exported.num_rows == len(original)
    got = exported.to_pandas()
    cols = list(original.columns)
    assert set(cols) <= set(got.columns)
    keys = KEYS[table]
    got = got[cols].sort_values(keys, kind="stable").reset_index(drop=True)
    want = original.sort_values(keys, kind="stable").reset_index(drop=True)
    for col in cols:
        g, w = got[col], want[col]
        if pd.api.types.is_datetime64_any_dtype(w):
            assert str(exported.schema.field(col).type) == "timestamp[us, tz=UTC]", col
            pd.testing.assert_series_equal(g, w, check_dtype=False, check_names=False)
        else:
            assert [None if pd.isna(v) else v for v in g.astype(object)] == [
                None if pd.isna(v) else (str(v) if isinstance(v, dict | list) else v) for v in w.astype(object)
            ], col


def test_partitions_are_network_and_utc_day(synced) -> None:
    wh_path, out = synced
    events = read_back(out / "events").to_pandas()
    with Warehouse(wh_path, read_only=True) as wh:
        names = dict(wh.con.execute("SELECT chain_selector, name FROM networks").fetchall())
    expected_network = events["chain_selector"].map(names).fillna(events["chain_selector"])
    assert (events["network"].fillna(NULL_PARTITION) == expected_network.fillna(NULL_PARTITION)).all()
    assert (events["day"] == events["ts"].dt.strftime("%Y-%m-%d")).all()
    assert any(" " in n for n in events["network"].dropna())  # readable names, decoded from the paths
    first = next((out / "events").glob("network=*/day=*/*.parquet"))
    assert "network" not in pq.read_schema(first).names  # partition values live in the paths


def test_types_are_portable(synced) -> None:
    _, out = synced
    allowed = (
        pa.types.is_string,
        pa.types.is_large_string,
        pa.types.is_integer,
        pa.types.is_floating,
        pa.types.is_boolean,
        pa.types.is_timestamp,
        pa.types.is_decimal,
        pa.types.is_date,
    )
    for spec in EXPORTS:
        for file in (out / spec.name).rglob("*.parquet"):
            for field in pq.read_schema(file):
                assert any(ok(field.type) for ok in allowed), (spec.name, field)
                assert not pa.types.is_unsigned_integer(field.type), (spec.name, field)
                if pa.types.is_timestamp(field.type):
                    assert field.type.unit == "us" and field.type.tz == "UTC", (spec.name, field)
            meta = pq.ParquetFile(file).metadata.schema
            for i in range(len(meta)):
                assert "JSON" not in str(meta.column(i).logical_type), (spec.name, meta.column(i))


def test_engine_specific_types_become_portable() -> None:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TYPE mood AS ENUM ('ok', 'bad')")
    con.execute("""CREATE TABLE t AS SELECT 16015286601757825753::UBIGINT AS sel, '{"a": 1}'::JSON AS j,
        'bad'::mood AS m, '00000000-0000-4000-8000-000000000001'::UUID AS u, 7::UINTEGER AS ui,
        TIMESTAMP_NS '2026-01-02 03:04:05.123456789' AS tns, TIMESTAMP '2026-01-02 03:04:05' AS naive,
        [1, 2] AS l, {'k': 'v'} AS s, 170141183460469231731687303715884105727::HUGEINT AS h""")
    described = con.execute("DESCRIBE SELECT * FROM t").fetchall()
    select = ", ".join(portable_column(name, kind) for name, kind, *_ in described)
    table = con.sql(f"SELECT {select} FROM t").to_arrow_table()
    types = {f.name: str(f.type) for f in table.schema}
    assert types == {
        "sel": "string",
        "j": "string",
        "m": "string",
        "u": "string",
        "ui": "int64",
        "tns": "timestamp[us, tz=UTC]",
        "naive": "timestamp[us, tz=UTC]",
        "l": "string",
        "s": "string",
        "h": "string",
    }
    row = table.to_pylist()[0]
    assert row["sel"] == "16015286601757825753" and row["m"] == "bad" and row["l"] == "[1,2]"
    assert row["naive"].isoformat() == "2026-01-02T03:04:05+00:00"


def test_export_twice_replaces_the_first(synced, tmp_path: Path) -> None:
    wh_path, _ = synced
    first = export_parquet(str(wh_path), tmp_path)
    (tmp_path / "events" / "stale.parquet").write_bytes(b"not parquet")
    second = export_parquet(str(wh_path), tmp_path)
    assert first == second
    assert not (tmp_path / "events" / "stale.parquet").exists()
    assert read_back(tmp_path / "events").num_rows == read_back(tmp_path / "events").num_rows > 0


def test_an_empty_warehouse_exports_readable_empty_tables(tmp_path: Path) -> None:
    Warehouse(tmp_path / "w.duckdb").close()
    export_parquet(str(tmp_path / "w.duckdb"), tmp_path / "out")
    events = read_back(tmp_path / "out" / "events")
    assert events.num_rows == 0 and "event_id" in events.schema.names


def test_export_of_a_missing_warehouse_says_what_to_do(tmp_path: Path) -> None:
    out = run_in_process("export", "--warehouse", str(tmp_path / "none.duckdb"), "--out", str(tmp_path / "out"))
    assert out.returncode == 1 and "chainops sync" in out.stderr and "Traceback" not in out.stderr


def test_awkward_partition_values_round_trip(warehouse, tmp_path: Path) -> None:
    """Network names with markup, quotes, '=' , '/' and '%', and rows without a network or a time, come back as
    they were."""
    import shutil

    from tests.support.builders import SEPOLIA
    from tests.support.report_warehouse import SCRIPT_NETWORK

    path = tmp_path / "w.duckdb"
    shutil.copy(warehouse, path)
    slashed = 'Sepolia / test 100% = "ok"'
    with Warehouse(path) as wh:
        wh.con.execute("UPDATE networks SET name = ? WHERE chain_selector = ?", [slashed, SEPOLIA])
        wh.con.execute("INSERT INTO events (event_id, channel_id, type) VALUES ('e-bare', 'ch-1', 'wallet.status')")
    export_parquet(str(path), tmp_path / "out")
    events = read_back(tmp_path / "out" / "events").to_pandas()
    bare = events[events["event_id"] == "e-bare"].iloc[0]
    assert bare["network"] is None or pd.isna(bare["network"])
    assert bare["day"] is None or pd.isna(bare["day"])
    assert any(p.name == f"network={NULL_PARTITION}" for p in (tmp_path / "out" / "events").iterdir())
    ops = read_back(tmp_path / "out" / "operations").to_pandas()
    assert {SCRIPT_NETWORK, slashed, "Ethereum Mainnet"} == set(ops["network"])
    assert all(p.parent == tmp_path / "out" / "operations" for p in (tmp_path / "out" / "operations").glob("network=*"))


def test_small_tables_are_one_file_in_their_own_directory(synced) -> None:
    from toolkit.export import SMALL_TABLES

    _, out = synced
    assert set(SMALL_TABLES) == {
        "networks",
        "channels",
        "wallets",
        "watchers",
        "sync_state",
        "sync_runs",
        "event_verifications",
    }
    for name in SMALL_TABLES:
        files = sorted(p.relative_to(out) for p in (out / name).rglob("*") if p.is_file())
        assert files == [Path(name) / "part-0.parquet"], name
    for spec in EXPORTS:
        if spec.name not in SMALL_TABLES:
            assert next((out / spec.name).glob("network=*"), None) is not None, spec.name


@pytest.mark.parametrize("table", list(KEYS))
def test_every_table_reads_the_same_way_in_duckdb(synced, table: str) -> None:
    """One directory per table, partitioned or not: the glob a Spark or DuckDB reader uses finds every row."""
    wh_path, out = synced
    with Warehouse(wh_path, read_only=True) as wh:
        expected = wh.count(table)
    con = duckdb.connect()
    try:
        pattern = str(out / table / "**" / "*.parquet").replace("'", "''")
        got = con.execute(f"SELECT count(*) FROM read_parquet('{pattern}', hive_partitioning = true)").fetchall()
    finally:
        con.close()
    assert got == [(expected,)]
