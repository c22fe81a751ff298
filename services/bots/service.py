"""The bot service's loop: consume `plylog.results` as the group `<topic prefix>bots` (instances
share the partitions), keep the public position of every match a bot plays, and produce its
bots' moves to `plylog.moves` (aiokafka, acks=all). Offsets are committed after the moves of a
poll are acknowledged; a crash re-reads them and decides again under the same event ids
(`duplicate`, never a second move). See players.py for the decisions.

A bot acts only on the newest result of a match in a poll, and only if the projection is not
already past it (a service catching up on old results does not think about turns long gone).
A position it does not hold (after a restart or a rebalance) is rebuilt from the projection's
public log in Redis, once the projector has the seq before the turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition

from games.public import PublicPosition
from services.common import bot_directory, kafka_auth, redis_client
from services.common.projection import Projection
from services.common.redis_keys import Keys
from services.common.settings import Settings

from .players import BotPlayers, our_rejected_move

log = logging.getLogger("plylog.bots")
ANNOUNCE_EVERY_S = 5.0
PROJECTION_WAIT_S = 30.0


class _Positions(ConsumerRebalanceListener):
    """Public positions of the matches on the partitions this instance holds."""

    def __init__(self, on_assigned):
        self.by_match: dict[str, tuple[int, PublicPosition]] = {}  # match -> (partition, position)
        self._on_assigned = on_assigned

    async def on_partitions_revoked(self, revoked):
        gone = {tp.partition for tp in revoked}
        self.by_match = {m: v for m, v in self.by_match.items() if v[0] not in gone}

    async def on_partitions_assigned(self, assigned):
        log.info("assigned partitions: %s", sorted(tp.partition for tp in assigned))
        if assigned:
            self._on_assigned()


class BotService:
    def __init__(
        self, settings: Settings, keys: Keys, players: BotPlayers, instance: str, ready_file: Path | None = None
    ):
        self.settings, self.keys, self.players, self.instance = settings, keys, players, instance
        self.ready_file = ready_file
        self.counts: Counter = Counter()

    async def run(self) -> None:
        topics = self.settings.topics
        self.redis = redis_client.connect_async(self.settings.redis, socket_connect_timeout=5)
        self.projection = Projection(self.redis, self.keys)
        sasl = kafka_auth.aiokafka(self.settings.kafka_auth)
        self.producer = AIOKafkaProducer(
            bootstrap_servers=self.settings.kafka_bootstrap, acks="all", enable_idempotence=True, linger_ms=1, **sasl
        )
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.kafka_bootstrap,
            group_id=topics.bots_group,
            client_id=self.instance,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=50,
            max_poll_interval_ms=600_000,
            **sasl,
        )
        self.positions = _Positions(self._mark_ready)
        consumer.subscribe([topics.results], listener=self.positions)
        await self.producer.start()
        await consumer.start()
        announcer = asyncio.create_task(self._announce())
        log.info("bot service %s plays %s", self.instance, ", ".join(sorted(self.players.bots)))
        try:
            while True:
                polled = await consumer.getmany(timeout_ms=500, max_records=500)
                if polled:
                    await self._handle(polled)
                    await consumer.commit()
        finally:
            announcer.cancel()
            await consumer.stop()
            await self.producer.stop()
            await self.redis.aclose()

    def _mark_ready(self) -> None:
        if self.ready_file is not None and not self.ready_file.exists():
            self.ready_file.write_text("ready\n")

    async def _announce(self) -> None:
        bots = {
            player[4:]: (tuple(sorted(bot.games)), getattr(bot, "description", bot.id))
            for player, bot in self.players.bots.items()
        }
        while True:
            try:
                await bot_directory.announce(self.redis, self.keys, self.instance, bots)
            except Exception as error:  # noqa: BLE001 - Redis away for a moment: say so, try again
                log.warning("could not announce the bots: %s", error)
            await asyncio.sleep(ANNOUNCE_EVERY_S)

    async def _handle(self, polled: dict[TopicPartition, list]) -> None:
        newest: dict[str, tuple[int, dict[str, Any]]] = {}
        for tp, messages in polled.items():
            for message in messages:
                result = self._ours(message.value)
                if result is None:
                    continue
                self._follow(tp.partition, result)
                newest[result["match_id"]] = (tp.partition, result)
        sends = []
        for match_id, (partition, result) in newest.items():
            for record in await self._moves(partition, result):
                sends.append(
                    await self.producer.send(self.settings.topics.moves, orjson.dumps(record), key=match_id.encode())
                )
        for sent in sends:
            await sent
        if sends:
            log.info("sent %d bot move(s); totals %s", len(sends), dict(self.counts))

    def _ours(self, value: bytes | None) -> dict[str, Any] | None:
        """The result, if it is of a match one of our bots plays."""
        try:
            result = orjson.loads(value) if value else None
        except orjson.JSONDecodeError:
            return None
        view = result.get("view") if isinstance(result, dict) else None
        if not isinstance(view, dict) or not isinstance(result.get("match_id"), str) or not self.players.plays_in(view):
            return None
        return result

    def _follow(self, partition: int, result: dict[str, Any]) -> None:
        """Keep the match's position up to date with an accepted result (when it follows on)."""
        if result["status"] != "accepted" or result.get("duplicate"):
            return
        held = self.positions.by_match.get(result["match_id"])
        if held is not None and held[1].seq == result["seq"] - 1:
            held[1].apply(result)
        elif held is not None and held[1].seq < result["seq"]:
            del self.positions.by_match[result["match_id"]]  # a gap: rebuilt when needed
        if result["view"]["status"] == "over":
            self.positions.by_match.pop(result["match_id"], None)

    async def _moves(self, partition: int, result: dict[str, Any]) -> list[dict[str, Any]]:
        view, retry = result["view"], our_rejected_move(result, self.players)
        turns = self.players.turns(view)
        if not turns or not (result["status"] == "accepted" or retry):
            return []
        if await self._overtaken(view):
            self.counts["overtaken"] += 1
            return []
        position = await self._position(partition, view)
        if position is None:
            return []
        records = []
        for turn in turns:
            records.append(
                await asyncio.to_thread(self.players.move, turn, position, view, int(time.time() * 1000), retry)
            )
            self.counts["retries" if retry else "moves"] += 1
        return records

    async def _overtaken(self, view: dict[str, Any]) -> bool:
        stored = await self.projection.match_fields(view["match_id"], "seq")
        return stored is not None and (stored.get("seq") or 0) > view["seq"]

    async def _position(self, partition: int, view: dict[str, Any]) -> PublicPosition | None:
        match_id, seq = view["match_id"], view["seq"]
        held = self.positions.by_match.get(match_id)
        if held is not None and held[1].seq == seq:
            return held[1]
        deadline = time.monotonic() + PROJECTION_WAIT_S
        while True:
            entries = [e for e in await self.projection.log_since(match_id, 0) if e["seq"] <= seq]
            if len(entries) == seq:
                position = PublicPosition.from_log(entries)
                self.positions.by_match[match_id] = (partition, position)
                return position
            if time.monotonic() > deadline:
                log.error(
                    "%s: the projection has %d of the %d results before this turn after %.0f s; "
                    "is the projector running? The turn waits for the next result",
                    match_id,
                    len(entries),
                    seq,
                    PROJECTION_WAIT_S,
                )
                self.counts["waited_out"] += 1
                return None
            await asyncio.sleep(0.1)
