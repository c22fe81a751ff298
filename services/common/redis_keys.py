"""The Redis layout of plylog's projection: every key name in one place.

The projector writes these keys (from `plylog.results` and `plylog.outcomes`); the gateway, the
CLI and the timekeeper read them. All keys start with a prefix (`PLYLOG_REDIS_PREFIX`, default
"plylog:"), so several installations can share one Redis. Every value is derived from the
records alone (times come from the records' `at`, never from a clock), so a rebuild from the
topics gives identical keys and values.

key                                   type    content
------------------------------------  ------  -------------------------------------------------------
{p}match:{id}                         hash    seq, status, game, seats (JSON), view (JSON, public),
                                              created_at, started_at, ended_at, outcome (JSON)
{p}match:{id}:log                     zset    score = seq, member = JSON {"seq","event_id","player","at",
                                              "events"} of each accepted result (time travel, SSE resume)
{p}matches:active                     zset    match ids of started, unfinished matches; score = last update (ms)
{p}matches:open                       zset    matches waiting for a seat; score = created (ms)
{p}matches:recent                     zset    finished matches; score = ended (ms)
{p}matches:{game}:active|open|recent  zset    the same, per game
{p}deadlines                          zset    running clocks: member = match id, score = the epoch ms at
                                              which the seat to move runs out (the timekeeper's queue)
{p}player:{player}                    hash    per game: {game}:played, :wins, :losses, :draws, :rating,
                                              :rd, :volatility (rated matches only count for rating)
{p}lb:{game}:rating|wins|played       zset    leaderboards: member = player, score = the value
{p}activity:{game}:{YYYY-MM-DD}       hash    started, finished, moves (accepted game results that day, UTC)
{p}totals:{game}                      hash    started, finished, moves, rejected
{p}offsets:{consumer}                 hash    "{topic}:{partition}" -> next offset to read; written in the
                                              same MULTI/EXEC as the writes it covers
{p}live:{id}                          pubsub  every result record of the match as it is applied (JSON)

Not projected (the gateway's own working state, not derived from the records):
{p}ratelimit:{player}                 hash    token bucket of the player's actions: tokens, updated (ms)
"""
from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_PREFIX = "plylog:"
LEADERBOARDS = ("rating", "wins", "played")
MATCH_LISTS = ("active", "open", "recent")


def prefix_from_env() -> str:
    return os.environ.get("PLYLOG_REDIS_PREFIX", DEFAULT_PREFIX)


@dataclass(frozen=True)
class Keys:
    prefix: str = DEFAULT_PREFIX

    def match(self, match_id: str) -> str:
        return f"{self.prefix}match:{match_id}"

    def match_log(self, match_id: str) -> str:
        return f"{self.prefix}match:{match_id}:log"

    def matches(self, which: str, game: str | None = None) -> str:
        assert which in MATCH_LISTS, which
        return f"{self.prefix}matches:{which}" if game is None else f"{self.prefix}matches:{game}:{which}"

    @property
    def deadlines(self) -> str:
        return f"{self.prefix}deadlines"

    def player(self, player: str) -> str:
        return f"{self.prefix}player:{player}"

    def leaderboard(self, game: str, by: str) -> str:
        assert by in LEADERBOARDS, by
        return f"{self.prefix}lb:{game}:{by}"

    def activity(self, game: str, day: str) -> str:
        return f"{self.prefix}activity:{game}:{day}"

    def totals(self, game: str) -> str:
        return f"{self.prefix}totals:{game}"

    def offsets(self, consumer: str) -> str:
        return f"{self.prefix}offsets:{consumer}"

    def live(self, match_id: str) -> str:
        return f"{self.prefix}live:{match_id}"

    @property
    def live_pattern(self) -> str:
        """Glob of every match's live channel (PSUBSCRIBE); `live_match_id` inverts a channel name."""
        return f"{self.prefix}live:*"

    def live_match_id(self, channel: str) -> str:
        return channel[len(self.prefix) + len("live:"):]

    def ratelimit(self, player: str) -> str:
        return f"{self.prefix}ratelimit:{player}"

    @property
    def pattern(self) -> str:
        """Glob matching every key of this projection (for dumps and rebuilds)."""
        return f"{self.prefix}*"
