"""Search knowledge for Mana: nodes consider every legal action (a few dozen, bird squares
included), captures first; playouts take the enemy Daimyo whenever they can (a random
playout would walk past a won game); at the root, moves that hand the opponent the Daimyo
at once are dropped while a safe one exists. Moves come from the game's own generators.
"""

from __future__ import annotations

import random
from typing import Any

from games.core import ActionDict
from games.mana import INDEX, PIECES, SQUARES, Mana, ManaState

from .mcts import DRAW, Rewards, advance


def daimyo_capture(game: Mana, board: ManaState, seat: int) -> ActionDict | None:
    """A move of `seat` that takes the enemy Daimyo, if there is one."""
    if board.phase != "play" or board.turn != seat:
        return None
    enemy = PIECES[1 - seat][0]
    if enemy not in board.board:
        return None
    moves, _, _ = game._options(board, seat)
    for start, end in moves:
        if board.board[end] == enemy:
            return {"type": "move", "from": SQUARES[start], "to": SQUARES[end]}
    return None


def hands_over_daimyo(game: Mana, board: ManaState, seat: int, action: ActionDict) -> bool:
    """True when, after `action`, the opponent can take `seat`'s Daimyo at once."""
    after = advance(game, board, seat, action)
    return after.phase == "play" and daimyo_capture(game, after, 1 - seat) is not None


def capture_rank(board: ManaState, action: ActionDict) -> int:
    target = board.board[INDEX[action["to"]]] if action["type"] == "move" else "."
    return 0 if target in "Dd" else (1 if target != "." else 2)


class ManaPolicy:
    def candidates(self, game: Mana, board: ManaState, seat: int, rng: random.Random) -> list[ActionDict]:
        actions = list(game.legal_actions(board, seat))
        rng.shuffle(actions)
        actions.sort(key=lambda a: capture_rank(board, a) if a["type"] != "place_daimyo" else 2)
        return actions

    def root_candidates(self, game: Mana, board: ManaState, seat: int, rng: random.Random) -> list[ActionDict]:
        actions = self.candidates(game, board, seat, rng)
        if board.phase != "play":
            return actions
        safe = [a for a in actions if capture_rank(board, a) == 0 or not hands_over_daimyo(game, board, seat, a)]
        return safe or actions

    def rollout_action(self, game: Mana, board: ManaState, seat: int, rng: random.Random) -> ActionDict:
        return daimyo_capture(game, board, seat) or game.random_action(board, seat, rng)

    def amaf_key(self, action: ActionDict) -> Any | None:
        return None

    def evaluate(self, game: Mana, board: ManaState) -> Rewards:
        return DRAW
