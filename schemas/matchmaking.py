"""Finding an opponent: the records of the lobby (seeks and pools), folded by the pure matchmaking
decider (`games.matchmaking`, docs/matchmaking.md).

A lobby record is what a player (through the gateway) or the matchmaker service submits; a lobby
result is the decider's answer to it, with the events it produced. Every time is a record's `at`:
the decider has no clock of its own. Ratings are those the gateway read when the record was made,
so the fold never reads a rating store.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import Field, StrictInt, model_validator

from .base import Event, EventId, GameName, MatchId, PlayerId, RulesName, Seat, Strict, Timestamp, Version
from .lifecycle import AnyClock
from .records import Source

#: The player id of the matchmaker service: it sends the ticks and creates the matches it makes.
MATCHMAKER = "plylog-matchmaker"

Rating = Annotated[StrictInt, Field(ge=0, le=4000, description="the player's rating as the gateway read it")]
SeekId = Annotated[str, Field(pattern=r"^s-[0-9a-f]{20}$", description="given by the decider: `seek_opened`")]
EntryId = Annotated[str, Field(pattern=r"^p-[0-9a-f]{20}$", description="given by the decider: `pool_joined`")]
PoolId = Annotated[
    str, Field(max_length=80, description="the pool's name: game[/rules version]/clock[/options digest]")
]
MAX_TTL_S = 30 * 24 * 3600


# --- actions ------------------------------------------------------------------------------------------
class Seek(Strict):
    """Offer a game: anyone whose rating is within [rating_min, rating_max] may accept it."""

    type: Literal["seek"]
    game: GameName
    options: dict[str, Any] = Field(default_factory=dict, description="the game's options (checked by its rules)")
    clock: AnyClock | None = None
    rating: Rating
    rating_min: Rating | None = Field(default=None, description="the lowest rating that may accept; null: any")
    rating_max: Rating | None = Field(default=None, description="the highest rating that may accept; null: any")
    seat: Seat | None = Field(default=None, description="the seat the seeker takes; null: drawn")
    rules: RulesName | None = Field(
        default=None,
        description="the rules version of the match it makes (`strands/2`; the gateway states the version in "
        "force); absent: version 1 without a receipt chain, as every lobby record before versions existed",
    )
    ttl_s: StrictInt | None = Field(
        default=None, ge=1, le=MAX_TTL_S, description="the seek expires this long after its `at` (default: a day)"
    )

    @model_validator(mode="after")
    def _range(self) -> Seek:
        if self.rating_min is not None and self.rating_max is not None and self.rating_min > self.rating_max:
            raise ValueError(f"rating_min {self.rating_min} is above rating_max {self.rating_max}")
        return self


class AcceptSeek(Strict):
    type: Literal["accept_seek"]
    seek_id: SeekId
    rating: Rating


class CancelSeek(Strict):
    type: Literal["cancel_seek"]
    seek_id: SeekId


class JoinPool(Strict):
    """Wait in the pool of a game, options and clock until the matchmaker pairs you."""

    type: Literal["join_pool"]
    game: GameName
    options: dict[str, Any] = Field(default_factory=dict)
    clock: AnyClock | None = None
    rating: Rating
    ttl_s: StrictInt | None = Field(
        default=None, ge=1, le=MAX_TTL_S, description="leave the pool this long after `at` (default: a day)"
    )
    rules: RulesName | None = Field(
        default=None,
        description="the rules version of the matches it makes; only entries stating the same version pair "
        "(`strands/2`; the gateway states the version in force); absent: version 1 without a receipt chain, "
        "as every lobby record before versions existed",
    )
    bot: PlayerId | None = Field(default=None, description="a bot (e.g. bot:mcts-2) that may take the other seat")
    bot_after_s: StrictInt | None = Field(
        default=None, ge=0, le=MAX_TTL_S, description="how long to wait for a person before the bot plays"
    )

    @model_validator(mode="after")
    def _bot_with_wait(self) -> JoinPool:
        if (self.bot is None) != (self.bot_after_s is None):
            raise ValueError("give both bot and bot_after_s, or neither")
        return self


class LeavePool(Strict):
    type: Literal["leave_pool"]


class Tick(Strict):
    """The matchmaker's: time passes (to the record's `at`), windows widen, pairs are made."""

    type: Literal["tick"]


# One of the actions, told apart by `type`: a static Union, so that mypy and pydantic read the same type.
LobbyAction: TypeAlias = Annotated[
    Seek | AcceptSeek | CancelSeek | JoinPool | LeavePool | Tick, Field(discriminator="type")
]
LOBBY_ACTIONS: tuple[type[Strict], ...] = get_args(get_args(LobbyAction)[0])


class LobbyRecord(Strict):
    """One submission to the lobby (one topic, one partition: the lobby is one fold)."""

    v: Version = 1
    event_id: EventId
    player: PlayerId
    at: Timestamp
    action: LobbyAction


# --- events -------------------------------------------------------------------------------------------
class SeekOpened(Event):
    type: Literal["seek_opened"]
    seek_id: SeekId
    player: PlayerId
    game: GameName
    options: dict[str, Any]
    clock: AnyClock | None
    rating: Rating
    rating_min: Rating | None
    rating_max: Rating | None
    seat: Seat | None
    expires_at: Timestamp
    at: Timestamp
    rules: RulesName | None = Field(default=None, description="present only when the record stated its rules version")


class SeekAccepted(Event):
    type: Literal["seek_accepted"]
    seek_id: SeekId
    player: PlayerId = Field(description="who accepted it")
    rating: Rating
    at: Timestamp


class SeekClosed(Event):
    type: Literal["seek_closed"]
    seek_id: SeekId
    reason: Literal["cancelled", "expired"]
    at: Timestamp


class PoolJoined(Event):
    type: Literal["pool_joined"]
    entry_id: EntryId
    pool_id: PoolId
    player: PlayerId
    game: GameName
    options: dict[str, Any]
    clock: AnyClock | None
    rating: Rating
    bot: PlayerId | None
    bot_after_s: int | None
    expires_at: Timestamp
    at: Timestamp
    rules: RulesName | None = Field(default=None, description="present only when the record stated its rules version")


class PoolLeft(Event):
    type: Literal["pool_left"]
    entry_id: EntryId
    pool_id: PoolId
    player: PlayerId
    reason: Literal["left", "expired"]
    at: Timestamp


class MatchMade(Event):
    """A pairing: the matchmaker service writes the create move record `games.matchmaking.create_record`
    derives from it (event id `create_event_id`), so a service that makes it again creates nothing twice."""

    type: Literal["match_made"]
    match_id: MatchId
    create_event_id: EventId
    via: Literal["seek", "pool", "bot"]
    seek_id: SeekId | None = Field(description="via seek: the seek accepted")
    pool_id: PoolId | None = Field(description="via pool or bot: the pool")
    entries: list[EntryId | None] = Field(description="via pool or bot: the pool entries paired, by seat")
    seats: list[PlayerId] = Field(min_length=2, max_length=2)
    ratings: list[Rating | None] = Field(min_length=2, max_length=2, description="null for a bot's seat")
    window: int | None = Field(description="via pool: the rating window the pair was within (both players')")
    game: GameName
    options: dict[str, Any]
    clock: AnyClock | None
    at: Timestamp
    rules: RulesName | None = Field(
        default=None, description="present only when the seek or the pool entries stated it; the create states it"
    )


LobbyEvent: TypeAlias = Annotated[
    SeekOpened | SeekAccepted | SeekClosed | PoolJoined | PoolLeft | MatchMade, Field(discriminator="type")
]
LOBBY_EVENTS: tuple[type[Event], ...] = get_args(get_args(LobbyEvent)[0])

LobbyRejectionCode = Literal[
    "malformed",
    "too_large",
    "not_matchmaker",
    "unknown_seek",
    "own_seek",
    "out_of_range",
    "not_yours",
    "too_many_seeks",
    "already_waiting",
    "not_waiting",
    "lobby_full",
    "illegal",
    "unknown_rules",
]
#: What each lobby rejection code means; the keys are exactly LobbyRejectionCode's values.
LOBBY_REJECTION_MEANINGS = {
    "malformed": "not a usable lobby record: not JSON, an unknown or ill-typed field, an unknown action type, "
    "or game options the game does not accept",
    "too_large": "the record is larger than the record limit",
    "not_matchmaker": "a tick from anyone but the matchmaker service",
    "unknown_seek": "no open seek has this id (never opened, accepted, cancelled or expired)",
    "own_seek": "a player accepting their own seek",
    "out_of_range": "the accepting player's rating is outside the seek's rating range",
    "not_yours": "cancelling another player's seek",
    "too_many_seeks": "the player has the most open seeks a player may have",
    "already_waiting": "joining a pool while waiting in one",
    "not_waiting": "leaving a pool without waiting in one",
    "lobby_full": "the lobby holds the most seeks or pool entries it may hold",
    "illegal": "the game's rules refuse the options (the message says which rule)",
    "unknown_rules": "a seek or pool entry whose `rules` names another game, or a version of its game that does "
    "not exist",
}


class LobbyReason(Strict):
    code: LobbyRejectionCode
    message: str


class LobbyResult(Strict):
    """The decider's answer to one lobby record."""

    v: Version = 1
    event_id: str | None
    player: str | None
    status: Literal["accepted", "rejected"]
    duplicate: bool = False
    events: list[LobbyEvent] = Field(description="what the record made happen, in order; [] unless accepted")
    at: str | None
    source: Source | None = None
    reason: LobbyReason | None = None
