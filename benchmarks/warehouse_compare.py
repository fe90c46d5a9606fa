"""Whether two versions of the toolkit store the same warehouse from the same pages: every table hashed, by column.

The recording of :mod:`benchmarks.cpu_bench` (``--recording PATH``; made first when it does not exist) is served by
:mod:`benchmarks.replay`, and a full sync into a fresh file runs against it with the other version's toolkit
(``--other DIR``, a checkout or a directory holding its ``toolkit/``; ``PYTHONPATH=DIR``) twice, and once with this
tree's. Each table of each file (every base table DuckDB holds) is read ordered by its key (a raw table's key; any
other table: all its columns) and each column hashed (MD5 of every value's text, in that order, NULL told apart
from any text). The columns that differ between the other version's two runs are the ones a run stamps
(``synced_at``, a run's times); they are named and left out of the comparison, and everything else must be equal.
Then each stamped column is compared row by row: a value the other version's two runs agree on (a cursor beside the
stamps in ``sync_state.cursor``) must be this tree's too.

Usage: python -m benchmarks.warehouse_compare [--recording PATH] [--other /work/main] [--events 200000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa

from benchmarks._server import KEY
from benchmarks.cpu_bench import SYNC_AND_REPORT, check_no_misses, record, replay_server

ROOT = Path(__file__).resolve().parent.parent
#: A value's text where it is NULL: no text DuckDB writes for a value.
NULL_TEXT = "\x00NULL"


def sync_with(toolkit: Path, base_url: str, warehouse: Path) -> dict:
    """A full sync with the toolkit found in ``toolkit`` (``PYTHONPATH`` and working directory), in a fresh process;
    its report."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREC_", "CHAINOPS_"))}
    env["PYTHONPATH"] = str(toolkit)
    args = [sys.executable, "-c", SYNC_AND_REPORT, base_url, KEY, str(warehouse)]
    out = subprocess.run(args, env=env, capture_output=True, text=True, cwd=toolkit)
    if out.returncode:
        raise SystemExit(f"the sync with {toolkit} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_keys() -> dict[str, tuple[str, ...]]:
    """Each raw table's key columns, by table name (this tree's schema: the tables compared are the same)."""
    from toolkit.warehouse.schema import RAW_TABLES

    return {spec.name: tuple(spec.key) for spec in RAW_TABLES.values()}


def column_digests(path: Path, skip: dict[str, set[str]] | None = None) -> dict[str, dict[str, object]]:
    """``{table: {"rows": n, column: md5, ...}}`` for every base table of the DuckDB file at ``path``, rows ordered
    by the table's key, then by every column not in ``skip[table]`` (ties broken the same way in every file)."""
    keys = table_keys()
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY table_name"
            ).fetchall()
        ]
        out: dict[str, dict[str, object]] = {}
        for table in tables:
            columns = [
                r[0]
                for r in con.execute(
                    "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ? "
                    "ORDER BY column_index",
                    [table],
                ).fetchall()
            ]
            stable = [c for c in columns if c not in (skip or {}).get(table, set())]
            order = [*keys.get(table, ()), *stable]
            by = ", ".join(f"{_quoted(c)} NULLS FIRST" for c in order) or "1"
            rows = con.sql(f"SELECT * FROM {_quoted(table)} ORDER BY {by}").to_arrow_table()
            digests: dict[str, object] = {"rows": rows.num_rows}
            for column in columns:
                digests[column] = _digest(rows.column(column))
            out[table] = digests
        return out
    finally:
        con.close()


def stamped_values(path: Path, table: str, columns: set[str], skip: dict[str, set[str]]) -> dict[str, list[object]]:
    """The values of ``columns`` of ``table``, in the order :func:`column_digests` reads it with ``skip``, as text."""
    keys = table_keys()
    con = duckdb.connect(str(path), read_only=True)
    try:
        every = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ? "
                "ORDER BY column_index",
                [table],
            ).fetchall()
        ]
        order = [*keys.get(table, ()), *(c for c in every if c not in skip.get(table, set()))]
        by = ", ".join(f"{_quoted(c)} NULLS FIRST" for c in order) or "1"
        names = sorted(columns)
        listed = ", ".join(f"CAST({_quoted(c)} AS VARCHAR)" for c in names)
        rows = con.execute(f"SELECT {listed} FROM {_quoted(table)} ORDER BY {by}").fetchall()
        return {c: [row[i] for row in rows] for i, c in enumerate(names)}
    finally:
        con.close()


def _digest(values: pa.ChunkedArray) -> str:
    """MD5 of a column's values in order: each value's text (its JSON for a nested one), NULL told apart."""
    digest = hashlib.md5()
    try:
        texts = values.cast(pa.string()).to_pylist()
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        texts = [None if v is None else json.dumps(v, sort_keys=True, default=str) for v in values.to_pylist()]
    digest.update("\x1f".join(NULL_TEXT if t is None else t for t in texts).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def differing(a: dict[str, dict[str, object]], b: dict[str, dict[str, object]]) -> dict[str, set[str]]:
    """The columns (and ``rows``, or ``<table>`` for a table only one has) whose digests differ, by table."""
    out: dict[str, set[str]] = {}
    for table in sorted(set(a) | set(b)):
        if table not in a or table not in b:
            out[table] = {"<table>"}
            continue
        names = set(a[table]) | set(b[table])
        diff = {n for n in names if a[table].get(n) != b[table].get(n)}
        if diff:
            out[table] = diff
    return out


def main(argv: list[str] | None = None) -> None:
    """Sync the recorded pages with both versions and print, table by table, whether they stored the same."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recording", type=Path, help="the cpu_bench recording (made when it does not exist)")
    parser.add_argument("--other", type=Path, default=Path("/work/main"), help="the other version's checkout")
    parser.add_argument("--events", type=int, default=200_000, help="events of a recording made here")
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--workdir", type=Path, help="keep the three warehouses here (a file already there is reused)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        path = args.recording or Path(tmp) / "recording.bin"
        if not path.exists():
            record(args.events, args.days, "default", path)
        runs = (("other 1", args.other), ("other 2", args.other), ("this tree", ROOT))
        files = {name: work / f"{name.replace(' ', '-')}.duckdb" for name, _ in runs}
        with replay_server(path) as server:
            url = server.base_url  # type: ignore[attr-defined]
            for name, toolkit in runs:
                if files[name].exists():
                    print(f"{name}: {files[name]} kept from an earlier run")
                    continue
                report = sync_with(toolkit.resolve(), url, files[name])
                requests = check_no_misses(server, name)
                print(f"{name} ({toolkit}): outcome {report['outcome']}, rows {report['rows']}, {requests:,} requests")
        first = column_digests(files["other 1"])
        stamped = differing(first, column_digests(files["other 2"]))
        print(
            f"stamped by a run (differ between two syncs of {args.other}; left out): "
            f"{ {t: sorted(c) for t, c in stamped.items()} }"
        )
        skip = {t: c for t, c in stamped.items()}
        other = column_digests(files["other 1"], skip)
        again = column_digests(files["other 2"], skip)
        ours = column_digests(files["this tree"], skip)
        unstable = differing(other, again)
        unstable = {t: {c for c in cols if c not in skip.get(t, set())} for t, cols in unstable.items()}
        unstable = {t: c for t, c in unstable.items() if c}
        if unstable:
            print(f"other columns still differ between the two runs of {args.other}: {unstable}")
        total_rows = 0
        mismatches = 0
        for table in sorted(set(other) | set(ours)):
            left, right = other.get(table, {}), ours.get(table, {})
            diff = sorted(
                c for c in set(left) | set(right) if c not in skip.get(table, set()) and left.get(c) != right.get(c)
            )
            compared = [c for c in right if c != "rows" and c not in skip.get(table, set())]
            total_rows += int(right.get("rows", 0) or 0)  # type: ignore[call-overload]
            state = "same" if not diff else f"DIFFERENT: {diff}"
            mismatches += bool(diff)
            print(f"  {table}: {right.get('rows', '-')} rows, {len(compared)} columns compared: {state}")
        verdict = "every table the same" if not mismatches else f"{mismatches} table(s) differ"
        print(f"{verdict} ({len(ours)} tables, {total_rows:,} rows)")
        # a stamped column may hold values no run stamps (sync_state.cursor holds the cursors and the stamps of the
        # safety net): row by row, a value equal in the other version's two runs must be equal in this tree's
        print("the stamped columns, row by row (a value the other version's two runs agree on):")
        for table, columns in sorted(skip.items()):
            values = [stamped_values(files[name], table, columns, skip) for name in ("other 1", "other 2", "this tree")]
            for column in sorted(columns):
                first, second, mine = (v[column] for v in values)
                agreed = [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a == b]
                differ = [i for i in agreed if mine[i] != first[i]]
                shown = "; ".join(f"row {i}: {first[i]!r} -> {mine[i]!r}" for i in differ[:3])
                state = "same" if not differ else f"DIFFERENT in {len(differ)} ({shown})"
                print(f"  {table}.{column}: {len(agreed)} of {len(first)} rows agreed on: {state}")


if __name__ == "__main__":
    main()
