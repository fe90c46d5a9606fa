"""The `chainops` command line as a user runs it: exit codes, output, and no key in any of it. Most runs go through
``main(argv)`` in this process (``run_in_process``); the smoke tests marked below run the real command as a process
(``chainops``, the name other modules import), to prove the entry point, the exit status and the streams end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import TEST_KEY
from tests.support.cli import assert_no_key, run_in_process
from tests.support.cli import run_process as chainops
from toolkit.api.retry import RetryPolicy
from toolkit.cli import build_parser


@pytest.fixture
def backoff_waits(monkeypatch) -> list[float]:
    """The client's waits between attempts, recorded instead of slept: a refused connection is retried as ever
    (every attempt made, its message the same), without the backoff a run against a closed port sleeps (random: 3.9 s
    on average, up to 7.75 s). The waits themselves are the client contract's subject
    (``tests/api/test_client_contract.py``)."""
    import toolkit.api.client as client_module

    waits: list[float] = []
    monkeypatch.setattr(client_module, "pause", waits.append)
    return waits


def test_every_command_has_help() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"demo", "sync", "metrics", "report", "sql", "sandbox"} <= set(commands)
    for name, sub in commands.items():
        assert sub.format_help().strip(), name
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.dest} has no help"


def test_sync_without_settings_says_how_to_set_them(tmp_path) -> None:
    out = chainops("sync", "--warehouse", str(tmp_path / "w.duckdb"))  # a smoke test: a real process
    assert out.returncode == 1
    assert "CREC_BASE_URL" in out.stderr and "CREC_API_KEY" in out.stderr and "chainops demo" in out.stderr


def test_sync_refuses_plain_http_to_a_remote_host(tmp_path) -> None:
    out = run_in_process(
        "sync",
        "--warehouse",
        str(tmp_path / "w.duckdb"),
        env={"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": "http://api.example.com/v1"},
    )
    assert out.returncode == 1 and "https" in out.stderr
    assert_no_key(out.stdout, out.stderr)


@pytest.mark.slow  # every command, as processes and in-process, over real HTTP: ~15 CPU-s
def test_sync_then_metrics_sql_and_report_over_http(server, tmp_path, backoff_waits) -> None:
    wh = str(tmp_path / "w.duckdb")
    env = {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": server.base_url, "CHAINOPS_WAREHOUSE": wh}
    runs = [chainops("sync", env=env)]  # a smoke test: the real command syncs over HTTP
    assert runs[-1].returncode == 0, runs[-1].stderr
    assert "sync ok" in runs[-1].stdout
    runs.append(run_in_process("metrics", "status-latency", "--format", "csv", env=env))
    assert runs[-1].returncode == 0, runs[-1].stderr
    assert runs[-1].stdout.splitlines()[0].startswith("network,status,entered,n,mean_s,p50_s")
    runs.append(run_in_process("sql", "select count(*) as n from events", "--format", "json", env=env))
    assert runs[-1].returncode == 0 and '"n"' in runs[-1].stdout
    runs.append(run_in_process("report", "--out", str(tmp_path / "r.html"), env=env))
    assert runs[-1].returncode == 0 and (tmp_path / "r.html").exists()
    runs.append(run_in_process("sql", "select * from no_such_table", env=env))
    assert runs[-1].returncode == 1 and "no_such_table" in runs[-1].stderr
    # every other command, on success and failure paths, with the key in the environment
    from toolkit.metrics import METRICS

    runs += [run_in_process("metrics", name, "--format", "json", env=env) for name in sorted(METRICS)]
    assert all(r.returncode == 0 for r in runs[-len(METRICS) :]), [r.stderr for r in runs[-len(METRICS) :]]
    runs.append(run_in_process("report", "--format", "csv", "--out", str(tmp_path / "csv"), env=env))
    runs.append(run_in_process("report", "--out", str(tmp_path / "t.html"), "--fail-on", "stuck>=0", env=env))
    assert runs[-1].returncode == 3
    runs.append(run_in_process("export", "--out", str(tmp_path / "export"), env=env))
    assert runs[-1].returncode == 0, runs[-1].stderr
    runs.append(run_in_process("sync", "--quiet", "--channel", "nope", env=env))
    assert runs[-1].returncode == 1
    runs.append(run_in_process("sync", "--quiet", env={**env, "CREC_BASE_URL": "http://127.0.0.1:9/v1"}))
    assert runs[-1].returncode == 1
    assert len(backoff_waits) == RetryPolicy().attempts - 1  # the closed port was tried every time before giving up
    for run in runs:
        assert_no_key(run.stdout, run.stderr)
    written = [Path(wh), *(p for p in tmp_path.rglob("*") if p.is_file())]
    for path in written:
        assert TEST_KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(("key", "expected"), [("wrong-key", "CREC_API_KEY"), ("not-onboarded-key", "not onboarded")])
def test_bad_keys_fail_with_a_clear_message(server, tmp_path, key, expected) -> None:
    out = run_in_process(
        "sync",
        "--quiet",
        "--warehouse",
        str(tmp_path / "w.duckdb"),
        env={"CREC_API_KEY": key, "CREC_BASE_URL": server.base_url},
    )
    assert out.returncode == 1
    assert "401" in out.stderr and expected in out.stderr
    assert key not in out.stderr and key not in out.stdout


def test_unreachable_service_fails_with_a_clear_message(tmp_path, backoff_waits) -> None:
    out = run_in_process(
        "sync",
        "--quiet",
        "--warehouse",
        str(tmp_path / "w.duckdb"),
        env={"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    assert out.returncode == 1 and "CREC_BASE_URL" in out.stderr
    assert f"after {RetryPolicy().attempts} attempts" in out.stderr and len(backoff_waits) == RetryPolicy().attempts - 1
    assert_no_key(out.stdout, out.stderr)


def test_metrics_on_a_missing_warehouse_says_what_to_do(tmp_path) -> None:
    out = run_in_process("metrics", "status-latency", "--warehouse", str(tmp_path / "none.duckdb"))
    assert out.returncode == 1 and "chainops sync" in out.stderr


def test_usage_errors_exit_2() -> None:
    assert chainops("metrics", "no-such-metric").returncode == 2  # a smoke test: argparse exits the process
    refused = run_in_process("sync", "--workers", "0")
    assert refused.returncode == 2 and "at least 1" in refused.stderr


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path) -> None:
    out = chainops(  # a smoke test: the whole demo as a user starts it
        "demo",
        "--days",
        "1",
        "--warehouse",
        str(tmp_path / "demo.duckdb"),
        "--out",
        str(tmp_path / "reports"),
    )
    assert out.returncode == 0, out.stderr
    assert "p50 (" in out.stdout and "confirmed_latest" in out.stdout  # the unit of the column in its header
    # the demo verifies the DON proofs against the sandbox's signers and catches the 1% it forged
    said = " ".join(out.stdout.split())  # lines wrap to the terminal's width
    verified = re.search(r"proof-bearing events: ([\d,]+) verified, ([\d,]+) invalid, 0 missing proof", said)
    assert verified and "," in verified[1], out.stdout  # thousands separated, as tables show counts
    assert int(verified[1].replace(",", "")) > 0 and int(verified[2].replace(",", "")) > 0, out.stdout
    report = tmp_path / "reports" / "demo.html"
    assert f"Report: {report}" in said
    assert "data:image/png;base64," in report.read_text()


def test_sql_is_read_only_and_explains_bad_sql(tmp_path) -> None:
    from toolkit.warehouse import Warehouse

    wh = str(tmp_path / "w.duckdb")
    Warehouse(wh).close()
    write = run_in_process("sql", "delete from events", "--warehouse", wh)
    assert write.returncode == 1 and "read-only" in write.stderr and "Traceback" not in write.stderr
    drop = run_in_process("sql", "create table x as select 1", "--warehouse", wh)
    assert drop.returncode == 1 and "read-only" in drop.stderr
    for escape in (
        f"copy (select 1) to '{tmp_path / 'x.csv'}'",
        f"attach '{tmp_path / 'o.duckdb'}' as o",
        "set enable_external_access = true",
        "select * from read_csv('/etc/hostname')",
    ):
        out = run_in_process("sql", escape, "--warehouse", wh)
        assert out.returncode == 1 and "read-only" in out.stderr, escape
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "o.duckdb").exists()
    syntax = run_in_process("sql", "selec 1", "--warehouse", wh)
    assert syntax.returncode == 1 and "The query failed" in syntax.stderr and "syntax error" in syntax.stderr.lower()
    ok = run_in_process("sql", "select 1 as one, 'a,b' as t", "--warehouse", wh, "--format", "csv")
    assert ok.returncode == 0 and ok.stdout.splitlines() == ["one,t", '1,"a,b"']
    out = run_in_process(
        "sql", "select 1 as one", "--warehouse", wh, "--format", "json", "--out", str(tmp_path / "o.json")
    )
    assert out.returncode == 0 and json.loads((tmp_path / "o.json").read_text()) == [{"one": 1}]


def test_export_and_report_have_help() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"export", "report"} <= set(commands)
    assert "--fail-on" in commands["report"].format_help()


def test_metrics_filters_and_options_reach_the_metric(server, tmp_path) -> None:
    wh = str(tmp_path / "m.duckdb")
    env = {"CREC_API_KEY": TEST_KEY, "CREC_BASE_URL": server.base_url, "CHAINOPS_WAREHOUSE": wh}
    assert run_in_process("sync", "--quiet", env=env).returncode == 0
    out = run_in_process(
        "metrics",
        "status-latency",
        "--status",
        "sending",
        "--status",
        "sent",
        "--network",
        "Ethereum Mainnet",
        "--format",
        "csv",
        env=env,
    )
    assert out.returncode == 0, out.stderr
    rows = out.stdout.strip().splitlines()[1:]
    assert rows and {r.split(",")[1] for r in rows} == {"sending", "sent"}
    assert {r.split(",")[0] for r in rows} == {"Ethereum Mainnet"}
    top = run_in_process("metrics", "failure-reasons", "--top", "1", "--format", "json", env=env)
    assert top.returncode == 0, top.stderr
    refused = run_in_process("metrics", "finality-breakdown", "--status", "sent", env=env)
    assert refused.returncode == 2 and "does not take --status" in refused.stderr
