"""Which bots can be played against: the bot services announce the bots they play in Redis
(`{p}bots:available`, refreshed every few seconds), an operator may turn some off
(`{p}bots:disabled`); the gateway seats a `bot:<id>` only if it is announced, fresh and on."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import orjson

from .redis_keys import Keys

FRESH_MS = 30_000  # an announcement older than this: that bot service is gone


@dataclass(frozen=True)
class BotEntry:
    bot_id: str
    games: tuple[str, ...]
    description: str
    instance: str
    seen_ms: int
    enabled: bool

    @property
    def fresh(self) -> bool:
        return time.time() * 1000 - self.seen_ms < FRESH_MS

    @property
    def playable(self) -> bool:
        return self.fresh and self.enabled

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.bot_id,
            "player": f"bot:{self.bot_id}",
            "games": list(self.games),
            "description": self.description,
            "available": self.fresh,
            "enabled": self.enabled,
        }


async def announce(client: Any, keys: Keys, instance: str, bots: dict[str, tuple[tuple[str, ...], str]]) -> None:
    """Announce `bots` (id -> (games, description)) as played by `instance`, now."""
    now = int(time.time() * 1000)
    await client.hset(
        keys.bots_available,
        mapping={
            bot_id: orjson.dumps({"games": list(games), "description": text, "instance": instance, "seen_ms": now})
            for bot_id, (games, text) in bots.items()
        },
    )


async def entries(client: Any, keys: Keys) -> list[BotEntry]:
    available, disabled = await client.hgetall(keys.bots_available), await client.smembers(keys.bots_disabled)
    off = {_text(b) for b in disabled}
    out = []
    for bot_id, raw in sorted(available.items()):
        data = orjson.loads(raw)
        out.append(
            BotEntry(
                _text(bot_id),
                tuple(data["games"]),
                data["description"],
                data["instance"],
                int(data["seen_ms"]),
                _text(bot_id) not in off,
            )
        )
    return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else value
