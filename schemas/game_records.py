"""The topic records specialised to one game: a move record whose `action` is one of the
game's actions, a result record whose events and view are the game's, an outcome record
whose outcome has the game's reasons and scores.

They are derived from the generic records (`schemas.records`) and the game's own models, so
a change to either flows into them; the AsyncAPI document uses them as its per-game messages
and `outcome-record.json` ties an outcome to its `game` with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from .catalog import game_models, outcome_model, title, view_model
from .lifecycle import LIFECYCLE_ACTIONS, LIFECYCLE_EVENTS
from .records import MoveRecord, OutcomeRecord, ResultRecord, tagged_union


@dataclass(frozen=True)
class GameRecords:
    move: type[BaseModel]
    result: type[BaseModel]
    outcome: type[BaseModel]


def game_action(game: str) -> Any:
    """Any action of a match of `game`: the lifecycle's and the game's own, by `type`."""
    return tagged_union((*LIFECYCLE_ACTIONS, *game_models(game, "ACTIONS")), "type")


def game_event(game: str) -> Any:
    """Any public event of a match of `game`, by `type`."""
    return tagged_union((*LIFECYCLE_EVENTS, *game_models(game, "EVENTS")), "type")


@cache
def game_records(game: str) -> GameRecords:
    name = title(game)
    move = create_model(
        f"{name}MoveRecord",
        __base__=MoveRecord,
        __module__=__name__,
        __doc__=f"A move record of a {game} match on `plylog.moves`.",
        action=(game_action(game), Field(description="`type` selects the action")),
    )
    result = create_model(
        f"{name}ResultRecord",
        __base__=ResultRecord,
        __module__=__name__,
        __doc__=f"A result record of a {game} match on `plylog.results`.",
        # mypy cannot type models built at run time: the event union and the view depend on `game`.
        events=(list[game_event(game)], Field(description=ResultRecord.model_fields["events"].description)),  # type: ignore[arg-type,misc]  # see above
        view=(view_model(game) | None, Field(description=ResultRecord.model_fields["view"].description)),  # type: ignore[arg-type]  # see above
    )
    outcome = create_model(
        f"{name}OutcomeRecord",
        __base__=OutcomeRecord,
        __module__=__name__,
        __doc__=f"The outcome record of a finished {game} match on `plylog.outcomes`.",
        game=(Literal[game], ...),  # type: ignore[arg-type]  # a Literal of a run-time value
        outcome=(outcome_model(game), ...),
    )
    return GameRecords(move, result, outcome)
