"""Mind Ninja: options, actions and events on the wire.

A pattern travels as a plain JSON object: the game validates it (unknown ids, primitives and
params are `illegal`, with the reason) and publishes it in its normalised form in
`pattern_chosen`:

    {"id": "five_in_a_row", "name": "five_in_a_row", "colors": "fixed",
     "params": {"n": 5, "color": "red"}, "def": {"row": {"n": 5, "color": "red"}}, "full_board": false}
    {"id": "custom", "name": "...", "colors": "fixed"|"either", "def": D, "full_board": bool}

`def` is fully explicit: every primitive is `{PRIMITIVE: {every param, defaults filled}}` and
catalogue ids are expanded to their definition. A normalised pattern is itself a valid pattern
(normalising it again changes nothing).

Outcome (`match_ended.scores`): `{"pattern": id, "builder": seat, "blocker": seat,
"cells": [[q, r], ...] | null}`; `cells` (canonical order) are the stones that form the pattern
when the builder wins and the primitive can name them, else null. `reason` is
`pattern_formed` (builder wins) or `board_full` (blocker wins).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictInt

from .base import Action, Axial, Event, Seat, Strict
from .lifecycle import LifecycleEndReason, Outcome
from .views import VIEW_CONFIG, MatchView

Color = Literal["red", "blue"]
Role = Literal["builder", "blocker"]


class MindNinjaOptions(Strict):
    side: StrictInt = Field(default=7, ge=3, le=10, description="hexhex board side (3-10; 7 = 127 cells)")


class Stone(Strict):
    cell: Axial
    color: Color


# --- actions ----------------------------------------------------------------------------------
class Bid(Action):
    type: Literal["bid"]
    value: StrictInt = Field(
        description="free moves offered: above the current bid (the first may be 0), at most the cells"
    )


class Pass(Action):
    type: Literal["pass"]


class ChoosePattern(Action):
    type: Literal["choose_pattern"]
    pattern: dict[str, Any] = Field(
        description='{"id": catalogue id, "params": {...}} or {"id": "custom", "name", "colors", "def"}'
    )


class Setup(Action):
    type: Literal["setup"]
    stones: list[Stone] = Field(min_length=1, max_length=271)


class EndSetup(Action):
    type: Literal["end_setup"]


class ChooseRole(Action):
    type: Literal["choose_role"]
    role: Role


class Place(Action):
    type: Literal["place"]
    cell: Axial
    color: Color


class DeclineFree(Action):
    type: Literal["decline_free"]


MIND_NINJA_ACTIONS = (Bid, Pass, ChoosePattern, Setup, EndSetup, ChooseRole, Place, DeclineFree)


# --- events -----------------------------------------------------------------------------------
class NormalisedPattern(Strict):
    id: str
    name: str
    colors: Literal["fixed", "either"]
    params: dict[str, Any] | None = Field(default=None, description="catalogue patterns: every param, filled")
    definition: dict[str, Any] = Field(alias="def")
    full_board: bool = Field(description="true when judged on the full board only")


class BidMade(Event):
    type: Literal["bid_made"]
    seat: Seat
    value: int = Field(ge=0)


class BiddingClosed(Event):
    type: Literal["bidding_closed"]
    chooser: Seat = Field(description="the seat that passed")
    inventor: Seat
    free_moves: int = Field(ge=0, description="the last bid, 0 if nobody bid")


class PatternChosen(Event):
    type: Literal["pattern_chosen"]
    seat: Seat
    pattern: NormalisedPattern


class StonesSetUp(Event):
    type: Literal["stones_set_up"]
    seat: Seat
    stones: list[Stone] = Field(description="in canonical order")


class SetupEnded(Event):
    type: Literal["setup_ended"]
    seat: Seat


class RoleChosen(Event):
    type: Literal["role_chosen"]
    seat: Seat
    role: Role
    builder: Seat
    blocker: Seat


class StonePlaced(Event):
    type: Literal["stone_placed"]
    seat: Seat
    cell: Axial
    color: Color
    free: bool = Field(description="true for a free move")


class FreeMoveDeclined(Event):
    type: Literal["free_move_declined"]
    seat: Seat
    free_moves_left: int = Field(ge=0)


MIND_NINJA_EVENTS = (
    BidMade,
    BiddingClosed,
    PatternChosen,
    StonesSetUp,
    SetupEnded,
    RoleChosen,
    StonePlaced,
    FreeMoveDeclined,
)


class MindNinjaScores(Strict):
    """`match_ended.scores` of a Mind Ninja match, and of its outcome in views and outcome records."""

    model_config = VIEW_CONFIG

    pattern: str
    builder: Seat
    blocker: Seat
    cells: list[Axial] | None = None


# --- the public view ----------------------------------------------------------------------------
class MindNinjaOutcome(Outcome):
    reason: Literal[LifecycleEndReason, "pattern_formed", "board_full"]
    scores: MindNinjaScores | None = Field(description="null when the lifecycle ended the match (resign, ...)")


class MindNinjaView(MatchView):
    """`board` is one character per cell in canonical order: '.' empty, 'R' red, 'B' blue."""

    game: Literal["mind_ninja"]
    outcome: MindNinjaOutcome | None
    side: int = Field(ge=3, le=10)
    phase: Literal["bidding", "pattern", "setup", "roles", "play", "over"]
    bids: list[tuple[Seat, int]] = Field(description="[seat, value] of every bid, in order")
    high_bid: int | None = Field(ge=0, description="the last bid; null before the first")
    chooser: Seat | None = Field(description="the seat that passed (it chooses the role)")
    inventor: Seat | None = Field(description="the seat that invents the pattern and sets up")
    free_moves: int = Field(ge=0)
    free_pending: bool = Field(description="the chooser may now place a free stone or decline it")
    pattern: NormalisedPattern | None
    builder: Seat | None
    blocker: Seat | None
    board: str = Field(pattern=r"^[.RB]+$")


MIND_NINJA_VIEW = MindNinjaView
MIND_NINJA_OUTCOME = MindNinjaOutcome
