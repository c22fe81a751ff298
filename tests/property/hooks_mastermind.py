"""Mastermind hooks for the generic game properties.

Candidates stay inside the spaces `legal_actions` enumerates completely: set_code and reveal
use the one salt the listing uses, commit uses the listed commitment (any other 64-hex
commitment would be legal but unlisted), and the rest are codes or feedback shapes around
the valid ones, plus actions of the wrong kind for the phase, the mode or the seat.
"""

from __future__ import annotations

import random

from games.mastermind import MastermindState, bot_secret, commitment_of, listing_salt, reveal_salt


def _code(board: MastermindState, rng: random.Random) -> list[int]:
    settings = board.settings
    length = settings.pegs + (rng.choice((-1, 1)) if rng.random() < 0.1 else 0)
    top = settings.colors if rng.random() < 0.1 else settings.colors - 1  # colors itself is out of range
    return [rng.randint(0, top) for _ in range(length)]


def candidate(board: MastermindState, seat: int, rng: random.Random) -> dict:
    settings = board.settings
    kind = rng.random()
    if kind < 0.15:  # an action of another phase, mode or role
        return rng.choice(
            [
                {"type": "set_code", "code": _code(board, rng), "salt": listing_salt(board)},
                {"type": "guess", "code": _code(board, rng)},
                {"type": "feedback", "black": 0, "white": 0},
                {"type": "reveal", "code": _code(board, rng), "salt": reveal_salt(board)},
            ]
        )
    phase = board.phase
    if phase == "code":
        if settings.feedback == "auto":
            return {"type": "set_code", "code": _code(board, rng), "salt": listing_salt(board)}
        code, salt = bot_secret(board, 0)
        return {"type": "commit", "commitment": commitment_of(board.match_id, board.round, board.attempt, code, salt)}
    if phase == "feedback":
        return {
            "type": "feedback",
            "black": rng.randint(-1, settings.pegs + 1),
            "white": rng.randint(-1, settings.pegs + 1),
        }
    if phase == "reveal":
        return {"type": "reveal", "code": _code(board, rng), "salt": reveal_salt(board)}
    return {"type": "guess", "code": _code(board, rng)}


def canonical(action: dict) -> tuple:
    return (
        action["type"],
        tuple(action.get("code", ())),
        action.get("salt"),
        action.get("commitment", "").lower(),
        action.get("black"),
        action.get("white"),
    )
