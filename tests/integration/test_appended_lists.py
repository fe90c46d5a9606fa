"""Operations and queries are appended and their superseded copies deleted once per transaction (as events are),
instead of being upserted batch by batch: the warehouse ends identical, table for table, to the one the batch-by-batch
upsert makes, on the sandbox's messy scenario, through lists that shift while they are read (rows repeated on the
next page and within a page), whether a repeat falls in the same batch, the same transaction or a later one, and
after an incremental run that re-lists and re-fetches."""

from __future__ import annotations

import gc
import importlib
import json

import httpx
import pytest

from tests.conftest import TEST_KEY
from toolkit.api import Client
from toolkit.sync import COMMIT_ROWS, sync
from toolkit.warehouse import Warehouse

START = 1_795_000_000
TABLES = ("operations", "operation_transactions", "queries", "events", "channels", "wallets", "watchers", "networks")
sync_module = importlib.import_module("toolkit.sync")


class ShiftingLists(httpx.BaseTransport):
    """Real HTTP to the sandbox; each operations and queries page after the first repeats the last three rows of the
    page before it (a list that shifted while it was read), and each repeats its own first row at its end."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.last_rows: dict[str, list] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        path = request.url.path
        if request.method == "GET" and path.endswith(("/operations", "/queries")) and response.status_code == 200:
            response.read()
            page = json.loads(response.content)
            rows = page["data"]
            key = path + "?" + "&".join(f"{k}={v}" for k, v in request.url.params.multi_items() if k != "offset")
            shifted = self.last_rows.get(key, []) if request.url.params.get("offset", "0") != "0" else []
            self.last_rows[key] = rows[-3:]
            page["data"] = shifted + rows + rows[:1]
            return httpx.Response(
                200, headers={"content-type": "application/json"}, content=json.dumps(page).encode(), request=request
            )
        return response

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="module")
def server():
    from toolkit.sandbox import Sandbox

    sandbox = Sandbox(orgs=(TEST_KEY,), seed=11, days=1, operations_per_day=500, start=START, shape="messy")
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


def _tables(path) -> dict[str, list]:
    out = {}
    with Warehouse(path, read_only=True) as wh:
        for table in TABLES:
            cols = [c for c in wh.columns(table) if c != "synced_at"]
            select = ", ".join(f'"{c}"::VARCHAR' for c in cols)
            out[table] = sorted(wh.con.execute(f'SELECT {select} FROM "{table}"').fetchall(), key=repr)
    return out


def _sync_both(server, old, new, monkeypatch) -> tuple:
    results = []
    for path, appended in ((old, {"events": "event_id"}), (new, dict(sync_module.APPENDED_KEYS))):
        with monkeypatch.context() as m:
            m.setattr(sync_module, "APPENDED_KEYS", appended)
            with Client(server.base_url, TEST_KEY, transport=ShiftingLists()) as client:
                results.append(sync(client=client, warehouse=str(path), quiet=True))
    return tuple(results)


@pytest.mark.parametrize(
    ("rows_per_batch", "rows_per_transaction"),
    [(None, None), (50, None), (50, 120)],
    ids=["defaults", "small-batches", "small-transactions"],
)
def test_appended_lists_end_identical_to_upserted_ones(
    server, tmp_path, monkeypatch, rows_per_batch, rows_per_transaction
) -> None:
    if rows_per_batch is not None:
        monkeypatch.setitem(COMMIT_ROWS, "operations", rows_per_batch)
        monkeypatch.setitem(COMMIT_ROWS, "queries", rows_per_batch)
    if rows_per_transaction is not None:
        monkeypatch.setattr(sync_module, "TRANSACTION_ROWS", rows_per_transaction)
    old, new = tmp_path / "old.duckdb", tmp_path / "new.duckdb"
    frozen = gc.get_freeze_count()
    first_old, first_new = _sync_both(server, old, new, monkeypatch)
    assert gc.get_freeze_count() == frozen  # what a sync freezes while it runs is unfrozen after it
    assert first_new.outcome == first_old.outcome
    want, got = _tables(old), _tables(new)
    assert want["operations"] and want["queries"] and want["operation_transactions"]
    for table in TABLES:
        assert got[table] == want[table], table
    with Warehouse(new, read_only=True) as wh:  # each key once, although the lists served rows twice
        for table, key in (("operations", "operation_id"), ("queries", "query_id")):
            assert wh.con.execute(f"SELECT count(*) - count(DISTINCT {key}) FROM {table}").fetchone()[0] == 0
    for table in ("operations", "queries", "operation_transactions"):
        assert first_new.rows[table] == first_old.rows[table] == len(want[table]), table
    # the service moves on; an incremental run re-lists what is in flight and patches from the new events
    with httpx.Client() as http:
        http.post(
            server.base_url.rsplit("/v1", 1)[0] + "/sandbox/clock/advance",
            json={"seconds": 7200},
            headers={"Authorization": f"Apikey {TEST_KEY}"},
        ).raise_for_status()
    again_old, again_new = _sync_both(server, old, new, monkeypatch)
    assert again_new.outcome == again_old.outcome
    want, got = _tables(old), _tables(new)
    for table in TABLES:
        assert got[table] == want[table], table
    for table in ("operations", "queries", "operation_transactions"):
        assert again_new.rows[table] == again_old.rows[table], table
        assert again_new.updated[table] == again_old.updated[table], table
    assert again_new.updated["operations"] > 0  # re-listed operations replaced their stored copies
