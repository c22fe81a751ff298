"""A test's client of the seat socket (GET /v1/matches/{id}/play), on the `websockets` package's
synchronous client: open one, read its JSON messages, read it to its close."""

from __future__ import annotations

import socket as sockets
import time
import urllib.parse
from typing import Any

import orjson
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect


def open_socket(
    base_url: str,
    match_id: str,
    token: str | None = None,
    seat: int | None = None,
    subprotocols: list[str] | None = None,
    slow: bool = False,
) -> ClientConnection:
    """A socket of `match_id` with `token` in the Authorization header (none when None). A `slow`
    one stops reading from the network while a message waits for recv(), with a small receive
    buffer (the kernel would otherwise take in tens of MB) and no pings of its own."""
    url = base_url.replace("http://", "ws://", 1) + f"/v1/matches/{match_id}/play"
    if seat is not None:
        url += f"?seat={seat}"
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    options: dict[str, Any] = {}
    if slow:
        where = urllib.parse.urlsplit(base_url)
        raw = sockets.socket(sockets.AF_INET, sockets.SOCK_STREAM)
        raw.setsockopt(sockets.SOL_SOCKET, sockets.SO_RCVBUF, 32 * 1024)  # set before connecting: no autotuning
        raw.connect((where.hostname, where.port))
        options = {"sock": raw, "max_queue": 1, "ping_interval": None}
    return connect(
        url, additional_headers=headers, subprotocols=subprotocols, open_timeout=10, close_timeout=5, **options
    )


def receive(socket: ClientConnection, timeout: float = 15.0) -> dict[str, Any]:
    """The next message (TimeoutError when none comes within `timeout`)."""
    return orjson.loads(socket.recv(timeout=timeout))


def receive_until(socket: ClientConnection, done, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Messages until one for which `done(message)` is true (it included)."""
    got, deadline = [], time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no message ended the wait within {timeout}s; got {[m.get('type') for m in got]}")
        got.append(receive(socket, left))
        if done(got[-1]):
            return got


def read_to_close(socket: ClientConnection, timeout: float = 30.0) -> tuple[list[dict[str, Any]], int, str]:
    """(the messages left, the close code, the close reason) once the server has closed the socket."""
    got, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            got.append(orjson.loads(socket.recv(timeout=max(0.1, deadline - time.monotonic()))))
    except ConnectionClosed as closed:
        frame = closed.rcvd
        return got, (frame.code if frame is not None else 1006), (frame.reason if frame is not None else "")
    raise AssertionError(f"the socket was still open after {timeout}s ({len(got)} messages)")


def refused(base_url: str, match_id: str, **kwargs: Any) -> tuple[dict[str, Any], int, str]:
    """(the error message, the close code, the close reason) of a socket the gateway refuses."""
    with open_socket(base_url, match_id, **kwargs) as socket:
        messages, code, reason = read_to_close(socket, timeout=15)
    assert len(messages) == 1 and messages[0]["type"] == "error", messages
    return messages[0], code, reason
