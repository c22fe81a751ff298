"""The READ side of the projection: what the projector wrote into Redis (layout:
`services.common.redis_keys`), as plain JSON-ready values.

Used by the gateway (and anything else that serves views). Async (redis.asyncio, one Redis or
a Redis Cluster); every method is one round trip (a pipeline, or a MULTI on one match's keys
where consistency matters) and never writes. Values are decoded here, once: JSON fields become
objects, counters become ints. Families kept per partition (match lists, deadlines, activity,
totals: see redis_keys) are read from every partition and merged here.
"""

from __future__ import annotations

import asyncio
import heapq
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import orjson

from .redis_client import AsyncClient
from .redis_keys import LEADERBOARDS, MATCH_LISTS, Keys

#: hash fields of `{p}match:{id}` that hold JSON
_JSON_FIELDS = ("seats", "view", "outcome")
_INT_FIELDS = ("seq",)
#: the fields a match list shows per match (everything but the full view)
# HMGET of ARGV's fields from every key of KEYS (one hash slot), flat; a missing value is nil.
_HMGET_ALL = """
local out, width = {}, #ARGV
for i, key in ipairs(KEYS) do
  local values = redis.call('HMGET', key, unpack(ARGV))
  for j = 1, width do out[(i - 1) * width + j] = values[j] end
end
return out
"""
SUMMARY_FIELDS = ("game", "status", "seq", "seats", "created_at", "started_at", "ended_at", "outcome")
ACTIVITY_FIELDS = ("started", "finished", "moves")
TOTALS_FIELDS = ("started", "finished", "moves")


@dataclass(frozen=True)
class LogIndex:
    """The first and last entries of a match's log: (seq, event id, moves offset or None) each,
    None when the log is empty."""

    first: tuple[int, str, int | None] | None
    last: tuple[int, str, int | None] | None

    @property
    def first_offset(self) -> int | None:
        return self.first[2] if self.first else None

    @property
    def last_offset(self) -> int | None:
        return self.last[2] if self.last else None


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def _number(value: Any) -> int | float:
    """A Redis counter or score as int when whole, else float (ratings)."""
    number = float(_text(value))
    return int(number) if number.is_integer() else number


def _decode_match(fields: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, raw in fields.items():
        name, raw = _text(name), _text(raw)
        if raw is None:
            out[name] = None
        elif name in _JSON_FIELDS:
            out[name] = orjson.loads(raw) if raw else None
        elif name in _INT_FIELDS:
            out[name] = int(raw)
        else:
            out[name] = raw
    return out


class Projection:
    """Read access to one installation's projection (one key prefix) in Redis."""

    def __init__(self, client: AsyncClient, keys: Keys):
        self.client = client
        self.keys = keys
        self._hmget_all = None  # the script of `activity`, registered on first use

    # --- matches -----------------------------------------------------------------------------------
    async def match(self, match_id: str) -> dict[str, Any] | None:
        """The match hash (view, seats, status, seq, times, outcome), or None if unknown."""
        fields = await self.client.hgetall(self.keys.match(match_id))
        return _decode_match(fields) if fields else None

    async def match_fields(self, match_id: str, *names: str) -> dict[str, Any] | None:
        """Some fields of the match hash (None if the match is unknown)."""
        values = await self.client.hmget(self.keys.match(match_id), ["game", *names])
        if values[0] is None:
            return None
        return _decode_match(dict(zip(["game", *names], values, strict=False)))

    async def log_since(self, match_id: str, after_seq: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        """Accepted results of the match with seq > after_seq, in seq order: each
        {"seq", "event_id", "player", "at", "events"} (public events only)."""
        start, num = (0, limit) if limit is not None else (None, None)
        members = await self.client.zrangebyscore(
            self.keys.match_log(match_id), f"({after_seq}", "+inf", start=start, num=num
        )
        return [orjson.loads(m) for m in members]

    async def log_since_raw(self, match_id: str, after_seq: int, limit: int) -> list[bytes]:
        """`log_since` as the JSON bytes stored, undecoded (what GET /events answers with)."""
        return await self.client.zrangebyscore(
            self.keys.match_log(match_id), f"({after_seq}", "+inf", start=0, num=limit
        )

    async def log_since_with_view(self, match_id: str, after_seq: int) -> tuple[list[dict[str, Any]], dict | None, int]:
        """(log entries after `after_seq`, the current view, its seq) read atomically (MULTI), so the
        view belongs to the last entry: the snapshot an SSE stream resumes from."""
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zrangebyscore(self.keys.match_log(match_id), f"({after_seq}", "+inf")
            pipe.hmget(self.keys.match(match_id), ["view", "seq"])
            members, (view, seq) = await pipe.execute()
        return (
            [orjson.loads(m) for m in members],
            orjson.loads(view) if view else None,
            int(seq) if seq is not None else 0,
        )

    async def log_index(self, match_id: str) -> LogIndex:
        """Where the match's accepted records are: its first and last log entries (two entries
        whatever the match's length: a refold reads this before every first fold of a match)."""
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zrange(self.keys.match_log(match_id), 0, 0)
            pipe.zrange(self.keys.match_log(match_id), -1, -1)
            first, last = await pipe.execute()

        def entry(members: list) -> tuple[int, str, int | None] | None:
            if not members:
                return None
            data = orjson.loads(members[0])
            return data["seq"], data["event_id"], data.get("offset")

        return LogIndex(entry(first), entry(last))

    async def match_list(
        self, which: str, game: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        """Newest first: open (waiting for a seat), active or recent (finished) matches."""
        if which not in MATCH_LISTS:
            raise ValueError(f"unknown match list {which!r}; one of {', '.join(MATCH_LISTS)}")
        async with self.client.pipeline(transaction=False) as pipe:
            for partition in self.keys.all_partitions():
                pipe.zrevrange(self.keys.matches(which, game, partition), 0, offset + limit - 1, withscores=True)
            per_partition = await pipe.execute()
        newest = heapq.merge(*per_partition, key=lambda row: (row[1], row[0]), reverse=True)  # as ZREVRANGE orders
        ids = list(newest)[offset : offset + limit]
        if not ids:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for match_id, _ in ids:
                pipe.hmget(self.keys.match(_text(match_id)), list(SUMMARY_FIELDS))
            rows = await pipe.execute()
        out = []
        for (match_id, score), values in zip(ids, rows, strict=False):
            if values[0] is None:
                continue  # listed but its hash is gone (a rebuild in progress)
            summary = _decode_match(dict(zip(SUMMARY_FIELDS, values, strict=False)))
            out.append({"match_id": _text(match_id), "updated_ms": int(score), **summary})
        return out

    async def player_matches(self, player: str, limit: int = 200) -> list[dict[str, Any]]:
        """The player's unfinished matches ("my games"), each with its view, latest update first."""
        async with self.client.pipeline(transaction=False) as pipe:
            for partition in self.keys.all_partitions():
                pipe.zrevrange(self.keys.player_matches(player, partition), 0, limit - 1, withscores=True)
            per_partition = await pipe.execute()
        ids = list(heapq.merge(*per_partition, key=lambda row: (row[1], row[0]), reverse=True))[:limit]
        return await self._with_fields(ids, (*SUMMARY_FIELDS, "view"))

    async def player_recent(self, player: str, limit: int = 20) -> list[dict[str, Any]]:
        """The player's latest finished matches, the latest first."""
        ids = await self.client.zrevrange(self.keys.player_recent(player), 0, limit - 1, withscores=True)
        return await self._with_fields(ids, SUMMARY_FIELDS)

    async def rating_history(self, player: str, game: str, limit: int = 1000) -> list[dict[str, Any]]:
        """The player's rating after each rated outcome of `game`, oldest first (at most the latest `limit`)."""
        members = await self.client.zrange(self.keys.rating_history(player, game), -limit, -1)
        return [orjson.loads(m) for m in members]

    async def _with_fields(self, ids: list[tuple[Any, float]], fields: tuple[str, ...]) -> list[dict[str, Any]]:
        if not ids:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for match_id, _ in ids:
                pipe.hmget(self.keys.match(_text(match_id)), list(fields))
            rows = await pipe.execute()
        return [
            {
                "match_id": _text(match_id),
                "updated_ms": int(score),
                **_decode_match(dict(zip(fields, values, strict=False))),
            }
            for (match_id, score), values in zip(ids, rows, strict=False)
            if values[0] is not None
        ]

    # --- players, leaderboards, activity -------------------------------------------------------------
    async def leaderboard(self, game: str, by: str = "rating", limit: int = 20) -> list[dict[str, Any]]:
        if by not in LEADERBOARDS:
            raise ValueError(f"unknown leaderboard {by!r}; one of {', '.join(LEADERBOARDS)}")
        rows = await self.client.zrevrange(self.keys.leaderboard(game, by), 0, limit - 1, withscores=True)
        return [
            {"rank": rank, "player": _text(player), by: _number(score)}
            for rank, (player, score) in enumerate(rows, start=1)
        ]

    async def player(self, player: str) -> dict[str, dict[str, Any]] | None:
        """Per game: played, wins, losses, draws, rating, rd, volatility (None if never played)."""
        fields = await self.client.hgetall(self.keys.player(player))
        if not fields:
            return None
        games: dict[str, dict[str, Any]] = {}
        for name, value in fields.items():
            game, _, stat = _text(name).rpartition(":")
            if game:
                games.setdefault(game, {})[stat] = _number(value)
        return games

    async def activity(self, game: str, days: int = 14, today: date | None = None) -> dict[str, Any]:
        """The last `days` UTC days (oldest first, zeros included) and the all-time totals: one
        script call per partition (its day hashes and totals share the partition's hash slot), not
        a command per day and partition (366 days of 12 partitions were 4,392 commands)."""
        today = today or datetime.now(UTC).date()
        dates = [(today - timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]
        if self._hmget_all is None:
            self._hmget_all = self.client.register_script(_HMGET_ALL)
        per_partition = await asyncio.gather(
            *(
                self._hmget_all(
                    keys=[*(self.keys.activity(game, day, p) for day in dates), self.keys.totals(game, p)],
                    args=list(ACTIVITY_FIELDS),
                )
                for p in self.keys.all_partitions()
            )
        )
        width = len(ACTIVITY_FIELDS)
        per_day = [{"day": day, **{f: 0 for f in ACTIVITY_FIELDS}} for day in dates]
        totals = {f: 0 for f in TOTALS_FIELDS}
        for flat in per_partition:
            for at, entry in enumerate([*per_day, totals]):
                for name, value in zip(ACTIVITY_FIELDS, flat[at * width : (at + 1) * width], strict=False):
                    entry[name] += int(value or 0)
        return {"game": game, "days": per_day, "totals": totals}

    # --- the timekeeper's queue ------------------------------------------------------------------
    async def due_deadlines(self, now_ms: int, limit: int = 100, offset: int = 0) -> list[tuple[str, int]]:
        """(match id, deadline ms) of running clocks that ran out by `now_ms`, earliest first,
        skipping the first `offset` of them."""
        async with self.client.pipeline(transaction=False) as pipe:
            for partition in self.keys.all_partitions():
                pipe.zrangebyscore(
                    self.keys.deadlines(partition), "-inf", now_ms, start=0, num=offset + limit, withscores=True
                )
            per_partition = await pipe.execute()
        earliest = heapq.merge(*per_partition, key=lambda row: (row[1], row[0]))
        return [(_text(match_id), int(score)) for match_id, score in list(earliest)[offset : offset + limit]]
