"""Actions and events of the match lifecycle, shared by every game."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, StrictBool, StrictInt, ValidatorFunctionWrapHandler, WrapValidator

from .base import Action, Event, GameName, PlayerId, RulesName, Seat, Strict, Timestamp


class Clock(Strict):
    """A Fischer clock: `initial_s` per seat, `increment_s` added after each own action."""

    initial_s: float = Field(gt=0, le=7 * 24 * 3600)
    increment_s: float = Field(default=0, ge=0, le=24 * 3600)


def _whole_number(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be a whole number of days, not {value!r}")
    return value


#: The days a correspondence clock may give per move.
DAYS_PER_MOVE = (1, 2, 3, 5, 7, 14)
DaysPerMove = Annotated[Literal[1, 2, 3, 5, 7, 14], BeforeValidator(_whole_number)]
#: Most vacation days a correspondence match may give each player.
MAX_VACATION_DAYS = 30


class CorrespondenceClock(Strict):
    """Days per move (docs/correspondence.md): the seat to move has `days_per_move` days from the moment
    its turn began; each of its actions gives it the full days again (unused time is not kept). Each
    player may pause their own clock for up to `vacation_days` days in the match."""

    kind: Literal["correspondence"]
    days_per_move: DaysPerMove
    vacation_days: StrictInt = Field(
        default=7, ge=0, le=MAX_VACATION_DAYS, description="per player, for the whole match"
    )


def _one_kind(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A clock with a `kind` is a correspondence clock, any other a Fischer clock: validated as that
    one model, so its errors name its own fields (`clock.initial_s`), as before clocks had kinds."""
    if isinstance(value, (Clock, CorrespondenceClock)):
        return value
    if isinstance(value, dict) and "kind" in value:
        return CorrespondenceClock.model_validate(value)
    return Clock.model_validate(value)


#: A match's clock: a Fischer clock (no `kind`, as clocks always were) or a correspondence clock.
AnyClock = Annotated[Clock | CorrespondenceClock, WrapValidator(_one_kind)]


class Create(Action):
    type: Literal["create"]
    game: GameName
    seats: list[PlayerId | None] = Field(min_length=2, max_length=2)
    options: dict[str, Any] = Field(default_factory=dict)
    clock: AnyClock | None = None
    invited: list[PlayerId | None] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description="seats reserved for a named player, who takes it with `join` (the seat is null in `seats`); "
        "nobody else may join it",
    )
    rated: StrictBool = Field(
        default=True,
        description="false: the outcome is unrated (moves no rating); `match_created` then says `rated: false`",
    )
    rules: RulesName | None = Field(
        default=None,
        description="the rules version the match is played under for its whole life, e.g. `strands/2` (its game "
        "must be `game`); absent: version 1 as it always was, with no receipt chain. The gateway states the version "
        "in force (docs/evolving.md)",
    )


class Join(Action):
    type: Literal["join"]


class Resign(Action):
    type: Literal["resign"]


class Abort(Action):
    type: Literal["abort"]


class ClaimTimeout(Action):
    type: Literal["claim_timeout"]


class Vacation(Action):
    """Pause your clock (correspondence clocks only) for `days` days of your allowance in this match."""

    type: Literal["vacation"]
    days: StrictInt = Field(ge=1, le=MAX_VACATION_DAYS)


class EndVacation(Action):
    """Come back before your vacation ends: the whole days not begun go back to your allowance."""

    type: Literal["end_vacation"]


#: Why an operator ended a match that was not played out (a tournament pairing decided without it).
AdjudicationReason = Literal["withdrawal", "forfeit", "double_forfeit"]


class Adjudicate(Action):
    """End the match without playing it out (unrated), before its first game action (after it the match
    is played out, rated: refused `illegal`): only the tournament service (plylog-tournaments) may, in a
    match it created, when the match's pairing was decided without it."""

    type: Literal["adjudicate"]
    winner: Seat | None = Field(description="the seat that wins; null: nobody does")
    reason: AdjudicationReason


LIFECYCLE_ACTIONS = (Create, Join, Resign, Abort, ClaimTimeout, Vacation, EndVacation, Adjudicate)


# Why a match ended when the lifecycle ended it; each game adds its own reasons.
LifecycleEndReason = Literal["resign", "timeout", "aborted", "withdrawal", "forfeit", "double_forfeit"]


class Outcome(Strict):
    """How a match ended: each game's schema types `reason` and `scores` (e.g. `StrandsOutcome`)."""

    winner: Seat | None = Field(description="the winning seat; null for a draw or an aborted match")
    reason: str
    scores: Any = None


class MatchCreated(Event):
    type: Literal["match_created"]
    match_id: str
    game: GameName
    seats: list[PlayerId | None]
    options: dict[str, Any] = Field(description="the game's options with every default filled in")
    clock: AnyClock | None = None
    invited: list[PlayerId | None] | None = Field(default=None, description="present when the create reserved seats")
    rated: Literal[False] | None = Field(default=None, description="present (false) only when the create said so")
    rules: RulesName | None = Field(default=None, description="present only when the create stated its rules version")
    at: Timestamp


class SeatJoined(Event):
    type: Literal["seat_joined"]
    seat: Seat
    player: PlayerId


class MatchStarted(Event):
    type: Literal["match_started"]
    seats: list[PlayerId]
    at: Timestamp


class MatchEnded(Event):
    type: Literal["match_ended"]
    winner: Seat | None
    reason: str = Field(description="e.g. resign, timeout, aborted, draw, or the game's own reason")
    scores: Any = None
    rated: Literal[False] | None = Field(
        default=None, description="present (false) only when an operator adjudicated the match"
    )
    at: Timestamp


class VacationStarted(Event):
    type: Literal["vacation_started"]
    seat: Seat
    days: int = Field(ge=1, description="taken from the seat's vacation allowance in this match")
    until: Timestamp = Field(description="when the vacation ends by itself; the seat's clock is paused until then")
    at: Timestamp


class VacationEnded(Event):
    """A vacation ended early by `end_vacation` (one that runs to its `until` ends without an event)."""

    type: Literal["vacation_ended"]
    seat: Seat
    days_back: int = Field(ge=0, description="the whole days not begun, given back to the seat's allowance")
    at: Timestamp


LIFECYCLE_EVENTS = (MatchCreated, SeatJoined, MatchStarted, MatchEnded, VacationStarted, VacationEnded)
