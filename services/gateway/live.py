"""One Redis pub/sub connection for the whole gateway, fanning result records out to waiters.

The projector publishes every result record of a match on `{p}live:{match_id}` as it applies
it. The hub PSUBSCRIBEs to `{p}live:*` once, at start, so a request that registers a listener
cannot miss a result published after that moment (no per-request SUBSCRIBE race). Messages
are decoded only for matches somebody listens to.

A listener whose queue overflows (a stalled client) or that lived through a reconnect is
marked `resync`: it must re-read what it missed from the log zset (the SSE stream does).

An `early` listener (a seat's socket) also gets each result of its match straight from
`plylog.results`, a few milliseconds before the projector announces it: a result reaches the live
channel only once the projector has read it and stored it in Redis, a large share of a lone
client's wait (docs/decisions/seat-socket.md). The gateway tails the topic from its end
(services/common/kafka_tail.py, started in resources.py) and hands each fetch to `deliver_early`;
both copies arrive, marked, and the stream (sse.py) keeps one of each. HTTP waits and SSE streams
keep the live channel only; with Kafka unreachable, sockets get the announcements alone. An announcement whose bytes
every listener of its match has taken from the topic already is left out here (most of them,
for sockets: the work of waking each stream for a copy it would drop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import orjson
import redis.asyncio as aioredis

from services.common.record_checks import result_problem
from services.common.redis_keys import Keys

log = logging.getLogger("plylog.gateway.live")
QUEUE_SIZE = 1000


class Arrival(NamedTuple):
    """A result record as it came: decoded, its bytes, and whether from the topic (early) or the
    projector's announcement."""

    result: dict[str, Any]
    raw: bytes
    early: bool = False


class Listener:
    def __init__(self, match_id: str, early: bool = False):
        self.match_id = match_id
        self.early = early
        self.queue: asyncio.Queue[Arrival] = asyncio.Queue(QUEUE_SIZE)
        self.resync = False
        # An early listener's stream: digests (hash of the bytes) of the results it has one copy of
        # (sse._first_copy, bounded); the hub leaves out an announcement every listener has.
        self.seen: OrderedDict[int, None] = OrderedDict()

    def offer(self, arrival: Arrival) -> None:
        try:
            self.queue.put_nowait(arrival)
        except asyncio.QueueFull:
            self.resync = True

    async def get(self, timeout: float | None) -> Arrival | None:
        """The next result, or None after `timeout` seconds. (asyncio.timeout, not wait_for: on
        Python 3.11 wait_for loses a cancellation that comes as a queued result is taken, and the
        stream being closed would go on reading.)"""
        try:
            async with asyncio.timeout(timeout):
                return await self.queue.get()
        except TimeoutError:
            return None


class LiveHub:
    def __init__(self, client: aioredis.Redis, keys: Keys, reconnect: Callable[[int], aioredis.Redis] | None = None):
        """`reconnect(attempt)`: a new client after a lost connection (a Redis Cluster's next node)."""
        self._client = client
        self._reconnect = reconnect
        self._attempts = 0
        self._keys = keys
        self._listeners: dict[str, set[Listener]] = defaultdict(set)
        self.connected = asyncio.Event()

    @contextlib.contextmanager
    def listen(self, match_id: str, early: bool = False) -> Iterator[Listener]:
        listener = Listener(match_id, early)
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
        raw = data if isinstance(data, bytes) else data.encode()
        if all(listener.early for listener in listeners):
            digest = hash(raw)  # the projector announces the record's own bytes
            if all(digest in listener.seen for listener in listeners):
                return  # every stream here has it from the topic: not decoded, nobody woken
        try:
            result = orjson.loads(raw)
        except orjson.JSONDecodeError:
            log.warning("live hub: a message on %s is not JSON; ignored", channel)
            return
        arrival = Arrival(result, raw)
        for listener in list(listeners):
            listener.offer(arrival)

    def deliver_early(self, records: list[tuple[bytes, bytes]]) -> None:
        """Hand (key, value) records read from `plylog.results` to the early listeners of their
        match. Records nobody here wrote are checked as the projector checks
        them; one that fails, or whose key is not its match id, is left out (the projector's
        announcement still comes, or not, as the projector decides)."""
        for key, raw in records:
            try:
                match_id = key.decode()
            except UnicodeDecodeError:
                continue
            early = [listener for listener in self._listeners.get(match_id, ()) if listener.early]
            if not early:
                continue
            try:
                result = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if result_problem(result) or result.get("match_id") != match_id:
                continue
            arrival = Arrival(result, raw, early=True)
            for listener in early:
                listener.offer(arrival)
