"""How a sync run ends: its ``sync_runs`` outcome and message, and which error it raises when several things fail.

The rule, in order of precedence: the run's own error (the load or the models failed, or Ctrl-C / SIGTERM stopped
them) says most, so it is recorded and raised; otherwise a failure of the last commit makes the run ``failed`` and
is raised; otherwise a failure to write the audit row is raised (the row could not be written to say so). Errors of
lower precedence are not raised: the run's own error is already on its way and names what went wrong first.
"""

from __future__ import annotations

from ..errors import ChainopsError
from ..signals import is_interruption, sigterm_received
from .result import SyncResult


def loaded_outcome(result: SyncResult) -> str:
    """The outcome of a run that completed: ``partial`` when records were rejected, events are missing or a
    problem was noted, else ``ok``."""
    return "partial" if result.rejected or result.gaps or result.problems else "ok"


def outcome_of(exc: BaseException, *, sigterm: bool | None = None) -> tuple[str, str]:
    """The ``sync_runs`` outcome and message of a run that ``exc`` ended: Ctrl-C and SIGTERM (a KeyboardInterrupt,
    see :mod:`toolkit.signals`) are ``interrupted``, anything else ``failed``. ``sigterm`` says which of the two
    stopped it (default: whether this process received SIGTERM)."""
    if is_interruption(exc):
        why = "SIGTERM" if (sigterm_received() if sigterm is None else sigterm) else "Ctrl-C"
        return "interrupted", f"interrupted ({why}); the next run continues from the last commit"
    return "failed", str(exc) if isinstance(exc, ChainopsError) else f"{type(exc).__name__}: {exc}"


def recorded_outcome(
    outcome: str | None,
    message: str | None,
    *,
    run_error: BaseException | None,
    commit_error: BaseException | None,
    sigterm: bool | None = None,
) -> tuple[str | None, str | None]:
    """The outcome and message the audit row records, given the run's (``outcome``, ``message``) if it completed,
    its own error if it did not, and the error of its last commit if that failed."""
    if run_error is not None:
        return outcome_of(run_error, sigterm=sigterm)
    if commit_error is not None:
        return "failed", f"the last commit failed: {type(commit_error).__name__}: {commit_error}"
    return outcome, message


def error_to_raise(
    *,
    run_error: BaseException | None,
    commit_error: BaseException | None,
    audit_error: BaseException | None,
) -> BaseException | None:
    """The one error the run raises: its own, else its last commit's, else its audit row's; None when all went
    well."""
    for error in (run_error, commit_error, audit_error):
        if error is not None:
            return error
    return None
