"""Search knowledge for Mind Ninja's role choice and play: a node considers every legal
placement (and declining a free move); playouts place uniformly at random and always use
their free moves; RAVE shares what a stone on a cell is worth across the tree, as in Hex
and Havannah programs, which is what makes 100-odd playouts on 127 cells useful."""
from __future__ import annotations

import random
from typing import Any, Optional

from games.core import ActionDict
from games.mind_ninja import MindNinja, MindNinjaState

from .mcts import DRAW, Rewards


class MindNinjaPolicy:
    def candidates(self, game: MindNinja, board: MindNinjaState, seat: int, rng: random.Random) -> list[ActionDict]:
        actions = list(game.legal_actions(board, seat))
        rng.shuffle(actions)
        return actions

    def rollout_action(self, game: MindNinja, board: MindNinjaState, seat: int, rng: random.Random) -> ActionDict:
        if board.phase != "play":
            return game.random_action(board, seat, rng)
        empty = [i for i, c in enumerate(board.board) if c == "."]
        cell = board.geometry.cells[rng.choice(empty)]
        return {"type": "place", "cell": list(cell), "color": rng.choice(game._colours(board, seat))}

    def amaf_key(self, action: ActionDict) -> Optional[Any]:
        if action["type"] == "place":
            q, r = action["cell"]
            return (q, r, action["color"])
        return action["type"] if action["type"] != "choose_role" else action["role"]

    def evaluate(self, game: MindNinja, board: MindNinjaState) -> Rewards:
        return DRAW
