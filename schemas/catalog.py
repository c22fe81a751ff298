"""Every action and event model of the contract, by game, for validation and JSON Schema export."""

from __future__ import annotations

import importlib
from typing import Any, get_args

from pydantic import BaseModel

from .lifecycle import LIFECYCLE_EVENTS

GAME_SCHEMA_MODULES = {
    "mastermind": "schemas.mastermind",
    "strands": "schemas.strands",
    "mana": "schemas.mana",
    "mind_ninja": "schemas.mind_ninja",
}


def game_schema(game: str) -> Any:
    return importlib.import_module(GAME_SCHEMA_MODULES[game])


def game_models(game: str, kind: str) -> tuple[type[BaseModel], ...]:
    """`kind` is ACTIONS or EVENTS: the module's `<GAME>_<KIND>` tuple."""
    models: tuple[type[BaseModel], ...] = getattr(game_schema(game), f"{game.upper()}_{kind}")
    return models


def view_model(game: str) -> type[BaseModel]:
    """The model of the game's public view (`<GAME>_VIEW`): lifecycle keys and the game's own."""
    model: type[BaseModel] = getattr(game_schema(game), f"{game.upper()}_VIEW")
    return model


def outcome_model(game: str) -> type[BaseModel]:
    """The game's outcome model (`<GAME>_OUTCOME`: its reasons and scores typed)."""
    model: type[BaseModel] = getattr(game_schema(game), f"{game.upper()}_OUTCOME")
    return model


def title(game: str) -> str:
    """The game's name as model names spell it: mind_ninja -> MindNinja."""
    return "".join(part.capitalize() for part in game.split("_"))


def event_model(game: str, event_type: str) -> type[BaseModel]:
    """The model of one event type of a game (lifecycle events included)."""
    models: tuple[type[BaseModel], ...] = (*LIFECYCLE_EVENTS, *game_models(game, "EVENTS"))
    for model in models:
        if get_args(model.model_fields["type"].annotation)[0] == event_type:
            return model
    raise KeyError(f"{game} has no event type {event_type!r}")
