"""The precedence rule of a run's ending (toolkit.loader.outcome), on its own: which outcome the audit row records
and which error the run raises when the run, its last commit and its audit row fail in any combination."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import duckdb
import pytest

from toolkit.errors import ChainopsError
from toolkit.loader.outcome import error_to_raise, loaded_outcome, outcome_of, recorded_outcome
from toolkit.loader.result import SyncResult
from toolkit.signals import Terminated


def test_an_interruption_is_interrupted_and_names_what_stopped_it() -> None:
    assert outcome_of(KeyboardInterrupt(), sigterm=False) == (
        "interrupted",
        "interrupted (Ctrl-C); the next run continues from the last commit",
    )
    assert outcome_of(KeyboardInterrupt(), sigterm=True)[1].startswith("interrupted (SIGTERM)")
    assert outcome_of(Terminated(), sigterm=True)[0] == "interrupted"


def test_any_other_error_is_failed_with_its_message() -> None:
    assert outcome_of(ChainopsError("the key was refused; check it"), sigterm=False) == (
        "failed",
        "the key was refused; check it",
    )  # the toolkit's own errors say what to do: kept as they are
    assert outcome_of(ValueError("bad"), sigterm=False) == ("failed", "ValueError: bad")


def _errors() -> tuple[RuntimeError, OSError, duckdb.IOException]:
    return RuntimeError("the run's own"), OSError("the last commit's"), duckdb.IOException("the audit row's")


@pytest.mark.parametrize(("run", "commit", "audit"), list(itertools.product((False, True), repeat=3)))
def test_the_run_error_wins_then_the_commit_then_the_audit_row(run: bool, commit: bool, audit: bool) -> None:
    run_error, commit_error, audit_error = _errors()
    chosen = error_to_raise(
        run_error=run_error if run else None,
        commit_error=commit_error if commit else None,
        audit_error=audit_error if audit else None,
    )
    expected = run_error if run else commit_error if commit else audit_error if audit else None
    assert chosen is expected


def test_the_recorded_outcome_follows_the_same_precedence() -> None:
    run_error, commit_error, _ = _errors()
    completed = ("partial", "1 gap")
    assert recorded_outcome(*completed, run_error=None, commit_error=None) == completed
    assert recorded_outcome(*completed, run_error=None, commit_error=commit_error) == (
        "failed",
        "the last commit failed: OSError: the last commit's",
    )
    for commit in (None, commit_error):  # the run's own error is what the row says, whatever the commit did
        assert recorded_outcome(None, None, run_error=run_error, commit_error=commit, sigterm=False) == (
            "failed",
            "RuntimeError: the run's own",
        )
    assert recorded_outcome(None, None, run_error=KeyboardInterrupt(), commit_error=commit_error, sigterm=False)[0] == (
        "interrupted"
    )


def test_a_completed_run_is_partial_when_anything_was_left_out() -> None:
    def result(**fields: object) -> SyncResult:
        r = SyncResult(run_id="r", started_at=datetime.now(UTC), full=False)
        for name, value in fields.items():
            setattr(r, name, value)
        return r

    assert loaded_outcome(result()) == "ok"
    assert loaded_outcome(result(rejected=["operations record 'x': field 'operation_id' is missing"])) == "partial"
    assert loaded_outcome(result(gaps={"ch": [[3, 3]]})) == "partial"
    assert loaded_outcome(result(problems=["the models were not refreshed"])) == "partial"
