"""The cap on a player's unfinished matches against bots (PLYLOG_BOT_MATCHES_PER_PLAYER): every bot
move costs the bot service CPU, and identities are free, so one player may keep at most so many
matches with a bot seat going at once. Counted against a player: a match with a bot seat that
they created (even one they sit out: bots against bots), and one they join where a bot holds a
seat. The operator's own creates (no `creator` named) are not counted; its creates for a named
creator are counted against that player.

Where the count lives: `{p}bot-matches:<player>` (redis_keys), a sorted set of the player's match
ids (score: when admitted, ms), kept by the gateways (not projected). A create or join takes its
place in one Lua call that drops the matches that are over, counts and adds at once, so concurrent
creates (on one gateway or many) cannot all pass a count that none has added to yet. The
projection says which matches are over: a match leaves the set once the projection shows it
`over`, or at once when its create or join is refused, or when the projection still does not
know it after GRACE_MS (a create that never got written or accepted). A count derived from the
projection alone would rebuild identically but lags the create by the rules worker and the
projector, so a burst of creates would all read the count before any was projected.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from .errors import ApiError
from .identity import Identity

BOT_PREFIX = "bot:"
GRACE_MS = 120_000  # longer than the longest wait of a create (60 s), then a match not projected is gone
KEY_TTL_MS = 7 * 24 * 3600 * 1000  # a player who makes no bot match for a week starts afresh

# KEYS: the player's set. ARGV: cap, match id, now (ms), ttl (ms), then match ids to drop.
# Returns {admitted 0|1, added 0|1, matches counted}.
_TAKE = """
for i = 5, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
local held = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return {1, 0, held} end
if held >= tonumber(ARGV[1]) then return {0, 0, held} end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1, 1, held + 1}
"""


def has_bot(seats: list[str | None]) -> bool:
    return any(isinstance(p, str) and p.startswith(BOT_PREFIX) for p in seats)


@dataclass(frozen=True)
class Place:
    """A match counted against a player; `added` when this request added it (and may take it back)."""

    key: str
    match_id: str
    added: bool


class BotMatchCap:
    def __init__(self, client, projection, cap: int):
        self.client, self.projection, self.cap = client, projection, cap
        self._take = client.register_script(_TAKE)

    async def take(self, player: str, match_id: str) -> Place:
        """Count `match_id` against `player`, or 429 when they have `cap` unfinished bot matches."""
        key = self.projection.keys.bot_matches(player)
        held = [
            (m.decode() if isinstance(m, bytes) else m, score)
            for m, score in await self.client.zrange(key, 0, -1, withscores=True)
        ]
        now = int(time.time() * 1000)
        gone = await self._gone(held, now)
        admitted, added, count = await self._take(keys=[key], args=[self.cap, match_id, now, KEY_TTL_MS, *gone])
        if not admitted:
            going = [m for m, _ in held if m not in gone]
            raise ApiError(
                429,
                "bot_match_limit",
                f"{player!r} has {count} unfinished matches against bots ({', '.join(going[:10])}), the "
                f"most one player may (PLYLOG_BOT_MATCHES_PER_PLAYER={self.cap}); finish or resign one first",
            )
        return Place(key, match_id, bool(added))

    async def for_create(
        self, identity: Identity, creator: str | None, seats: list[str | None], match_id: str
    ) -> Place | None:
        """A create with a bot seat counts against its creator (none: the operator's own)."""
        player = creator if identity.operator else identity.player
        return await self.take(player, match_id) if player is not None and has_bot(seats) else None

    async def for_join(self, player: str, match_id: str, seats: list[str | None] | None) -> Place | None:
        """A join into a match where a bot holds a seat counts against the joining player."""
        return await self.take(player, match_id) if has_bot(seats or []) else None

    async def submitted(self, place: Place | None, submitting: Awaitable[dict[str, Any] | None]) -> Any:
        """The result of the create or join; a refused one no longer counts. (One that failed or is
        pending still does, until GRACE_MS shows it was never written.)"""
        result = await submitting
        if result is not None and result["status"] != "accepted":
            await self.give_back(place)
        return result

    async def give_back(self, place: Place | None) -> None:
        """The create or join was refused (or not sent): the match no longer counts."""
        if place is not None and place.added:
            await self.client.zrem(place.key, place.match_id)

    async def _gone(self, held: list[tuple[str, float]], now: int) -> list[str]:
        """The held matches that no longer count: over, or never projected within GRACE_MS."""
        found = await asyncio.gather(*(self.projection.match_fields(m, "status") for m, _ in held))
        return [
            match_id
            for (match_id, admitted), fields in zip(held, found, strict=True)
            if (fields is None and now - admitted > GRACE_MS) or (fields is not None and fields.get("status") == "over")
        ]
