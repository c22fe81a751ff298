"""The MCTS bots: one class, levels set by a playout budget, one search policy per game.

Mind Ninja's bidding, pattern and setup phases are not searched (a playout cannot judge a
pattern choice it then plays at random); `mind_ninja_prelude` decides them, and the role
choice and play are searched like any other move.
"""

from __future__ import annotations

import random

from games.core import ActionDict
from games.match import MatchState

from . import mind_ninja_prelude
from .base import Budget, acting_board
from .mana_policy import ManaPolicy
from .mcts import Search, SearchSettings
from .mind_ninja_policy import MindNinjaPolicy
from .strands_policy import StrandsPolicy

SEARCHES = {
    "strands": (StrandsPolicy(), SearchSettings(exploration=0.7, widening=(3.0, 1.0))),
    "mana": (ManaPolicy(), SearchSettings(exploration=0.7, widening=(4.0, 1.0), max_rollout=200)),
    "mind_ninja": (MindNinjaPolicy(), SearchSettings(exploration=0.25, rave=300.0)),
}


class MctsBot:
    """`mcts-N`: Monte Carlo tree search with `playouts[game]` simulations per decision."""

    games = frozenset(SEARCHES)

    def __init__(self, bot_id: str, playouts: dict[str, int]):
        self.id = bot_id
        self.playouts = dict(playouts)
        self.description = "MCTS, playouts per move: " + ", ".join(f"{g} {n}" for g, n in sorted(playouts.items()))

    def default_budget(self, game: str) -> Budget:
        return Budget(playouts=self.playouts[game])

    def choose(self, state: MatchState, seat: int, rng: random.Random, budget: Budget | None = None) -> ActionDict:
        game, board = acting_board(state, seat, self.id, self.games)
        budget = budget or self.default_budget(game.name)
        if game.name == "mind_ninja" and board.phase in mind_ninja_prelude.PHASES:
            return mind_ninja_prelude.choose(game, board, seat)
        policy, settings = SEARCHES[game.name]
        return Search(game, policy, settings, rng).choose(board, seat, budget)
