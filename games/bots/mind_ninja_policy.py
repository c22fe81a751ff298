"""Search knowledge for Mind Ninja's role choice and play: a node considers every legal
placement (and declining a free move); playouts place uniformly at random and always use
their free moves; RAVE shares what a stone on a cell is worth across the tree, as in Hex
and Havannah programs, which is what makes 100-odd playouts on 127 cells useful.

At the root, a move must answer a threat: when the opponent could win at once by placing
on some cells (probed with the game's own execute, as if the opponent moved now), the
bot's own placements are limited to those cells; a thinly spread search would miss it."""

from __future__ import annotations

import random
from typing import Any

from games.core import ActionDict, Rejected
from games.mind_ninja import MindNinja, MindNinjaState

from .mcts import DRAW, Rewards, advance, terminal_rewards


class MindNinjaPolicy:
    def candidates(self, game: MindNinja, board: MindNinjaState, seat: int, rng: random.Random) -> list[ActionDict]:
        actions = list(game.legal_actions(board, seat))
        rng.shuffle(actions)
        return actions

    def root_candidates(
        self, game: MindNinja, board: MindNinjaState, seat: int, rng: random.Random
    ) -> list[ActionDict]:
        actions = self.candidates(game, board, seat, rng)
        if board.phase != "play":
            return actions
        threats = winning_cells(game, board, 1 - seat)
        if not threats:
            return actions
        blocking = [a for a in actions if a["type"] == "place" and tuple(a["cell"]) in threats]
        return blocking or actions

    def rollout_action(self, game: MindNinja, board: MindNinjaState, seat: int, rng: random.Random) -> ActionDict:
        if board.phase != "play":
            return game.random_action(board, seat, rng)
        empty = [i for i, c in enumerate(board.board) if c == "."]
        cell = board.geometry.cells[rng.choice(empty)]
        return {"type": "place", "cell": list(cell), "color": rng.choice(game._colours(board, seat))}

    def amaf_key(self, action: ActionDict) -> Any | None:
        if action["type"] == "place":
            q, r = action["cell"]
            return (q, r, action["color"])
        return action["type"] if action["type"] != "choose_role" else action["role"]

    def evaluate(self, game: MindNinja, board: MindNinjaState) -> Rewards:
        return DRAW


def winning_cells(game: MindNinja, board: MindNinjaState, seat: int) -> set[tuple[int, int]]:
    """Cells where a stone of `seat` would win the game at once."""
    cells = board.geometry.cells
    found = set()
    for i, c in enumerate(board.board):
        if c != ".":
            continue
        for colour in game._colours(board, seat):
            action = {"type": "place", "cell": list(cells[i]), "color": colour}
            try:  # the board-level decide does not check whose turn it is; should it ever, no threat is seen
                rewards = terminal_rewards(game, advance(game, board, seat, action))
            except Rejected:
                return set()
            if rewards is not None and rewards[seat] == 1.0:
                found.add(cells[i])
                break
    return found
