"""Clients that misbehave on purpose, on plain TCP sockets: one that never reads what the gateway
sends, one that floods a seat socket with pings, one that never finishes its request head; and
what the kernel says about their connections on the gateway's side (/proc/net/tcp)."""

from __future__ import annotations

import os
import socket as sockets
import urllib.parse
from base64 import b64encode
from pathlib import Path

SMALL_RCVBUF = 4096  # set before connecting: the kernel does not autotune it, so little is taken in
TCP_STATES = {
    "01": "ESTABLISHED",
    "02": "SYN_SENT",
    "03": "SYN_RECV",
    "04": "FIN_WAIT1",
    "05": "FIN_WAIT2",
    "06": "TIME_WAIT",
    "07": "CLOSE",
    "08": "CLOSE_WAIT",
    "09": "LAST_ACK",
    "0A": "LISTEN",
    "0B": "CLOSING",
}


def connect(base_url: str, rcvbuf: int | None = SMALL_RCVBUF) -> sockets.socket:
    """A TCP connection to the gateway, with a small receive buffer (None: the kernel's)."""
    where = urllib.parse.urlsplit(base_url)
    raw = sockets.socket(sockets.AF_INET, sockets.SOCK_STREAM)
    if rcvbuf is not None:
        raw.setsockopt(sockets.SOL_SOCKET, sockets.SO_RCVBUF, rcvbuf)
    raw.settimeout(10)
    raw.connect((where.hostname, where.port))
    return raw


def read_head(raw: sockets.socket) -> bytes:
    """The response head (up to the blank line), read a byte at a time so nothing after it is taken."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        byte = raw.recv(1)
        if not byte:
            raise ConnectionError(f"closed after {head!r}")
        head += byte
    return head


def read_exactly(raw: sockets.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = raw.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {size} bytes")
        data += chunk
    return data


def read_frame(raw: sockets.socket) -> tuple[int, bytes]:
    """(opcode, payload) of the next frame from the server (unmasked)."""
    first, second = read_exactly(raw, 2)
    size = second & 0x7F
    if size == 126:
        size = int.from_bytes(read_exactly(raw, 2), "big")
    elif size == 127:
        size = int.from_bytes(read_exactly(raw, 8), "big")
    return first & 0x0F, read_exactly(raw, size)


def seat_socket_request(match_id: str, token: str) -> bytes:
    key = b64encode(os.urandom(16)).decode()
    return (
        f"GET /v1/matches/{match_id}/play HTTP/1.1\r\nHost: gateway\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"Authorization: Bearer {token}\r\n\r\n"
    ).encode()


def event_stream_request(match_id: str) -> bytes:
    return f"GET /v1/matches/{match_id}/stream HTTP/1.1\r\nHost: gateway\r\n\r\n".encode()


def open_seat_socket(base_url: str, match_id: str, token: str) -> sockets.socket:
    """A seat socket opened by hand (the 101 head read, nothing after it), never read from again."""
    raw = connect(base_url)
    raw.sendall(seat_socket_request(match_id, token))
    head = read_head(raw)
    assert head.startswith(b"HTTP/1.1 101"), head
    return raw


def open_event_stream(base_url: str, match_id: str) -> sockets.socket:
    """GET /v1/matches/{id}/stream sent by hand, the answer never read."""
    raw = connect(base_url)
    raw.sendall(event_stream_request(match_id))
    return raw


def masked_frame(opcode: int, payload: bytes = b"") -> bytes:
    """One client frame (clients mask theirs), payload under 126 bytes."""
    mask = os.urandom(4)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + body


PING = 0x9


def server_side_state(server_port: int, client: sockets.socket) -> str | None:
    """The state of the gateway's end of `client`'s connection (None: the kernel has no such
    connection any more)."""
    client_port = client.getsockname()[1]
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            if int(local.rsplit(":", 1)[1], 16) == server_port and int(remote.rsplit(":", 1)[1], 16) == client_port:
                return TCP_STATES.get(state, state)
    return None


def torn_down(state: str | None) -> bool:
    """The gateway's end is gone (reset) or closed cleanly: nothing of it waits on the client."""
    return state in (None, "TIME_WAIT", "CLOSE")


def closed_by_server(raw: sockets.socket) -> bool:
    """Whether the server has answered or closed the connection (EOF, data or a reset)."""
    raw.setblocking(False)
    try:
        return raw.recv(1, sockets.MSG_PEEK) is not None
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        raw.setblocking(True)
