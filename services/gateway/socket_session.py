"""One open seat socket (seat_socket.py opens it): actions in, results and updates out.

Messages to the client, each a JSON text frame tagged with `type`:
  hello         on open: {match_id, seat, player, seq, view} (the public view now)
  result        the answer to one of this socket's actions, once per action: the result record the
                HTTP API returns with wait=true, or {status: "pending", ...} when none came within
                PLYLOG_WAIT_TIMEOUT_S (the record then comes later as an update)
  update        every other result of the match, as the SSE stream sends it (the other seat's
                moves and their views, rejected results, this socket's own late results)
  legal_actions the answer to {"type": "legal_actions"}: the body of GET .../legal-actions
  error         {code, message[, event_id]}: a message that was not JSON, not an action, or an action
                the gateway refused before writing it (malformed, match_over, rate_limited,
                too_large, unavailable, ...);
                the socket stays open

One live listener, registered before the hello's view is read, carries every result of the
match; ResultStream.results orders it (accepted results exactly once, in seq order, gaps filled
from the log), so this socket's own results and the updates come in one order. An own result
is one whose event_id this socket sent and still waits for.

Everything for the client goes through one bounded queue (PLYLOG_SOCKET_QUEUE); a client too slow
to take it is closed with 1013 instead of growing the gateway's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import WebSocket
from pydantic import ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from starlette.websockets import WebSocketDisconnect

from services.common.projection import Projection

from .auth import Access
from .errors import ApiError, validation_message
from .live import Listener, LiveHub
from .matches import ActionRequest, action_pending, refuse_if_over, seat_action
from .metrics import Metrics
from .positions import Positions
from .sse import ResultStream
from .stream_leases import StreamLeases
from .submit import Submitter

log = logging.getLogger("plylog.gateway.socket")
CLOSE_WAIT_S = 10.0  # how long a close may wait behind unsent data before the connection is dropped
MAX_REASON_BYTES = 123  # what a close frame holds
ANSWERED = 256  # own event ids remembered, so a redelivered rejection is not sent again
MESSAGES = '{"action": {...}, "event_id"?, "expected_seq"?, "seat"?} or {"type": "legal_actions"}'
REDIS_DOWN = (RedisConnectionError, RedisTimeoutError)


def close_reason(message: str) -> str:
    """`message` cut to the 123 bytes of UTF-8 a close frame's reason may have."""
    raw = message.encode()
    if len(raw) <= MAX_REASON_BYTES:
        return message
    return raw[: MAX_REASON_BYTES - 3].decode(errors="ignore") + "..."


@dataclass(eq=False)
class _Waiting:
    """An action written to the log whose result this socket waits for."""

    record: dict[str, Any]
    started: float
    timer: asyncio.TimerHandle | None = None


@dataclass(frozen=True)
class SeatSockets:
    """What seat sockets use, built once (resources.py): the route gets it as one dependency, a
    session holds it for the socket's life, and nothing is looked up per message."""

    access: Access
    projection: Projection
    hub: LiveHub
    stream: ResultStream
    submitter: Submitter
    positions: Positions
    leases: StreamLeases
    metrics: Metrics
    queue_size: int  # PLYLOG_SOCKET_QUEUE
    wait_timeout_s: float  # PLYLOG_WAIT_TIMEOUT_S


class SocketSession:
    def __init__(self, sockets: SeatSockets, websocket: WebSocket, match_id: str, seat: int, seats: list[str | None]):
        self._sockets, self._websocket = sockets, websocket
        self._match_id, self._seat, self._seats = match_id, seat, seats
        player = seats[seat]
        assert player is not None, "the socket opens for a seat that has a player"
        self._player: str = player
        self._game: str = ""  # and the match's status, as the results this socket passes on show it
        self._status: str | None = None
        self._outbox: asyncio.Queue[str] = asyncio.Queue(sockets.queue_size)
        self._waiting: dict[str, list[_Waiting]] = {}
        self._answered: deque[str] = deque(maxlen=ANSWERED)
        self._accepted: deque[str] = deque(maxlen=ANSWERED)  # answered by their accepted record
        self._closing: tuple[int, str] | None = None
        self._stop = asyncio.Event()

    async def run(self) -> None:
        metrics = self._sockets.metrics
        metrics.sockets.inc()
        try:
            await self._serve()
        finally:
            metrics.sockets.dec()
            for entries in self._waiting.values():
                for waiting in entries:
                    if waiting.timer is not None:
                        waiting.timer.cancel()
        if self._closing is not None:
            code, reason = self._closing
            metrics.socket_closes.labels(str(code)).inc()
            log.info("seat socket of %s seat %d closed: %d %s", self._match_id, self._seat, code, reason)
            with contextlib.suppress(Exception):  # behind unsent data: dropped after CLOSE_WAIT_S
                await asyncio.wait_for(self._websocket.close(code, close_reason(reason)), CLOSE_WAIT_S)

    async def _serve(self) -> None:
        hub = self._sockets.hub
        if not hub.connected.is_set():  # as the HTTP wait does: a result published now would be missed
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(hub.connected.wait(), 2.0)
        with hub.listen(self._match_id, early=True) as listener:  # listen BEFORE reading the view
            listener.resync = not hub.connected.is_set()  # re-read the log once the hub is back
            try:
                meta = await self._sockets.projection.match_fields(self._match_id, "view", "seq") or {}
            except REDIS_DOWN as error:
                self._close(1013, f"Redis is unavailable ({type(error).__name__}); reconnect")
                return
            seq = meta.get("seq") or 0
            self._game, self._status = meta.get("game") or "", (meta.get("view") or {}).get("status")
            self._send(
                {
                    "type": "hello",
                    "match_id": self._match_id,
                    "seat": self._seat,
                    "player": self._player,
                    "seq": seq,
                    "view": meta.get("view"),
                }
            )
            tasks = [
                asyncio.create_task(self._write()),
                asyncio.create_task(self._feed(listener, seq)),
                asyncio.create_task(self._read()),
                asyncio.create_task(self._stop.wait()),
            ]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                while running := [task for task in tasks if not task.done()]:
                    for task in running:  # again if one took a result instead (asyncio.wait_for on 3.11)
                        task.cancel()
                    await asyncio.wait(running, timeout=1.0)
            for task in tasks:
                if task in done:
                    self._failed(task)
                elif not task.cancelled():
                    task.exception()  # retrieved: what ended the socket is in `done`

    def _failed(self, task: asyncio.Task) -> None:
        error = None if task.cancelled() else task.exception()
        if error is None or isinstance(error, WebSocketDisconnect):
            return  # ended, or the client went away
        if isinstance(error, REDIS_DOWN):
            self._close(1013, f"Redis is unavailable ({type(error).__name__}); reconnect")
        else:
            log.error("seat socket of %s failed", self._match_id, exc_info=error)
            self._close(1011, f"internal error: {type(error).__name__}; see the gateway log")

    def _close(self, code: int, reason: str) -> None:
        if self._closing is None:
            self._closing = (code, reason)
        self._stop.set()

    # --- to the client ----------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        if self._closing is not None:
            return
        try:
            self._outbox.put_nowait(orjson.dumps(message).decode())
        except asyncio.QueueFull:
            self._close(1013, f"too slow: {self._outbox.maxsize} messages unsent (PLYLOG_SOCKET_QUEUE); reconnect")

    def _error(self, code: str, message: str, **extra: Any) -> None:
        self._send({"type": "error", "code": code, "message": message, **extra})

    async def _write(self) -> None:
        while True:
            text = await self._outbox.get()
            await self._websocket.send_text(text)

    async def _feed(self, listener: Listener, seq: int) -> None:
        async for result in self._sockets.stream.results(self._match_id, seq, listener, keep=self._awaited):
            if self._closing is not None:
                return
            if result is None:  # a keep-alive interval: the socket has pings of its own
                continue
            if result.get("status") == "accepted" and isinstance(result.get("view"), dict):
                self._status = result["view"].get("status")
            waiting = self._take(result)
            if waiting is not None:
                self._sockets.metrics.wait_latency.labels(result.get("status", "?")).observe(
                    time.perf_counter() - waiting.started
                )
                self._send({"type": "result", **result})
            elif not self._repeated(result):
                self._send({"type": "update", **result})

    def _awaited(self, result: dict[str, Any]) -> bool:
        """Whether `result` answers an action this socket waits for. The accepted record of an
        action already answered (its other copy: the projector's announcement after the early one
        from the topic) never answers a retry of it: the retry's answer is its duplicate result."""
        event_id = result.get("event_id")
        if result.get("player") != self._player or event_id not in self._waiting:
            return False
        return not (result.get("status") == "accepted" and not result.get("duplicate") and event_id in self._accepted)

    def _take(self, result: dict[str, Any]) -> _Waiting | None:
        """The action `result` answers, no longer waited for (None: not one of this socket's)."""
        if not self._awaited(result):
            return None
        event_id = result["event_id"]
        waiting = self._waiting[event_id].pop(0)
        if not self._waiting[event_id]:
            del self._waiting[event_id]
        if waiting.timer is not None:
            waiting.timer.cancel()
        self._answered.append(event_id)
        if result.get("status") == "accepted" and not result.get("duplicate"):
            self._accepted.append(event_id)
        return waiting

    def _repeated(self, result: dict[str, Any]) -> bool:
        """A redelivered rejection of an action this socket already had the answer to."""
        return (
            result.get("status") == "rejected"
            and result.get("player") == self._player
            and result.get("event_id") in self._answered
        )

    def _expire(self, waiting: _Waiting) -> None:
        entries = self._waiting.get(waiting.record["event_id"])
        if not entries or waiting not in entries:
            return
        entries.remove(waiting)
        if not entries:
            del self._waiting[waiting.record["event_id"]]
        self._sockets.metrics.wait_timeouts.inc()
        self._send({"type": "result", **action_pending(waiting.record, "it comes as an update when it does")})

    # --- from the client --------------------------------------------------------------------------
    async def _read(self) -> None:
        while True:
            message = await self._websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("text")
            await self._handle(data if data is not None else message.get("bytes") or b"")

    async def _handle(self, data: str | bytes) -> None:
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            self._error("malformed", f"a message is a JSON object ({MESSAGES}); this is not JSON: {error}")
            return
        if not isinstance(message, dict):
            self._error("malformed", f"a message is a JSON object: {MESSAGES}")
            return
        kind = message.pop("type", "action")
        try:
            if kind == "action":
                await self._act(message)
            elif kind == "legal_actions":
                if message:
                    raise ApiError(422, "malformed", f"legal_actions takes no fields, not {', '.join(sorted(message))}")
                await self._sockets.access.limit_player(self._player)  # as actions are
                listing = await self._sockets.positions.legal_actions(self._match_id, self._seat)
                self._send({"type": "legal_actions", **listing})
            else:
                self._error("malformed", f"unknown message type {repr(kind)[:40]}: send {MESSAGES}")
        except ApiError as error:
            extra = dict(error.extra)
            if "Retry-After" in error.headers:
                extra["retry_after_s"] = int(error.headers["Retry-After"])
            self._error(error.code, error.message, **extra)
        except REDIS_DOWN as error:
            self._error("unavailable", f"Redis is unavailable ({type(error).__name__}); retry")

    async def _act(self, message: dict[str, Any]) -> None:
        try:
            body = ActionRequest.model_validate(message)
        except ValidationError as error:
            raise ApiError(422, "malformed", validation_message(error)) from None
        try:
            refuse_if_over(self._match_id, self._status)
            record = seat_action(self._match_id, self._seat, self._seats, body, self._game)
        except ApiError as error:  # refused at the door: named by the client's event id, if it sent one
            raise (_naming(error, {"event_id": body.event_id}) if body.event_id else error) from None
        try:
            await self._sockets.access.limit_player(record["player"])
        except ApiError as error:
            raise _naming(error, record) from None
        # waited for BEFORE it is written: its result may come before the broker's acknowledgement
        waiting = _Waiting(record, time.perf_counter())
        self._waiting.setdefault(record["event_id"], []).append(waiting)
        waiting.timer = asyncio.get_running_loop().call_later(self._sockets.wait_timeout_s, self._expire, waiting)
        try:
            await self._sockets.submitter.submit(record)
        except ApiError as error:
            waiting.timer.cancel()
            self._forget(waiting)
            raise _naming(error, record) from None

    def _forget(self, waiting: _Waiting) -> None:
        entries = self._waiting.get(waiting.record["event_id"], [])
        if waiting in entries:
            entries.remove(waiting)
        if not entries:
            self._waiting.pop(waiting.record["event_id"], None)


def _naming(error: ApiError, record: dict[str, Any]) -> ApiError:
    """`error`, naming the event id of the action it refused."""
    return ApiError(error.status, error.code, error.message, error.headers, **error.extra, event_id=record["event_id"])
