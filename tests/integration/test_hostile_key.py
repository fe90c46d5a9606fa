"""The key never leaves: a key with stray whitespace works, one with control characters is refused without being
repeated, and a server that echoes the key in its error bodies gets it redacted from everything shown or stored."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import TEST_KEY
from tests.support.hostile import Defects, HostileServer
from toolkit import errors
from toolkit.api import Client
from toolkit.api.retry import RetryPolicy
from toolkit.cli import main
from toolkit.config import ENV_API_KEY, ENV_BASE_URL, Settings
from toolkit.export import export_parquet
from toolkit.loader import sync
from toolkit.warehouse import Warehouse

#: Real sockets or processes (hostile servers, the sandbox over HTTP, `chainops` as a process): the fast tier
#: skips them (docs/testing.md); `make test` runs them.
pytestmark = pytest.mark.slow

FAST = RetryPolicy(attempts=2, initial=0.01, maximum=0.02, floor=0.01, deadline=10)
ECHOES = {"401-json": Defects(echo_key_401=True), "500-html": Defects(echo_key_500_html=True)}


@pytest.mark.parametrize("tail", [" ", "\r", "\n", "\r\n", "\t "])
def test_a_key_with_surrounding_whitespace_is_stripped_and_works(tail, tmp_path) -> None:
    with HostileServer(TEST_KEY) as server:
        settings = Settings.load(
            environ={ENV_API_KEY: " " + TEST_KEY + tail, ENV_BASE_URL: server.base_url},
            warehouse=tmp_path / "wh.duckdb",
        )
        result = sync(settings, quiet=True)
    assert result.outcome == "ok"


@pytest.mark.parametrize("bad", ["\r", "\n", "\x00", "\x1b", "\x7f", "\x85", "\xe9", "\u20ac"])
def test_a_key_with_a_control_character_is_refused_without_repeating_it(bad, tmp_path) -> None:
    key = TEST_KEY[:10] + bad + TEST_KEY[10:]
    # refused where the key is used; commands that never use it (metrics, sql) still load their settings
    assert Settings.load(environ={ENV_API_KEY: key}).api_key is None
    for attempt in (
        lambda: Settings.load(api_key=key, environ={}).require_service(),
        lambda: Settings.load(environ={ENV_API_KEY: key, ENV_BASE_URL: "http://127.0.0.1:9/v1"}).require_service(),
        lambda: sync(
            Settings.load(environ={ENV_API_KEY: key, ENV_BASE_URL: "http://127.0.0.1:9/v1"}),
            warehouse=str(tmp_path / "w.duckdb"),
            quiet=True,
        ),
        lambda: Client("http://127.0.0.1:9/v1", key),
    ):
        with pytest.raises(errors.ConfigError) as info:
            attempt()
        shown = f"{info.value} {info.value!r} {info.value.args}"
        assert "CREC_API_KEY" in shown
        assert TEST_KEY[:10] not in shown and TEST_KEY[10:] not in shown


@pytest.mark.parametrize("echo", sorted(ECHOES))
def test_a_key_echoed_by_the_server_is_redacted_from_the_exception(echo, tmp_path) -> None:
    with (
        HostileServer(TEST_KEY, ECHOES[echo]) as server,
        Client(server.base_url, TEST_KEY, retry=FAST) as client,
        pytest.raises(errors.ApiError) as info,
    ):
        sync(client=client, warehouse=str(tmp_path / "wh.duckdb"), quiet=True)
    exc = info.value
    shown = f"{exc} {exc!r} {exc.args} {exc.service_message}"
    assert "***" in shown, "the echo was expected in the message, redacted"
    assert TEST_KEY not in shown


@pytest.mark.parametrize("echo", sorted(ECHOES))
def test_a_key_echoed_by_the_server_reaches_no_output_row_or_export(echo, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr("toolkit.api.client.RetryPolicy", lambda: FAST)
    path = tmp_path / "wh.duckdb"
    with HostileServer(TEST_KEY, ECHOES[echo]) as server:
        monkeypatch.setenv(ENV_API_KEY, TEST_KEY)
        monkeypatch.setenv(ENV_BASE_URL, server.base_url)
        code = main(["sync", "--warehouse", str(path), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "***" in err and TEST_KEY not in out + err
    with Warehouse(path, read_only=True) as wh:
        runs = wh.con.execute("SELECT CAST(COLUMNS(*) AS VARCHAR) FROM sync_runs").fetchall()
    assert runs and all(TEST_KEY not in str(value) for row in runs for value in row)
    assert any("***" in str(value) for row in runs for value in row)
    export_parquet(path, tmp_path / "export")
    files = sorted(Path(tmp_path / "export").rglob("*.parquet"))
    assert files
    for file in files:
        assert TEST_KEY.encode() not in file.read_bytes()
        assert TEST_KEY not in str(pq.read_table(file).to_pylist())


def test_redaction_hides_a_real_key_and_leaves_text_alone_for_a_one_letter_sandbox_key() -> None:
    from toolkit.config import Secret, redact

    assert redact(f"API key {TEST_KEY} is not valid", Secret(TEST_KEY)) == "API key *** is not valid"
    # a local sandbox started with --org k: every "k" is not the key, and the summary must stay readable
    assert redact("sync ok: networks +10", Secret("k")) == "sync ok: networks +10"
