"""The Mastermind bots: a codebreaker strategy (mastermind_breaker) in the codebreaker's
seat, the honest codemaker (mastermind_maker) in the codemaker's."""

from __future__ import annotations

import random

from games.core import ActionDict
from games.mastermind import as_list
from games.match import MatchState

from .base import Budget, acting_board
from .mastermind_breaker import choose_guess
from .mastermind_maker import Codemaker

DESCRIPTIONS = {
    "knuth": "Knuth's minimax: the guess whose worst answer leaves fewest codes",
    "most-parts": "the guess whose answers split the codes into most parts (the strongest on average)",
    "entropy": "the guess whose answer carries most information",
    "expected-size": "the guess that leaves fewest codes on average",
    "consistent": "a random code consistent with every answer so far",
}


class MastermindBot:
    games = frozenset({"mastermind"})

    def __init__(self, strategy: str, secret_key: bytes | None = None):
        self.id = self.strategy = strategy
        self.description = DESCRIPTIONS[strategy]
        self.maker = Codemaker(secret_key)

    def choose(self, state: MatchState, seat: int, rng: random.Random, budget: Budget | None = None) -> ActionDict:
        _game, board = acting_board(state, seat, self.id, self.games)
        if seat == board.codemaker:
            return self.maker.choose(board)
        return {"type": "guess", "code": as_list(choose_guess(board.settings.key, board.rows, self.strategy, rng))}
