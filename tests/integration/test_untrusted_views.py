"""A warehouse file from an untrusted source whose views read local files (issue 28 item 12): `metrics`, `report`,
`export` and `sql` open every read connection with external access off, so such a view fails with a message and
the file's content is never shown or written. Real DuckDB files synced over real HTTP on 127.0.0.1."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from tests.conftest import TEST_KEY
from tests.support.hostile import HostileServer, Org
from toolkit import cli
from toolkit.config import Settings
from toolkit.loader import sync

TOKEN = "LOCAL-FILE-CONTENT-5d1c0e"


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synced warehouse whose ``networks`` became a view naming every network after a local file's content."""
    where = tmp_path_factory.mktemp("untrusted")
    secret = where / "secret.txt"
    secret.write_text(TOKEN)
    path = where / "w.duckdb"
    with HostileServer(TEST_KEY, org=Org(channels=1, operations_per_channel=20)) as server:
        sync(Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={}), quiet=True)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE networks_kept AS SELECT * FROM networks")
    con.execute("DROP TABLE networks")
    con.execute(
        "CREATE VIEW networks AS SELECT * REPLACE ((SELECT content FROM read_text('"
        + str(secret).replace("'", "''")
        + "')) AS name) FROM networks_kept"
    )
    con.close()
    assert TOKEN in str(duckdb.connect(str(path), read_only=True).execute("SELECT name FROM networks").fetchall())
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["metrics", "status-latency", "--format", "csv"],
        ["metrics", "failure-rates", "--format", "json"],
        ["report", "--format", "csv", "--since", "2020-01-01", "--until", "2030-01-01"],
        ["export"],
        ["sql", "select name from networks"],
    ],
    ids=lambda argv: argv[0] + ("-" + argv[1] if argv[0] == "metrics" else ""),
)
def test_a_view_reading_a_local_file_is_refused(argv, planted, capsys, tmp_path) -> None:
    copy = tmp_path / "w.duckdb"
    shutil.copy(planted, copy)
    out = tmp_path / "out"
    with_out = [*argv, "--out", str(out)] if argv[0] in ("report", "export") else argv
    code = cli.main([*with_out, "--warehouse", str(copy)])
    printed = capsys.readouterr()
    written = "".join(p.read_bytes().decode("latin-1") for p in out.rglob("*") if p.is_file()) if out.exists() else ""
    assert TOKEN not in printed.out + printed.err + written
    assert code == 1 and "Traceback" not in printed.err, printed.err
