"""Strands: options, actions and events on the wire."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt

from .base import Action, Axial, Event, Seat, Strict
from .lifecycle import LifecycleEndReason, Outcome
from .views import MatchView, ViewPart


class CustomLayout(Strict):
    side: StrictInt = Field(description="2-12")
    rows: list[str] = Field(description="2*side-1 rows in canonical order, digits 1-6")


class StrandsOptions(Strict):
    layout: str | CustomLayout = Field(
        default="classic-6",
        description="a layout id (classic-6, small-4, small-5, alt-5, alt-6, low-6, alt-7), "
        "random-6 / random-7 (needs seed), or a custom {side, rows}",
    )
    seed: StrictInt | None = Field(default=None, description="seed of a random layout")
    placement: Literal["up_to", "exact"] = "up_to"


class StrandsOptionsV2(StrandsOptions):
    """Rules `strands/2`: the same options, but a turn covers exactly min(X, empty cells marked X)
    unless the create says `"placement": "up_to"` (docs/rules/strands.md, "Rules versions")."""

    placement: Literal["up_to", "exact"] = "exact"


class Place(Action):
    type: Literal["place"]
    cells: list[Axial] = Field(min_length=1, max_length=64)


STRANDS_ACTIONS = (Place,)


class StonesPlaced(Event):
    type: Literal["stones_placed"]
    seat: Seat
    color: Literal["black", "white"]
    number: int = Field(ge=1, le=6)
    cells: list[Axial] = Field(description="in canonical order")


STRANDS_EVENTS = (StonesPlaced,)


# --- the public view ----------------------------------------------------------------------------
class StrandsGroups(ViewPart):
    """Group sizes per colour, descending (also the scores of a Strands outcome)."""

    black: list[int]
    white: list[int]


class StrandsOutcome(Outcome):
    reason: Literal[LifecycleEndReason, "largest_group"]
    scores: StrandsGroups


class LayoutView(ViewPart):
    id: str = Field(description="the layout id, or custom")
    side: int = Field(ge=2, le=12)
    rows: list[str] = Field(description="2*side-1 rows of cell numbers (digits 1-6) in canonical order")


class StrandsView(MatchView):
    """`board` is one character per cell in canonical order: '.' empty, 'B' black, 'W' white."""

    game: Literal["strands"]
    outcome: StrandsOutcome | None
    layout: LayoutView
    placement: Literal["up_to", "exact"]
    board: str = Field(pattern=r"^[.BW]+$")
    turn: int = Field(ge=0, description="placements made so far")
    groups: StrandsGroups


STRANDS_VIEW = StrandsView
STRANDS_OUTCOME = StrandsOutcome
