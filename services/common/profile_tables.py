"""Players' keys and sealed profiles held in memory (two KafkaTables, services/common/kafka_table.py),
opened on demand: the gateway shows names and keeps contact addresses with them, the notifier opens
a contact address only when it sends (docs/personal-data.md). Nothing opened here is kept."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from . import profiles
from .kafka_auth import KafkaAuth
from .kafka_table import KafkaTable
from .settings import Topics


@dataclass(frozen=True)
class Contact:
    """One endpoint's address as the profile has it: `target`, or None and why (`erased`: the player's
    key is gone or their profile is the erased marker, so it never opens again; else not written yet)."""

    target: str | None
    erased: bool = False


class ProfileTables:
    def __init__(self, keys: KafkaTable, sealed: KafkaTable):
        self.keys, self.sealed = keys, sealed

    @classmethod
    def reading(cls, bootstrap: str, topics: Topics, auth: KafkaAuth | None, client: str) -> ProfileTables:
        """Both tables, started (read from their beginnings, then followed)."""
        tables = cls(
            KafkaTable(bootstrap, topics.player_keys, auth, name=f"{client}-keys"),
            KafkaTable(bootstrap, topics.profiles, auth, name=f"{client}-profiles"),
        )
        tables.keys.start()
        tables.sealed.start()
        return tables

    def stop(self) -> None:
        """Blocking (call it in a thread)."""
        self.keys.stop()
        self.sealed.stop()

    async def wait_ready(self, timeout_s: float) -> bool:
        """Whether both tables have read what their topics held when they started."""
        done = [asyncio.to_thread(t.ready.wait, timeout_s) for t in (self.keys, self.sealed)]
        return all(await asyncio.gather(*done))

    def key(self, player: str) -> bytes | None:
        return profiles.key_of(self.keys.get(player))

    def erased(self, player: str) -> bool:
        """A profile was written and no longer opens: the player was erased (or the key is lost)."""
        record = self.sealed.get(player)
        return record is not None and profiles.unseal(self.key(player), player, record) is None

    def profile(self, player: str) -> dict | None:
        """The player's opened profile (None: none, or erased)."""
        return profiles.unseal(self.key(player), player, self.sealed.get(player))

    def contact(self, player: str, endpoint_id: str) -> Contact:
        if self.erased(player):
            return Contact(None, erased=True)
        return Contact(profiles.contacts_of(self.profile(player)).get(endpoint_id))
