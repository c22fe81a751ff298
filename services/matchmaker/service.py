"""The matchmaker service: folds plylog.lobby (one partition) with the pure decider
(`games.matchmaking.Matchmaker`), creates the matches it makes on plylog.moves, sends the ticks
that let time pass, and keeps the lobby's view and each submission's result in Redis.

Once only. A match's create record is derived from the pairing (its match id a digest of what was
paired, its event id `<match id>:create`), and the service writes the creates of a batch BEFORE it
stores the checkpoint (the lobby and the next offset) that covers the batch. Killed between the
two, it folds the same records again from the older checkpoint and writes the same bytes: the
rules answer the second copy `duplicate`, so no match is created twice.

Ticks go through the topic like every other record, so a replay makes the same passes at the same
times (docs/matchmaking.md). The service sends one only when time has brought a change (a window
widens, a bot's wait ends, something expires), and only once it has read the topic to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any

import orjson
from redis.exceptions import RedisError

from games.matchmaking import Lobby, LobbyStep, Matchmaker, encode, window
from games.matchmaking.rules import MAX_WINDOW, WIDEN_EVERY_MS
from games.timeutil import from_ms
from schemas.matchmaking import MATCHMAKER
from services.common import redis_client
from services.common.kafka_produce import ProduceFailed, Producer
from services.common.kafka_read import PartitionReader
from services.common.redis_keys import Keys
from services.common.settings import Settings

log = logging.getLogger("plylog.matchmaker")
BATCH = 500  # lobby records folded per batch
POLL_S = 0.5
RETRY_S = 2.0
VIEW_SEEKS = 500  # seeks the lobby's view lists (the oldest first): each view is read whole by every stream
VIEW_WAITING = 100  # players the view lists per pool (with the count of all)
RESULT_TTL_S = 3600  # how long a submission's result stays readable (the gateway waits for it)


def lobby_view(lobby: Lobby, offset: int) -> dict[str, Any]:
    """What the lobby page shows: open seeks and the pools' waiting players, as of `offset`; at
    most VIEW_SEEKS seeks and VIEW_WAITING players per pool, with the counts of all."""
    pools: dict[str, dict[str, Any]] = {}
    for entry in lobby.waiting:
        pool = pools.setdefault(
            entry.pool_id,
            {
                "pool_id": entry.pool_id,
                "game": entry.game,
                "rules": entry.rules,
                "options": entry.options,
                "clock": entry.clock,
                "waiting_count": 0,
                "waiting": [],
            },
        )
        pool["waiting_count"] += 1
        if len(pool["waiting"]) < VIEW_WAITING:
            pool["waiting"].append(
                {
                    "player": entry.player,
                    "rating": entry.rating,
                    "joined_at": from_ms(entry.joined_ms),
                    "bot": entry.bot,
                }
            )
    seeks = [
        {
            "seek_id": s.seek_id,
            "player": s.player,
            "game": s.game,
            "rules": s.rules,
            "options": s.options,
            "clock": s.clock,
            "rating": s.rating,
            "rating_min": s.rating_min,
            "rating_max": s.rating_max,
            "seat": s.seat,
            "expires_at": from_ms(s.expires_ms),
        }
        for s in lobby.seeks[:VIEW_SEEKS]
    ]
    at = from_ms(lobby.now_ms) if lobby.now_ms else None
    return {"offset": offset, "at": at, "seeks_count": len(lobby.seeks), "seeks": seeks, "pools": list(pools.values())}


def tick_record(now_ms: int) -> dict[str, Any]:
    return {
        "v": 1,
        "event_id": f"tick-{now_ms}",
        "player": MATCHMAKER,
        "at": from_ms(now_ms),
        "action": {"type": "tick"},
    }


def next_change_ms(lobby: Lobby) -> int | None:
    """The first moment after the lobby's time at which a pass could do something a pass at its
    time did not: a window widens (every WIDEN_EVERY_MS until MAX_WINDOW), a bot's wait ends, a
    seek or an entry expires. None: nothing is waiting for time."""
    now = lobby.now_ms
    moments = [seek.expires_ms for seek in lobby.seeks]
    for entry in lobby.waiting:
        moments.append(entry.expires_ms)
        if window(entry.joined_ms, now) < MAX_WINDOW:
            steps = max(0, now - entry.joined_ms) // WIDEN_EVERY_MS
            moments.append(entry.joined_ms + (steps + 1) * WIDEN_EVERY_MS)
        if entry.bot_after_ms is not None:
            moments.append(entry.joined_ms + entry.bot_after_ms)
    later = [moment for moment in moments if moment > now]
    return min(later) if later else None


def tick_due(lobby: Lobby, now_ms: int) -> bool:
    """A tick is worth its record only when time has brought a change (so a lobby whose windows
    are all at their widest writes no ticks until something expires)."""
    due = next_change_ms(lobby)
    return due is not None and due <= now_ms


class MatchmakerService:
    def __init__(
        self,
        settings: Settings,
        keys: Keys,
        tick_s: float = 1.0,
        ready_file: Path | None = None,
    ) -> None:
        self.settings = settings
        self.keys = keys
        self.tick_s = tick_s
        self.ready_file = ready_file
        self.topic = settings.topics.lobby
        self.matchmaker = Matchmaker()
        self.offset = 0  # the next lobby record to fold
        self.made = 0

    async def run(self) -> None:
        s = self.settings
        producer = await Producer.start(s.kafka_bootstrap, s.kafka_auth, retry_for_s=60)
        redis = redis_client.connect_async(s.redis, wait_for_connection_s=30, socket_connect_timeout=5)
        reader = PartitionReader(s.kafka_bootstrap, s.kafka_auth)
        try:
            await self._restore(redis)
            await asyncio.to_thread(reader.start, self.topic, 0, self.offset)
            log.info("matchmaker folding %s from offset %d", self.topic, self.offset)
            if self.ready_file is not None:
                self.ready_file.write_text("ready\n")
            last_tick = 0.0
            while True:
                try:
                    records, position = await asyncio.to_thread(reader.take, BATCH, POLL_S)
                    if records:
                        await self._fold(records, position, producer, redis)
                    now = time.time()
                    due = tick_due(self.matchmaker.lobby, int(now * 1000))
                    if len(records) < BATCH and now - last_tick >= self.tick_s and due:  # read to the end
                        last_tick = now
                        await producer.send(self.topic, encode(tick_record(int(now * 1000))), key=MATCHMAKER.encode())
                except (ProduceFailed, RedisError, OSError) as error:
                    # what is not checkpointed is folded again: from the checkpoint, as after a crash
                    log.warning("matchmaker step failed (%s); resuming from the checkpoint in %gs", error, RETRY_S)
                    await asyncio.sleep(RETRY_S)
                    await self._restore(redis)
                    await asyncio.to_thread(reader.start, self.topic, 0, self.offset)
        finally:
            await asyncio.to_thread(reader.close)
            await producer.stop()
            with contextlib.suppress(Exception):
                await redis.aclose()

    async def _restore(self, redis: Any) -> None:
        raw = await redis.get(self.keys.lobby_checkpoint)
        self.matchmaker, self.offset = Matchmaker(), 0
        if raw is None:
            log.info("no checkpoint: folding %s from its beginning", self.topic)
            return
        stored = orjson.loads(raw)
        self.matchmaker = Matchmaker(Lobby.from_json(stored["lobby"]))
        self.offset = int(stored["offset"])

    async def _fold(self, records: list[Any], position: int, producer: Producer, redis: Any) -> None:
        steps: list[LobbyStep] = []
        for record in records:
            if record.value is None:
                continue
            steps.append(self.matchmaker.feed(record.value, {"partition": record.partition, "offset": record.offset}))
        for taken in steps:  # the creates first: the checkpoint below must never cover an unwritten one
            for create in taken.creates:
                await producer.send(self.settings.topics.moves, encode(create), key=create["match_id"].encode())
                self.made += 1
                log.info("match %s made: %s", create["match_id"], " vs ".join(create["action"]["seats"]))
        self.offset = position
        lobby = self.matchmaker.lobby
        async with redis.pipeline(transaction=True) as pipe:
            for taken in steps:
                result = taken.result
                if result["player"] and result["event_id"] and result["player"] != MATCHMAKER:
                    key = self.keys.lobby_result(result["player"], result["event_id"])
                    pipe.set(key, orjson.dumps(result), ex=RESULT_TTL_S)
            pipe.set(self.keys.lobby_view, orjson.dumps(lobby_view(lobby, position)))
            pipe.set(self.keys.lobby_offset, position)
            pipe.set(self.keys.lobby_checkpoint, orjson.dumps({"offset": position, "lobby": lobby.to_json()}))
            await pipe.execute()
