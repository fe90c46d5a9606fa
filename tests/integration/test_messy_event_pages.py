"""Event pages with the mess real feeds have, served by the sandbox over HTTP and altered on the way: an event with
a blank ``event_id`` is rejected by name with its page's request while the rest of the channel is stored, and an
event sent again on a later page is stored once, as its last copy."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.conftest import TEST_KEY
from toolkit.api import Client
from toolkit.loader import COMMIT_ROWS, sync, unit_of_work
from toolkit.warehouse import Warehouse

#: Every test syncs from an altering server over real HTTP (a hostile server, as in the other such modules).
pytestmark = pytest.mark.slow

START = 1_795_000_000


class TamperingTransport(httpx.BaseTransport):
    """Real HTTP to the sandbox; one channel's event pages at offsets 200 and 400 are altered."""

    def __init__(self, channel_id: str) -> None:
        self.inner = httpx.HTTPTransport()
        self.channel_id = channel_id
        self.last_of_first_page: dict | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path.endswith(f"/channels/{self.channel_id}/events"):
            response.read()
            page = json.loads(response.content)
            offset = request.url.params.get("offset")
            if offset == "0":
                self.last_of_first_page = page["events"][-1]
            elif offset == "200":
                page["events"][0]["event_id"] = "  "
            elif offset == "400" and self.last_of_first_page is not None:
                again = json.loads(json.dumps(self.last_of_first_page))
                again["payload"]["status_reason"] = "sent again"
                page["events"].append(again)
            body = json.dumps(page).encode()
            return httpx.Response(
                response.status_code, headers={"content-type": "application/json"}, content=body, request=request
            )
        return response

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="module")
def server():
    from toolkit.sandbox import Sandbox

    sandbox = Sandbox(orgs=(TEST_KEY,), seed=7, days=1, operations_per_day=600, start=START)
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


@pytest.fixture(scope="module")
def clean(server, tmp_path_factory) -> tuple[Path, str]:
    """The sandbox synced untampered, with the default batches (the frozen sandbox answers the same every time):
    the warehouse, and the channel with the longest event log."""
    path = tmp_path_factory.mktemp("clean") / "clean.duckdb"
    with Client(server.base_url, TEST_KEY) as plain:
        sync(client=plain, warehouse=str(path), quiet=True)
    with Warehouse(path, read_only=True) as wh:
        rows = wh.con.execute("SELECT channel_id FROM events GROUP BY ALL ORDER BY count(*) DESC LIMIT 1").fetchall()
    return path, rows[0][0]


@pytest.mark.parametrize(
    ("rows_per_batch", "rows_per_transaction"),
    [
        (None, None),  # the defaults: both copies in one batch
        (1, None),  # a batch per page, one transaction: the repeat is written at once over the first copy
        (1, 1),  # a transaction per page: the first copy is replaced when the repeat's transaction commits
    ],
    ids=["one-batch", "batch-per-page", "transaction-per-page"],
)
def test_a_blank_event_id_is_rejected_with_its_request_and_a_repeated_event_stored_once(
    server, clean, tmp_path, monkeypatch, rows_per_batch, rows_per_transaction
) -> None:
    clean_path, first = clean  # the channel with the longest event log
    if rows_per_batch is not None:
        monkeypatch.setitem(COMMIT_ROWS, "events", rows_per_batch)
    if rows_per_transaction is not None:
        monkeypatch.setattr(unit_of_work, "TRANSACTION_ROWS", rows_per_transaction)
    with Client(server.base_url, TEST_KEY, transport=TamperingTransport(first)) as tampered:
        messy = tmp_path / "messy.duckdb"
        result = sync(client=tampered, warehouse=str(messy), quiet=True)
    assert result.outcome == "partial"
    # one event rejected, named with its page's request, once (the gap pass re-reads the hole it leaves)
    assert len(result.rejected) == 1, result.rejected
    assert "'event_id' is empty" in result.rejected[0] and f"channels/{first}/events" in result.rejected[0]
    assert "offset=200)" in result.rejected[0], result.rejected[0]
    query = 'SELECT event_id, status_reason FROM events WHERE channel_id = ? ORDER BY "offset"'
    with Warehouse(clean_path, read_only=True) as wh:
        expected = wh.con.execute(query, [first]).fetchall()
    with Warehouse(messy, read_only=True) as wh:
        got = wh.con.execute(query, [first]).fetchall()
        assert wh.con.execute("SELECT count(*) - count(DISTINCT event_id) FROM events").fetchall() == [(0,)]
        assert result.rows["events"] == wh.count("events")  # a replaced copy is counted once, as new
    assert len(expected) > 400, "the channel needs at least three pages for this test"
    assert len(got) == len(expected) - 1  # the blank one
    repeated = dict(got)[expected[199][0]]
    assert repeated == "sent again", "the last copy of an event seen twice wins"
