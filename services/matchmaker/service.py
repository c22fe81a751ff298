"""The matchmaker service: folds plylog.lobby (one partition) with the pure decider
(`games.matchmaking.Matchmaker`), creates the matches it makes on plylog.moves, sends the ticks
that let time pass, and keeps the lobby's view and each submission's result in Redis.

Once only. A match's create record is derived from the pairing (its match id a digest of what was
paired, its event id `<match id>:create`), and the service writes the creates of a batch BEFORE it
stores the checkpoint (the lobby and the next offset) that covers the batch. Killed between the
two, it folds the same records again from the older checkpoint and writes the same bytes: the
rules answer the second copy `duplicate`, so no match is created twice.

Ticks go through the topic like every other record, so a replay makes the same passes at the same
times (docs/matchmaking.md). The service sends one only while something is waiting in a pool, or
when a seek has expired, and only once it has read the topic to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any

import orjson

from games.matchmaking import Lobby, LobbyStep, Matchmaker, encode
from games.timeutil import from_ms
from schemas.matchmaking import MATCHMAKER
from services.common import redis_client
from services.common.kafka_produce import Producer
from services.common.kafka_read import PartitionReader
from services.common.redis_keys import Keys
from services.common.settings import Settings

log = logging.getLogger("plylog.matchmaker")
BATCH = 500  # lobby records folded per batch
POLL_S = 0.5
RESULT_TTL_S = 3600  # how long a submission's result stays readable (the gateway waits for it)


def lobby_view(lobby: Lobby, offset: int) -> dict[str, Any]:
    """What the lobby page shows: open seeks and the pools' waiting players, as of `offset`."""
    pools: dict[str, dict[str, Any]] = {}
    for entry in lobby.waiting:
        pool = pools.setdefault(
            entry.pool_id,
            {
                "pool_id": entry.pool_id,
                "game": entry.game,
                "options": entry.options,
                "clock": entry.clock,
                "waiting": [],
            },
        )
        pool["waiting"].append(
            {"player": entry.player, "rating": entry.rating, "joined_at": from_ms(entry.joined_ms), "bot": entry.bot}
        )
    seeks = [
        {
            "seek_id": s.seek_id,
            "player": s.player,
            "game": s.game,
            "options": s.options,
            "clock": s.clock,
            "rating": s.rating,
            "rating_min": s.rating_min,
            "rating_max": s.rating_max,
            "seat": s.seat,
            "expires_at": from_ms(s.expires_ms),
        }
        for s in lobby.seeks
    ]
    at = from_ms(lobby.now_ms) if lobby.now_ms else None
    return {"offset": offset, "at": at, "seeks": seeks, "pools": list(pools.values())}


def tick_record(now_ms: int) -> dict[str, Any]:
    return {
        "v": 1,
        "event_id": f"tick-{now_ms}",
        "player": MATCHMAKER,
        "at": from_ms(now_ms),
        "action": {"type": "tick"},
    }


def tick_due(lobby: Lobby, now_ms: int) -> bool:
    """A tick is worth its record while a pool holds someone (windows widen, bots sit down) or a
    seek has expired (it leaves the lobby's view)."""
    return bool(lobby.waiting) or any(seek.expires_ms <= now_ms for seek in lobby.seeks)


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
                records, position = await asyncio.to_thread(reader.take, BATCH, POLL_S)
                if records:
                    await self._fold(records, position, producer, redis)
                caught_up = len(records) < BATCH
                now = time.time()
                if caught_up and now - last_tick >= self.tick_s and tick_due(self.matchmaker.lobby, int(now * 1000)):
                    last_tick = now
                    await producer.send(self.topic, encode(tick_record(int(now * 1000))), key=MATCHMAKER.encode())
        finally:
            await asyncio.to_thread(reader.close)
            await producer.stop()
            with contextlib.suppress(Exception):
                await redis.aclose()

    async def _restore(self, redis: Any) -> None:
        raw = await redis.get(self.keys.lobby_checkpoint)
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
            pipe.set(self.keys.lobby_checkpoint, orjson.dumps({"offset": position, "lobby": lobby.to_json()}))
            await pipe.execute()
