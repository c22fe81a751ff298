"""Closed-loop bots for the latency scenario.

Every bot plays one match at a time from pre-generated records and sends its next move only
once the previous one has been seen applied (a player waits for the board before moving); a
global clock paces all bots together at the offered rate. A tick with no bot free is counted
as missed: the offered rate was not held because the service answered too slowly.

The latency of a move is from just before the producer's send() to the moment the observer
sees it applied: its result on the results topic (rules worker), or its view readable in Redis
(the projector publishes every applied result on `{p}live:{id}` from the same atomic script that
writes the view, so the message means the view is there).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from services.common import kafka_auth, redis_client
from services.common.kafka_auth import KafkaAuth
from services.common.redis_keys import Keys

from .loadgen import match_key, producer
from .stack import BenchStack, RunSpace

ANSWER_TIMEOUT_S = 15.0


@dataclass
class Seen:
    """When each event id was sent, and when each observer saw it applied (perf_counter seconds)."""

    sent: dict[str, float] = field(default_factory=dict)
    at: dict[str, dict[str, float]] = field(default_factory=dict)  # observer -> event id -> time
    waiters: dict[str, asyncio.Future] = field(default_factory=dict)
    decisive: str = "views"  # the observer whose sighting frees the bot

    def saw(self, observer: str, event_id: str) -> None:
        now = time.perf_counter()
        self.at.setdefault(observer, {}).setdefault(event_id, now)
        if observer == self.decisive:
            waiter = self.waiters.pop(event_id, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(now)

    def latencies_ms(self, observer: str, after: float) -> list[float]:
        """Sorted latencies of the moves sent after `after` (warm-up excluded)."""
        seen = self.at.get(observer, {})
        return sorted((seen[e] - t) * 1000 for e, t in self.sent.items() if t >= after and e in seen)


def event_id_of(raw: bytes) -> str:
    start = raw.index(b'"event_id":"') + 12
    return raw[start : raw.index(b'"', start)].decode()


async def observe_results(bootstrap: str, topic: str, partitions: int, seen: Seen, ready: asyncio.Event) -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_wait_ms=5,
        client_id="plylog-bench-observer",
        **kafka_auth.aiokafka(KafkaAuth.from_env()),
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        await consumer.seek_to_beginning()
        ready.set()
        while True:
            for messages in (await consumer.getmany(timeout_ms=50)).values():
                for message in messages:
                    seen.saw("results", event_id_of(message.value))
    finally:
        await consumer.stop()


async def observe_views(redis_url: str, keys: Keys, seen: Seen, ready: asyncio.Event) -> None:
    client = redis_client.pubsub_client(redis_url)
    pubsub = client.pubsub()
    try:
        await pubsub.psubscribe(keys.live_pattern)
        ready.set()
        while True:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            if message is not None and message["type"] == "pmessage":
                seen.saw("views", orjson.loads(message["data"])["event_id"])
    finally:
        await pubsub.aclose()
        await client.aclose()


@contextlib.asynccontextmanager
async def observing(stack: BenchStack, space: RunSpace, seen: Seen) -> AsyncIterator[None]:
    """Both observers running (results topic, views in Redis) and ready, for the duration."""
    ready = [asyncio.Event(), asyncio.Event()]
    tasks = [
        asyncio.ensure_future(observe_results(stack.bootstrap, space.topics.results, stack.partitions, seen, ready[0])),
        asyncio.ensure_future(
            observe_views(stack.redis_url, Keys(space.redis_prefix, stack.partitions), seen, ready[1])
        ),
    ]
    try:
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), 30)
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class BotsReport:
    sent: int
    missed_ticks: int
    unanswered: int
    seconds: float

    @property
    def achieved_rate(self) -> float:
        return self.sent / self.seconds if self.seconds else 0.0


async def play(
    bootstrap: str,
    topic: str,
    matches: Iterator[list[bytes]],
    bots: int,
    rate: float,
    seconds: float,
    seen: Seen,
    on_tick=lambda fraction: None,
) -> BotsReport:
    """Run `bots` closed-loop bots paced together at `rate` moves/s for `seconds`."""
    sender = producer(bootstrap)
    await sender.start()
    free: deque[Iterator[bytes]] = deque()
    for _ in range(bots):
        match = next(matches, None)
        if match is not None:
            free.append(iter(match))
    missed = sent = 0
    loop = asyncio.get_running_loop()

    async def move(bot: Iterator[bytes], raw: bytes) -> None:
        event_id = event_id_of(raw)
        waiter = loop.create_future()
        seen.waiters[event_id] = waiter
        seen.sent[event_id] = time.perf_counter()
        await sender.send(topic, raw, key=match_key(raw))
        try:
            await asyncio.wait_for(waiter, ANSWER_TIMEOUT_S)
        except TimeoutError:
            seen.waiters.pop(event_id, None)
            return  # this bot stops: its match can no longer go on in order
        free.append(bot)

    started = time.perf_counter()
    ticks = 0
    tasks = set()
    try:
        while (elapsed := time.perf_counter() - started) < seconds:
            due = int(elapsed * rate) - ticks
            for _ in range(due):
                ticks += 1
                chosen = _next_move(free, matches)
                if chosen is None:
                    missed += 1
                    continue
                bot, raw = chosen
                sent += 1
                task = asyncio.ensure_future(move(bot, raw))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            on_tick(elapsed / seconds)
            await asyncio.sleep(0.001)
        elapsed = time.perf_counter() - started
        if tasks:
            await asyncio.wait(tasks, timeout=ANSWER_TIMEOUT_S + 1)
    finally:
        for task in tasks:
            task.cancel()
        await sender.stop()
    unanswered = sum(1 for e in seen.sent if e not in seen.at.get(seen.decisive, {}))
    return BotsReport(sent, missed, unanswered, elapsed)


def _next_move(free: deque, matches: Iterator[list[bytes]]) -> tuple[Iterator[bytes], bytes] | None:
    """A free bot and its next record; a bot whose match is over takes the next match."""
    while free:
        bot = free.popleft()
        raw = next(bot, None)
        if raw is not None:
            return bot, raw
        match = next(matches, None)
        if match is not None:
            free.appendleft(iter(match))
    return None
