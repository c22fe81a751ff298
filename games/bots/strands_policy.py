"""Search knowledge for Strands: which placements a node considers, and how playouts move.

A turn may cover up to X cells marked X, so the action space is combinatorial (C(30, 5) on
an edge ring): nodes consider a sample of placements grown as connected clumps next to the
mover's own stones (a group is what wins), and progressive widening lets the tree add more
as a node is visited more. Sizes come from the game's own `Strands._size_range`.
"""

from __future__ import annotations

import random
from typing import Any

from games.core import ActionDict
from games.strands import STONES, Strands, StrandsState

from .mcts import DRAW, Rewards

SAMPLES_PER_NUMBER = 5  # clumps grown per number on the board
MAX_SINGLES = 10  # single-cell candidates per number when a number allows one cell


def free_cells(board: StrandsState) -> dict[int, list[int]]:
    """Empty cells by the number they carry."""
    found: dict[int, list[int]] = {}
    numbers = board.numbers
    for i, c in enumerate(board.board):
        if c == ".":
            found.setdefault(ord(numbers[i]) - 48, []).append(i)
    return found


def place(board: StrandsState, cells: list[int]) -> ActionDict:
    where = board.geometry.cells
    return {"type": "place", "cells": [list(where[i]) for i in sorted(cells)]}


def grow(board: StrandsState, seat: int, free: list[int], count: int, rng: random.Random) -> list[int]:
    """`count` cells of `free`, grown one at a time, preferring cells next to the mover's
    stones or to cells already chosen (a clump that joins a group)."""
    neighbours, stones, own = board.geometry.neighbours, board.board, STONES[seat]
    pool = set(free)
    chosen: list[int] = []
    for _ in range(count):
        options = sorted(pool)
        touching = [i for i in options if any(stones[n] == own or n in chosen for n in neighbours[i])]
        pick = rng.choice(touching if touching and rng.random() < 0.85 else options)
        chosen.append(pick)
        pool.discard(pick)
    return chosen


def contact(board: StrandsState, seat: int, cells: list[int]) -> float:
    """How much a placement adds to the mover's groups: stones, joins to own stones, inner links."""
    neighbours, stones, own = board.geometry.neighbours, board.board, STONES[seat]
    chosen = set(cells)
    joins = sum(1 for i in cells for n in neighbours[i] if stones[n] == own)
    links = sum(1 for i in cells for n in neighbours[i] if n in chosen) / 2
    return len(cells) + 0.6 * joins + 0.3 * links


class StrandsPolicy:
    def candidates(self, game: Strands, board: StrandsState, seat: int, rng: random.Random) -> list[ActionDict]:
        free = free_cells(board)
        if board.turn == 0:
            singles = sorted(free.get(2, []), key=lambda i: (board.geometry.distance[i], rng.random()))
            return [place(board, [i]) for i in singles]
        found: dict[tuple[int, ...], float] = {}
        for number, cells in sorted(free.items()):
            lowest, highest = game._size_range(board, number)
            if highest == 1:
                for i in rng.sample(cells, min(len(cells), MAX_SINGLES)):
                    found[(i,)] = contact(board, seat, [i])
                continue
            for _ in range(SAMPLES_PER_NUMBER):
                chosen = grow(board, seat, cells, highest, rng)
                found[tuple(sorted(chosen))] = contact(board, seat, chosen)
            if lowest < highest:  # sometimes fewer cells keep a number's cells for later
                chosen = grow(board, seat, cells, rng.randint(lowest, highest - 1), rng)
                found[tuple(sorted(chosen))] = contact(board, seat, chosen) - 0.5
        ranked = sorted(found, key=lambda cells: (-found[cells], cells))
        return [place(board, list(cells)) for cells in ranked]

    def rollout_action(self, game: Strands, board: StrandsState, seat: int, rng: random.Random) -> ActionDict:
        free = free_cells(board)
        if board.turn == 0:
            return place(board, [rng.choice(free[2])])
        number = rng.choice(sorted(free))
        lowest, highest = game._size_range(board, number)
        count = highest if rng.random() < 0.85 else rng.randint(lowest, highest)
        return place(board, rng.sample(free[number], count))

    def amaf_key(self, action: ActionDict) -> Any | None:
        return None

    def evaluate(self, game: Strands, board: StrandsState) -> Rewards:
        return DRAW
