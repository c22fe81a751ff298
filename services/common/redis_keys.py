"""The Redis layout of plylog's projection: every key name in one place.

The projector writes these keys (from `plylog.results` and `plylog.outcomes`); the gateway, the
CLI and the timekeeper read them. All keys start with a prefix (`PLYLOG_REDIS_PREFIX`, default
"plylog:"), so several installations can share one Redis. Every value is derived from the
records alone (times come from the records' `at`, never from a clock), so a rebuild from the
topics gives identical keys and values.

key                                   type    content
------------------------------------  ------  -------------------------------------------------------
{p}match:{id}                         hash    seq, status (waiting|active|over), game, seats (JSON),
                                              view (JSON, the public view of the result with the highest
                                              seq), updated_at (`at` of that result), created_at,
                                              started_at, ended_at, outcome (JSON); absent = null
{p}match:{id}:log                     zset    score = seq, member = JSON {"seq","event_id","player","at",
                                              "events","offset"} of each accepted result (time travel, SSE
                                              resume); offset: of its move on plylog.moves, when known
{p}match:{id}:outcome                 string  JSON {"match_id","game","players","outcome","rated","ratings"}
                                              once the outcome record is applied; "ratings" (rated only)
                                              = [{"player","before","after"}], each {"rating","rd","volatility"}
{p}matches:active                     zset    match ids of started, unfinished matches; score = last update (ms)
{p}matches:open                       zset    matches waiting for a seat; score = created (ms)
{p}matches:recent                     zset    finished matches, the latest 1000; score = ended (ms)
{p}matches:{game}:active|open|recent  zset    the same, per game
{p}deadlines                          zset    running clocks: member = match id, score = the epoch ms at
                                              which the seat to move runs out (view clock: since_ms +
                                              remaining_ms of the seat to move, the earliest if several);
                                              absent when no clock runs or the match is over
{p}player:{player}                    hash    per game: {game}:played, :wins, :losses, :draws, :rating,
                                              :rd, :volatility (floats as Python repr); rated matches only
                                              (not aborted, not hot seat); absent = never played rated
{p}lb:{game}:rating|wins|played       zset    leaderboards: member = player, score = the value; every
                                              rated player (TOP 20 = ZREVRANGE 0 19 WITHSCORES)
{p}activity:{game}:{YYYY-MM-DD}       hash    started, finished, moves: accepted results that day (UTC day
                                              of `at`) with match_started / match_ended / a game event
{p}totals:{game}                      hash    started, finished, moves over all days
{p}offsets:{consumer}                 hash    "{topic}:{partition}" -> next offset to read; written by the
                                              same atomic script as the writes it covers
{p}live:{id}                          pubsub  every result record of the match (accepted, duplicate,
                                              rejected; the wire bytes) published by the script that
                                              applies it, so a subscriber sees only applied results

Ratings: Glicko-2, one rating period per rated outcome (see services/projector/glicko2.py).

Not projected (the gateway's own working state, not derived from the records; `plylog rebuild`
and the projection dump leave these families alone, see NOT_PROJECTED):
{p}ratelimit:{player}                 hash    token bucket of the player's actions: tokens, updated (ms)
{p}ratelimit-address:{address}        hash    token bucket of a client address's creates, joins and new
                                              identities
{p}bots:available                     hash    bot id -> JSON {"games", "description", "instance", "seen_ms"}:
                                              the bots a running bot service plays (refreshed every few s)
{p}bots:disabled                      set     bot ids an operator turned off (`plylog bots disable ID`)
"""
from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_PREFIX = "plylog:"
LEADERBOARDS = ("rating", "wins", "played")
MATCH_LISTS = ("active", "open", "recent")
#: key families under the prefix that are not derived from the records (list every one here)
NOT_PROJECTED = ("ratelimit:", "ratelimit-address:", "bots:")


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

    def match_outcome(self, match_id: str) -> str:
        return f"{self.prefix}match:{match_id}:outcome"

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

    def ratelimit_address(self, address: str) -> str:
        return f"{self.prefix}ratelimit-address:{address}"

    @property
    def bots_available(self) -> str:
        return f"{self.prefix}bots:available"

    @property
    def bots_disabled(self) -> str:
        return f"{self.prefix}bots:disabled"

    @property
    def pattern(self) -> str:
        """Glob matching every key under the prefix (filter with `projected`)."""
        return f"{self.prefix}*"

    @property
    def not_projected(self) -> tuple[str, ...]:
        """Prefixes of the key families that are not part of the projection."""
        return tuple(self.prefix + family for family in NOT_PROJECTED)

    def projected(self, key: str) -> bool:
        """True for a key of the projection (under the prefix and not in NOT_PROJECTED)."""
        return key.startswith(self.prefix) and not key.startswith(self.not_projected)
