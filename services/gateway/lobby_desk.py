"""The gateway's side of the lobby (docs/matchmaking.md): it writes players' lobby records to
plylog.lobby, stamped with the player the credential proves, the time and their rating, and reads
back what the matchmaker service stored in Redis (each submission's result, the lobby's view)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
from pydantic import ValidationError

from games.core import describe_validation_error
from games.timeutil import from_ms
from schemas.base import MAX_RECORD_BYTES
from schemas.matchmaking import LobbyRecord
from services.common.kafka_produce import ProduceFailed, Producer
from services.common.projection import Projection
from services.common.redis_keys import Keys

from .errors import ApiError

DEFAULT_RATING = 1500  # a player with no rated outcome in the game (Glicko-2's start)
RESULT_POLL_S = 0.1
MAX_WAIT_S = 10.0
VIEW_POLL_S = 1.0  # how often a lobby stream looks for a newer view


class LobbyDesk:
    def __init__(self, producer: Producer, redis: Any, keys: Keys, topic: str, projection: Projection):
        self._producer, self._redis, self._keys, self._topic = producer, redis, keys, topic
        self._projection = projection

    async def rating(self, player: str, game: str) -> int:
        games = await self._projection.player(player) or {}
        rating = games.get(game, {}).get("rating")
        return DEFAULT_RATING if rating is None else max(0, min(4000, round(float(rating))))

    async def submit(self, player: str, action: dict[str, Any], event_id: str | None, wait_s: float) -> dict[str, Any]:
        """Write the record; return its result, or `{"status": "pending"}` when none came in `wait_s`."""
        record: dict[str, Any] = {
            "v": 1,
            "event_id": event_id or uuid.uuid4().hex,
            "player": player,
            "at": from_ms(int(time.time() * 1000)),
            "action": action,
        }
        try:  # refused here what the decider would refuse as malformed: no record for it on the log
            LobbyRecord.model_validate(record)
        except ValidationError as error:
            raise ApiError(422, "malformed", describe_validation_error(error, "lobby record")) from None
        raw = orjson.dumps(record)
        if len(raw) > MAX_RECORD_BYTES:
            raise ApiError(
                413, "too_large", f"the lobby record would be {len(raw)} bytes; the limit is {MAX_RECORD_BYTES}"
            )
        try:
            await self._producer.send(self._topic, raw, key=player.encode())
        except ProduceFailed as error:
            raise ApiError(503, "unavailable", f"the lobby record could not be written ({error}); retry") from error
        key = self._keys.lobby_result(player, record["event_id"])
        deadline = time.monotonic() + min(wait_s, MAX_WAIT_S)
        while True:
            found = await self._redis.get(key)
            if found is not None:
                result: dict[str, Any] = orjson.loads(found)
                return result
            if time.monotonic() >= deadline:
                return {"status": "pending", "event_id": record["event_id"], "player": player}
            await asyncio.sleep(RESULT_POLL_S)

    async def result(self, player: str, event_id: str) -> dict[str, Any] | None:
        found = await self._redis.get(self._keys.lobby_result(player, event_id))
        return None if found is None else orjson.loads(found)

    async def view(self) -> dict[str, Any]:
        found = await self._redis.get(self._keys.lobby_view)
        if found is None:
            return {"offset": 0, "at": None, "seeks_count": 0, "seeks": [], "pools": []}
        view: dict[str, Any] = orjson.loads(found)
        return view

    async def stream(self, keepalive_s: float) -> AsyncIterator[str]:
        """Server-Sent Events: the lobby's view now, then each newer one (event `lobby`, id = offset)."""
        shown: bytes | None = b"-1"
        quiet = 0.0
        while True:
            offset = await self._redis.get(self._keys.lobby_offset)  # a few bytes a poll; the view when it changed
            if offset != shown:
                shown = offset
                quiet = 0.0
                view = await self.view()
                yield f"event: lobby\nid: {view['offset']}\ndata: {orjson.dumps(view).decode()}\n\n"
            elif quiet >= keepalive_s:
                quiet = 0.0
                yield ": keepalive\n\n"
            await asyncio.sleep(VIEW_POLL_S)
            quiet += VIEW_POLL_S
