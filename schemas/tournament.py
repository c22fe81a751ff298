"""Tournament records: what goes on a tournament's log (keyed by tournament_id), the events the
tournament decider emits, and the result record it answers each record with (docs/tournaments.md).

A tournament's only inputs are its records: time comes from each record's `at` (a `tick` record
carries nothing else), ratings from `register`, match results from `match_ended`. Nothing is
random; ties are broken by rating, then player id.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import Field, StrictBool, StrictInt, StringConstraints

from .base import EventId, GameName, MatchId, PlayerId, RulesName, Seat, Strict, Timestamp, Version
from .lifecycle import AnyClock, Outcome
from .records import Source

#: Tournament ids: the match id alphabet, shorter, so the ids of its matches (`<id>-r<round>b<board>`,
#: and `g<game>` for a replay) and of their create records (`<match id>:create`) fit their grammars.
TOURNAMENT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,40}$"
TournamentId = Annotated[str, StringConstraints(pattern=TOURNAMENT_ID_PATTERN)]
#: The player id the tournament service writes records as (ticks, joins and outcomes fed back).
DIRECTOR = "plylog-tournaments"

Format = Literal["swiss", "round_robin", "knockout", "arena"]
FORMATS: tuple[str, ...] = ("swiss", "round_robin", "knockout", "arena")

TournamentRejectionCode = Literal[
    "malformed",
    "too_large",
    "unknown_tournament",
    "tournament_exists",
    "forbidden",
    "illegal",
    "registration_closed",
    "full",
    "already_registered",
    "not_registered",
    "bots_not_allowed",
    "already_started",
    "unknown_pairing",
    "already_decided",
    "tournament_over",
    "unknown_rules",
]
# What each code means; the keys are exactly TournamentRejectionCode's values (tested).
TOURNAMENT_REJECTION_MEANINGS = {
    "malformed": "not a usable tournament record: not JSON, not an object, an unknown or ill-typed field, "
    "an unknown action type, or a key that is not the tournament_id",
    "too_large": "the record is larger than 64 KiB",
    "unknown_tournament": "no tournament with this id exists (create it first)",
    "tournament_exists": "a create for a tournament_id that already exists",
    "forbidden": "the actor may not do this: register or withdraw someone else, start a tournament it did not "
    "create, or write what only the tournament service writes (tick, match_joined, match_ended)",
    "illegal": "settings that do not fit the format or the game (the message says which)",
    "registration_closed": "a register after the start of a format without late entry",
    "full": "a register when the tournament has max_players active entrants",
    "already_registered": "a register by a player who is entered and has not left",
    "not_registered": "a withdraw by a player who is not entered, or has left already",
    "bots_not_allowed": "a bot registers for a tournament created without bots_allowed",
    "already_started": "a start for a tournament that has started",
    "unknown_pairing": "match_joined or match_ended for a match that is not one of the tournament's pairings, "
    "or whose players differ from the pairing's",
    "already_decided": "match_joined or match_ended for a pairing already decided (by its outcome, a forfeit "
    "or a withdrawal)",
    "tournament_over": "the tournament has ended; it takes no more records",
    "unknown_rules": "a create whose `rules` names another game, or a version of its game that does not exist",
}


# --- actions ----------------------------------------------------------------------------------------
class CreateTournament(Strict):
    """A new tournament; `actor` becomes its creator (who may start it early)."""

    type: Literal["create"]
    name: str = Field(min_length=1, max_length=80)
    format: Format
    game: GameName
    options: dict[str, Any] = Field(default_factory=dict, description="the game's options, for every match")
    clock: AnyClock | None = Field(
        default=None,
        description="every match's clock, Fischer or correspondence: it decides a player who never comes or stops "
        "moving. The gateway refuses a create without one (422 illegal); the fold takes it (logs written before "
        "that rule), and then only forfeit_wait_s decides an absent player",
    )
    starts_at: Timestamp = Field(description="registration closes (except late entry) and round 1 is paired")
    rules: RulesName | None = Field(
        default=None,
        description="the rules version every match is played under (`strands/2`; the gateway states the version "
        "in force); absent: version 1 without a receipt chain, as every tournament before versions existed",
    )
    rated: StrictBool = True
    bots_allowed: StrictBool = False
    max_players: StrictInt = Field(default=64, ge=2, le=256)
    forfeit_wait_s: StrictInt = Field(
        default=120, ge=10, le=86_400, description="a pairing whose match has not started by then is forfeited"
    )
    rounds: StrictInt | None = Field(default=None, ge=1, le=30, description="swiss only, and required there")
    cycles: StrictInt = Field(default=1, ge=1, le=2, description="round_robin: 2 plays everyone twice")
    round_pause_s: StrictInt = Field(
        default=0, ge=0, le=86_400, description="swiss, round_robin, knockout: wait after a round"
    )
    duration_s: StrictInt | None = Field(default=None, ge=60, le=86_400, description="arena only, and required there")
    pairing_interval_s: StrictInt = Field(default=5, ge=1, le=600, description="arena: seconds between pairing waves")
    draw_replays: StrictInt = Field(
        default=1, ge=0, le=5, description="knockout: a drawn game is replayed (seats swapped) this many times"
    )


class Register(Strict):
    """Enter `player` (default: the actor); the tournament service fills in `rating` and `bot`."""

    type: Literal["register"]
    player: PlayerId | None = None
    rating: StrictInt = Field(default=1500, ge=0, le=5000)
    bot: StrictBool = False


class Withdraw(Strict):
    type: Literal["withdraw"]
    player: PlayerId | None = None


class Start(Strict):
    """Start now, before `starts_at` (the creator or the tournament service)."""

    type: Literal["start"]


class Tick(Strict):
    """Time passes: the record's `at` is now (the service writes one when `wake_at` says)."""

    type: Literal["tick"]


class MatchJoined(Strict):
    """A paired player took their seat (fed back from the match's results)."""

    type: Literal["match_joined"]
    match_id: MatchId
    player: PlayerId


class MatchEnded(Strict):
    """A paired match ended (fed back from `plylog.outcomes`)."""

    type: Literal["match_ended"]
    match_id: MatchId
    players: list[PlayerId | None] = Field(min_length=2, max_length=2)
    outcome: Outcome
    aborted_by: PlayerId | None = Field(default=None, description="who aborted, for an `aborted` outcome")


# One of the actions, told apart by `type`: a static Union, so that mypy and pydantic read the same type.
TournamentAction: TypeAlias = Annotated[
    CreateTournament | Register | Withdraw | Start | Tick | MatchJoined | MatchEnded, Field(discriminator="type")
]
TOURNAMENT_ACTIONS: tuple[type[Strict], ...] = get_args(get_args(TournamentAction)[0])


class TournamentRecord(Strict):
    """One record on a tournament's log; the source of truth."""

    v: Version = 1
    event_id: EventId
    tournament_id: TournamentId
    actor: PlayerId
    at: Timestamp
    action: TournamentAction


# --- events -----------------------------------------------------------------------------------------
class Settings(Strict):
    """A tournament's settings, every default filled in; the game options as given (the game checked
    them), since every match's create carries them."""

    name: str
    format: Format
    game: GameName
    options: dict[str, Any]
    clock: AnyClock | None
    starts_at: Timestamp
    rules: RulesName | None = Field(default=None, description="present only when the create stated it")
    rated: bool
    bots_allowed: bool
    max_players: int
    forfeit_wait_s: int
    rounds: int | None
    cycles: int
    round_pause_s: int
    duration_s: int | None
    pairing_interval_s: int
    draw_replays: int


class TournamentCreated(Strict):
    type: Literal["tournament_created"]
    tournament_id: str
    settings: Settings
    created_by: PlayerId
    at: Timestamp


class PlayerRegistered(Strict):
    type: Literal["player_registered"]
    player: PlayerId
    rating: int
    bot: bool
    at: Timestamp


class PlayerWithdrew(Strict):
    type: Literal["player_withdrew"]
    player: PlayerId
    absent: bool = Field(description="true: withdrawn for missing a pairing, not by request")
    at: Timestamp


class TournamentStarted(Strict):
    type: Literal["tournament_started"]
    seeds: list[PlayerId] = Field(description="the entrants by rating (then id): seed 1 first")
    at: Timestamp


class PairingOut(Strict):
    """One pairing: a match to create, `match_id` and its create's `event_id` derived from it."""

    round: int
    board: int
    game: int = Field(description="1, or the replay number of a drawn knockout game")
    match_id: MatchId
    event_id: EventId
    seats: list[PlayerId] = Field(min_length=2, max_length=2)


class ByeOut(Strict):
    player: PlayerId
    points: int


class RoundPaired(Strict):
    type: Literal["round_paired"]
    round: int = Field(description="the round; in an arena, the pairing wave")
    pairings: list[PairingOut]
    byes: list[ByeOut]
    at: Timestamp


class PairingJoined(Strict):
    type: Literal["pairing_joined"]
    match_id: MatchId
    player: PlayerId


How = Literal["played", "forfeit", "double_forfeit", "withdrawal"]


class PairingDecided(Strict):
    type: Literal["pairing_decided"]
    match_id: MatchId
    winner: Seat | None
    how: How
    reason: str = Field(description="the match's end reason, or why it was forfeited")
    points: list[int] = Field(min_length=2, max_length=2, description="per seat, in the format's points")
    streaks: list[int] | None = Field(default=None, description="arena: each seat's win streak after the game")
    absent: list[PlayerId] = Field(default_factory=list, description="who never took their seat: withdrawn as absent")
    at: Timestamp


class RoundEnded(Strict):
    type: Literal["round_ended"]
    round: int
    advanced: list[PlayerId | None] | None = Field(
        default=None, description="knockout: who holds each slot of the next round (null: nobody)"
    )
    at: Timestamp


class TournamentEnded(Strict):
    type: Literal["tournament_ended"]
    reason: Literal["completed", "exhausted", "not_enough_players"] = Field(
        description="exhausted: a Swiss ended early, every pairing left would be a rematch"
    )
    winner: PlayerId | None
    at: Timestamp


TournamentEvent: TypeAlias = Annotated[
    TournamentCreated
    | PlayerRegistered
    | PlayerWithdrew
    | TournamentStarted
    | RoundPaired
    | PairingJoined
    | PairingDecided
    | RoundEnded
    | TournamentEnded,
    Field(discriminator="type"),
]
TOURNAMENT_EVENTS: tuple[type[Strict], ...] = get_args(get_args(TournamentEvent)[0])


# --- results ----------------------------------------------------------------------------------------
class TournamentReason(Strict):
    code: TournamentRejectionCode
    message: str


class TournamentResultRecord(Strict):
    """One result per tournament record, like a match's result record."""

    v: Version = 1
    event_id: str | None
    tournament_id: str | None
    actor: str | None
    status: Literal["accepted", "rejected"]
    seq: int = Field(ge=0, description="accepted records of the tournament so far")
    duplicate: bool = False
    events: list[TournamentEvent] = Field(description="[] unless accepted and not a duplicate")
    at: str | None
    source: Source | None = None
    reason: TournamentReason | None = None
