"""Mind Ninja hooks for the generic game properties.

Candidates come only from spaces `legal_actions` lists in full: bids and passes, catalogue ids
without params (plus unknown ids), single-stone setups, end_setup, roles, single placements in
either colour, decline_free — each sometimes in the wrong phase or on a bad cell.
"""

from __future__ import annotations

import random

import orjson

from games.mind_ninja import MindNinjaState
from games.mind_ninja_patterns import CATALOGUE_IDS, cell_count


def _cell(board: MindNinjaState, rng: random.Random) -> list[int]:
    geometry = board.geometry
    if rng.random() < 0.1:
        return [board.side + rng.randint(0, 2), -rng.randint(0, 1)]  # off the board
    empty = [i for i, c in enumerate(board.board) if c == "."]
    if empty and rng.random() < 0.8:
        return list(geometry.cells[rng.choice(empty)])
    return list(geometry.cells[rng.randrange(geometry.size)])


def candidate(board: MindNinjaState, seat: int, rng: random.Random) -> dict:
    phase = board.phase
    if rng.random() < 0.15:  # anything, whatever the phase
        phase = rng.choice(["bidding", "pattern", "setup", "roles", "play"])
    if phase == "bidding":
        if rng.random() < 0.2:
            return {"type": "pass"}
        high = -1 if board.high_bid is None else board.high_bid
        return {
            "type": "bid",
            "value": rng.choice([high - 1, high, high + 1, high + 2, rng.randint(-2, cell_count(board.side) + 2)]),
        }
    if phase == "pattern":
        return {"type": "choose_pattern", "pattern": {"id": rng.choice((*CATALOGUE_IDS, "gomoku", "custom", "Hex"))}}
    if phase == "setup":
        if rng.random() < 0.15:
            return {"type": "end_setup"}
        return {"type": "setup", "stones": [{"cell": _cell(board, rng), "color": rng.choice(["red", "blue"])}]}
    if phase == "roles":
        return {"type": "choose_role", "role": rng.choice(["builder", "blocker"])}
    if rng.random() < 0.1:
        return {"type": "decline_free"}
    return {"type": "place", "cell": _cell(board, rng), "color": rng.choice(["red", "blue"])}


def canonical(action: dict) -> bytes:
    return orjson.dumps(action, option=orjson.OPT_SORT_KEYS)
