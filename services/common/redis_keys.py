"""The Redis layout of plylog's projection: every key name in one place.

The projector writes these keys (from `plylog.results` and `plylog.outcomes`); the gateway, the
CLI and the timekeeper read them. All keys start with a prefix (`PLYLOG_REDIS_PREFIX`, default
"plylog:"), so several installations can share one Redis. Every value is derived from the
records alone (times come from the records' `at`, never from a clock), so a rebuild from the
topics gives identical keys and values.

Hash slots (Redis Cluster). A Lua script and a MULTI may only touch keys of one hash slot, so
every key carries a hash tag (the part in braces decides the slot) that groups what one of the
projector's scripts writes. Below, <p> is the prefix, <id> a match id and so on; braces are
literal: {P} is the tag made of the partition's number, e.g. plylog:match:{3}:m-7f3a9c.
- {P} = the match's HOME PARTITION on plylog.moves (= the partition of its results,
  `services.common.kafka_partition.partition_of(match_id, partitions)`): every key of a match, and one
  key per partition of each family that is global (match lists, deadlines, activity, totals), plus
  the partition's stored offset (the fence). The projector runs one script per results partition
  per batch, writing that partition's keys and offset together; readers merge the partitions.
- {outcomes} = plylog.outcomes (one partition): players, leaderboards, outcome marks and that
  partition's offset, written by one script per batch.
The same keys and scripts serve a single Redis. Counters live in the same slot as the offset that
covers them, so a crash can never count a result twice.

Names cannot collide, whatever a record or a request contains: a match id is of the one grammar
(schemas.base.is_match_id: letters, digits, '_', '-'; no ':' that would make `M:log` name match
M's log, no braces), and `Keys` refuses any other (ValueError) before a key is named after it;
a player id or a client address (any text) is only ever the last part of a key of its own
family (player:, ratelimit:, ratelimit-address:), so it names that family's key and no other.

key                                   type    content
------------------------------------  ------  -------------------------------------------------------
<p>match:{P}:<id>                     hash    seq, status (waiting|active|over), game, seats (JSON),
                                              view (JSON, the public view of the result with the highest
                                              seq), updated_at (`at` of that result), created_at,
                                              started_at, ended_at, outcome (JSON); absent = null
<p>match:{P}:<id>:log                 zset    score = seq, member = JSON {"seq","event_id","player","at",
                                              "events","offset"} of each accepted result (time travel, SSE
                                              resume); offset: of its move on plylog.moves, when known
<p>matches:{P}:active                 zset    this partition's started, unfinished matches; score = last update (ms)
<p>matches:{P}:open                   zset    its matches waiting for a seat; score = created (ms)
<p>matches:{P}:recent                 zset    its finished matches, the latest 1000; score = ended (ms)
<p>matches:{P}:<game>:active|open|recent  zset  the same, per game (the lobby merges the partitions)
<p>deadlines:{P}                      zset    running clocks: member = match id, score = the epoch ms at
                                              which the seat to move runs out (view clock: since_ms +
                                              remaining_ms of the seat to move, the earliest if several);
                                              absent when no clock runs or the match is over
<p>activity:{P}:<game>:<YYYY-MM-DD>   hash    started, finished, moves: accepted results that day (UTC day
                                              of `at`) with match_started / match_ended / a game event
<p>totals:{P}:<game>                  hash    started, finished, moves over all days
<p>offsets:{P}:<consumer>             hash    "<results topic>:<P>" -> next offset to read; written by the
                                              same atomic script as the writes it covers
<p>outcome:{outcomes}:<id>            string  JSON {"match_id","game","players","outcome","rated","ratings"}
                                              once the outcome record is applied; "ratings" (rated only)
                                              = [{"player","before","after"}], each {"rating","rd","volatility"}
<p>player:{outcomes}:<player>         hash    per game: <game>:played, :wins, :losses, :draws, :rating,
                                              :rd, :volatility (floats as Python repr); rated matches only
                                              (not aborted, not hot seat); absent = never played rated
<p>lb:{outcomes}:<game>:rating|wins|played  zset  leaderboards: member = player, score = the value; every
                                              rated player (TOP 20 = ZREVRANGE 0 19 WITHSCORES)
<p>offsets:{outcomes}:<consumer>      hash    "<outcomes topic>:0" -> next offset to read
<p>live:<id>                          pubsub  every result record of the match (accepted, duplicate,
                                              rejected; the wire bytes) published by the script that
                                              applies it, so a subscriber sees only applied results (a
                                              channel, not a key: in a Redis Cluster a PUBLISH reaches
                                              the subscribers of every node)

Ratings: Glicko-2, one rating period per rated outcome (see services/projector/glicko2.py).

Not projected (the gateway's own working state, not derived from the records; `plylog rebuild`
and the projection dump leave these families alone, see NOT_PROJECTED):
<p>ratelimit:<player>                 hash    token bucket of the player's actions: tokens, updated (ms)
<p>ratelimit-address:<address>        hash    token bucket of a client address's creates, joins and new
                                              identities
<p>streams:<address>                  zset    leases of the address's open live streams (SSE streams and
                                              seat sockets), over all gateways: member = lease id
                                              "<gateway instance>:<n>", score = its expiry (ms, Redis
                                              TIME); one key per script call, so any hash slot
{p}bots:available                     hash    bot id -> JSON {"games", "description", "instance", "seen_ms"}:
                                              the bots a running bot service plays (refreshed every few s)
{p}bots:disabled                      set     bot ids an operator turned off (`plylog bots disable ID`)
<p>bot-matches:<player>               zset    the player's unfinished matches against bots, counted
                                              against PLYLOG_BOT_MATCHES_PER_PLAYER: member = match id,
                                              score = admitted (ms); dropped once the projection shows
                                              the match over (services/gateway/bot_cap.py)
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from schemas.base import MATCH_ID_RULE, is_match_id

from .kafka_partition import partition_of
from .settings import DEFAULT_PARTITIONS

DEFAULT_PREFIX = "plylog:"
#: the hash tag of everything folded from plylog.outcomes (one partition)
OUTCOMES = "outcomes"
Tag = int | str  # a results partition, or OUTCOMES
LEADERBOARDS = ("rating", "wins", "played")
MATCH_LISTS = ("active", "open", "recent")
#: key families under the prefix that are not derived from the records (list every one here)
NOT_PROJECTED = ("ratelimit:", "ratelimit-address:", "streams:", "bots:", "bot-matches:")


def prefix_from_env() -> str:
    return os.environ.get("PLYLOG_REDIS_PREFIX", DEFAULT_PREFIX)


def _check_match_id(match_id: str) -> None:
    """Key names hold match ids of the one grammar only: no ':' (`M:log` would name match M's log),
    no braces (hash tags), whatever a record or a request contains."""
    if not is_match_id(match_id):
        raise ValueError(f"{str(match_id)[:80]!r} is not a match id ({MATCH_ID_RULE}); no Redis key is named after it")


def home_partition(match_id: str, partitions: int) -> int:
    """The match's home partition (Kafka's default partitioner on the key): the hash tag of its keys."""
    return partition_of(match_id.encode(), partitions)


@dataclass(frozen=True)
class Keys:
    """Key names of one projection. `partitions` (of plylog.moves and plylog.results) tells
    readers a match's home partition and which per-partition keys to merge; writers name the
    partition of the record they apply."""

    prefix: str = DEFAULT_PREFIX
    partitions: int = DEFAULT_PARTITIONS

    def __post_init__(self) -> None:
        if "{" in self.prefix or "}" in self.prefix:
            raise ValueError(f"the Redis prefix {self.prefix!r} may not contain braces (they are hash tags)")

    def home(self, match_id: str) -> int:
        return home_partition(match_id, self.partitions)

    def all_partitions(self) -> range:
        return range(self.partitions)

    def _tag(self, partition: Tag) -> str:
        return f"{{{partition}}}"

    def match(self, match_id: str, partition: int | None = None) -> str:
        _check_match_id(match_id)
        part = self.home(match_id) if partition is None else partition
        return f"{self.prefix}match:{self._tag(part)}:{match_id}"

    def match_log(self, match_id: str, partition: int | None = None) -> str:
        return self.match(match_id, partition) + ":log"

    def matches(self, which: str, game: str | None, partition: int) -> str:
        assert which in MATCH_LISTS, which
        scope = "" if game is None else f"{game}:"
        return f"{self.prefix}matches:{self._tag(partition)}:{scope}{which}"

    def deadlines(self, partition: int) -> str:
        return f"{self.prefix}deadlines:{self._tag(partition)}"

    def activity(self, game: str, day: str, partition: int) -> str:
        return f"{self.prefix}activity:{self._tag(partition)}:{game}:{day}"

    def totals(self, game: str, partition: int) -> str:
        return f"{self.prefix}totals:{self._tag(partition)}:{game}"

    def offsets(self, consumer: str, tag: Tag) -> str:
        """The stored offsets of one results partition (tag = its number) or of plylog.outcomes
        (tag = OUTCOMES), in the slot of the keys they cover."""
        return f"{self.prefix}offsets:{self._tag(tag)}:{consumer}"

    def all_offsets(self, consumer: str) -> list[str]:
        return [self.offsets(consumer, p) for p in self.all_partitions()] + [self.offsets(consumer, OUTCOMES)]

    def player(self, player: str) -> str:
        return f"{self.prefix}player:{self._tag(OUTCOMES)}:{player}"

    def leaderboard(self, game: str, by: str) -> str:
        assert by in LEADERBOARDS, by
        return f"{self.prefix}lb:{self._tag(OUTCOMES)}:{game}:{by}"

    def match_outcome(self, match_id: str) -> str:
        _check_match_id(match_id)
        return f"{self.prefix}outcome:{self._tag(OUTCOMES)}:{match_id}"

    def live(self, match_id: str) -> str:
        return f"{self.prefix}live:{match_id}"

    @property
    def live_pattern(self) -> str:
        """Glob of every match's live channel (PSUBSCRIBE); `live_match_id` inverts a channel name."""
        return f"{self.prefix}live:*"

    def live_match_id(self, channel: str) -> str:
        return channel[len(self.prefix) + len("live:") :]

    def ratelimit(self, player: str) -> str:
        return f"{self.prefix}ratelimit:{player}"

    def ratelimit_address(self, address: str) -> str:
        return f"{self.prefix}ratelimit-address:{address}"

    def bot_matches(self, player: str) -> str:
        return f"{self.prefix}bot-matches:{player}"

    def streams(self, address: str) -> str:
        return f"{self.prefix}streams:{address}"

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
