"""A slow, obviously-correct judge of Mind Ninja patterns, written independently of the
game's incremental code: every call rescans the whole board.

- groups from `hex_board(side).groups()` (full flood fill);
- edges, sides and corners recomputed from cube coordinates; "alternate" = three edges no two
  of which share a corner;
- rows by walking every line of the board;
- rings by flood fill from the rim around each group;
- shapes by brute force: the 12 symmetries built here from cube coordinates, tried at every
  anchor;
- odd / equicolored by counting on the full board.

`formed(pattern, board, side)` takes the normalised pattern (as in `pattern_chosen`) and a
board string (canonical order, '.', 'R', 'B') and applies the full-board rule.
"""

from __future__ import annotations

from typing import Any

from games.hexgrid import hex_board

STEPS = ((1, 0), (0, 1), (1, -1))  # one direction per axis
NEIGHBOURS = ((1, 0), (1, -1), (0, -1), (-1, 0), (-1, 1), (0, 1))


def _stones(color: str) -> list[str]:
    return {"red": ["R"], "blue": ["B"], "any": ["R", "B"]}[color]


def _cube(cell: tuple[int, int]) -> tuple[int, int, int]:
    q, r = cell
    return q, r, -q - r


def edges_of(cell: tuple[int, int], side: int) -> set[str]:
    """Names of the edges a cell lies on: 'q+', 'q-', 'r+', 'r-', 's+', 's-'."""
    n = side - 1
    names = set()
    for name, value in zip("qrs", _cube(cell), strict=False):
        if value == n:
            names.add(name + "+")
        if value == -n:
            names.add(name + "-")
    return names


def is_corner(cell: tuple[int, int], side: int) -> bool:
    n = side - 1
    return sorted(abs(v) for v in _cube(cell)).count(n) == 2


def edge_cells(side: int) -> dict[str, set[tuple[int, int]]]:
    board = hex_board(side)
    table: dict[str, set[tuple[int, int]]] = {}
    for cell in board.cells:
        for name in edges_of(cell, side):
            table.setdefault(name, set()).add(cell)
    return table


def _adjacent_edges(a: str, b: str, side: int) -> bool:
    table = edge_cells(side)
    return bool(table[a] & table[b])


def _groups(board: str, side: int, stone: str) -> list[list[tuple[int, int]]]:
    geometry = hex_board(side)
    return [[geometry.cells[i] for i in group] for group in geometry.groups(board, stone)]


def row(board: str, side: int, stone: str, n: int) -> bool:
    geometry = hex_board(side)
    colour = {cell: board[i] for i, cell in enumerate(geometry.cells)}
    for q, r in geometry.cells:
        for dq, dr in STEPS:
            length = 0
            while colour.get((q + length * dq, r + length * dr)) == stone:
                length += 1
            if length >= n:
                return True
    return False


def connect(board: str, side: int, stone: str, edges: int, mode: str) -> bool:
    for group in _groups(board, side, stone):
        touched = set().union(*(edges_of(c, side) for c in group))
        if mode == "any" and len(touched) >= edges:
            return True
        if mode == "opposite" and any(a[0] == b[0] and a != b for a in touched for b in touched):
            return True
        if mode == "alternate":
            names = sorted(touched)
            for a in names:
                for b in names:
                    for c in names:
                        if len({a, b, c}) == 3 and not any(
                            _adjacent_edges(x, y, side) for x, y in ((a, b), (b, c), (a, c))
                        ):
                            return True
    return False


def fork(board: str, side: int, stone: str, sides: int) -> bool:
    for group in _groups(board, side, stone):
        touched = set().union(*(edges_of(c, side) for c in group if not is_corner(c, side)))
        if len(touched) >= sides:
            return True
    return False


def bridge(board: str, side: int, stone: str) -> bool:
    return any(sum(is_corner(c, side) for c in group) >= 2 for group in _groups(board, side, stone))


def group(board: str, side: int, stone: str, size: int) -> bool:
    return any(len(g) >= size for g in _groups(board, side, stone))


def encloses(group_cells: list[tuple[int, int]], side: int) -> bool:
    """Some cell outside the group cannot reach the rim without crossing the group."""
    geometry = hex_board(side)
    inside = set(group_cells)
    start = [c for c in geometry.cells if max(abs(v) for v in _cube(c)) == side - 1 and c not in inside]
    reached = set(start)
    stack = list(start)
    while stack:
        q, r = stack.pop()
        for dq, dr in NEIGHBOURS:
            nxt = (q + dq, r + dr)
            if nxt in geometry.index and nxt not in inside and nxt not in reached:
                reached.add(nxt)
                stack.append(nxt)
    return len(reached) + len(inside) < geometry.size


def ring(board: str, side: int, stone: str) -> bool:
    return any(encloses(g, side) for g in _groups(board, side, stone))


def symmetric_images(cells: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The 12 images: the 6 rotations of the shape and of its mirror image (cube coordinates)."""
    images = []
    for mirror in (False, True):
        cubes = [_cube(c) for c in cells]
        if mirror:
            cubes = [(x, z, y) for x, y, z in cubes]
        for _ in range(6):
            images.append([(x, y) for x, y, _z in cubes])
            cubes = [(-z, -x, -y) for x, y, z in cubes]
    return images


def shape(board: str, side: int, stone: str, cells: list[list[int]]) -> bool:
    return bool(shape_placements_found(board, side, stone, cells))


def shape_placements_found(
    board: str, side: int, stone: str, cells: list[list[int]], images: list[list[tuple[int, int]]] | None = None
) -> list[set[tuple[int, int]]]:
    geometry = hex_board(side)
    colour = {cell: board[i] for i, cell in enumerate(geometry.cells)}
    found = []
    for image in images or symmetric_images([tuple(c) for c in cells]):
        aq, ar = image[0]
        for q, r in geometry.cells:
            placed = {(q + cq - aq, r + cr - ar) for cq, cr in image}
            if all(colour.get(c) == stone for c in placed):
                found.append(placed)
    return found


def odd(board: str, side: int, k: int) -> bool:
    count = sum(1 for stone in "RB" for g in _groups(board, side, stone) if len(g) >= k)
    return count % 2 == 1


def equicolored(board: str, side: int) -> bool:
    geometry = hex_board(side)
    colour = {cell: board[i] for i, cell in enumerate(geometry.cells)}
    tally = {"R": 0, "B": 0}
    for q, r in geometry.cells:
        if is_corner((q, r), side):
            continue
        around = [colour.get((q + dq, r + dr)) for dq, dr in NEIGHBOURS]
        if around.count("R") == around.count("B") and colour[(q, r)] in tally:
            tally[colour[(q, r)]] += 1
    return tally["B"] > tally["R"]


def holds(definition: dict[str, Any], board: str, side: int) -> bool:
    """Whether a normalised definition holds on the board (no full-board rule)."""
    ((kind, params),) = definition.items()
    if kind == "all":
        return all(holds(d, board, side) for d in params)
    if kind == "any":
        return any(holds(d, board, side) for d in params)
    if kind == "odd":
        return odd(board, side, params["k"])
    if kind == "equicolored":
        return equicolored(board, side)
    for stone in _stones(params["color"]):
        if kind == "row" and row(board, side, stone, params["n"]):
            return True
        if kind == "group" and group(board, side, stone, params["size"]):
            return True
        if kind == "connect" and connect(board, side, stone, params["edges"], params["mode"]):
            return True
        if kind == "fork" and fork(board, side, stone, params["sides"]):
            return True
        if kind == "bridge" and bridge(board, side, stone):
            return True
        if kind == "ring" and ring(board, side, stone):
            return True
        if kind == "shape" and shape(board, side, stone, params["cells"]):
            return True
    return False


def has_full_board_part(definition: dict[str, Any]) -> bool:
    ((kind, params),) = definition.items()
    if kind in ("all", "any"):
        return any(has_full_board_part(d) for d in params)
    return kind in ("odd", "equicolored")


def formed(pattern: dict[str, Any], board: str, side: int) -> bool:
    """The rules' judgement: full-board patterns only on the full board."""
    definition = pattern["def"]
    if has_full_board_part(definition) and "." in board:
        return False
    return holds(definition, board, side)
