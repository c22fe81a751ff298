"""Geometry of hexhex boards (Strands, Mind Ninja): axial coordinates, canonical order,
neighbours, rings, corners, edges and sides, groups; the 12 symmetries of a shape and its
translates on a board.

Cells are addressed by their index in canonical order (rows r = -(N-1)..N-1, q ascending),
so a board position is a string with one character per cell, in that order.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

# Neighbour directions in axial (q, r), in circular order around a cell.
DIRECTIONS: tuple[tuple[int, int], ...] = ((1, 0), (1, -1), (0, -1), (-1, 0), (-1, 1), (0, 1))


class HexBoard:
    """The fixed geometry of a hexhex board of side N; build it with `hex_board(N)`."""

    def __init__(self, side: int):
        if side < 1:
            raise ValueError("side must be at least 1")
        self.side = side
        n = side - 1
        self.cells: tuple[tuple[int, int], ...] = tuple(
            (q, r) for r in range(-n, n + 1) for q in range(max(-n, -n - r), min(n, n - r) + 1)
        )
        self.size = len(self.cells)
        self.index: dict[tuple[int, int], int] = {cell: i for i, cell in enumerate(self.cells)}
        self.row_lengths: tuple[int, ...] = tuple(2 * side - 1 - abs(r) for r in range(-n, n + 1))
        # Neighbours in circular order; None where the neighbour is off the board.
        self.around: tuple[tuple[int | None, ...], ...] = tuple(
            tuple(self.index.get((q + dq, r + dr)) for dq, dr in DIRECTIONS) for q, r in self.cells
        )
        self.neighbours: tuple[tuple[int, ...], ...] = tuple(
            tuple(i for i in ring if i is not None) for ring in self.around
        )
        self.distance: tuple[int, ...] = tuple(max(abs(q), abs(r), abs(q + r)) for q, r in self.cells)
        corners = [self.index[(n * dq, n * dr)] for dq, dr in DIRECTIONS] if n else [0]
        self.corners: tuple[int, ...] = tuple(corners)
        # Edge k runs from corner k to corner k+1 (both included); edges k and k+3 are opposite.
        edge_mask = [0] * self.size
        for k in range(6):
            if n == 0:
                break
            cq, cr = n * DIRECTIONS[k][0], n * DIRECTIONS[k][1]
            dq, dr = DIRECTIONS[(k + 2) % 6]
            for t in range(side):
                edge_mask[self.index[(cq + t * dq, cr + t * dr)]] |= 1 << k
        self.edge_mask: tuple[int, ...] = tuple(edge_mask)
        corner_set = set(self.corners) if n else set()
        # A side is an edge without its corners.
        self.side_mask: tuple[int, ...] = tuple(0 if i in corner_set else m for i, m in enumerate(edge_mask))
        self.corner_bit: tuple[int, ...] = tuple(
            (1 << self.corners.index(i)) if i in corner_set else 0 for i in range(self.size)
        )

    def ring(self, d: int) -> tuple[int, ...]:
        """Cells at distance d from the centre, in canonical order."""
        return tuple(i for i in range(self.size) if self.distance[i] == d)

    def is_corner_of_ring(self, i: int) -> bool:
        """True for the six corners of the cell's own ring (the centre counts as one)."""
        q, r = self.cells[i]
        d = self.distance[i]
        return d == 0 or sorted((abs(q), abs(r), abs(q + r))).count(d) == 2

    def rows_of(self, text: str) -> list[str]:
        """A canonical-order string cut into the board's rows."""
        rows, start = [], 0
        for length in self.row_lengths:
            rows.append(text[start : start + length])
            start += length
        return rows

    def groups(self, board: str, colour: str) -> list[list[int]]:
        """Every maximal connected set of cells holding `colour` (full scan; for reference use)."""
        seen: set[int] = set()
        result = []
        for start in range(self.size):
            if board[start] != colour or start in seen:
                continue
            seen.add(start)
            stack, group = [start], []
            while stack:
                cell = stack.pop()
                group.append(cell)
                for other in self.neighbours[cell]:
                    if board[other] == colour and other not in seen:
                        seen.add(other)
                        stack.append(other)
            result.append(sorted(group))
        return result

    def render(self, text: str, width: int = 1) -> str:
        """A hexagon of text: each row indented so that neighbours line up."""
        lines = []
        for r_index, row in enumerate(self.rows_of(text)):
            indent = " " * (abs(r_index - (self.side - 1)) * (width + 1) // 2)
            lines.append(indent + " ".join(c.rjust(width) for c in row))
        return "\n".join(lines)


@cache
def hex_board(side: int) -> HexBoard:
    return HexBoard(side)


# --- symmetries and translates (Mind Ninja shapes) ------------------------------------------------
def _rotate(cell: tuple[int, int]) -> tuple[int, int]:
    """60° rotation about the origin: cube (q, r, s) -> (-r, -s, -q)."""
    q, r = cell
    return (-r, q + r)


def _reflect(cell: tuple[int, int]) -> tuple[int, int]:
    """Mirror in the q axis: cube (q, r, s) -> (q, s, r)."""
    q, r = cell
    return (q, -q - r)


def symmetries(cells: Iterable[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The 12 images of `cells` under the rotations and reflections of the hexagon, in a fixed
    order (rotations 0..5 of the shape, then rotations 0..5 of its mirror image); duplicates kept."""
    base = [(int(q), int(r)) for q, r in cells]
    images = []
    for start in (base, [_reflect(c) for c in base]):
        current = start
        for _ in range(6):
            images.append(current)
            current = [_rotate(c) for c in current]
    return images


def normalised_offsets(cells: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """`cells` sorted and translated so the smallest (r, q) is at the origin: equal for translates."""
    ordered = sorted(((q, r) for q, r in cells), key=lambda c: (c[1], c[0]))
    q0, r0 = ordered[0]
    return tuple((q - q0, r - r0) for q, r in ordered)


def shape_variants(cells: Iterable[tuple[int, int]]) -> tuple[tuple[tuple[int, int], ...], ...]:
    """The distinct images of a shape under the 12 symmetries, up to translation."""
    seen: dict[tuple[tuple[int, int], ...], None] = {}
    for image in symmetries(cells):
        seen.setdefault(normalised_offsets(image), None)
    return tuple(seen)


def translates(board: HexBoard, offsets: tuple[tuple[int, int], ...]) -> list[tuple[int, ...]]:
    """Every placement of `offsets` on the board (cell indices, in offset order), translations in
    canonical order. Only translations that fit are visited: a set of cells is on the board iff
    each cube coordinate stays within [-(N-1), N-1]."""
    n = board.side - 1
    qs = [q for q, _ in offsets]
    rs = [r for _, r in offsets]
    ss = [-q - r for q, r in offsets]
    index = board.index
    found = []
    for dr in range(-n - min(rs), n - max(rs) + 1):
        for dq in range(-n - min(qs), n - max(qs) + 1):
            ds = -dq - dr
            if ds + min(ss) < -n or ds + max(ss) > n:
                continue
            found.append(tuple(index[(q + dq, r + dr)] for q, r in offsets))
    return found
