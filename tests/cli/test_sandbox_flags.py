"""``chainops sandbox`` refuses rate-limit flags it cannot honour, with a usage error (exit 2), before serving."""

from __future__ import annotations

import pytest

from tests.support.cli import run_process as chainops
from toolkit.sandbox import Sandbox


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (("--rate-limit", "1", "--rate-limit-retry-after", "-2"), "--rate-limit-retry-after"),
        (("--rate-limit-retry-after", "3"), "--rate-limit-retry-after"),
        (("--rate-limit", "0"), "--rate-limit"),
        (("--rate-limit", "-1"), "--rate-limit"),
    ],
)
@pytest.mark.slow  # `chainops sandbox` as a process: a flag not refused would start serving
def test_rate_limit_flags_it_cannot_honour_are_usage_errors(flags, named) -> None:
    out = chainops("sandbox", "--port", "0", "--empty", *flags, timeout=30)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert named in out.stderr and "Traceback" not in out.stderr and "serving" not in out.stdout


def test_a_negative_retry_after_is_refused_by_the_sandbox_too() -> None:
    with pytest.raises(ValueError, match="rate_limit_retry_after"):
        Sandbox(empty=True, rate_limit=1, rate_limit_retry_after=-1)
