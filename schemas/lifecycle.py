"""Actions and events of the match lifecycle, shared by every game."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Action, Event, GameName, PlayerId, Seat, Strict, Timestamp


class Clock(Strict):
    """A Fischer clock: `initial_s` per seat, `increment_s` added after each own action."""

    initial_s: float = Field(gt=0, le=7 * 24 * 3600)
    increment_s: float = Field(default=0, ge=0, le=24 * 3600)


class Create(Action):
    type: Literal["create"]
    game: GameName
    seats: list[PlayerId | None] = Field(min_length=2, max_length=2)
    options: dict[str, Any] = Field(default_factory=dict)
    clock: Clock | None = None
    invited: list[PlayerId | None] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description="seats reserved for a named player, who takes it with `join` (the seat is null in `seats`); "
        "nobody else may join it",
    )


class Join(Action):
    type: Literal["join"]


class Resign(Action):
    type: Literal["resign"]


class Abort(Action):
    type: Literal["abort"]


class ClaimTimeout(Action):
    type: Literal["claim_timeout"]


LIFECYCLE_ACTIONS = (Create, Join, Resign, Abort, ClaimTimeout)


# Why a match ended when the lifecycle ended it; each game adds its own reasons.
LifecycleEndReason = Literal["resign", "timeout", "aborted"]


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
    clock: Clock | None = None
    invited: list[PlayerId | None] | None = Field(default=None, description="present when the create reserved seats")
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
    at: Timestamp


LIFECYCLE_EVENTS = (MatchCreated, SeatJoined, MatchStarted, MatchEnded)
