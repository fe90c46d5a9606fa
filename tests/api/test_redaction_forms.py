"""The key echoed back in another form (issue 28 item 12): upper-cased, percent-encoded, or base64-encoded alone or
inside an echoed ``Authorization`` header, in either base64 alphabet, is redacted like the key itself, in the error
and in what a sync stores. A server over real HTTP on 127.0.0.1 echoes it."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest

from tests.conftest import TEST_KEY
from tests.support.hostile import ScriptedServer
from toolkit.api import Client
from toolkit.api.retry import RetryPolicy
from toolkit.config import Settings
from toolkit.errors import ChainopsError
from toolkit.loader import sync
from toolkit.warehouse import Warehouse

HEADER = f"Apikey {TEST_KEY}".encode()
FORMS = {
    "upper": TEST_KEY.upper(),
    "lower": TEST_KEY.lower(),
    "percent": quote(TEST_KEY + "/", safe="")[:-3],
    "base64 key": base64.b64encode(TEST_KEY.encode()).decode(),
    "base64 header": base64.b64encode(HEADER).decode(),
    "base64url header": base64.urlsafe_b64encode(b"x" + HEADER).decode(),
    "basic auth": base64.b64encode(f"user:{TEST_KEY}".encode()).decode(),
}


def leaks(text: str) -> list[str]:
    """The forms of the key (and its decodable base64 middles) that ``text`` still holds."""
    found = [name for name, form in FORMS.items() if form in text]
    for word in text.replace("=", " ").split():
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                decoded = decode(word + "=" * (-len(word) % 4))
            except ValueError:
                continue
            if TEST_KEY[4:-4].encode() in decoded:
                found.append(f"decodable: {word}")
    return found


@pytest.mark.parametrize("form", FORMS)
def test_an_echoed_key_in_another_form_is_redacted(form, tmp_path) -> None:
    echoed = FORMS[form]
    body = json.dumps({"type": "UNAUTHORIZED", "message": f"bad key {echoed} (sent {echoed})"}).encode()
    with ScriptedServer(lambda path, query: (401, {}, body)) as server:
        with (
            Client(server.base_url, TEST_KEY, retry=RetryPolicy(attempts=1)) as client,
            pytest.raises(ChainopsError) as info,
        ):
            client.request("GET", "networks")
        path = tmp_path / "w.duckdb"
        settings = Settings.load(base_url=server.base_url, api_key=TEST_KEY, warehouse=path, environ={})
        with pytest.raises(ChainopsError) as synced:
            sync(settings, quiet=True)
    for text in (str(info.value), repr(info.value), str(synced.value)):
        assert "***" in text and not leaks(text), (form, text)
    with Warehouse(path, read_only=True) as wh:
        (message,) = wh.con.execute("SELECT message FROM sync_runs").fetchone()
    assert not leaks(message), message
