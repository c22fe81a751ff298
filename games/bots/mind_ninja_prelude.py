"""Mind Ninja before the stones: the bid, the pattern, the setup.

Balance: for each pattern of a small menu, board side and free-move count F, the builder's
win rate in random playouts where the chooser holds F free moves as builder or as blocker
(`balance`, tabled in data/mind-ninja-balance.json). A chooser takes the better role, so a
pattern is worth `chooser_value` = max(builder rate with the builder choosing, 1 - builder
rate with the blocker choosing) to the chooser and 1 - that to the inventor.

- Pattern (inventor): the menu pattern whose chooser value at the actual F is nearest ½,
  the fairest game the inventor can offer, and one the bot's search plays well.
- Bid: the bot keeps bidding (to become the inventor of that fair pattern) while the free
  moves it concedes leave the chooser within `MARGIN` of ½; past that it passes and takes
  the chooser's seat with the free moves bid to it.
- Setup: none (the menu patterns are judged fair on the empty board).
The role choice is searched by MCTS over both roles (see mcts_bot).
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any

from games.core import ActionDict, Rejected
from games.mind_ninja import MindNinja, MindNinjaState
from games.mind_ninja_patterns import cell_count, normalise_pattern
from games.registry import get_game

from . import tables
from .mcts import advance, terminal_rewards
from .mind_ninja_policy import MindNinjaPolicy

PHASES = frozenset({"bidding", "pattern", "setup"})
MENU: tuple[dict[str, Any], ...] = (
    {"id": "five_in_a_row"},
    {"id": "five_in_a_row", "params": {"n": 6}},
    {"id": "five_in_a_row", "params": {"n": 7}},
    {"id": "five_in_a_row", "params": {"n": 8}},
    {"id": "hex"},
    {"id": "y"},
    {"id": "havannah"},
    {"id": "ring"},
    {"id": "big_group"},
    {"id": "triangle"},
    {"id": "flower"},
)
FREE_STEPS = (0, 2, 4)  # free-move counts tabled; others are interpolated
MARGIN = 0.1
TABLE = "mind-ninja-balance"
TABLE_PLAYOUTS = 40
LAZY_PLAYOUTS = 12  # when the table lacks a side


def pattern_key(pattern: dict[str, Any]) -> str:
    params = pattern.get("params", {})
    return pattern["id"] + "".join(f",{k}={v}" for k, v in sorted(params.items()))


@cache
def menu(side: int) -> tuple[dict[str, Any], ...]:
    """The menu patterns valid on this side (long rows do not fit small boards)."""
    valid = []
    for pattern in MENU:
        try:
            normalise_pattern(pattern, side)
        except Rejected:
            continue
        valid.append(pattern)
    return tuple(valid)


def start_play(game: MindNinja, side: int, pattern: dict[str, Any], free: int, chooser_role: str) -> MindNinjaState:
    """The play phase of a match where the chooser holds `free` free moves and took `chooser_role`,
    reached with the game's own actions."""
    board = game.initial(game.normalise_options({"side": side}), "balance")
    opening = [(0, {"type": "pass"})] if free == 0 else [(0, {"type": "bid", "value": free}), (1, {"type": "pass"})]
    chooser = opening[-1][0]
    steps = [
        *opening,
        (1 - chooser, {"type": "choose_pattern", "pattern": pattern}),
        (1 - chooser, {"type": "end_setup"}),
        (chooser, {"type": "choose_role", "role": chooser_role}),
    ]
    for seat, action in steps:
        board = advance(game, board, seat, action)
    return board


def balance(side: int, pattern: dict[str, Any], free: int, chooser_role: str, playouts: int, seed: int) -> float:
    """The builder's win rate in random playouts (free moves always used)."""
    game = get_game("mind_ninja")
    policy, rng = (
        MindNinjaPolicy(),
        random.Random(f"balance|{side}|{pattern_key(pattern)}|{free}|{chooser_role}|{seed}"),
    )
    start = start_play(game, side, pattern, free, chooser_role)
    wins = 0
    for _ in range(playouts):
        board = start
        while (rewards := terminal_rewards(game, board)) is None:
            seat = game.to_move(board)[0]
            board = advance(game, board, seat, policy.rollout_action(game, board, seat, rng))
        wins += rewards[board.builder] == 1.0
    return wins / playouts


def build_side(side: int, playouts: int) -> dict[str, dict[str, list[float]]]:
    """{pattern key: {"builder": [rate per FREE_STEPS], "blocker": [...]}} for one side."""
    return {
        pattern_key(p): {
            role: [balance(side, p, f, role, playouts, 0) for f in FREE_STEPS] for role in ("builder", "blocker")
        }
        for p in menu(side)
    }


@cache
def side_table(side: int) -> dict[str, dict[str, list[float]]]:
    return tables.load(TABLE).get(str(side)) or build_side(side, LAZY_PLAYOUTS)


def interpolate(rates: list[float], free: int) -> float:
    if free >= FREE_STEPS[-1]:
        return rates[-1]
    for i in range(len(FREE_STEPS) - 1):
        low, high = FREE_STEPS[i], FREE_STEPS[i + 1]
        if low <= free <= high:
            t = (free - low) / (high - low)
            return rates[i] * (1 - t) + rates[i + 1] * t
    return rates[0]


def chooser_value(side: int, pattern: dict[str, Any], free: int) -> float:
    rates = side_table(side)[pattern_key(pattern)]
    return max(interpolate(rates["builder"], free), 1 - interpolate(rates["blocker"], free))


def fairest(side: int, free: int) -> dict[str, Any]:
    return min(menu(side), key=lambda p: abs(chooser_value(side, p, free) - 0.5))


def bid_limit(side: int) -> int:
    """The most free moves the bot concedes to be the inventor."""
    limit = -1
    for free in range(FREE_STEPS[-1] + 1):
        if abs(chooser_value(side, fairest(side, free), free) - 0.5) <= MARGIN:
            limit = free
    return limit


def choose(game: MindNinja, board: MindNinjaState, seat: int) -> ActionDict:
    if board.phase == "bidding":
        following = 0 if board.high_bid is None else board.high_bid + 1
        if following <= min(bid_limit(board.side), cell_count(board.side)):
            return {"type": "bid", "value": following}
        return {"type": "pass"}
    if board.phase == "pattern":
        return {"type": "choose_pattern", "pattern": fairest(board.side, board.free_moves)}
    return {"type": "end_setup"}
