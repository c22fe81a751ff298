"""The games plylog knows, by wire name."""

from __future__ import annotations

import importlib
from functools import cache

from .core import Game

GAME_MODULES = {
    "mastermind": "games.mastermind",
    "strands": "games.strands",
    "mana": "games.mana",
    "mind_ninja": "games.mind_ninja",
}


@cache
def get_game(name: str) -> Game:
    """The game object for a wire name (`KeyError` if there is none)."""
    module = importlib.import_module(GAME_MODULES[name])
    game: Game = module.GAME
    return game
