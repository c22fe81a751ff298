"""`random`: the game's own uniformly random legal action (the baseline every level must
beat). As a Mastermind codemaker it commits, answers and reveals truthfully like every
Mastermind bot (see mastermind_maker), so that a random match is a fair one."""

from __future__ import annotations

import random

from games.core import ActionDict
from games.match import MatchState
from games.registry import GAME_MODULES

from . import mastermind_maker
from .base import Budget, acting_board


class RandomBot:
    id = "random"
    games = frozenset(GAME_MODULES)
    description = "a uniformly random legal action (the game's random_action)"
    searches = False  # instant: a service decides it at once, queued behind no search

    def __init__(self, secret_key: bytes | None = None):
        self.maker = mastermind_maker.Codemaker(secret_key)

    def choose(self, state: MatchState, seat: int, rng: random.Random, budget: Budget | None = None) -> ActionDict:
        game, board = acting_board(state, seat, self.id, self.games)
        if game.name == "mastermind" and seat == board.codemaker:
            return self.maker.choose(board)
        return game.random_action(board, seat, rng)
