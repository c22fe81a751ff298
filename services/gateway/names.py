"""Display names and contact addresses: players' sealed profiles (services/common/profiles.py) as the
gateway reads and writes them. Both compacted topics are held in memory
(services/common/profile_tables.py), never in Redis, so an erasure leaves no name or address behind
in Redis, and every gateway's tables see an erasure whichever gateway (or `plylog players erase`,
through one) wrote it.

A profile is {name?, contacts?}: a notification endpoint's e-mail address or webhook URL is kept in
the player's profile under the endpoint's id, and Redis keeps the endpoint without it
(docs/notifications.md). Erasure writes a tombstone for the key and the erased marker as the profile,
then deletes the player's endpoints, preferences, dead letters and queued deliveries in Redis. Ids
stay: views, ratings and results keep them."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterable

from services.common import profiles
from services.common.kafka_produce import ProduceFailed, Producer
from services.common.notify_store import Registry
from services.common.profile_tables import ProfileTables
from services.common.redis_client import AsyncClient
from services.common.settings import Topics

from .errors import ApiError

TABLES_READY_S = 10.0


class Names:
    def __init__(self, producer: Producer, topics: Topics, tables: ProfileTables, redis: AsyncClient, prefix: str):
        self._producer, self._topics, self.tables = producer, topics, tables
        self._keys, self._sealed = tables.keys, tables.sealed
        self._registry = Registry(redis, prefix)
        # one profile change at a time per player in this gateway (read, change, seal, write)
        self._locks: collections.defaultdict[str, asyncio.Lock] = collections.defaultdict(asyncio.Lock)

    async def _send(self, topic: str, value: bytes | None, key: bytes) -> None:
        try:
            await self._producer.send(topic, value, key=key)
        except ProduceFailed as error:
            raise ApiError(503, "unavailable", f"{topic} could not be written ({error}); try again") from error

    async def wait_ready(self, timeout_s: float = TABLES_READY_S) -> bool:
        """Whether both tables have read what their topics held when they started."""
        return await self.tables.wait_ready(timeout_s)

    async def _write(self, player: str, key: bytes, profile: dict) -> None:
        sealed = profiles.seal(key, player, profile)
        await self._send(self._topics.profiles, sealed, key=player.encode())
        self._sealed.expect(player, sealed)

    async def _new_key(self, player: str) -> bytes:
        """A key for a player with none: written first, so a profile is never written without one."""
        key, key_record = profiles.new_key_record()
        await self._send(self._topics.player_keys, key_record, key=player.encode())
        self._keys.expect(player, key_record)
        return key

    async def register(self, player: str, name: str) -> None:
        """A new player's profile {name}."""
        async with self._locks[player]:
            await self._write(player, await self._new_key(player), {"name": name})

    def names(self, players: Iterable[str]) -> dict[str, str | None]:
        """{player: display name}; None: no profile (clients show the id); profiles.ERASED_NAME."""
        wanted = [p for p in dict.fromkeys(players) if p]
        keys = {p: profiles.key_of(self._keys.get(p)) for p in wanted}
        return profiles.display_names(wanted, keys, {p: self._sealed.get(p) for p in wanted})

    def contacts(self, player: str) -> dict[str, str]:
        """{endpoint id: address or URL} of the player's endpoints, from their sealed profile."""
        return profiles.contacts_of(self.tables.profile(player))

    async def set_contact(self, player: str, endpoint_id: str, target: str | None) -> None:
        """Keep (None: forget) an endpoint's address in the player's profile; a player with no profile
        (a platform's, a guest from before profiles) gets one. An erased player's profile never opens
        again: 410, rather than a new key that would show them by id instead of as erased."""
        async with self._locks[player]:
            if self.tables.erased(player):
                if target is None:
                    return
                raise ApiError(410, "erased", "this player was erased; their profile takes no new address")
            key = self.tables.key(player)
            profile = self.tables.profile(player)
            if target is None and endpoint_id not in profiles.contacts_of(profile):
                return
            changed = profiles.with_contact(profile, endpoint_id, target)
            await self._write(player, key or await self._new_key(player), changed)

    async def erase(self, player: str) -> bool:
        """Delete the player's key and profile (idempotent); False when there was nothing to erase
        here: no key, no profile that was not erased already, no notification endpoint."""
        async with self._locks[player]:
            had_key = self._keys.get(player) is not None
            had_profile = self._sealed.get(player) is not None and not profiles.erased(self._sealed.get(player))
            await self._send(self._topics.player_keys, None, key=player.encode())
            self._keys.expect(player, None)
            if self._sealed.get(player) is not None or had_key:  # a player that never had a profile gets none
                await self._send(self._topics.profiles, profiles.ERASED_RECORD, key=player.encode())
                self._sealed.expect(player, profiles.ERASED_RECORD)
        removed = await self._registry.forget(player)
        return had_key or had_profile or removed
