"""One Redis pub/sub connection for the whole gateway, fanning result records out to waiters.

The projector publishes every result record of a match on `{p}live:{match_id}` as it applies
it. The hub PSUBSCRIBEs to `{p}live:*` once, at start, so a request that registers a listener
cannot miss a result published after that moment (no per-request SUBSCRIBE race). Messages
are decoded only for matches somebody listens to.

A listener whose queue overflows (a stalled client) or that lived through a reconnect is
marked `resync`: it must re-read what it missed from the log zset (the SSE stream does).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from typing import Any, Callable, Iterator, Optional

import orjson
import redis.asyncio as aioredis

from services.common.redis_keys import Keys

log = logging.getLogger("plylog.gateway.live")
QUEUE_SIZE = 1000


class Listener:
    def __init__(self, match_id: str):
        self.match_id = match_id
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE_SIZE)
        self.resync = False

    def offer(self, result: dict[str, Any]) -> None:
        try:
            self.queue.put_nowait(result)
        except asyncio.QueueFull:
            self.resync = True

    async def get(self, timeout: Optional[float]) -> Optional[dict[str, Any]]:
        """The next result, or None after `timeout` seconds. (asyncio.timeout, not wait_for: on
        Python 3.11 wait_for loses a cancellation that comes as a queued result is taken, and the
        stream being closed would go on reading.)"""
        try:
            async with asyncio.timeout(timeout):
                return await self.queue.get()
        except TimeoutError:
            return None


class LiveHub:
    def __init__(self, client: aioredis.Redis, keys: Keys,
                 reconnect: Optional[Callable[[int], aioredis.Redis]] = None):
        """`reconnect(attempt)`: a new client after a lost connection (a Redis Cluster's next node)."""
        self._client = client
        self._reconnect = reconnect
        self._attempts = 0
        self._keys = keys
        self._listeners: dict[str, set[Listener]] = defaultdict(set)
        self.connected = asyncio.Event()

    @contextlib.contextmanager
    def listen(self, match_id: str) -> Iterator[Listener]:
        listener = Listener(match_id)
        self._listeners[match_id].add(listener)
        try:
            yield listener
        finally:
            listeners = self._listeners.get(match_id)
            if listeners is not None:
                listeners.discard(listener)
                if not listeners:
                    del self._listeners[match_id]

    async def run(self) -> None:
        """Subscribe and dispatch until cancelled; reconnects after a lost connection."""
        delay = 0.2
        while True:
            try:
                await self._session()
                delay = 0.2
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - Redis down or restarting: retry
                if self.connected.is_set():
                    log.warning("live hub: lost Redis pub/sub (%s); reconnecting", error)
                self.connected.clear()
                for listeners in self._listeners.values():
                    for listener in listeners:
                        listener.resync = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                if self._reconnect is not None:
                    self._attempts += 1
                    with contextlib.suppress(Exception):
                        await self._client.aclose()
                    self._client = self._reconnect(self._attempts)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._client.aclose()

    async def _session(self) -> None:
        pubsub = self._client.pubsub()
        try:
            await pubsub.psubscribe(self._keys.live_pattern)
            while True:
                message = await pubsub.get_message(ignore_subscribe_messages=False, timeout=5.0)
                if message is None:
                    continue
                kind = message["type"]
                if kind == "psubscribe":
                    self.connected.set()
                    log.info("live hub: subscribed to %s", self._keys.live_pattern)
                elif kind == "pmessage":
                    self._dispatch(message["channel"], message["data"])
        finally:
            self.connected.clear()
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    def _dispatch(self, channel: bytes | str, data: bytes | str) -> None:
        if isinstance(channel, bytes):
            channel = channel.decode()
        listeners = self._listeners.get(self._keys.live_match_id(channel))
        if not listeners:
            return
        try:
            result = orjson.loads(data)
        except orjson.JSONDecodeError:
            log.warning("live hub: a message on %s is not JSON; ignored", channel)
            return
        for listener in list(listeners):
            listener.offer(result)
