"""Strands (Nick Bentley, 2022), as docs/rules/strands.md describes it.

Cover up to X empty cells marked X; when the board is full the largest group wins.
Groups are tracked incrementally with a union-find (union by size; the parent tuple is
copied, never mutated), so a placement costs O(placed cells), not a board scan.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from functools import cache, lru_cache
from itertools import combinations
from pathlib import Path
from typing import Any

from schemas.strands import STRANDS_ACTIONS, Place, StrandsOptions, StrandsOptionsV2

from .core import Event, Frozen, Game, illegal
from .hexgrid import HexBoard, hex_board

COLOURS = ("black", "white")
STONES = "BW"
LAYOUTS_FILE = Path(__file__).with_name("data") / "strands-layouts.json"

# Per ring distance: the multiset of numbers shuffled onto that ring ({number: count}).
RANDOM_LAYOUTS: dict[str, dict[int, dict[int, int]]] = {
    "random-6": {0: {1: 1}, 1: {1: 2, 2: 4}, 2: {2: 11, 3: 1}, 3: {2: 12, 3: 6}, 4: {3: 22, 4: 2}, 5: {4: 10, 5: 20}},
    "random-7": {
        0: {1: 1},
        1: {1: 3, 2: 3},
        2: {1: 5, 2: 7},
        3: {1: 1, 2: 17},
        4: {2: 15, 3: 9},
        5: {3: 28, 4: 2},
        6: {4: 8, 5: 28},
    },
}


@cache
def named_layouts() -> dict[str, dict[str, Any]]:
    layouts: dict[str, dict[str, Any]] = json.loads(LAYOUTS_FILE.read_text())["layouts"]
    return layouts


def random_layout(name: str, seed: int) -> list[str]:
    """Rows of a seeded random layout: per ring, the highest numbers go to the ring's corners,
    then each part is shuffled with `random.Random(seed)` (rings from the centre outwards)."""
    spec = RANDOM_LAYOUTS[name]
    board = hex_board(len(spec))
    rng = random.Random(seed)
    digits = [""] * board.size
    for distance in range(len(spec)):
        values = sorted((n for n, count in spec[distance].items() for _ in range(count)), reverse=True)
        ring = board.ring(distance)
        corners = [i for i in ring if board.is_corner_of_ring(i)]
        others = [i for i in ring if not board.is_corner_of_ring(i)]
        corner_values, other_values = values[: len(corners)], values[len(corners) :]
        rng.shuffle(corner_values)
        rng.shuffle(other_values)
        for cell, value in zip(corners + others, corner_values + other_values, strict=False):
            digits[cell] = str(value)
    return board.rows_of("".join(digits))


def check_rows(side: int, rows: list[str]) -> None:
    """Validate custom layout rows (raises Rejected illegal, naming what is wrong)."""
    if not 2 <= side <= 12:
        raise illegal(f"a custom layout's side must be 2 to 12, not {side}")
    board = hex_board(side)
    if len(rows) != len(board.row_lengths):
        raise illegal(f"a side-{side} layout has {len(board.row_lengths)} rows, not {len(rows)}")
    for number, (row, length) in enumerate(zip(rows, board.row_lengths, strict=False)):
        if len(row) != length:
            raise illegal(f"layout row {number} must have {length} cells, not {len(row)}")
        if any(c not in "123456" for c in row):
            raise illegal(f"layout row {number} ({row!r}) may hold only the digits 1-6")
    if "2" not in "".join(rows):
        raise illegal("a layout needs at least one cell marked 2 (for the opening)")


@lru_cache(maxsize=256)
def layout_rows(side: int, numbers: str) -> list[str]:
    """The layout rows of a numbers string (shared by every view of that layout: never mutate)."""
    return hex_board(side).rows_of(numbers)


class StrandsState(Frozen):
    layout_id: str
    side: int
    numbers: str  # the number on each cell, canonical order
    placement: str
    board: str  # '.' empty, 'B' black, 'W' white
    turn: int = 0  # placements made
    empty_by_number: tuple[int, ...]  # index X: empty cells marked X
    parent: tuple[int, ...]  # union-find parent per cell (-1 for empty)
    group_size: tuple[int, ...]  # size of the group at each root (0 elsewhere)
    groups: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())  # group sizes per colour, descending

    @property
    def geometry(self) -> HexBoard:
        return hex_board(self.side)

    def root(self, cell: int) -> int:
        parent = self.parent
        while parent[cell] != cell:
            cell = parent[cell]
        return cell

    def group_sizes(self, stone: str) -> list[int]:
        return list(self.groups[STONES.index(stone)])


def compare_groups(black: list[int], white: list[int]) -> int | None:
    """Seat whose descending group-size list is larger (zero-padded); None on a tie."""
    length = max(len(black), len(white))
    black_padded = black + [0] * (length - len(black))
    white_padded = white + [0] * (length - len(white))
    if black_padded == white_padded:
        return None
    return 0 if black_padded > white_padded else 1


class Strands(Game):
    name = "strands"
    options_model = StrandsOptions
    action_models = STRANDS_ACTIONS
    state_model = StrandsState
    seat_names = ("Black", "White")

    def normalise_options(self, options: dict[str, Any]) -> dict[str, Any]:
        parsed = super().normalise_options(options)
        layout, seed = parsed["layout"], parsed["seed"]
        if isinstance(layout, dict):
            check_rows(layout["side"], layout["rows"])
            resolved = {"id": "custom", "side": layout["side"], "rows": list(layout["rows"])}
        elif layout in RANDOM_LAYOUTS:
            if seed is None:
                raise illegal(f"layout {layout!r} needs an integer 'seed' option")
            rows = random_layout(layout, seed)
            resolved = {"id": layout, "side": len(RANDOM_LAYOUTS[layout]), "rows": rows}
        elif layout in named_layouts():
            named = named_layouts()[layout]
            resolved = {"id": layout, "side": named["side"], "rows": list(named["rows"])}
        else:
            known = ", ".join(sorted([*named_layouts(), *RANDOM_LAYOUTS]))
            raise illegal(f"unknown layout {layout!r}; known: {known}, or a custom {{side, rows}}")
        return {"layout": resolved, "seed": seed, "placement": parsed["placement"]}

    def initial(self, options: dict[str, Any], match_id: str) -> StrandsState:
        layout = options["layout"]
        numbers = "".join(layout["rows"])
        counts = [0] * 7
        for digit in numbers:
            counts[int(digit)] += 1
        size = len(numbers)
        return StrandsState(
            layout_id=layout["id"],
            side=layout["side"],
            numbers=numbers,
            placement=options["placement"],
            board="." * size,
            empty_by_number=tuple(counts),
            parent=(-1,) * size,
            group_size=(0,) * size,
        )

    # --- decide -------------------------------------------------------------------------------
    def to_move(self, state: StrandsState) -> tuple[int, ...]:
        return () if self._full(state) else (state.turn % 2,)

    def decide(self, state: StrandsState, seat: int, action: Place, at_ms: int) -> list[Event]:
        cells = self._check_place(state, action.cells)
        number = int(state.numbers[cells[0]])
        geometry = state.geometry
        return [
            {
                "type": "stones_placed",
                "seat": seat,
                "color": COLOURS[seat],
                "number": number,
                "cells": [list(geometry.cells[i]) for i in cells],
            }
        ]

    def _check_place(self, state: StrandsState, cells: list[tuple[int, int]]) -> list[int]:
        """Indices of the placed cells in canonical order, or Rejected naming the broken rule."""
        geometry = state.geometry
        indices = []
        for q, r in cells:
            index = geometry.index.get((q, r))
            if index is None:
                raise illegal(f"cell [{q},{r}] is off the board (side {state.side})")
            if state.board[index] != ".":
                raise illegal(f"cell [{q},{r}] is occupied")
            indices.append(index)
        if len(set(indices)) != len(indices):
            raise illegal("a cell is listed twice")
        numbers = {state.numbers[i] for i in indices}
        if len(numbers) > 1:
            raise illegal(f"all cells must carry the same number; these carry {', '.join(sorted(numbers))}")
        number = int(numbers.pop())
        if state.turn == 0:
            if number != 2 or len(indices) != 1:
                raise illegal("the opening covers exactly one empty cell marked 2")
        else:
            lowest, highest = self._size_range(state, number)
            if len(indices) > highest:
                raise illegal(f"too many cells: at most {highest} cells marked {number} may be covered")
            if len(indices) < lowest:
                raise illegal(
                    f"too few cells: exactly {lowest} cells marked {number} must be covered (placement 'exact')"
                )
        return sorted(indices)

    @staticmethod
    def _size_range(state: StrandsState, number: int) -> tuple[int, int]:
        available = min(number, state.empty_by_number[number])
        return (available if state.placement == "exact" else 1), available

    # --- evolve -------------------------------------------------------------------------------
    def evolve(self, state: StrandsState, event: Event) -> StrandsState:
        if event["type"] != "stones_placed":
            raise ValueError(f"strands cannot evolve {event['type']!r}")
        geometry = state.geometry
        stone = STONES[event["seat"]]
        board = list(state.board)
        parent = list(state.parent)
        size = list(state.group_size)
        empty = list(state.empty_by_number)
        empty[event["number"]] -= len(event["cells"])

        def root(cell: int) -> int:
            while parent[cell] != cell:
                cell = parent[cell]
            return cell

        sizes = list(state.groups[event["seat"]])
        for q, r in event["cells"]:
            cell = geometry.index[(q, r)]
            board[cell] = stone
            parent[cell] = cell
            size[cell] = 1
            sizes.append(1)
            for other in geometry.neighbours[cell]:
                if board[other] != stone:
                    continue
                a, b = root(cell), root(other)
                if a == b:
                    continue
                if size[a] < size[b]:
                    a, b = b, a
                sizes.remove(size[a])
                sizes.remove(size[b])
                sizes.append(size[a] + size[b])
                parent[b] = a
                size[a] += size[b]
                size[b] = 0
        groups = list(state.groups)
        groups[event["seat"]] = tuple(sorted(sizes, reverse=True))
        return state.evolved(
            board="".join(board),
            parent=tuple(parent),
            group_size=tuple(size),
            empty_by_number=tuple(empty),
            turn=state.turn + 1,
            groups=tuple(groups),
        )

    # --- end, views --------------------------------------------------------------------------
    @staticmethod
    def _full(state: StrandsState) -> bool:
        return sum(state.empty_by_number) == 0

    def outcome(self, state: StrandsState) -> dict[str, Any] | None:
        if not self._full(state):
            return None
        scores = self.scores(state)
        return {"winner": compare_groups(scores["black"], scores["white"]), "reason": "largest_group", "scores": scores}

    def scores(self, state: StrandsState) -> dict[str, list[int]]:
        return {"black": state.group_sizes("B"), "white": state.group_sizes("W")}

    def view(self, state: StrandsState, seat: int | None) -> dict[str, Any]:
        return {
            "layout": {"id": state.layout_id, "side": state.side, "rows": layout_rows(state.side, state.numbers)},
            "placement": state.placement,
            "board": state.board,
            "turn": state.turn,
            "groups": {"black": state.group_sizes("B"), "white": state.group_sizes("W")},
        }

    def legal_actions(self, state: StrandsState, seat: int) -> Iterator[dict[str, Any]]:
        """Every legal placement, lazily (there can be very many: C(30, 5) on a 5-ring)."""
        if seat not in self.to_move(state):
            return
        geometry = state.geometry
        by_number: dict[int, list[int]] = {}
        for i, cell in enumerate(state.board):
            if cell == ".":
                by_number.setdefault(int(state.numbers[i]), []).append(i)
        if state.turn == 0:
            for i in by_number.get(2, []):
                yield {"type": "place", "cells": [list(geometry.cells[i])]}
            return
        for number in sorted(by_number):
            lowest, highest = self._size_range(state, number)
            for count in range(lowest, highest + 1):
                for chosen in combinations(by_number[number], count):
                    yield {"type": "place", "cells": [list(geometry.cells[i]) for i in chosen]}

    def random_action(self, state: StrandsState, seat: int, rng: random.Random) -> dict[str, Any] | None:
        if seat not in self.to_move(state):
            return None
        geometry = state.geometry
        wanted = {2} if state.turn == 0 else {n for n in range(1, 7) if state.empty_by_number[n]}
        number = rng.choice(sorted(wanted))
        free = [i for i, c in enumerate(state.board) if c == "." and int(state.numbers[i]) == number]
        if state.turn == 0:
            count = 1
        else:
            lowest, highest = self._size_range(state, number)
            count = rng.randint(lowest, highest)
        return {"type": "place", "cells": [list(geometry.cells[i]) for i in sorted(rng.sample(free, count))]}

    def render(self, state: StrandsState) -> str:
        shown = "".join(n if c == "." else c for n, c in zip(state.numbers, state.board, strict=False))
        groups = f"groups: Black {state.group_sizes('B')} · White {state.group_sizes('W')}"
        return f"{state.geometry.render(shown)}\n{groups}  (digits: empty cells with their number)"


class StrandsV2(Strands):
    """Rules `strands/2`: `exact` placement by default (the one change; see docs/rules/strands.md).
    Everything else is version 1's, so a v2 match created with `placement: up_to` plays as v1."""

    options_model = StrandsOptionsV2


GAME = Strands()
GAME_V2 = StrandsV2()
