"""Display names: players' sealed profiles (services/common/profiles.py) as the gateway reads and
writes them. Both compacted topics are held in memory (services/common/kafka_table.py), never in
Redis, so an erasure leaves no name behind in Redis, and every gateway's tables see an erasure
whichever gateway (or `plylog players erase`, through one) wrote it.

Erasure writes a tombstone for the key and the erased marker as the profile, then deletes the
player's notification endpoints and preferences (the contact addresses the notifier keeps in
Redis, docs/notifications.md). Ids stay: views, ratings and results keep them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from services.common import notify_store, profiles
from services.common.kafka_produce import ProduceFailed, Producer
from services.common.kafka_table import KafkaTable
from services.common.redis_client import AsyncClient
from services.common.settings import Topics

from .errors import ApiError

TABLES_READY_S = 10.0


class Names:
    def __init__(
        self, producer: Producer, topics: Topics, keys: KafkaTable, sealed: KafkaTable, redis: AsyncClient, prefix: str
    ):
        self._producer, self._topics = producer, topics
        self._keys, self._sealed = keys, sealed
        self._redis, self._prefix = redis, prefix

    async def _send(self, topic: str, value: bytes | None, key: bytes) -> None:
        try:
            await self._producer.send(topic, value, key=key)
        except ProduceFailed as error:
            raise ApiError(503, "unavailable", f"{topic} could not be written ({error}); try again") from error

    async def wait_ready(self, timeout_s: float = TABLES_READY_S) -> bool:
        """Whether both tables have read what their topics held when they started."""
        done = [asyncio.to_thread(t.ready.wait, timeout_s) for t in (self._keys, self._sealed)]
        return all(await asyncio.gather(*done))

    async def register(self, player: str, name: str) -> None:
        """A new player's profile {name}: its key first, so a profile is never written without one."""
        key, key_record = profiles.new_key_record()
        sealed = profiles.seal(key, player, {"name": name})
        await self._send(self._topics.player_keys, key_record, key=player.encode())
        self._keys.expect(player, key_record)
        await self._send(self._topics.profiles, sealed, key=player.encode())
        self._sealed.expect(player, sealed)

    def names(self, players: Iterable[str]) -> dict[str, str | None]:
        """{player: display name}; None: no profile (clients show the id); profiles.ERASED_NAME."""
        wanted = [p for p in dict.fromkeys(players) if p]
        keys = {p: profiles.key_of(self._keys.get(p)) for p in wanted}
        return profiles.display_names(wanted, keys, {p: self._sealed.get(p) for p in wanted})

    async def erase(self, player: str) -> bool:
        """Delete the player's key and profile (idempotent); False when there was nothing to erase
        here: no key, no profile that was not erased already, no notification endpoint."""
        had_key = self._keys.get(player) is not None
        had_profile = self._sealed.get(player) is not None and not profiles.erased(self._sealed.get(player))
        await self._send(self._topics.player_keys, None, key=player.encode())
        self._keys.expect(player, None)
        if self._sealed.get(player) is not None or had_key:  # a player that never had a profile gets none
            await self._send(self._topics.profiles, profiles.ERASED_RECORD, key=player.encode())
            self._sealed.expect(player, profiles.ERASED_RECORD)
        removed = await self._redis.delete(*notify_store.player_keys(self._prefix, player))
        return had_key or had_profile or bool(removed)
