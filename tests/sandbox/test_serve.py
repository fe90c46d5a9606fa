"""Serving: loopback only, the blocking ``run_server`` prints its address and stops cleanly on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys

import httpx
import pytest

from toolkit.sandbox import Sandbox

SCRIPT = (
    "from toolkit.sandbox.serve import run_server; "
    "run_server('127.0.0.1', 0, ('run-key',), ('nope-key',), 7, 0.2, False, 0.0, 0.0, None)"
)


def test_serve_refuses_non_loopback_hosts() -> None:
    with pytest.raises(ValueError, match="loopback"):
        Sandbox(empty=True).serve(host="0.0.0.0")


def test_server_context_manager_stops() -> None:
    with Sandbox(empty=True).serve() as server:
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        assert httpx.get(f"{server.base_url}/health-check").status_code == 200
    assert not server.running


def test_run_server_prints_address_and_stops_on_ctrl_c() -> None:
    # Ctrl-C as a terminal sends it: a shell running a job in the background starts it with SIGINT ignored, and
    # that disposition would be inherited, so the server starts with the default one
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving on http://127.0.0.1:") and line.rstrip().endswith("/v1")
        base = line.split()[-1]
        # then the DON's signers and the organisation's owner, as GET /sandbox/signers answers them, one a line
        heading = proc.stdout.readline()
        signers = [proc.stdout.readline() for _ in range(10)]
        org, owner = proc.stdout.readline(), proc.stdout.readline()
        info = httpx.get(base.replace("/v1", "/sandbox/signers"), headers={"Authorization": "Apikey run-key"}).json()
        assert "chainops verify --signers" in heading
        assert [line.strip() for line in signers] == info["signers"] and len(info["signers"]) == 10
        assert org.rstrip() == f"organisation 1: org id {info['org_id']}"
        assert owner.strip() == f"workflow owner {info['workflow_owner']}"
        assert all(len(line.rstrip("\n")) <= 80 for line in [heading, *signers, org, owner])
        assert httpx.get(f"{base}/channels", headers={"Authorization": "Apikey run-key"}).status_code == 200
        assert (
            httpx.get(f"{base}/channels", headers={"Authorization": "Apikey nope-key"}).json()["type"]
            == "ORGANIZATION_NOT_FOUND"
        )
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)  # a guard against a hang, not a speed check
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "run-key" not in out + err
