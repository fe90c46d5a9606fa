"""Issue 29, item 7: the report's default period counts back from the data's as-of time (the newest event), not the
wall clock, and the report shows both that time and the sync time. The expectations come from the raw HTTP answers
(:mod:`benchmarks.support.rawhistory`), not from the toolkit."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks.support import rawhistory as raw
from tests.conftest import TEST_KEY
from toolkit.config import Settings
from toolkit.loader import sync
from toolkit.presentation import report
from toolkit.sandbox import Sandbox

#: Real sockets or processes (hostile servers, the sandbox over HTTP, `chainops` as a process): the fast tier
#: skips them (docs/testing.md); `make test` runs them.
pytestmark = pytest.mark.slow

#: Years before the tests run: every event is far older than the wall clock's last seven days.
START = 1_700_000_000


@pytest.fixture(scope="module")
def old_warehouse(tmp_path_factory):
    """A sandbox whose history ended in 2023, synced over HTTP; answers (path, raw operations, as-of seconds)."""
    sandbox = Sandbox(orgs=(TEST_KEY,), seed=5, days=9, operations_per_day=60, start=START)
    path = str(tmp_path_factory.mktemp("asof") / "old.duckdb")
    with sandbox.serve(host="127.0.0.1", port=0) as server:
        sync(Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={}), quiet=True)
        ops, as_of = raw.read_history(server.base_url, TEST_KEY)  # one read of every list and log
    return path, ops, as_of


def test_the_default_period_counts_back_from_the_newest_event(old_warehouse, tmp_path) -> None:
    path, ops, as_of = old_warehouse
    rep = report.build_report(path)
    newest = pd.Timestamp(as_of, unit="s", tz="UTC")
    assert rep.as_of == newest and rep.until_from_data
    assert rep.until == (newest + pd.Timedelta(minutes=1)).floor("min")
    assert rep.since == rep.until - pd.Timedelta(days=7)
    since, until = rep.since.timestamp(), rep.until.timestamp()
    want = sum(since <= o.created_at < until for o in ops)
    assert want > 0
    assert int(rep.summary["operations"]) == want
    assert rep.summary["sync_age_h"] < 1  # synced just now: its age is to the clock, not to the data's end
    page = rep.to_html(figures=False)
    assert "(counted back from the data's as-of time, not the clock)" in page
    assert f"data as of {newest:%Y-%m-%d %H:%M} UTC (the newest event)" in page
    assert "Warehouse last synced" in page
    summary = rep.summary_frame().set_index("name")
    assert summary.loc["as_of", "value"] == newest.isoformat()


def test_an_age_with_an_until_still_counts_back_from_until(old_warehouse) -> None:
    path, ops, _ = old_warehouse
    until = pd.Timestamp(START + 3 * 86400, unit="s", tz="UTC")
    rep = report.build_report(path, since="2d", until=until)
    assert (rep.since, rep.until, rep.until_from_data) == (until - pd.Timedelta(days=2), until, False)
    assert "counted back" not in rep.to_html(figures=False)
    want = sum(rep.since.timestamp() <= o.created_at < until.timestamp() for o in ops)
    assert int(rep.summary["operations"]) == want
