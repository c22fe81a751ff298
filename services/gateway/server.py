"""The gateway's ASGI server: uvicorn (httptools, websockets-sansio, uvloop) with the limits on
connections that uvicorn lacks, in two protocol subclasses (docs/decisions/asgi-server-timeouts.md):

- a request head must be complete within PLYLOG_HEAD_TIMEOUT_S of its first byte (or of the
  connection's start); past it the client gets 408 and the connection is closed (slowloris);
- a connection whose peer has not taken what the gateway writes for PLYLOG_WRITE_STALL_S (its
  transport's buffer stays over the high-water mark) is torn down: reset, so neither the gateway
  nor the kernel keeps a byte for it (an SSE stream or a socket that is never read);
- a seat socket may send PLYLOG_SOCKET_CONTROL_PER_S control frames (ping, pong) a second on
  average, bursts of five seconds' worth; past that it is closed with 1008 (each ping is answered
  with a pong, written whether or not the client reads);
- a seat socket's connection is gone within CLOSE_GRACE_S of the close the gateway sent (the app
  waits for it with `connection_closed`, which tears it down past that, so the socket counts until
  it is gone), within 1 s of its keep-alive ping going unanswered, and within CLOSE_GRACE_S of the
  app's end in any case, whether or not the client answers.

The subclasses lean on uvicorn's protocol internals (handler names, `transport`, `scope`, `conn`);
tests/unit/test_gateway_server.py fails if a uvicorn release changes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, cast

import uvicorn
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

log = logging.getLogger("plylog.gateway.server")
CLOSE_GRACE_S = 10.0  # what uvicorn waits for the client's answer to a close before closing
EXTENSION = "plylog.connection"  # scope["extensions"][EXTENSION]["closed"]: set once the connection is gone
LINGER_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() resets and drops what is unsent
BURST_S = 5.0  # control frames: the bucket holds this many seconds' worth


@dataclass(frozen=True)
class ConnectionLimits:
    head_timeout_s: float = 5.0
    write_stall_s: float = 10.0
    control_frames_per_s: float = 10.0


def _peer(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if peer else "?"


def tear_down(transport: asyncio.BaseTransport) -> None:
    """Reset the connection now: nothing left unsent waits for the peer, here or in the kernel."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
    cast(asyncio.Transport, transport).abort()  # uvicorn's connections are stream transports


class _StallWatch:
    """Tears the transport down once its writes have been paused (the peer not reading) for `limit` s."""

    def __init__(self, limit: float):
        self._limit = limit
        self._timer: asyncio.TimerHandle | None = None

    def paused(self, transport: asyncio.BaseTransport) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._limit, self._stalled, transport)

    def _stalled(self, transport: asyncio.BaseTransport) -> None:
        self._timer = None
        log.info(
            "connection of %s reset: it took nothing the gateway sent for %g s (PLYLOG_WRITE_STALL_S)",
            _peer(transport),
            self._limit,
        )
        tear_down(transport)

    def resumed(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class GatewayHttp(HttpToolsProtocol):
    """HTTP/1.1 with a request-head timeout and a write-stall teardown."""

    limits = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._stall = _StallWatch(self.limits.write_stall_s)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        self._stall.resumed()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_head_timer()

    def on_headers_complete(self) -> None:
        self._disarm_head_timer()
        super().on_headers_complete()

    def pause_writing(self) -> None:
        super().pause_writing()
        self._stall.paused(self.transport)

    def resume_writing(self) -> None:
        self._stall.resumed()
        super().resume_writing()

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self._head_timer = self.loop.call_later(self.limits.head_timeout_s, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            tear_down(self.transport)  # a response is under way: no room for a 408
            return
        self.transport.write(
            STATUS_LINE[408] + b"content-type: text/plain; charset=utf-8\r\ncontent-length: 0\r\n"
            b"connection: close\r\n\r\n"
        )
        self.transport.close()


class GatewaySocket(WebSocketsSansIOProtocol):
    """A seat socket with a control-frame rate, a write-stall teardown and a bounded close."""

    limits = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.close_timeout = CLOSE_GRACE_S
        self._stall = _StallWatch(self.limits.write_stall_s)
        self._closed = asyncio.Event()
        self._grace: asyncio.TimerHandle | None = None
        self._burst = max(1.0, self.limits.control_frames_per_s * BURST_S)
        self._tokens = self._burst
        self._counted_at = self.loop.time()
        self._flooded = False

    def connection_lost(self, exc: Exception | None) -> None:
        self._stall.resumed()
        if self._grace is not None:
            self._grace.cancel()
        super().connection_lost(exc)
        self._closed.set()

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None:  # upgraded: the app's scope, its task not started yet
            scope["extensions"][EXTENSION] = {"closed": self._closed, "tear_down": self._tear_down}

    def pause_writing(self) -> None:
        super().pause_writing()
        self._stall.paused(self.transport)

    def resume_writing(self) -> None:
        self._stall.resumed()
        super().resume_writing()

    def handle_ping(self) -> None:
        if self._control_frame_allowed():
            super().handle_ping()

    def handle_pong(self, event: Any) -> None:
        if self._control_frame_allowed():
            super().handle_pong(event)

    def _control_frame_allowed(self) -> bool:
        if self._flooded:
            return False
        now = self.loop.time()
        rate = self.limits.control_frames_per_s
        self._tokens = min(self._burst, self._tokens + (now - self._counted_at) * rate)
        self._counted_at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        self._flooded = True
        log.info("seat socket of %s closed (1008): more than %g control frames a second", _peer(self.transport), rate)
        self.conn.data_to_send()  # the pongs queued for this read: dropped
        if not self.close_sent and not self.transport.is_closing():
            self.conn.fail(1008, f"more than {rate:g} control frames a second (PLYLOG_SOCKET_CONTROL_PER_S)")
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.close_sent = True
            self.queue.put_nowait({"type": "websocket.disconnect", "code": 1008})
        self.disconnected = True  # what the app sends from now on is refused as to a client gone
        self.writable.set()
        self.transport.close()
        self._gone_within(1.0)
        return False

    def keepalive_timeout(self) -> None:
        super().keepalive_timeout()  # the client did not answer a ping: it is gone or not reading
        self._gone_within(1.0)

    async def run_asgi(self) -> None:
        await super().run_asgi()
        self._gone_within(self.close_timeout)

    def _tear_down(self) -> None:
        if not self._closed.is_set():
            tear_down(self.transport)

    def _gone_within(self, seconds: float) -> None:
        """Tear the connection down unless it is gone (the close handshake done) within `seconds`."""
        if self._grace is None and not self._closed.is_set():
            self._grace = self.loop.call_later(seconds, tear_down, self.transport)


async def connection_closed(scope: MutableMapping[str, Any], timeout: float = CLOSE_GRACE_S) -> None:
    """Returns once the connection of a seat socket's `scope` is gone, tearing it down if that takes
    longer than `timeout` (the client not answering the close); at once under another server."""
    connection = scope.get("extensions", {}).get(EXTENSION)
    if connection is None:
        return
    try:
        await asyncio.wait_for(connection["closed"].wait(), timeout)
    except TimeoutError:
        connection["tear_down"]()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(connection["closed"].wait(), 1.0)


def protocols(limits: ConnectionLimits) -> tuple[type[GatewayHttp], type[GatewaySocket]]:
    """The protocol classes with `limits` (uvicorn makes one instance per connection)."""
    http = type("GatewayHttp", (GatewayHttp,), {"limits": limits})
    ws = type("GatewaySocket", (GatewaySocket,), {"limits": limits})
    return http, ws


def run(app: Any, host: str, port: int, limits: ConnectionLimits, max_message_bytes: int, **options: Any) -> None:
    """Serve `app` until stopped. Proxy headers are the app's business (app.py: only from
    PLYLOG_TRUSTED_PROXIES), never uvicorn's, which trusts 127.0.0.1 by default."""
    http, ws = protocols(limits)
    uvicorn.run(
        app,
        host=host,
        port=port,
        http=http,
        ws=ws,
        ws_max_size=max_message_bytes,  # a socket message is an action, held to the body limit (else 1009)
        proxy_headers=False,
        timeout_graceful_shutdown=3,
        **options,
    )
