"""Mana hooks for the generic game properties.

Candidates come from the space of all well-formed Mana actions (any daimyo square, any
from/to/bird squares, bird omitted or not), biased towards near-legal ones: own pieces,
destinations within 3 steps, birds of the arrival's mark count. legal_actions enumerates
every legal action of that space, so "accepted iff listed" is a real check.
"""

from __future__ import annotations

import random

from games.mana import MARK, PIECES, SQUARES, ManaState


def _near(start: int, rng: random.Random) -> int:
    """Mostly a square whose distance could be covered in exactly N steps (N = marks)."""
    rank, file = divmod(start, 6)
    n = MARK[start]
    for _ in range(30):
        r, f = rank + rng.randint(-3, 3), file + rng.randint(-3, 3)
        distance = abs(r - rank) + abs(f - file)
        if (
            0 <= r < 6
            and 0 <= f < 6
            and 0 < distance <= 3
            and (rng.random() < 0.2 or ((n - distance) % 2 == 0 and distance <= n))
        ):
            return r * 6 + f
    return rng.randrange(36)


def _bird(board: str, end: int, rng: random.Random) -> dict:
    kind = rng.random()
    if kind < 0.65:
        same = [i for i in range(36) if MARK[i] == MARK[end] and (board[i] == "." or rng.random() < 0.1)]
        return {"bird": SQUARES[rng.choice(same or [end])]}
    if kind < 0.8:
        return {"bird": SQUARES[rng.randrange(36)]}
    if kind < 0.9:
        return {"bird": None}
    return {}


def candidate(board: ManaState, seat: int, rng: random.Random) -> dict:
    if board.phase == "setup" or rng.random() < 0.03:
        return {"type": "place_daimyo", "square": SQUARES[rng.randrange(36)]}
    if rng.random() < 0.15:
        end = rng.randrange(36)
        return {"type": "drop", "to": SQUARES[end], **_bird(board.board, end, rng)}
    own = [i for i, c in enumerate(board.board) if c in PIECES[seat]]
    on_mana = [i for i in own if MARK[i] == board.mana]
    if on_mana and rng.random() < 0.6:
        start = rng.choice(on_mana)
    else:
        start = rng.choice(own) if own and rng.random() < 0.85 else rng.randrange(36)
    end = _near(start, rng) if rng.random() < 0.9 else rng.randrange(36)
    return {"type": "move", "from": SQUARES[start], "to": SQUARES[end], **_bird(board.board, end, rng)}


def canonical(action: dict) -> tuple:
    return (action["type"], action.get("square"), action.get("from"), action.get("to"), action.get("bird"))
