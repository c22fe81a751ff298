"""The gateway's side of tournaments: writes people's tournament records to `plylog.tournaments` and
waits for their results, reads the views the tournament service keeps in Redis
(services/common/tournament_store.py). One of the gateway's resources (`TournamentsDep`)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson

from games.timeutil import from_ms
from services.common import redis_client
from services.common.kafka_produce import ProduceFailed, Producer
from services.common.tournament_store import TournamentKeys

from .errors import ApiError

RESULT_POLL_S = 0.1
LIST_CAP = 100
STREAM_POLL_S = 1.0


class TournamentDesk:
    def __init__(self, producer: Producer, redis: redis_client.AsyncClient, topic: str, redis_prefix: str):
        self._producer, self._redis, self._topic = producer, redis, topic
        self.keys = TournamentKeys(redis_prefix)
        self._summaries = f"{redis_prefix}tournament-summaries"

    async def write(
        self, tournament_id: str, actor: str, action: dict[str, Any], wait_s: float
    ) -> dict[str, Any] | None:
        """Write one record as `actor` (acknowledged), then its result, or None if none came in `wait_s`."""
        event_id = uuid.uuid4().hex
        record = {
            "v": 1,
            "event_id": event_id,
            "tournament_id": tournament_id,
            "actor": actor,
            "at": from_ms(int(time.time() * 1000)),
            "action": action,
        }
        try:
            await self._producer.send(self._topic, orjson.dumps(record), key=tournament_id.encode())
        except ProduceFailed as error:
            raise ApiError(503, "unavailable", f"the record could not be written to Kafka: {error}") from error
        key = self.keys.result(tournament_id, event_id)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            raw = await self._redis.get(key)
            if raw is not None:
                result: dict[str, Any] = orjson.loads(raw)
                return result
            await asyncio.sleep(RESULT_POLL_S)
        return None

    async def view(self, tournament_id: str) -> dict[str, Any] | None:
        raw = await self._redis.get(self.keys.view(tournament_id))
        return orjson.loads(raw) if raw is not None else None

    async def list(self, limit: int) -> list[dict[str, Any]]:
        """The latest tournaments (by creation), newest first."""
        ids = await self._redis.zrevrange(self.keys.index, 0, min(limit, LIST_CAP) - 1)
        if not ids:
            return []
        names: list[str] = [i.decode() if isinstance(i, bytes) else str(i) for i in ids]
        rows = await self._redis.hmget(self._summaries, names)
        return [orjson.loads(row) for row in rows if row is not None]

    async def updates(self, tournament_id: str, since: int, most_s: float) -> AsyncIterator[str]:
        """SSE: the view each time its seq moves past `since`, for at most `most_s` (the client reconnects)."""
        deadline = time.monotonic() + most_s
        last = since
        while time.monotonic() < deadline:
            view = await self.view(tournament_id)
            if view is not None and view["seq"] > last:
                last = view["seq"]
                yield f"id: {last}\nevent: tournament\ndata: {orjson.dumps(view).decode()}\n\n"
            else:
                yield ": keepalive\n\n"
            await asyncio.sleep(STREAM_POLL_S)
