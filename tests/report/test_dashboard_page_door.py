"""The dashboard page's door (issue 38, items 3, 4 and 13), over real sockets on 127.0.0.1: only requests addressed to
loopback (or to a name the user gave) are answered; idle and trickling connections are cut; the threads serving
connections are bounded; the page follows the warehouse file; and a stop leaves no thread of the dashboard's behind.

The hostile client here is a raw socket: it names any host, sends nothing, or sends a byte at a time."""

from __future__ import annotations

import select
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.builders import SEPOLIA, build, ladder, op_record, refresh
from toolkit.cli import main
from toolkit.presentation.dashboard_page import allowed_host, serving, threads_left
from toolkit.warehouse import to_batch


@pytest.fixture(scope="module")
def url(warehouse: Path) -> Iterator[str]:
    with serving(warehouse) as running:
        yield running


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def _ask(url: str, head: str) -> tuple[int, bytes]:
    """Send ``head`` (the request line and headers, CRLF-separated, without the blank line) as it is; the answer's
    status and body."""
    with socket.create_connection(("127.0.0.1", _port(url)), timeout=120) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def _closed_by_server(sock: socket.socket) -> bool:
    """Wait (up to the socket's timeout) for the server to end the connection; True when it did."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LocalHost:{port}", "127.0.0.1", "localhost"]
)
def test_requests_addressed_to_loopback_are_answered(url: str, host: str) -> None:
    port = _port(url)
    status, body = _ask(url, f"GET / HTTP/1.1\r\nHost: {host.format(port=port)}")
    assert status == 200 and b"stuck-1" in body
    status, body = _ask(url, f"GET /figure/stuck.png HTTP/1.1\r\nHost: {host.format(port=port)}")
    assert status == 200 and body.startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example:{port}",  # DNS rebinding: the page's own name, pointed at 127.0.0.1
        "attacker.example",
        "127.0.0.1.attacker.example:{port}",
        "localhost.attacker.example",
        "localhost.:{port}",
        "127.0.0.2:{port}",
        "localhost:{port}@attacker.example",
        "localhost:99999",
        "localhost:",
        "::1",
        "",
    ],
)
def test_requests_addressed_to_another_name_are_refused(url: str, host: str) -> None:
    """What `curl -H "Host: attacker.example:PORT"` got was the whole page (channels, networks, stuck ids)."""
    for path in ("/", "/figure/stuck.png", "/figure/latency.png?network=Ethereum+Mainnet"):
        status, body = _ask(url, f"GET {path} HTTP/1.1\r\nHost: {host.format(port=_port(url))}")
        assert status == 403, (host, path)
        assert b"stuck-1" not in body and b"payments" not in body and b"PNG" not in body
        assert b"--allow-host" in body


@pytest.mark.parametrize(
    "head",
    [
        "GET / HTTP/1.0",  # no Host at all
        "GET / HTTP/1.1\r\nHost: localhost\r\nHost: attacker.example",  # two, one of them hostile
        "GET http://attacker.example/ HTTP/1.1\r\nHost: localhost",  # a URL as the target names its own host
    ],
)
def test_a_request_without_one_loopback_host_is_refused(url: str, head: str) -> None:
    status, body = _ask(url, head)
    assert status == 400 and b"stuck-1" not in body


def test_a_name_given_with_allow_host_is_answered_and_no_other(warehouse: Path) -> None:
    with serving(warehouse, allow_hosts=["Dash.Example"]) as url:
        port = _port(url)
        assert _ask(url, f"GET / HTTP/1.1\r\nHost: dash.example:{port}")[0] == 200
        assert _ask(url, f"GET / HTTP/1.1\r\nHost: localhost:{port}")[0] == 200
        assert _ask(url, f"GET / HTTP/1.1\r\nHost: attacker.example:{port}")[0] == 403
        assert _ask(url, f"GET / HTTP/1.1\r\nHost: sub.dash.example:{port}")[0] == 403


def test_allow_host_takes_a_name_alone() -> None:
    assert allowed_host(" Dash.Example ") == "dash.example"
    assert allowed_host("::1") == "[::1]" and allowed_host("[FD00::1]") == "[fd00::1]"
    for bad in ("dash.example:8050", "http://dash.example/", "*", "*.example", "", "a b", "dash.example/x"):
        with pytest.raises(ValueError, match="not a host name"):
            allowed_host(bad)


def test_chainops_dashboard_refuses_an_allow_host_with_a_port(warehouse: Path, capsys) -> None:
    code = main(["dashboard", "--warehouse", str(warehouse), "--port", "0", "--allow-host", "dash.example:8050"])
    assert code == 2 and "--allow-host" in capsys.readouterr().err


def test_answers_say_what_a_browser_may_do_with_them(url: str) -> None:
    answer = httpx.get(url, timeout=60)
    policy = answer.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert answer.headers["x-content-type-options"] == "nosniff" and answer.headers["x-frame-options"] == "DENY"


def test_an_idle_connection_is_closed(warehouse: Path) -> None:
    """A connection that sends nothing was kept for good (500 of them: 505 threads)."""
    with serving(warehouse, idle_timeout=0.2) as url:
        with socket.create_connection(("127.0.0.1", _port(url)), timeout=60) as sock:
            assert _closed_by_server(sock)
        assert httpx.get(url, timeout=60).status_code == 200  # and the door still opens


def test_a_request_sent_a_byte_at_a_time_is_cut_off(warehouse: Path) -> None:
    """The deadline is for the whole request head, not for each byte: a trickle does not keep a thread for good."""
    head = b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Trickle: " + b"a" * 2000
    with ExitStack() as stack:
        url = stack.enter_context(serving(warehouse, idle_timeout=0.2))
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", _port(url)), timeout=60))
        closed = False
        for byte in head:
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            if select.select([sock], [], [], 0.02)[0]:  # the server has spoken: only to close
                closed = _closed_by_server(sock)
                break
        assert closed


def test_the_threads_serving_connections_are_bounded(warehouse: Path) -> None:
    """Connections beyond the bound wait unaccepted, with no thread, and are served in turn as others end."""
    with ExitStack() as stack:
        url = stack.enter_context(serving(warehouse, idle_timeout=0.25, max_connections=4))
        assert httpx.get(url, timeout=60).status_code == 200  # the first page and its warm-up are done
        before = threading.active_count()
        idle = [stack.enter_context(socket.create_connection(("127.0.0.1", _port(url)), timeout=60)) for _ in range(40)]
        # this request is taken after every idle one before it: by then each was given a thread (before) or not
        status, body = _ask(url, "GET / HTTP/1.1\r\nHost: localhost")
        assert status == 200 and b"stuck-1" in body
        assert threading.active_count() <= before + 4
        assert all(_closed_by_server(sock) for sock in idle)


def _land(path: Path) -> None:
    """What a sync does to the file: a new channel, and a new operation stuck in it on Ethereum Sepolia."""
    events = ladder("stuck-late", ("accepted", "sending"), (3000, 3010), chain=SEPOLIA, channel="ch-late")
    record = op_record("stuck-late", "sending", chain=SEPOLIA, created=3000, updated=3010, channel="ch-late")
    wh = build(path, events=events, operations=[record])
    with wh.transaction():
        batch, rejected = to_batch("channels", [{"channel_id": "ch-late", "name": "late-channel", "status": "active"}])
        assert not rejected
        wh.upsert("channels", batch)
    refresh(wh).close()


def test_a_sync_that_lands_shows_on_the_next_request(warehouse: Path, tmp_path: Path) -> None:
    """The page was kept by query string for as long as the server ran, and the filter lists read once at start."""
    path = tmp_path / "w.duckdb"
    shutil.copyfile(warehouse, path)
    with serving(path) as url:
        page = httpx.get(url, timeout=60).text
        figure = httpx.get(f"{url}figure/stuck.png", timeout=120).content  # after the warm-up: no reader is open
        assert "stuck-late" not in page and "late-channel" not in page
        _land(path)
        page = httpx.get(url, timeout=60).text
        assert "stuck-late" in page  # the stuck view's table
        assert '<option value="ch-late">late-channel' in page  # the channel filter's list
        assert httpx.get(f"{url}figure/stuck.png", timeout=120).content != figure  # two operations drawn, not one
        sepolia = httpx.get(url, params={"channel": "ch-late"}, timeout=60).text
        assert 'id="error"' not in sepolia and "stuck-late" in sepolia


def test_nothing_of_the_dashboard_runs_once_it_is_stopped(warehouse: Path) -> None:
    """Its threads (the warm-up drawing the first figures, a request being answered) ran on after the block: as
    Python then exited, one inside DuckDB or matplotlib aborted the process (SIGABRT, "PyGILState_Release")."""
    before = set(threads_left())  # another dashboard of this module's, still serving
    with serving(warehouse) as url:

        def ask() -> None:
            with suppress(httpx.HTTPError):  # cut by the stop, or answered before it
                httpx.get(f"{url}figure/latency.png", params={"since": "2d"}, timeout=60)

        figure = threading.Thread(target=ask, daemon=True)
        figure.start()  # may be anywhere when the block ends: unsent, computing, drawing, sending
    assert set(threads_left()) - before == set()
    figure.join(60)


def test_a_stop_ends_a_request_waiting_for_its_turn(warehouse: Path) -> None:
    """A connection waiting unaccepted, and the accept loop waiting for room, end with the block."""
    before = set(threads_left())
    with serving(warehouse, idle_timeout=600, max_connections=1) as url:
        holder = socket.create_connection(("127.0.0.1", _port(url)), timeout=60)
        waiting = socket.create_connection(("127.0.0.1", _port(url)), timeout=60)
        waiting.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert set(threads_left()) - before == set()
    with holder, waiting:
        assert _closed_by_server(holder) and _closed_by_server(waiting)
