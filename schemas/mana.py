"""Mana: options, actions and events on the wire.

Squares are named "a1" … "f6" (files a–f, ranks 1–6; rank 1 is Black's back row).
A move or drop carries the bird square; it is omitted (or null) exactly when the rules say
so: the move captured the Daimyo, or no empty square with the arrival square's mark count
is left.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from .base import Action, Event, Seat, Strict
from .lifecycle import LifecycleEndReason, Outcome
from .views import MatchView

Square = Annotated[str, StringConstraints(pattern=r"^[a-f][1-6]$")]


class ManaOptions(Strict):
    max_plies: int = Field(
        default=300,
        ge=1,
        le=10_000,
        strict=True,
        description="draw (reason ply_limit) after this many moves and drops together; "
        "daimyo placements and passes do not count",
    )
    bird_blocks: bool = Field(
        default=True, strict=True, description="the bird blocks paths, landing and drops; false makes it a pure marker"
    )


class PlaceDaimyo(Action):
    type: Literal["place_daimyo"]
    square: Square = Field(description="a double square of the own back row: b1, c1, f1 (Black) or b6, c6, f6 (White)")


class Move(Action):
    type: Literal["move"]
    from_: Square = Field(alias="from")
    to: Square
    bird: Square | None = Field(
        default=None,
        description="omit (or null) only after a Daimyo capture or when "
        "no empty square of the arrival's mark count exists",
    )


class Drop(Action):
    type: Literal["drop"]
    to: Square
    bird: Square | None = None


MANA_ACTIONS = (PlaceDaimyo, Move, Drop)


class DaimyoPlaced(Event):
    type: Literal["daimyo_placed"]
    seat: Seat
    square: Square


class PieceMoved(Event):
    type: Literal["piece_moved"]
    seat: Seat
    piece: Literal["daimyo", "ronin"] = Field(description="the moved piece (extension: not in the rules file)")
    from_: Square = Field(alias="from")
    to: Square
    captured: Literal["ronin", "daimyo"] | None
    bird: Square | None


class RoninDropped(Event):
    type: Literal["ronin_dropped"]
    seat: Seat
    to: Square
    bird: Square | None


class TurnPassed(Event):
    type: Literal["turn_passed"]
    seat: Seat = Field(description="the seat that had no legal action; the other seat moves again")


MANA_EVENTS = (DaimyoPlaced, PieceMoved, RoninDropped, TurnPassed)


# --- the public view ----------------------------------------------------------------------------
class ManaOutcome(Outcome):
    reason: Literal[LifecycleEndReason, "daimyo_captured", "double_pass", "ply_limit"]
    scores: None = Field(description="Mana keeps no score")


class ManaView(MatchView):
    """`board` and `marks` are one character per square, a1..f1, a2..f2, ..., a6..f6."""

    game: Literal["mana"]
    outcome: ManaOutcome | None
    board: str = Field(pattern=r"^[.DRdr]{36}$", description="'.' empty; D/R Black's Daimyo/Ronin, d/r White's")
    marks: str = Field(pattern=r"^[123]{36}$", description="the mark count (1-3) of every square (fixed)")
    bird: Square | None = Field(description="the bird's square; null when it is off the board")
    mana: int | None = Field(ge=1, le=3, description="the mark count of the bird's square: the mana; null without bird")
    reserves: list[int] = Field(min_length=2, max_length=2, description="captured Ronin each seat may drop")
    phase: Literal["setup", "play", "over"]
    ply: int = Field(ge=0, description="moves and drops so far")
    max_plies: int = Field(ge=1)
    bird_blocks: bool
    disobey: bool | None = Field(description="whether the seat to move is free of the mana; null outside play")
    passes: int = Field(ge=0, description="passes in a row")


MANA_VIEW = ManaView
MANA_OUTCOME = ManaOutcome
