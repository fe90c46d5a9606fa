"""verify's pool (issue 40): fresh small workers fed plain lists must give every event the verdict one process gives,
run from a script that has no ``if __name__ == "__main__"`` guard, and load nothing verification does not need."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.verify.test_verify_warehouse import world  # noqa: F401 - the module's fixture, shared
from toolkit.verify import resolve_policy
from toolkit.verify.run import verify_warehouse
from toolkit.warehouse import Warehouse

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _verdicts(path: Path) -> list[tuple]:
    with Warehouse(path, read_only=True) as wh:
        return wh.con.execute(
            "SELECT event_id, verdict, reason, valid_signers, event_hash_matches, signers, min_signatures, "
            "workflow_owner, event_write_seq FROM event_verifications ORDER BY event_id"
        ).fetchall()


def _verified_alone_and_a_copy(world, tmp_path: Path, monkeypatch) -> tuple:  # noqa: F811
    """The world's policy; its synced warehouse verified by one process (``one``, and that run's result); a second
    copy not verified yet, for the pool; and the pool's threshold set to 0 (the sandbox's world is below it)."""
    import toolkit.verify.run as verify_run

    _, info, _, synced = world
    policy = resolve_policy(org_id=info["org_id"], signers=",".join(info["signers"]), env={})
    one, other = tmp_path / "one.duckdb", tmp_path / "other.duckdb"
    shutil.copy(synced, one)
    shutil.copy(synced, other)
    alone = verify_warehouse(one, policy, workers=1)
    monkeypatch.setattr(verify_run, "POOL_THRESHOLD", 0)
    return policy, one, other, alone


def test_the_pool_gives_every_event_the_verdict_one_process_gives(world, tmp_path, monkeypatch) -> None:  # noqa: F811
    forged = world[2]
    policy, one, pooled, alone = _verified_alone_and_a_copy(world, tmp_path, monkeypatch)
    # batches of 97 events in shares of 49 and 48: an event given another's verdict would show
    result = verify_warehouse(pooled, policy, workers=2, batch_rows=97)
    assert result.workers == 2
    assert result.checked == alone.checked > 97 * 3
    assert result.standing == alone.standing and alone.standing.get("invalid", 0) == len(forged) > 0
    assert _verdicts(pooled) == _verdicts(one)
    assert {"hand to the pool", "wait for the pool", "write verdicts"} <= set(result.phases)


def test_a_script_without_a_main_guard_verifies_on_the_pool(world, tmp_path) -> None:  # noqa: F811
    """multiprocessing's spawn and forkserver run the parent's script again in every worker: this one would verify
    again in each, and fail. verify's workers run only their own module. The script's own process never loads
    pandas."""
    _, info, _, synced = world
    path = tmp_path / "w.duckdb"
    shutil.copy(synced, path)
    script = tmp_path / "verify_it.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import toolkit.verify.run as verify_run
            from toolkit.verify import resolve_policy

            verify_run.POOL_THRESHOLD = 0
            policy = resolve_policy(org_id={info["org_id"]!r}, signers={",".join(info["signers"])!r}, env={{}})
            result = verify_run.verify_warehouse({str(path)!r}, policy, workers=2, batch_rows=500)
            print("verified", result.workers, result.checked)
            import sys
            print("pandas loaded:", "pandas" in sys.modules)
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("verified") == 1, out.stdout
    workers, checked = out.stdout.splitlines()[0].split()[1:]
    assert workers == "2" and int(checked) > 0
    # the verifier never needs pandas (35 MiB): nothing on its way loads it, the verdicts' Arrow columns included
    assert out.stdout.splitlines()[1] == "pandas loaded: False", out.stdout


def test_a_worker_loads_no_duckdb_arrow_or_pandas() -> None:
    """A worker is a fresh interpreter running toolkit.verify.worker: about 25 MB, where a fork of the verifier
    held the 80 MB of DuckDB, Arrow and pandas it never uses."""
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); import toolkit.verify.worker, toolkit.verify.pool; "
        "print(json.dumps(sorted(m for m in ('duckdb', 'pyarrow', 'pandas', 'numpy') if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize(("chunk", "depth", "workers"), [(10, 1, 2), (7, 3, 3)])
def test_chunks_given_out_as_each_worker_runs_low_keep_every_verdict_in_its_place(
    world,  # noqa: F811
    tmp_path,
    monkeypatch,
    chunk: int,
    depth: int,
    workers: int,
) -> None:
    """Batches cut into chunks of a few events, handed to one or two workers as their queues run low while this
    process checks the rest: the parts come back in whatever order they finish, and each must land in its place."""
    import toolkit.verify.split as split

    policy, one, pooled, alone = _verified_alone_and_a_copy(world, tmp_path, monkeypatch)
    monkeypatch.setattr(split, "CHUNK_ROWS", chunk)
    monkeypatch.setattr(split, "DEPTH", depth)
    own: list[int] = []
    real = split.verify_rows

    def here(rows, policy):
        own.append(len(rows))
        return real(rows, policy)

    monkeypatch.setattr(split, "verify_rows", here)
    result = verify_warehouse(pooled, policy, workers=workers, batch_rows=61)
    assert result.workers == workers and result.checked == alone.checked
    assert own and max(own) <= chunk and 0 < sum(own) < alone.checked  # both sides checked chunks
    assert _verdicts(pooled) == _verdicts(one)


def test_a_worker_killed_mid_run_fails_the_run_and_keeps_what_was_stored(world, tmp_path, monkeypatch) -> None:  # noqa: F811
    """The pool's reader of that worker meets the end of its output: the run fails naming it, the batches stored
    before stay, and the next run verifies the rest."""
    import signal

    import toolkit.verify.pool as pool
    import toolkit.verify.split as split

    policy, one, path, alone = _verified_alone_and_a_copy(world, tmp_path, monkeypatch)
    monkeypatch.setattr(split, "CHUNK_ROWS", 10)
    sends: list[int] = []
    real_send = pool.Pool.send

    def send(self, worker, *args):
        sends.append(worker)
        if len(sends) == 12:
            os.kill(self._procs[worker].pid, signal.SIGKILL)
        return real_send(self, worker, *args)

    monkeypatch.setattr(pool.Pool, "send", send)
    with pytest.raises(pool.WorkerFailed, match="ended before answering"):
        verify_warehouse(path, policy, workers=2, batch_rows=40)
    kept = _verdicts(path)
    assert 0 < len(kept) < alone.checked  # batches before the kill were stored, each in a transaction of its own
    monkeypatch.undo()
    again = verify_warehouse(path, policy, workers=1)
    assert again.checked == alone.checked - len(kept)
    assert _verdicts(path) == _verdicts(one)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are set on Linux only")
def test_the_pipes_to_a_worker_hold_a_whole_chunk() -> None:
    """A chunk's message (about 500 KB) crosses in one write and one read: in 64 KB pieces, each read waited for the
    worker's interpreter lock while it checked, and its queue ran dry."""
    import fcntl

    from toolkit.verify.pool import PIPE_BYTES, Pool

    assert PIPE_BYTES >= 1 << 20
    with Pool(2, resolve_policy(org_id="org", env={})) as pool:
        for proc in pool._procs:
            sizes = [fcntl.fcntl(s.fileno(), fcntl.F_GETPIPE_SZ) for s in (proc.stdin, proc.stdout)]
            assert sizes == [PIPE_BYTES, PIPE_BYTES]


def test_a_worker_that_lags_holds_back_the_reading_of_further_batches(world, tmp_path, monkeypatch) -> None:  # noqa: F811
    """Its answers seen only when waited for (as if it lagged): this process checks what it can, but reads no more
    than ``MOST_OPEN`` batches ahead of the oldest unanswered one, then waits; every verdict still lands in place."""
    import toolkit.verify.split as split
    from toolkit.verify.pool import Pool

    policy, one, pooled, alone = _verified_alone_and_a_copy(world, tmp_path, monkeypatch)
    monkeypatch.setattr(split, "CHUNK_ROWS", 10)
    monkeypatch.setattr(Pool, "ready", lambda self, worker: False)
    held: list[int] = []
    real_read = split.Split._read

    def reading(self) -> bool:
        read = real_read(self)
        held.append(len(self._open))
        return read

    monkeypatch.setattr(split.Split, "_read", reading)
    result = verify_warehouse(pooled, policy, workers=2, batch_rows=40)
    assert result.checked == alone.checked > 40 * (split.MOST_OPEN + 2)
    assert max(held) == split.MOST_OPEN
    assert _verdicts(pooled) == _verdicts(one)
