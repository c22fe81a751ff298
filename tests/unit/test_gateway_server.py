"""The gateway's uvicorn protocol subclasses (services/gateway/server.py) on a real uvicorn server
with a tiny ASGI app, no Kafka or Redis: they lean on uvicorn's internals, so these fail if a
uvicorn release changes what they rely on. The same limits on the whole gateway are in
tests/integration/test_gateway_streams.py."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from bench.procs import free_port
from services.common.settings import SettingsError
from services.gateway.config import GatewayConfig
from services.gateway.server import ConnectionLimits, connection_closed, protocols
from tests.integration.hostile_clients import (
    PING,
    closed_by_server,
    masked_frame,
    read_head,
    seat_socket_request,
    server_side_state,
    torn_down,
)
from tests.support import wait_until

pytestmark = pytest.mark.timeout(60)
LIMITS = ConnectionLimits(head_timeout_s=0.5, write_stall_s=0.5, control_frames_per_s=2)
BIG = b"x" * (8 * 1024 * 1024)


class App:
    """GET /big answers 8 MB; a socket echoes (on /close: closes at once) and notes when
    `connection_closed` returned."""

    def __init__(self) -> None:
        self.sockets_done: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
        elif scope["type"] == "http":
            body = BIG if scope["path"] == "/big" else b"ok"
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]}
            )
            await send({"type": "http.response.body", "body": body})
        elif scope["path"] == "/close":  # closes at once; the client never answers
            await receive()
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": 1013})
            await connection_closed(scope, timeout=0.5)
            self.sockets_done.append("closed unanswered")
        else:
            await receive()
            await send({"type": "websocket.accept"})
            while (message := await receive())["type"] == "websocket.receive":
                await send({"type": "websocket.send", "text": message.get("text") or "?"})
            await connection_closed(scope, timeout=5)
            self.sockets_done.append("closed")


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[App, int]]:
    app, port = App(), free_port()
    http, ws = protocols(LIMITS)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, http=http, ws=ws, log_level="warning", loop="asyncio")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield app, port
    server.should_exit = True
    thread.join(timeout=10)


def raw(port: int, rcvbuf: int | None = None) -> socket.socket:
    connection = socket.socket()
    if rcvbuf:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    connection.settimeout(5)
    connection.connect(("127.0.0.1", port))
    return connection


def test_an_unfinished_request_head_gets_408_and_a_complete_one_is_served(served):
    _, port = served
    slow, silent, fine = raw(port), raw(port), raw(port)
    slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
    fine.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_head(fine).startswith(b"HTTP/1.1 200") and fine.recv(2) == b"ok"
    assert read_head(slow).startswith(b"HTTP/1.1 408")
    wait_until(lambda: closed_by_server(silent))  # a connection that never sends a byte
    fine.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # kept alive, then a head that does not end
    assert read_head(fine).startswith(b"HTTP/1.1 408")
    for connection in (slow, silent, fine):
        connection.close()


def test_a_response_never_read_is_reset_after_the_write_stall(served):
    _, port = served
    deaf = raw(port, rcvbuf=4096)
    deaf.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
    started = time.monotonic()
    wait_until(lambda: torn_down(server_side_state(port, deaf)), 10, "the stalled response's connection torn down")
    assert time.monotonic() - started < 8  # the write stall's limit, not the test's patience
    with pytest.raises(ConnectionResetError):
        while deaf.recv(65536):
            pass
    deaf.close()


def test_a_socket_past_its_control_frame_rate_is_closed_and_counts_until_its_connection_is_gone(served):
    app, port = served
    before = app.sockets_done.count("closed")
    with ws_connect(f"ws://127.0.0.1:{port}/ws", ping_interval=None) as polite:
        for _ in range(3):
            polite.ping().wait(5)  # within the burst: answered
        polite.send("hi")
        assert polite.recv(timeout=5) == "hi"
    wait_until(lambda: app.sockets_done.count("closed") == before + 1)
    flooder = raw(port)
    flooder.sendall(seat_socket_request("m", "t"))
    assert read_head(flooder).startswith(b"HTTP/1.1 101")
    with contextlib.suppress(OSError):
        flooder.sendall(masked_frame(PING, b"p" * 125) * 10_000)
    wait_until(lambda: torn_down(server_side_state(port, flooder)))
    wait_until(lambda: app.sockets_done.count("closed") == before + 2)
    flooder.close()


def test_a_close_the_client_never_answers_ends_in_a_reset_after_the_wait(served):
    app, port = served
    silent = raw(port)
    silent.sendall(seat_socket_request("m", "t").replace(b"/v1/matches/m/play", b"/close"))
    assert read_head(silent).startswith(b"HTTP/1.1 101")
    wait_until(lambda: "closed unanswered" in app.sockets_done)
    assert torn_down(server_side_state(port, silent))  # gone before connection_closed returned
    silent.close()


def test_connection_closed_returns_at_once_without_the_extension():
    asyncio.run(asyncio.wait_for(connection_closed({"type": "websocket"}), 1))


def test_a_socket_closed_by_the_client_ends_cleanly(served):
    app, port = served
    before = len(app.sockets_done)
    socket_ = ws_connect(f"ws://127.0.0.1:{port}/ws", ping_interval=None)
    socket_.send("x")
    assert socket_.recv(timeout=5) == "x"
    socket_.close()
    with pytest.raises(ConnectionClosed):
        socket_.recv(timeout=1)
    wait_until(lambda: len(app.sockets_done) == before + 1)


def test_trusted_proxies_are_addresses_or_networks(tmp_path):
    env = {"PLYLOG_SECRET": "s" * 32, "PLYLOG_OPERATOR_KEY": "k" * 32}
    config = GatewayConfig.from_env(tmp_path, {**env, "PLYLOG_TRUSTED_PROXIES": " 10.0.0.5, 10.0.0.0/8 ,::1"})
    assert config.trusted_proxies == {"10.0.0.5", "10.0.0.0/8", "::1"}
    assert GatewayConfig.from_env(tmp_path, env).trusted_proxies == frozenset()
    for wrong in ("*", "proxy.local", "10.0.0.0/33"):
        with pytest.raises(SettingsError, match="PLYLOG_TRUSTED_PROXIES"):
            GatewayConfig.from_env(tmp_path, {**env, "PLYLOG_TRUSTED_PROXIES": wrong})
