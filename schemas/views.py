"""The public view of a match, as a result record's `view` carries it: `view(state, None)`.

`MatchView` holds the lifecycle keys every game's view has; each game's module subclasses
it with its `game` literal, its typed outcome and its own keys (`schemas/<game>.py`). Every
key of a view part is always present, `null` where it has no value: the JSON Schema lists
them all as required (exported in serialization mode), except `invited` and `rated` (SOMETIMES_PRESENT).
Unknown keys are an error, so the schema says exactly what the service sends (a consumer should
still ignore keys it does not know: the contract may add optional ones).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import GameName, MatchId, PlayerId, Seat, Timestamp
from .lifecycle import Outcome

#: Keys a view has only sometimes (so that views of other matches keep their bytes).
SOMETIMES_PRESENT = ("invited", "rated")


def _not_always_required(schema: dict[str, Any]) -> None:
    if "required" in schema:
        schema["required"] = [name for name in schema["required"] if name not in SOMETIMES_PRESENT]


VIEW_CONFIG = ConfigDict(
    extra="forbid",
    frozen=True,
    json_schema_serialization_defaults_required=True,
    json_schema_extra=_not_always_required,
)

Pair = list[int]


class ViewPart(BaseModel):
    """A part of a public view: every key always present, no other key."""

    model_config = VIEW_CONFIG


class ClockView(ViewPart):
    """A Fischer clock, in milliseconds."""

    initial_ms: int = Field(ge=1, description="time per seat at the start")
    increment_ms: int = Field(ge=0, description="added to a seat's time after each of its own actions")
    remaining_ms: Pair = Field(
        min_length=2,
        max_length=2,
        description="per seat, as of its last action (or the end); the running seat "
        "also spends the time since `since_ms`; negative once overstepped",
    )
    since_ms: int | None = Field(
        description="epoch milliseconds when the running seat's time started to run; "
        "null when no clock runs (not started, over)"
    )


class CorrespondenceClockView(ViewPart):
    """A correspondence clock (days per move), in milliseconds. `remaining_ms` and `since_ms` mean
    what they mean for a Fischer clock, so `since_ms + remaining_ms[seat to move]` is the deadline
    for either kind; this one names it (`deadline_ms`) and the seats' vacations."""

    kind: Literal["correspondence"]
    days_per_move: int = Field(ge=1, description="the full time a seat has for each of its moves, in days")
    remaining_ms: Pair = Field(
        min_length=2,
        max_length=2,
        description="per seat, as of its last action (its full days then), its vacation's start, or the end; "
        "the seat to move also spends the time since `since_ms`",
    )
    since_ms: int | None = Field(
        description="epoch milliseconds from which the seat to move spends its time: its turn's start, or "
        "the end of its vacation (later than now while it is on one); null when no clock runs"
    )
    deadline_ms: int | None = Field(
        description="epoch milliseconds at which the seat to move runs out (`since_ms` + its `remaining_ms`); "
        "days left = (deadline_ms - now) / 86400000; null when no clock runs"
    )
    vacation_days_left: Pair = Field(
        min_length=2, max_length=2, description="per seat, the whole days of vacation it may still take in this match"
    )
    vacation_until_ms: list[int | None] = Field(
        min_length=2,
        max_length=2,
        description="per seat, the end of its latest vacation (epoch ms; it is on vacation while this is "
        "later than now), null when it took none or ended it early",
    )


class MatchView(ViewPart):
    """The lifecycle part of every view; the game's own keys follow in the subclasses."""

    match_id: MatchId
    game: GameName
    seats: list[PlayerId | None] = Field(
        min_length=2, max_length=2, description="player ids by seat; null for an open seat"
    )
    status: Literal["waiting", "active", "over"]
    seq: int = Field(ge=1, description="accepted move records of the match so far (create makes it 1)")
    to_move: list[Seat] = Field(max_length=2, description="the seats whose action is awaited; [] unless active")
    clock: ClockView | CorrespondenceClockView | None = Field(description="null for a match without a clock")
    outcome: Outcome | None = Field(description="set when the match is over")
    created_at: Timestamp
    started_at: Timestamp | None = Field(description="when the last seat was filled")
    ended_at: Timestamp | None
    invited: list[PlayerId | None] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description="only when the create reserved seats: by seat, the player it is reserved for",
    )
    rated: Literal[False] | None = Field(
        default=None,
        description="only when the match is unrated (its create said `rated: false`, or an operator adjudicated it)",
    )
