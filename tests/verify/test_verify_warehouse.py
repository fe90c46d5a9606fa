"""End to end: a sandbox that signs like a DON (and forges a share of its proofs) over real HTTP on 127.0.0.1 ->
sync -> a real DuckDB file -> ``chainops verify``, checked against what the sandbox says it forged.

The sandbox's proofs are first checked here by this file's own code (pycryptodome's Keccak-256, coincurve's
recovery, the owner formula written out), independently of ``toolkit.verify``."""

from __future__ import annotations

import base64
import shutil
import struct
from pathlib import Path

import httpx
import pytest
from coincurve import PublicKey
from Crypto.Hash import keccak

from tests.conftest import TEST_KEY
from tests.support.cli import assert_no_key, run_in_process
from tests.support.cli import run_process as chainops
from toolkit import spec
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.metrics import proof_coverage
from toolkit.presentation.report import build_report, parse_threshold
from toolkit.sandbox import Sandbox
from toolkit.verify import resolve_policy
from toolkit.verify.run import verify_warehouse
from toolkit.warehouse import Warehouse

#: Real sockets or processes (hostile servers, the sandbox over HTTP, `chainops` as a process): the fast tier
#: skips them (docs/testing.md); `make test` runs them.
pytestmark = pytest.mark.slow

FORGE_SHARE = 0.08
#: The rule each kind of forgery breaks, as the verdict's reason says it.
REASON_OF = {
    "wrong_signer": "3 distinct trusted signer(s) of 4 required (4 signature(s), 1 untrusted or repeated)",
    "too_few_signatures": "3 distinct trusted signer(s) of 4 required (3 signature(s), 0 untrusted or repeated)",
    "wrong_owner": "workflow owner 0x",
    "tampered_event": "hash differs from the report's",  # verifiable_event, or verifiable_result for queries
}


def _keccak(data: bytes) -> bytes:
    return keccak.new(digest_bits=256, data=data).digest()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The sandbox, what it says about its signers, the forged event hashes, and a warehouse synced from it."""
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=23, days=1, operations_per_day=150, forge_share=FORGE_SHARE)
    path = tmp_path_factory.mktemp("verify") / "w.duckdb"
    with sandbox.serve(host="127.0.0.1", port=0) as server:
        info = httpx.get(
            server.base_url.replace("/v1", "/sandbox/signers"), headers={"Authorization": f"Apikey {TEST_KEY}"}
        ).json()
        settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={})
        assert sync(settings, quiet=True).outcome == "ok"
    forged = dict(sandbox.backend_for(TEST_KEY).forged)
    return sandbox, info, forged, path


@pytest.fixture(scope="module")
def verified(world, tmp_path_factory) -> Path:
    """A copy of the world's warehouse verified once with the sandbox's signers (what
    ``test_verify_finds_exactly_what_the_sandbox_forged`` checks verdict by verdict); never written: tests that
    start from a verified warehouse take their own copy."""
    _, info, _, synced = world
    path = tmp_path_factory.mktemp("verified") / "w.duckdb"
    shutil.copy(synced, path)
    verify_warehouse(path, resolve_policy(org_id=info["org_id"], signers=",".join(info["signers"]), env={}), workers=1)
    return path


def _proof_bearing(path: Path) -> list[tuple[str, str, dict, list]]:
    import json

    with Warehouse(path, read_only=True) as wh:
        rows = wh.con.execute("SELECT event_id, type, status, payload, proofs FROM events").fetchall()
    # a failed query that never reached sent and carries no DON result failed in dispatch: it owes no proof
    sent = {json.loads(p)["query_id"] for _, t, s, p, _ in rows if t == "query.status" and s in ("sent", "completed")}
    return [
        (i, t, json.loads(p), json.loads(pr))
        for i, t, s, p, pr in rows
        if spec.event_requires_proof(
            t,
            s,
            failed_in_dispatch=t == "query.status"
            and json.loads(p)["query_id"] not in sent
            and "event_hash" not in json.loads(p),
        )
    ]


def test_the_sandbox_signs_like_a_don(world) -> None:
    sandbox, info, forged, path = world
    assert info["signers"] == sandbox.signers and len(set(info["signers"])) == 10 and info["min_signatures"] == 4
    tenant, org = b"1", info["org_id"].encode()
    owner = _keccak(
        b"\xff"
        + bytes(84)
        + b"Chainlink Runtime Environment GenerateWorkflowOwnerAddress\x00"
        + struct.pack(">Q", len(tenant))
        + tenant
        + struct.pack(">Q", len(org))
        + org
    )[:20]
    assert info["workflow_owner"] == "0x" + owner.hex()
    trusted = {bytes.fromhex(a[2:]) for a in info["signers"]}
    events = _proof_bearing(path)
    assert len(events) > 300 and forged
    seen_forged = 0
    for _, etype, payload, proofs in events:
        blob = payload["verifiable_result" if etype == "query.status" else "verifiable_event"]
        local = _keccak(blob.encode())
        assert payload["event_hash"] == "0x" + local.hex()  # Keccak-256 of the base64 text
        base64.b64decode(blob, validate=True)
        (proof,) = proofs
        report, context = bytes.fromhex(proof["ocr_report"][2:]), bytes.fromhex(proof["ocr_context"][2:])
        digest = _keccak(_keccak(report) + context)
        signers = []
        for sig in proof["signatures"]:
            raw = bytes.fromhex(sig[2:])
            assert len(raw) == 65 and raw[64] in (27, 28)
            key = PublicKey.from_signature_and_message(raw[:64] + bytes((raw[64] - 27,)), digest, hasher=None)
            signers.append(_keccak(key.format(compressed=False)[1:])[-20:])
        kind = forged.get(payload["event_hash"])
        seen_forged += kind is not None
        assert len(report) == 141
        assert (report[-32:] == local) == (kind != "tampered_event")
        assert (report[87:107] == owner) == (kind != "wrong_owner")
        trusted_count = len(set(signers) & trusted)
        assert len(set(signers)) == len(signers)  # the DON never signs twice
        expected = {"wrong_signer": 3, "too_few_signatures": 3}.get(kind, 4)
        assert trusted_count == expected, kind
    assert seen_forged == len([e for e in events if e[2]["event_hash"] in forged])
    assert set(forged.values()) == set(REASON_OF)


def test_verify_finds_exactly_what_the_sandbox_forged(world, tmp_path) -> None:
    _, info, forged, synced = world
    path = tmp_path / "w.duckdb"
    shutil.copy(synced, path)
    policy = resolve_policy(org_id=info["org_id"], signers=",".join(info["signers"]), env={})
    result = verify_warehouse(path, policy, workers=2)
    events = _proof_bearing(path)
    expected_invalid = {i: forged[p["event_hash"]] for i, _, p, _ in events if p["event_hash"] in forged}
    assert result.checked == len(events)
    assert result.standing == {
        spec.Verdict.VERIFIED: len(events) - len(expected_invalid),
        spec.Verdict.INVALID: len(expected_invalid),
    }
    with Warehouse(path, read_only=True) as wh:
        rows = wh.con.execute(
            "SELECT event_id, verdict, reason, valid_signers, min_signatures, event_hash_matches "
            "FROM event_verifications"
        ).fetchall()
    assert len(rows) == len(events)
    for event_id, verdict, reason, valid, minimum, matches in rows:
        assert minimum == 4 and matches is True
        if event_id in expected_invalid:
            assert verdict == "invalid" and REASON_OF[expected_invalid[event_id]] in reason, reason
        else:
            assert (verdict, reason, valid) == ("verified", None, 4)
    # nothing new: a second run checks nothing, and the standing is the same
    again = verify_warehouse(path, policy, workers=1)
    assert again.checked == 0 and again.standing == result.standing


def test_a_new_minimum_or_signer_set_re_verifies_and_events_that_need_none_stay_out(world, verified, tmp_path) -> None:
    _, info, forged, _ = world
    path = tmp_path / "w.duckdb"
    shutil.copy(verified, path)  # verified with the sandbox's signers and the default minimum
    signers = ",".join(info["signers"])
    lenient = resolve_policy(org_id=info["org_id"], signers=signers, min_signatures=3, env={})
    result = verify_warehouse(path, lenient, workers=1)
    events = _proof_bearing(path)
    assert result.checked == len(events)
    still_invalid = sum(1 for _, _, p, _ in events if forged.get(p["event_hash"]) in ("wrong_owner", "tampered_event"))
    assert result.invalid == still_invalid
    # the SDK's production signers: none of the sandbox's nodes is trusted
    production = verify_warehouse(path, resolve_policy(org_id=info["org_id"], env={}), workers=1)
    assert production.checked == len(events) and production.invalid == len(events)
    with Warehouse(path, read_only=True) as wh:
        ((outside,),) = wh.con.execute(
            "SELECT count(*) FROM event_verifications v JOIN events e USING (event_id) "
            "WHERE NOT (e.type = 'watcher.event' OR e.status IN ('confirmed_latest', 'confirmed_safe', 'confirmed', "
            "'completed', 'failed'))"
        ).fetchall()
    assert outside == 0


def test_missing_and_not_kept_proofs(world, tmp_path) -> None:
    _, info, _, synced = world
    path = tmp_path / "w.duckdb"
    shutil.copy(synced, path)
    with Warehouse(path) as wh:
        ids = [
            r[0]
            for r in wh.con.execute(
                "SELECT event_id FROM events WHERE type = 'watcher.event' ORDER BY event_id LIMIT 5"
            ).fetchall()
        ]
        # one event that needs a proof arrived without one; two were synced before proofs were kept
        wh.con.execute("UPDATE events SET proofs = '[]', proof_count = 0 WHERE event_id = ?", [ids[0]])
        wh.con.execute("UPDATE events SET proofs = NULL WHERE list_contains(?, event_id)", [ids[1:3]])
    policy = resolve_policy(org_id=info["org_id"], signers=",".join(info["signers"]), env={})
    result = verify_warehouse(path, policy, workers=1)
    assert result.not_kept == 2 and result.standing[spec.Verdict.MISSING_PROOF] == 1
    assert "run `chainops sync --full` once" in result.summary()
    with Warehouse(path, read_only=True) as wh:
        verdicts = dict(wh.con.execute("SELECT event_id, verdict FROM event_verifications").fetchall())
    assert verdicts[ids[0]] == "missing_proof" and ids[1] not in verdicts and ids[2] not in verdicts
    # an event stored again by a later sync (a new write_seq) is verified again, and only that one
    with Warehouse(path) as wh:
        wh.con.execute("UPDATE events SET write_seq = write_seq + 1000 WHERE event_id = ?", [ids[3]])
    assert verify_warehouse(path, policy, workers=1).checked == 1


def test_proof_coverage_and_the_report_count_verdicts(world, verified) -> None:
    _, _, forged, synced = world
    before = proof_coverage(str(synced), by=[]).iloc[0]
    assert before["verified"] == 0 and before["verified_share"] == 0  # nothing verified yet: nothing proven
    path = verified
    events = _proof_bearing(path)
    bad = sum(1 for _, _, p, _ in events if p["event_hash"] in forged)
    row = proof_coverage(str(path), by=[]).iloc[0]
    assert (row["must_have_proof"], row["verified"], row["invalid"]) == (len(events), len(events) - bad, bad)
    assert row["verified_share"] == pytest.approx((len(events) - bad) / len(events))
    assert row["verified_share_low"] < row["verified_share"] < row["verified_share_high"]
    report = build_report(
        str(path), since="7d", thresholds=[parse_threshold("proof_invalid>0"), parse_threshold("proof_verified<1")]
    )
    assert report.summary["proof_invalid"] == bad
    assert [str(t) for t in report.breaches] == ["proof_invalid>0", "proof_verified<1"]
    listed = report.tables["invalid_proofs"]
    assert len(listed) == bad and listed["reason"].notna().all()


def test_chainops_verify_exit_codes_and_usage(world, tmp_path) -> None:
    _, info, _, synced = world
    path = tmp_path / "w.duckdb"
    shutil.copy(synced, path)
    signers = tmp_path / "signers.txt"
    signers.write_text("# the sandbox's DON\n" + "\n".join(info["signers"]) + "\n", encoding="utf-8")
    run = chainops("verify", "--warehouse", str(path), "--signers", str(signers), env={"CREC_ORG_ID": info["org_id"]})
    assert run.returncode == 3, run.stderr
    assert "invalid" in run.stdout and "verified" in run.stdout
    # the other exit codes and usage messages through main(argv): the process above is the smoke test of the command
    owner = run_in_process(
        "verify",
        "--warehouse",
        str(path),
        "--workflow-owner",
        info["workflow_owner"],
        "--min-signatures",
        "1",
        env={"CREC_DON_SIGNERS": ",".join(info["signers"])},
    )
    assert owner.returncode == 3  # wrong owners and tampered events fail whatever the minimum
    for args, needle in (
        ((), "--org-id"),
        (("--org-id", "x", "--workflow-owner", "0x" + "00" * 20), "not allowed with"),
        (("--org-id", "x", "--signers", "0x1234"), "not an address"),
        (("--org-id", "x", "--min-signatures", "11"), "exceeds the 10 trusted signers"),
    ):
        bad = run_in_process("verify", "--warehouse", str(path), *args)
        assert bad.returncode == 2 and needle in bad.stderr, (args, bad.stderr)
    missing = run_in_process("verify", "--warehouse", str(tmp_path / "none.duckdb"), "--org-id", "x")
    assert missing.returncode == 1 and "No warehouse at" in missing.stderr
    assert not (tmp_path / "none.duckdb").exists()
    assert_no_key(run.stdout, run.stderr)


def test_sync_verify_verifies_what_it_synced(world, tmp_path) -> None:
    sandbox, info, _, _ = world
    path = tmp_path / "w.duckdb"
    env = {"CREC_ORG_ID": info["org_id"], "CREC_DON_SIGNERS": ",".join(info["signers"]), "CREC_API_KEY": TEST_KEY}
    with sandbox.serve(host="127.0.0.1", port=0) as server:
        run = chainops(
            "sync", "--warehouse", str(path), "--quiet", "--verify", env={**env, "CREC_BASE_URL": server.base_url}
        )
    assert run.returncode == 3, run.stderr
    with Warehouse(path, read_only=True) as wh:
        ((verified,),) = wh.con.execute("SELECT count(*) FROM event_verifications").fetchall()
    assert verified == len(_proof_bearing(path))
    assert_no_key(run.stdout, run.stderr)


def _verdicts(path: Path) -> dict[str, tuple[str, str | None]]:
    with Warehouse(path, read_only=True) as wh:
        rows = wh.con.execute("SELECT event_id, verdict, reason FROM event_verifications").fetchall()
    return {event_id: (verdict, reason) for event_id, verdict, reason in rows}


def test_a_number_past_float_range_in_every_payload_changes_no_verdict(world, verified, tmp_path) -> None:
    # valid JSON that orjson refuses (issue 38): it made every genuine proof "invalid" and verify exit 3
    _, info, _, synced = world
    path = tmp_path / "w.duckdb"
    shutil.copy(synced, path)
    with Warehouse(path) as wh:
        wh.con.execute("UPDATE events SET payload = '{\"gas\": 1e400, ' || substr(payload, 2) WHERE proofs IS NOT NULL")
        ((changed,),) = wh.con.execute("SELECT count(*) FROM events WHERE payload LIKE '{\"gas\": 1e400, %'").fetchall()
    assert changed >= len(_proof_bearing(verified)) > 0  # every proof-bearing event, and others
    run = run_in_process(
        "verify",
        "--warehouse",
        str(path),
        "--signers",
        ",".join(info["signers"]),
        env={"CREC_ORG_ID": info["org_id"]},
    )
    assert run.returncode == 3, run.stderr  # the sandbox's forgeries, and only those
    assert "not JSON" not in run.stdout
    assert _verdicts(path) == _verdicts(verified)


def test_a_full_disk_during_verify_says_so_and_the_next_run_completes(world, verified, tmp_path, monkeypatch) -> None:
    """The second batch's commit fails as DuckDB reports a full disk (the text of a real one: verify on a full tmpfs
    says exactly this). A file size limit (RLIMIT_FSIZE), as sync's test uses, is no model here: the warehouse is
    already larger than any limit small enough to fail, and DuckDB's writes below the limit succeed where those above
    fail, which a real disk never does."""
    import duckdb

    import toolkit.verify.run as verify_run

    _, info, _, synced = world
    path = tmp_path / "w.duckdb"
    shutil.copy(synced, path)
    store = verify_run._store
    stored = []

    def full_disk(wh, batch, results, policy) -> None:
        if stored:
            raise duckdb.TransactionException(
                "TransactionContext Error: Failed to commit: "
                f'Could not write file "{path}.wal": No space left on device'
            )
        store(wh, batch, results, policy)
        stored.append(batch.num_rows)

    monkeypatch.setattr(verify_run, "_store", full_disk)
    env = {"CREC_ORG_ID": info["org_id"], "CREC_DON_SIGNERS": ",".join(info["signers"])}
    out = run_in_process("verify", "--warehouse", str(path), env=env)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "No space left on device" in out.stderr and "the disk is full" in out.stderr, out.stderr
    assert "Free some space and run `chainops verify` again" in out.stderr
    assert "everything committed before the failure is kept" in out.stderr
    monkeypatch.undo()
    # with room again, the next run verifies what is left: every event then stands as after a run that never failed
    again = verify_warehouse(path, resolve_policy(org_id=info["org_id"], signers=env["CREC_DON_SIGNERS"], env={}))
    assert again.checked == len(_proof_bearing(verified)) - stored[0]
    assert _verdicts(path) == _verdicts(verified)


def test_verify_reads_under_a_memory_limit_of_its_own(world, tmp_path, monkeypatch) -> None:
    """verify's connection had DuckDB's default limit (80% of the machine), which keeps every block read: 1.2 GB on
    a warehouse of ten million events. Its statements now run under VERIFY_MEMORY_LIMIT (spilling past it)."""
    from toolkit.verify import run

    _, info, _, synced = world
    path = tmp_path / "w.duckdb"
    shutil.copy(synced, path)
    limits: list[str] = []
    real = run._verify

    def spied(wh, *args, **kwargs):
        limits.append(wh.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
        return real(wh, *args, **kwargs)

    monkeypatch.setattr(run, "_verify", spied)
    policy = resolve_policy(org_id=info["org_id"], signers=",".join(info["signers"]), env={})
    assert verify_warehouse(path, policy, workers=1).checked > 0
    from toolkit.warehouse.memory import parse_bytes

    assert len(limits) == 1 and parse_bytes(limits[0]) <= parse_bytes(run.VERIFY_MEMORY_LIMIT)
