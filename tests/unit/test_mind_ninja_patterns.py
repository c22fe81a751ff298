"""Mind Ninja patterns through the real fold: positive and negative cases of every primitive and
catalogue entry on two board sizes, combinators, colours, normalisation and the rejections of
bad patterns. A position is judged by setting it up and letting the chooser take the builder
role: the end check after the role choice ends the match iff the pattern is formed."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from games.hexgrid import DIRECTIONS, hex_board
from games.mind_ninja_patterns import normalise_pattern
from tests import reference_patterns as reference
from tests.support import Match
from tests.unit.test_mind_ninja import A, B, ready

SIDES = [5, 7]
Cell = tuple[int, int]


# --- geometry helpers (independent of the game code) --------------------------------------------
def corner(k: int, side: int) -> Cell:
    n = side - 1
    return (n * DIRECTIONS[k][0], n * DIRECTIONS[k][1])


def mid(k: int, side: int) -> Cell:
    """The middle of side k (edge k runs from corner k to corner k+1)."""
    q, r = corner(k, side)
    dq, dr = DIRECTIONS[(k + 2) % 6]
    t = (side - 1) // 2
    return (q + t * dq, r + t * dr)


def line(a: Cell, b: Cell) -> list[Cell]:
    """Cells of the straight hex line from a to b (cube interpolation)."""
    (aq, ar), (bq, br) = a, b
    steps = max(abs(aq - bq), abs(ar - br), abs((aq + ar) - (bq + br)))
    cells = []
    for i in range(steps + 1):
        t = i / steps if steps else 0
        x, z = aq + (bq - aq) * t + 1e-6, ar + (br - ar) * t + 1e-6
        y = -x - z
        rx, ry, rz = round(x), round(y), round(z)
        dx, dy, dz = abs(rx - x), abs(ry - y), abs(rz - z)
        if dx > dy and dx > dz:
            rx = -ry - rz
        elif dy <= dz:
            rz = -rx - ry
        cells.append((rx, rz))
    return cells


def around(c: Cell) -> list[Cell]:
    return [(c[0] + dq, c[1] + dr) for dq, dr in DIRECTIONS]


def union(*parts: Iterable[Cell]) -> list[Cell]:
    seen: dict[Cell, None] = {}
    for part in parts:
        for c in part:
            seen.setdefault(tuple(c), None)
    return list(seen)


def judged(pattern: dict, side: int, red: Iterable[Cell] = (), blue: Iterable[Cell] = ()) -> list | None:
    """Set up the position, the chooser takes the builder role: the pattern's cells ([] when it
    names none) if the match ended with the builder winning, None if play goes on."""
    red, blue = list(red), list(blue)
    assert not set(red) & set(blue)
    m = ready(pattern, side=side, red=red, blue=blue, role="builder")
    state = m.state
    # The reference checker agrees with the game on every position judged here.
    normalised = m.view["pattern"]
    assert (state.status == "over") == reference.formed(normalised, m.view["board"], side) or "." not in m.view["board"]
    if state.status != "over":
        return None
    assert state.outcome["reason"] == "pattern_formed" and state.outcome["winner"] == 0
    return [tuple(c) for c in state.outcome["scores"]["cells"] or []]


def formed(pattern: dict, side: int, red: Iterable[Cell] = (), blue: Iterable[Cell] = ()) -> bool:
    return judged(pattern, side, red, blue) is not None


def custom(definition: dict, colors: str = "fixed") -> dict:
    return {"id": "custom", "name": "t", "colors": colors, "def": definition}


# --- five_in_a_row / row ------------------------------------------------------------------------------
def test_worked_five_in_a_row_examples():
    five = {"id": "five_in_a_row"}
    assert judged(five, 5, red=[(-2, 0), (-1, 0), (0, 0), (1, 0), (2, 0)]) == [(-2, 0), (-1, 0), (0, 0), (1, 0), (2, 0)]
    assert formed(five, 5, red=[(2, -2), (1, -1), (0, 0), (-1, 1), (-2, 2)])
    assert not formed(five, 5, red=[*[(-2, 0), (-1, 0), (0, 0), (1, 0), (2, 0)][:3], (1, -1), (2, -1)])


@pytest.mark.parametrize("side", SIDES)
def test_row_along_every_axis(side):
    five = {"id": "five_in_a_row"}
    n = side - 1
    for direction in ((1, 0), (0, 1), (1, -1)):
        cells = [
            (-n // 2 * direction[0] + i * direction[0], -n // 2 * direction[1] + i * direction[1]) for i in range(5)
        ]
        assert formed(five, side, red=cells), direction
        assert not formed(five, side, red=cells[:4]), direction
        assert not formed(five, side, red=cells[:2] + cells[3:], blue=[cells[2]]), direction
        assert not formed(five, side, blue=cells), "fixed colours: five_in_a_row is red"


@pytest.mark.parametrize("side", SIDES)
def test_row_params_and_colours(side):
    cells = [(q, 1) for q in range(-3, 3)]
    assert not formed({"id": "five_in_a_row", "params": {"n": 6}}, side, red=cells[:5])
    assert judged({"id": "five_in_a_row", "params": {"n": 6}}, side, red=cells) == sorted(cells, key=lambda c: c[0])
    assert formed(custom({"row": {"n": 3, "color": "blue"}}), side, blue=cells[:3])
    assert not formed(custom({"row": {"n": 3, "color": "blue"}}), side, red=cells[:3])
    assert formed(custom({"row": {"n": 3, "color": "any"}}), side, red=cells[:3])
    assert formed(custom({"row": {"n": 2}}), side, red=cells[:2])
    assert not formed(custom({"row": {"n": 3, "color": "any"}}), side, red=cells[:2], blue=cells[2:4])


# --- havannah, ring, bridge, fork ----------------------------------------------------------------------
@pytest.mark.parametrize("side", SIDES)
def test_ring_around_an_empty_cell_and_the_worked_example(side):
    ring = {"id": "ring"}
    six = around((0, 0))
    assert sorted(judged(ring, side, red=six)) == sorted(six)
    for missing in range(6):
        assert not formed(ring, side, red=six[:missing] + six[missing + 1 :])
    assert formed({"id": "havannah"}, side, red=six)


@pytest.mark.parametrize("side", SIDES)
def test_ring_around_an_enemy_stone_and_around_several_cells(side):
    assert formed({"id": "ring"}, side, red=around((1, -1)), blue=[(1, -1)])
    two = [c for c in union(around((0, 0)), around((1, 0))) if c not in ((0, 0), (1, 0))]
    assert len(two) == 8 and formed({"id": "ring"}, side, red=two, blue=[(1, 0)])
    assert not formed({"id": "ring"}, side, red=two[1:], blue=[(1, 0)])


@pytest.mark.parametrize("side", SIDES)
def test_ring_at_the_rim(side):
    n = side - 1
    inner = (n - 1, 0)  # next to the rim: its six neighbours include rim cells and a corner
    assert formed({"id": "ring"}, side, red=around(inner))
    rim_cell = (n, -1)  # a rim cell: its on-board neighbours never enclose it
    on_board = [c for c in around(rim_cell) if max(abs(c[0]), abs(c[1]), abs(c[0] + c[1])) <= n]
    assert len(on_board) == 4 and not formed({"id": "ring"}, side, red=on_board)
    assert not formed({"id": "ring"}, side, red=[c for c in around(corner(0, side)) if c in hex_board(side).index])


@pytest.mark.parametrize("side", SIDES)
def test_a_filled_ring_encloses_nothing(side):
    """Rings are judged on the position: a flower of red stones encloses no cell."""
    assert not formed({"id": "ring"}, side, red=[*around((0, 0)), (0, 0)])
    assert formed({"id": "ring", "params": {"color": "blue"}}, side, blue=around((0, 0)), red=[(0, 0)])


@pytest.mark.parametrize("side", SIDES)
def test_bridge(side):
    edge = line(corner(0, side), corner(1, side))
    across = line(corner(0, side), corner(3, side))
    assert formed({"id": "havannah"}, side, red=edge)
    assert formed(custom({"bridge": {}}), side, red=across)
    assert not formed(custom({"bridge": {}}), side, red=edge[:-1])
    assert not formed(custom({"bridge": {}}), side, red=across[:3], blue=[across[3]])
    assert not formed(custom({"bridge": {}}), side, blue=across)
    assert formed(custom({"bridge": {"color": "blue"}}), side, blue=across)


def _spokes(side: int, *targets: Cell) -> list[Cell]:
    return union(*(line((0, 0), t) for t in targets))


@pytest.mark.parametrize("side", SIDES)
def test_fork(side):
    three = _spokes(side, mid(0, side), mid(2, side), mid(4, side))
    assert formed({"id": "havannah"}, side, red=three)
    assert set(judged(custom({"fork": {}}), side, red=three)) == set(three)
    assert not formed(custom({"fork": {}}), side, red=_spokes(side, mid(0, side), mid(2, side)))
    assert formed(custom({"fork": {"sides": 2}}), side, red=_spokes(side, mid(0, side), mid(2, side)))
    four = _spokes(side, mid(0, side), mid(1, side), mid(2, side), mid(3, side))
    assert formed(custom({"fork": {"sides": 4}}), side, red=four)
    assert not formed(custom({"fork": {"sides": 5}}), side, red=four)


@pytest.mark.parametrize("side", SIDES)
def test_a_fork_touching_a_corner_does_not_count_the_corner_as_a_side(side):
    spokes = _spokes(side, mid(0, side), mid(2, side), corner(4, side))
    assert not formed(custom({"fork": {"sides": 3}}), side, red=spokes)
    assert not formed({"id": "havannah"}, side, red=spokes)
    # ... though a corner lies on both its edges: the same group connects edges 0, 2 and 4 (Y).
    assert formed({"id": "y"}, side, red=spokes)


# --- hex, y, connect -------------------------------------------------------------------------------------
@pytest.mark.parametrize("side", SIDES)
def test_hex_connects_opposite_edges(side):
    n = side - 1
    crossing = line((-n, 1), (n, -1))
    assert formed({"id": "hex"}, side, red=crossing)
    assert formed({"id": "hex"}, side, red=line(mid(1, side), mid(4, side)))
    assert formed({"id": "hex"}, side, red=line(corner(0, side), corner(3, side)))
    assert not formed({"id": "hex"}, side, red=crossing[:-1])
    assert not formed({"id": "hex"}, side, red=line(mid(0, side), mid(1, side)))  # adjacent edges
    assert not formed({"id": "hex"}, side, red=line(mid(0, side), mid(2, side)))
    assert not formed({"id": "hex"}, side, blue=crossing)
    assert formed({"id": "hex", "params": {"color": "blue"}}, side, blue=crossing)


@pytest.mark.parametrize("side", SIDES)
def test_y_connects_alternate_edges(side):
    assert formed({"id": "y"}, side, red=_spokes(side, mid(0, side), mid(2, side), mid(4, side)))
    assert formed({"id": "y"}, side, red=_spokes(side, mid(1, side), mid(3, side), mid(5, side)))
    assert not formed({"id": "y"}, side, red=_spokes(side, mid(0, side), mid(1, side), mid(3, side)))
    assert not formed({"id": "y"}, side, red=_spokes(side, mid(0, side), mid(2, side)))


@pytest.mark.parametrize("side", SIDES)
def test_connect_any_edges(side):
    three = _spokes(side, mid(0, side), mid(1, side), mid(3, side))
    assert formed(custom({"connect": {"edges": 3, "mode": "any"}}), side, red=three)
    assert not formed(custom({"connect": {"edges": 4, "mode": "any"}}), side, red=three)
    assert formed(custom({"connect": {"edges": 1, "mode": "any", "color": "any"}}), side, blue=[mid(5, side)])
    assert not formed(custom({"connect": {"edges": 1, "mode": "any"}}), side, red=[(0, 0)])


# --- group ------------------------------------------------------------------------------------------------
def _blob(side: int, size: int, shift: Cell = (0, 0)) -> list[Cell]:
    board = hex_board(side)
    ordered = sorted(board.cells, key=lambda c: (max(abs(c[0]), abs(c[1]), abs(c[0] + c[1])), board.index[c]))
    return [(q + shift[0], r + shift[1]) for q, r in ordered[:size]]


@pytest.mark.parametrize("side,size", [(5, 16), (7, 32)])
def test_big_group_is_a_quarter_of_the_cells(side, size):
    m = ready({"id": "big_group"}, side=side)
    assert m.view["pattern"]["params"] == {"size": size, "color": "red"}
    assert set(judged({"id": "big_group"}, side, red=_blob(side, size))) == set(_blob(side, size))
    assert not formed({"id": "big_group"}, side, red=_blob(side, size - 1))


@pytest.mark.parametrize("side", SIDES)
def test_group_counts_one_group_only(side):
    n = side - 1
    left = line((-n, 0), (-n, n))  # edge 3
    right = line((n, 0), (n, -n))  # edge 0
    assert len(left) == side
    assert formed(custom({"group": {"size": side}}), side, red=left)
    assert not formed(custom({"group": {"size": side + 1}}), side, red=left + right)
    assert formed(custom({"group": {"size": 2, "color": "any"}}), side, blue=[(0, 0), (1, 0)])
    assert formed(custom({"group": {"size": 1}}), side, red=[(0, 0)])


# --- shapes ------------------------------------------------------------------------------------------------
TRIANGLE = [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (0, 2)]
CHIRAL = [(0, 0), (1, 0), (2, 0), (2, -1)]


def _rotate(cells: list[Cell], times: int) -> list[Cell]:
    for _ in range(times):
        cells = [(-r, q + r) for q, r in cells]
    return cells


def _translate(cells: list[Cell], dq: int, dr: int) -> list[Cell]:
    return [(q + dq, r + dr) for q, r in cells]


@pytest.mark.parametrize("side", SIDES)
def test_triangle_in_every_rotation(side):
    for times in range(6):
        placed = _translate(_rotate(TRIANGLE, times), -1, 0)
        assert set(judged({"id": "triangle"}, side, red=placed)) == set(placed), times
        assert not formed({"id": "triangle"}, side, red=placed[1:], blue=placed[:1]), times
    assert not formed({"id": "triangle"}, side, blue=TRIANGLE)


@pytest.mark.parametrize("side", SIDES)
def test_flower(side):
    flower = [(1, -1), *around((1, -1))]
    assert set(judged({"id": "flower"}, side, red=flower)) == set(flower)
    assert not formed({"id": "flower"}, side, red=flower[1:])  # that is a ring, not a flower
    assert not formed({"id": "flower"}, side, red=flower[:-1])
    n = side - 1
    assert not formed({"id": "flower"}, side, red=[(n, 0)] + [c for c in around((n, 0)) if c in hex_board(side).index])


@pytest.mark.parametrize("side", SIDES)
def test_a_shape_found_only_under_a_reflection(side):
    mirrored = [(q, -q - r) for q, r in CHIRAL]
    placed = _translate(mirrored, -1, 1)
    # No rotation of the shape, anywhere, is this set: only its mirror image is.
    rotations = [_rotate(CHIRAL, t) for t in range(6)]
    for rotation in rotations:
        for dq in range(-8, 9):
            for dr in range(-8, 9):
                assert set(_translate(rotation, dq, dr)) != set(placed)
    shape = custom({"shape": {"cells": [list(c) for c in CHIRAL]}})
    assert set(judged(shape, side, red=placed)) == set(placed)
    assert not formed(shape, side, red=placed[:3])
    assert not formed(shape, side, red=[*placed[:3], (placed[3][0] + 1, placed[3][1])])


@pytest.mark.parametrize("side", SIDES)
def test_shape_translation_and_colours(side):
    shape = [[5, 5], [6, 5]]  # offsets far off the board: only the shape matters, not where it is written
    assert formed(custom({"shape": {"cells": shape}}), side, red=[(0, 0), (0, 1)])
    assert not formed(custom({"shape": {"cells": shape}}), side, red=[(0, 0), (1, 1)])
    assert formed(custom({"shape": {"cells": shape, "color": "any"}}), side, blue=[(0, 0), (1, -1)])
    assert not formed(custom({"shape": {"cells": shape, "color": "blue"}}), side, red=[(0, 0), (1, -1)])


# --- odd and equicolored: judged on the full board only ---------------------------------------------
def _fill(side: int, colour_of) -> tuple[list[Cell], list[Cell]]:
    cells = hex_board(side).cells
    red = [c for c in cells if colour_of(c) == "red"]
    blue = [c for c in cells if colour_of(c) == "blue"]
    return red, blue


def _full_board_match(pattern: dict, side: int, colour_of, last: Cell, last_colour: str) -> Match:
    red, blue = _fill(side, colour_of)
    red = [c for c in red if c != last]
    blue = [c for c in blue if c != last]
    m = ready(pattern, side=side, red=red, blue=blue, role="builder")
    assert m.state.status == "active", "not judged before the board is full"
    m.ok(A, {"type": "place", "cell": list(last), "color": last_colour})
    assert m.state.status == "over"
    return m


@pytest.mark.parametrize("side", SIDES)
def test_odd_counts_groups_of_both_colours_on_the_full_board(side):
    # One red group of every cell but one: odd (1 group >= 5) long before the board is full,
    # but judged only when full.
    m = _full_board_match({"id": "odd"}, side, lambda c: "red", (0, 0), "blue")
    assert m.state.outcome["winner"] == 0 and m.state.outcome["reason"] == "pattern_formed"
    assert m.state.outcome["scores"]["cells"] is None
    # Two halves: two groups >= 5, even.
    m = _full_board_match({"id": "odd"}, side, lambda c: "red" if c[0] <= 0 else "blue", (0, 0), "red")
    assert m.state.outcome["winner"] == 1 and m.state.outcome["reason"] == "board_full"
    # k counts: with k larger than either half, no group counts (0 is even) ...
    left = sum(1 for c in hex_board(side).cells if c[0] <= 0)
    right = len(hex_board(side).cells) - left
    m = _full_board_match(
        {"id": "odd", "params": {"k": max(left, right) + 1}},
        side,
        lambda c: "red" if c[0] <= 0 else "blue",
        (0, 0),
        "red",
    )
    assert m.state.outcome["winner"] == 1

    # ... and with k = 1 a lone blue stone counts too: red half + blue half + lone blue = 3.
    def three(c):
        return "blue" if c == (-1, 0) or c[0] > 0 else "red"

    assert (
        _full_board_match({"id": "odd", "params": {"k": 1}}, side, three, (2, 0), "blue").state.outcome["winner"] == 0
    )


def _class(c: Cell) -> int:
    return (c[0] - c[1]) % 3  # a proper 3-colouring: each cell's neighbours alternate the other two classes


@pytest.mark.parametrize("side", SIDES)
def test_equicolored_on_the_full_board(side):
    # Classes 0 and 2 blue, class 1 red: every blue cell off the rim has 3 red and 3 blue neighbours,
    # every red one 6 blue: far more blue than red cells are "equicoloured".
    def blue_heavy(c):
        return "red" if _class(c) == 1 else "blue"

    red, _blue = _fill(side, blue_heavy)
    assert reference.equicolored("".join("R" if c in red else "B" for c in hex_board(side).cells), side)
    m = _full_board_match({"id": "equicolored"}, side, blue_heavy, (0, 0), blue_heavy((0, 0)))
    assert m.state.outcome["winner"] == 0 and m.state.outcome["reason"] == "pattern_formed"

    def red_heavy(c):
        return "blue" if _class(c) == 1 else "red"

    m = _full_board_match({"id": "equicolored"}, side, red_heavy, (0, 0), red_heavy((0, 0)))
    assert m.state.outcome["winner"] == 1 and m.state.outcome["reason"] == "board_full"
    # A one-colour board: no cell has as many red as blue neighbours: 0 > 0 is false.
    m = _full_board_match({"id": "equicolored"}, side, lambda c: "blue", (0, 0), "blue")
    assert m.state.outcome["winner"] == 1


def test_equicolored_ignores_corner_cells():
    side = 3
    board = hex_board(side)
    # Hand-made full board: corner cells are the only ones with equal red/blue neighbours and blue.
    position = {c: "red" for c in board.cells}
    for k in range(6):
        position[corner(k, side)] = "blue"
    text = "".join("R" if position[c] == "red" else "B" for c in board.cells)
    assert not reference.equicolored(text, side)
    last = (0, 0)
    red = [c for c, v in position.items() if v == "red" and c != last]
    blue = [c for c, v in position.items() if v == "blue"]
    m = ready({"id": "equicolored"}, side=side, red=red, blue=blue, role="builder")
    m.ok(A, {"type": "place", "cell": list(last), "color": "red"})
    assert m.state.outcome["winner"] == 1


# --- combinators ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("side", SIDES)
def test_all_and_any(side):
    row3 = [(0, 2), (1, 2), (2, 2)]
    ring = around((0, -1))
    both = custom({"all": [{"row": {"n": 3}}, {"ring": {}}]})
    either = custom({"any": [{"row": {"n": 3, "color": "blue"}}, {"ring": {}}]})
    assert not formed(both, side, red=row3)
    assert not formed(both, side, red=ring[:5])
    assert set(judged(both, side, red=row3 + ring)) >= set(row3) | set(ring)
    assert formed(either, side, red=ring)
    assert judged(either, side, blue=row3) == row3
    assert not formed(either, side, red=row3)


def test_a_combination_with_a_full_board_primitive_is_judged_on_the_full_board_only():
    side = 3
    pattern = custom({"any": [{"row": {"n": 3}}, {"odd": {"k": 1}}]}, colors="either")
    # The row is there from the setup, but the any[] holds a full-board primitive: play goes on.
    m = ready(pattern, side=side, red=[(-1, 0), (0, 0), (1, 0)], role="builder")
    assert m.state.status == "active" and m.view["pattern"]["full_board"] is True
    # Filled up (all red: a single group, odd anyway) -> judged now: the builder wins.
    rest = [c for c in hex_board(side).cells if c not in [(-1, 0), (0, 0), (1, 0)]]
    for n, c in enumerate(rest):
        m.ok(A if n % 2 == 0 else B, {"type": "place", "cell": list(c), "color": "red"})
    assert m.state.outcome["winner"] == 0 and m.state.outcome["reason"] == "pattern_formed"
    cells = [tuple(c) for c in m.state.outcome["scores"]["cells"]]  # the any[] names its row: a whole red line
    board = hex_board(side)
    text = "".join("R" if c in cells else "." for c in board.cells)
    assert len(cells) >= 3 and reference.row(text, side, "R", 3)


# --- normalisation --------------------------------------------------------------------------------------
CATALOGUE_DEFS = {
    "five_in_a_row": ("fixed", {"n": 5, "color": "red"}, {"row": {"n": 5, "color": "red"}}),
    "havannah": (
        "fixed",
        {"sides": 3, "color": "red"},
        {"any": [{"ring": {"color": "red"}}, {"bridge": {"color": "red"}}, {"fork": {"sides": 3, "color": "red"}}]},
    ),
    "hex": (
        "fixed",
        {"edges": 2, "mode": "opposite", "color": "red"},
        {"connect": {"edges": 2, "mode": "opposite", "color": "red"}},
    ),
    "y": (
        "fixed",
        {"edges": 3, "mode": "alternate", "color": "red"},
        {"connect": {"edges": 3, "mode": "alternate", "color": "red"}},
    ),
    "ring": ("fixed", {"color": "red"}, {"ring": {"color": "red"}}),
    "big_group": ("fixed", {"size": 32, "color": "red"}, {"group": {"size": 32, "color": "red"}}),
    "triangle": (
        "fixed",
        {"cells": [[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [0, 2]], "color": "red"},
        {"shape": {"cells": [[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [0, 2]], "color": "red"}},
    ),
    "flower": (
        "fixed",
        {"cells": [[0, 0], [1, 0], [1, -1], [0, -1], [-1, 0], [-1, 1], [0, 1]], "color": "red"},
        {"shape": {"cells": [[0, 0], [1, 0], [1, -1], [0, -1], [-1, 0], [-1, 1], [0, 1]], "color": "red"}},
    ),
    "odd": ("either", {"k": 5}, {"odd": {"k": 5}}),
    "equicolored": ("either", {}, {"equicolored": {}}),
}


@pytest.mark.parametrize("pattern_id", list(CATALOGUE_DEFS))
def test_catalogue_expansion(pattern_id):
    colors, params, definition = CATALOGUE_DEFS[pattern_id]
    assert normalise_pattern({"id": pattern_id}, 7) == {
        "id": pattern_id,
        "name": pattern_id,
        "colors": colors,
        "params": params,
        "def": definition,
        "full_board": pattern_id in ("odd", "equicolored"),
    }


def test_param_overrides_and_custom_defaults_are_filled_in():
    assert normalise_pattern({"id": "five_in_a_row", "params": {"n": 6}}, 5)["def"] == {"row": {"n": 6, "color": "red"}}
    assert normalise_pattern({"id": "havannah", "params": {"color": "blue"}}, 5)["def"]["any"][2] == {
        "fork": {"sides": 3, "color": "blue"}
    }
    assert normalise_pattern(
        {
            "id": "custom",
            "def": {
                "all": [{"ring": {}}, {"connect": {"mode": "alternate"}}, {"connect": {}}, {"fork": {}}, {"odd": {}}]
            },
        },
        5,
    ) == {
        "id": "custom",
        "name": "custom",
        "colors": "fixed",
        "full_board": True,
        "def": {
            "all": [
                {"ring": {"color": "red"}},
                {"connect": {"edges": 3, "mode": "alternate", "color": "red"}},
                {"connect": {"edges": 2, "mode": "opposite", "color": "red"}},
                {"fork": {"sides": 3, "color": "red"}},
                {"odd": {"k": 5}},
            ]
        },
    }


def test_a_normalised_pattern_is_accepted_again_unchanged():
    for pattern in ({"id": "y"}, {"id": "custom", "name": "mine", "colors": "either", "def": {"row": {"n": 3}}}):
        once = normalise_pattern(pattern, 6)
        assert normalise_pattern(once, 6) == once


BAD_PATTERNS = [
    ({"id": "gomoku"}, ['unknown pattern id "gomoku"', "five_in_a_row", "equicolored", "custom"]),
    ({"params": {}}, ["no 'id'"]),
    ({"id": "five_in_a_row", "params": {"length": 6}}, ["unknown param 'length'", "five_in_a_row", "n, color"]),
    ({"id": "equicolored", "params": {"k": 3}}, ["unknown param 'k'", "its params: none"]),
    ({"id": "five_in_a_row", "params": {"n": 1}}, ["n must be an integer from 2 to 9", "not 1"]),
    ({"id": "five_in_a_row", "params": {"n": 10}}, ["from 2 to 9", "not 10"]),
    ({"id": "five_in_a_row", "params": {"n": True}}, ["n must be an integer"]),
    ({"id": "five_in_a_row", "params": {"color": "green"}}, ["color must be one of red, blue, any", "green"]),
    ({"id": "hex", "params": {"edges": 3}}, ["mode 'opposite'", "edges must be 2, not 3"]),
    ({"id": "y", "params": {"edges": 2}}, ["mode 'alternate'", "edges must be 3, not 2"]),
    ({"id": "hex", "params": {"mode": "diagonal"}}, ["mode must be one of any, opposite, alternate"]),
    ({"id": "hex", "params": {"mode": "any", "edges": 7}}, ["edges must be an integer from 1 to 6"]),
    ({"id": "big_group", "params": {"size": 0}}, ["size must be an integer from 1 to 61"]),
    ({"id": "triangle", "params": {"cells": []}}, ["cells must be a non-empty list"]),
    ({"id": "triangle", "params": {"cells": [[0, 0], [1, 0], [0, 0]]}}, ["cells[2] [0, 0] is listed twice"]),
    ({"id": "triangle", "params": {"cells": [[0, 0], [1]]}}, ["cells[1] must be [q, r]"]),
    ({"id": "odd", "params": {"k": 0}}, ["k must be an integer from 1 to 61"]),
    ({"id": "five_in_a_row", "def": {"row": {}}}, ["def of catalogue pattern five_in_a_row", "use id 'custom'"]),
    ({"id": "five_in_a_row", "colour": "red"}, ["unknown key 'colour'"]),
    ({"id": "custom"}, ["needs a def"]),
    ({"id": "custom", "def": {"line": {"n": 3}}}, ["def: unknown primitive 'line'", "row, group, connect", "all, any"]),
    (
        {"id": "custom", "def": {"all": [{"row": {}}, {"any": [{"bridge": {"corners": 3}}]}]}},
        ["def.all[1].any[0].bridge: unknown param 'corners'", "bridge params: color"],
    ),
    ({"id": "custom", "def": {"group": {"color": "red"}}}, ["def.group: param 'size' is required"]),
    ({"id": "custom", "def": {"odd": {"color": "red"}}}, ["unknown param 'color'", "odd params: k"]),
    ({"id": "custom", "def": {"equicolored": {"k": 1}}}, ["equicolored takes no params"]),
    ({"id": "custom", "def": {"row": {}, "ring": {}}}, ["exactly one key"]),
    ({"id": "custom", "def": {"all": []}}, ["def.all must be a non-empty list"]),
    ({"id": "custom", "def": {"row": 5}}, ["def.row: params must be an object"]),
    ({"id": "custom", "def": {"shape": {}}}, ["param 'cells' is required"]),
    ({"id": "custom", "colors": "both", "def": {"ring": {}}}, ["colors must be 'fixed'", "'either'"]),
    ({"id": "custom", "name": "", "def": {"ring": {}}}, ["name of a custom pattern"]),
    ({"id": "custom", "params": {}, "def": {"ring": {}}}, ["unknown key 'params'", "inside def"]),
    ({"id": "custom", "def": {"ring": {}}, "full_board": True}, ["full_board of this pattern is false"]),
]


@pytest.mark.parametrize("pattern,fragments", BAD_PATTERNS)
def test_bad_patterns_are_rejected_naming_the_problem(pattern, fragments):
    m = Match()
    m.create("mind_ninja", {"side": 5})
    m.ok(A, {"type": "pass"})
    message = m.rejected(B, {"type": "choose_pattern", "pattern": pattern}, "illegal")
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert m.view["phase"] == "pattern"


def test_too_large_custom_patterns_are_rejected():
    many = {"id": "custom", "def": {"any": [{"ring": {}}] * 33}}
    with pytest.raises(Exception, match="at most 32 primitives"):
        normalise_pattern(many, 5)
    deep: dict = {"ring": {}}
    for _ in range(9):
        deep = {"all": [deep]}
    with pytest.raises(Exception, match="nest at most 8 deep"):
        normalise_pattern({"id": "custom", "def": deep}, 5)
    shape = {"shape": {"cells": [[q % 20, q // 20] for q in range(40)]}}
    with pytest.raises(Exception, match="at most 64 cells in all"):
        normalise_pattern({"id": "custom", "def": {"all": [shape, shape]}}, 5)
    with pytest.raises(Exception, match="a shape has at most 64 cells, not 65"):
        normalise_pattern({"id": "custom", "def": {"shape": {"cells": [[q, 0] for q in range(65)]}}}, 5)


@pytest.mark.parametrize("side", [3, 5, 10])
def test_group_masks_give_the_edges_of_the_hexgrid(side):
    """The judge keeps sides and corners per group and derives the edges: they must agree with
    hexgrid's edge numbering (edge k from corner k to corner k+1) for every cell."""
    from games.mind_ninja_patterns import EDGES_OF_MASK, cell_masks

    board = hex_board(side)
    for i in range(board.size):
        assert EDGES_OF_MASK[cell_masks(side)[i]] == board.edge_mask[i]
    for k in range(6):
        assert board.edge_mask[board.index[corner(k, side)]] == (1 << k) | (1 << ((k - 1) % 6))
        assert board.side_mask[board.index[mid(k, side)]] == 1 << k
