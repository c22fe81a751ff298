"""Mind Ninja's pattern language: validation/normalisation, the catalogue, and incremental
judging.

Incremental design (the cost of judging a placement depends on what it changed, not on the
board size):

- One union-find over all stones (a group never mixes colours; union by size, so trees stay
  shallow). It lives in three strings of one character per cell, so that the per-move copy of
  an immutable state is a memcpy, not a tuple copy with a reference count per cell:
  `parent` (chr(parent index); an empty cell or a root points to itself), and per root `sizes`
  (chr(48 + size)) and `masks` (chr(48 + (sides | corners << 6)): the 6-bit masks of the sides
  and corners the group touches; the edges touched follow: edge k = side k or corner k or
  corner k+1; the offset 48 keeps the JSON of an empty board readable: "000..."). Merging ORs
  the masks and adds the sizes. `group`, `connect`, `fork` and `bridge` read the new root's size
  and mask.
- `row` walks the three axes through the new stone; `shape` tries only the placements of its
  symmetric variants that contain the new stone (a per-cell table, built once per board side).
- These primitives are monotone (stones are never removed), so each keeps a sticky "formed" bit
  per colour in `formed` (bit 2*leaf + colour).
- `ring` is judged exactly, from the number of holes of each colour's stone set, kept as an
  integer per colour. By Euler's formula for the union of the stones' hexagons,
  holes = groups - stones + adjacent pairs - adjacent triples. Adding a stone with k same-colour
  neighbours forming `runs` circular runs and touching `d` distinct groups changes it by
  runs - d (k < 6) or by -1 (k = 6: the stone fills a one-cell hole). A hole is a set of cells
  that cannot reach the rim without crossing the stones, and on the hex lattice the outer
  boundary of a hole always belongs to one group, so "some group encloses a cell" is exactly
  "holes > 0". (It can become false again: filling the last cell of a hole with the same
  colour removes it. That matters only for positions judged later, e.g. `all` or full-board
  combinations; the judge always reports the current position.)
- `odd` and `equicolored` are judged once, on the full board (O(board), once a game).

Witness cells (which stones form the pattern) are found by an O(board) scan at the moment the
builder wins.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

import orjson

from .core import illegal
from .hexgrid import HexBoard, hex_board, shape_variants, translates

COLOUR_INDEX = {"red": 0, "blue": 1}
COLOUR_MASK = {"red": 1, "blue": 2, "any": 3}
COLOR_VALUES = ("red", "blue", "any")

CORNERS_SHIFT = 6
ZERO = 48  # sizes and masks are stored as chr(ZERO + value)
POPCOUNT = tuple(bin(i).count("1") for i in range(64))
# Edges touched, from a group's mask (sides | corners << 6): corner k lies on edges k and k-1.
EDGES_OF_MASK = tuple((m & 63) | (m >> 6) | ((m >> 7) & 31) | ((m >> 6 & 1) << 5) for m in range(4096))

PRIMITIVE_PARAMS: dict[str, tuple[str, ...]] = {
    "row": ("n", "color"),
    "group": ("size", "color"),
    "connect": ("edges", "mode", "color"),
    "fork": ("sides", "color"),
    "bridge": ("color",),
    "ring": ("color",),
    "shape": ("cells", "color"),
    "odd": ("k",),
    "equicolored": (),
}
FULL_BOARD_PRIMITIVES = frozenset({"odd", "equicolored"})
COMBINATORS = ("all", "any")
CONNECT_MODES = ("any", "opposite", "alternate")
MAX_DEPTH = 8
MAX_LEAVES = 32
MAX_SHAPE_CELLS = 64
MAX_NAME = 64

TRIANGLE = [[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [0, 2]]
FLOWER = [[0, 0], [1, 0], [1, -1], [0, -1], [-1, 0], [-1, 1], [0, 1]]


def cell_count(side: int) -> int:
    return 3 * side * (side - 1) + 1


# --- the catalogue ------------------------------------------------------------------------------
# id -> (colour mode, defaults(side), definition(params)); a catalogue id's params are the params
# of the primitives in its definition.
CATALOGUE: dict[str, tuple[str, Callable[[int], dict[str, Any]], Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "five_in_a_row": (
        "fixed",
        lambda side: {"n": 5, "color": "red"},
        lambda p: {"row": {"n": p["n"], "color": p["color"]}},
    ),
    "havannah": (
        "fixed",
        lambda side: {"sides": 3, "color": "red"},
        lambda p: {
            "any": [
                {"ring": {"color": p["color"]}},
                {"bridge": {"color": p["color"]}},
                {"fork": {"sides": p["sides"], "color": p["color"]}},
            ]
        },
    ),
    "hex": (
        "fixed",
        lambda side: {"edges": 2, "mode": "opposite", "color": "red"},
        lambda p: {"connect": {"edges": p["edges"], "mode": p["mode"], "color": p["color"]}},
    ),
    "y": (
        "fixed",
        lambda side: {"edges": 3, "mode": "alternate", "color": "red"},
        lambda p: {"connect": {"edges": p["edges"], "mode": p["mode"], "color": p["color"]}},
    ),
    "ring": ("fixed", lambda side: {"color": "red"}, lambda p: {"ring": {"color": p["color"]}}),
    "big_group": (
        "fixed",
        lambda side: {"size": math.ceil(cell_count(side) / 4), "color": "red"},
        lambda p: {"group": {"size": p["size"], "color": p["color"]}},
    ),
    "triangle": (
        "fixed",
        lambda side: {"cells": TRIANGLE, "color": "red"},
        lambda p: {"shape": {"cells": p["cells"], "color": p["color"]}},
    ),
    "flower": (
        "fixed",
        lambda side: {"cells": FLOWER, "color": "red"},
        lambda p: {"shape": {"cells": p["cells"], "color": p["color"]}},
    ),
    "odd": ("either", lambda side: {"k": 5}, lambda p: {"odd": {"k": p["k"]}}),
    "equicolored": ("either", lambda side: {}, lambda p: {"equicolored": {}}),
}
CATALOGUE_IDS = tuple(CATALOGUE)
PATTERN_KEYS_CATALOGUE = ("id", "params", "name", "colors", "def", "full_board")
PATTERN_KEYS_CUSTOM = ("id", "name", "colors", "def", "full_board")


# --- validation and normalisation -----------------------------------------------------------------
def _describe(value: Any) -> str:
    text = orjson.dumps(value).decode() if _jsonable(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _jsonable(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


def _is_int(value: Any) -> bool:
    return type(value) is int


def _int_param(params: dict[str, Any], name: str, default: Any, low: int, high: int, where: str, why: str = "") -> int:
    value = params.get(name, default)
    if value is None:
        raise illegal(f"{where}: param {name!r} is required (an integer from {low} to {high}{why})")
    if not _is_int(value) or not low <= value <= high:
        raise illegal(f"{where}: {name} must be an integer from {low} to {high}{why}, not {_describe(value)}")
    return int(value)


def _color_param(params: dict[str, Any], where: str) -> str:
    value = params.get("color", "red")
    if value not in COLOR_VALUES:
        raise illegal(f"{where}: color must be one of red, blue, any, not {_describe(value)}")
    return str(value)


def _shape_cells(params: dict[str, Any], where: str) -> list[list[int]]:
    if "cells" not in params:
        raise illegal(f"{where}: param 'cells' is required (a list of [q, r])")
    cells = params["cells"]
    if not isinstance(cells, (list, tuple)) or not cells:
        raise illegal(f"{where}: cells must be a non-empty list of [q, r], not {_describe(cells)}")
    if len(cells) > MAX_SHAPE_CELLS:
        raise illegal(f"{where}: a shape has at most {MAX_SHAPE_CELLS} cells, not {len(cells)}")
    out: list[list[int]] = []
    seen = set()
    for n, cell in enumerate(cells):
        if (
            not isinstance(cell, (list, tuple))
            or len(cell) != 2
            or not all(_is_int(c) for c in cell)
            or not all(-30 <= c <= 30 for c in cell)
        ):
            raise illegal(f"{where}: cells[{n}] must be [q, r] with integers from -30 to 30, not {_describe(cell)}")
        key = (cell[0], cell[1])
        if key in seen:
            raise illegal(f"{where}: cells[{n}] {list(key)} is listed twice; shape cells must be distinct")
        seen.add(key)
        out.append([cell[0], cell[1]])
    return out


def _normalise_primitive(kind: str, params: dict[str, Any], side: int, where: str) -> dict[str, Any]:
    cells = cell_count(side)
    if kind == "row":
        longest = 2 * side - 1
        return {
            "n": _int_param(
                params, "n", 5, 2, longest, where, f", the longest line of a side-{side} board is {longest}"
            ),
            "color": _color_param(params, where),
        }
    if kind == "group":
        return {
            "size": _int_param(params, "size", None, 1, cells, where, f", the cells of a side-{side} board"),
            "color": _color_param(params, where),
        }
    if kind == "connect":
        mode = params.get("mode", "opposite")
        if mode not in CONNECT_MODES:
            raise illegal(f"{where}: mode must be one of any, opposite, alternate, not {_describe(mode)}")
        edges = _int_param(params, "edges", 3 if mode == "alternate" else 2, 1, 6, where)
        if mode == "opposite" and edges != 2:
            raise illegal(
                f"{where}: mode 'opposite' joins two opposite edges, so edges must be 2, not {edges} "
                "(use mode 'any' for any edges, or 'alternate' with edges 3)"
            )
        if mode == "alternate" and edges != 3:
            raise illegal(f"{where}: mode 'alternate' joins edges 0, 2, 4 or 1, 3, 5, so edges must be 3, not {edges}")
        return {"edges": edges, "mode": mode, "color": _color_param(params, where)}
    if kind == "fork":
        return {"sides": _int_param(params, "sides", 3, 1, 6, where), "color": _color_param(params, where)}
    if kind in ("bridge", "ring"):
        return {"color": _color_param(params, where)}
    if kind == "shape":
        return {"cells": _shape_cells(params, where), "color": _color_param(params, where)}
    if kind == "odd":
        return {"k": _int_param(params, "k", 5, 1, cells, where, f", the cells of a side-{side} board")}
    return {}  # equicolored


def _param_list(kind: str) -> str:
    names = PRIMITIVE_PARAMS[kind]
    return f"{kind} params: {', '.join(names)}" if names else f"{kind} takes no params"


def normalise_def(
    definition: Any, side: int, where: str = "def", depth: int = 0, leaves: list[int] | None = None
) -> dict[str, Any]:
    """A definition with every param filled in; `illegal` naming the offender otherwise."""
    if leaves is None:
        leaves = [0, 0]  # primitives, shape cells so far
    if not isinstance(definition, dict) or len(definition) != 1:
        raise illegal(
            f"{where} must be an object with exactly one key, a primitive "
            f"({', '.join(PRIMITIVE_PARAMS)}) or a combination (all, any); got {_describe(definition)}"
        )
    ((key, value),) = definition.items()
    if key in COMBINATORS:
        if depth >= MAX_DEPTH:
            raise illegal(f"{where}: combinations nest at most {MAX_DEPTH} deep")
        if not isinstance(value, list) or not value:
            raise illegal(f"{where}.{key} must be a non-empty list of definitions, not {_describe(value)}")
        return {
            key: [normalise_def(item, side, f"{where}.{key}[{n}]", depth + 1, leaves) for n, item in enumerate(value)]
        }
    if key not in PRIMITIVE_PARAMS:
        raise illegal(
            f"{where}: unknown primitive {key!r}; primitives: {', '.join(PRIMITIVE_PARAMS)}; combinations: all, any"
        )
    here = f"{where}.{key}"
    if not isinstance(value, dict):
        raise illegal(f"{here}: params must be an object ({_param_list(key)}), not {_describe(value)}")
    leaves[0] += 1
    if leaves[0] > MAX_LEAVES:
        raise illegal(f"{where}: a pattern has at most {MAX_LEAVES} primitives")
    for name in value:
        if name not in PRIMITIVE_PARAMS[key]:
            raise illegal(f"{here}: unknown param {name!r}; {_param_list(key)}")
    params = _normalise_primitive(key, value, side, here)
    if key == "shape":
        leaves[1] += len(params["cells"])
        if leaves[1] > MAX_SHAPE_CELLS:
            raise illegal(f"{here}: the shapes of a pattern have at most {MAX_SHAPE_CELLS} cells in all")
    return {key: params}


def _contains_full_board(definition: dict[str, Any]) -> bool:
    ((key, value),) = definition.items()
    if key in COMBINATORS:
        return any(_contains_full_board(item) for item in value)
    return key in FULL_BOARD_PRIMITIVES


def _find_param(definition: dict[str, Any], name: str) -> Any:
    ((key, value),) = definition.items()
    if key in COMBINATORS:
        for item in value:
            found = _find_param(item, name)
            if found is not None:
                return found
        return None
    return value.get(name)


def normalise_pattern(pattern: Any, side: int) -> dict[str, Any]:
    """The fully explicit form of a pattern (see schemas/mind_ninja.py); `illegal` otherwise."""
    if not isinstance(pattern, dict):
        raise illegal(
            f"a pattern is an object {{id, params}} or {{id: custom, name, colors, def}}, not {_describe(pattern)}"
        )
    if "id" not in pattern:
        raise illegal(f"the pattern has no 'id': give a catalogue id ({', '.join(CATALOGUE_IDS)}) or 'custom'")
    pattern_id = pattern["id"]
    if pattern_id == "custom":
        return _normalise_custom(pattern, side)
    if not isinstance(pattern_id, str) or pattern_id not in CATALOGUE:
        raise illegal(
            f"unknown pattern id {_describe(pattern_id)}; catalogue ids: {', '.join(CATALOGUE_IDS)}; "
            "or 'custom' with a def"
        )
    for key in pattern:
        if key not in PATTERN_KEYS_CATALOGUE:
            raise illegal(
                f"unknown key {key!r} in catalogue pattern {pattern_id}; keys: id, params "
                "(use id 'custom' with name, colors and def for your own pattern)"
            )
    colors, defaults, template = CATALOGUE[pattern_id]
    default_params = defaults(side)
    given = pattern.get("params", {})
    if not isinstance(given, dict):
        raise illegal(f"params of {pattern_id} must be an object, not {_describe(given)}")
    for name in given:
        if name not in default_params:
            valid = ", ".join(default_params) or "none"
            raise illegal(f"unknown param {name!r} for pattern {pattern_id}; its params: {valid}")
    definition = normalise_def(template({**default_params, **given}), side, f"{pattern_id} params")
    params = {name: _find_param(definition, name) for name in default_params}
    normalised = {
        "id": pattern_id,
        "name": pattern_id,
        "colors": colors,
        "params": params,
        "def": definition,
        "full_board": _contains_full_board(definition),
    }
    for key in ("name", "colors", "def", "full_board"):
        if key in pattern and pattern[key] != normalised[key]:
            raise illegal(
                f"{key} of catalogue pattern {pattern_id} is {_describe(normalised[key])}, not "
                f"{_describe(pattern[key])}; use id 'custom' for your own definition"
            )
    return normalised


def _normalise_custom(pattern: dict[str, Any], side: int) -> dict[str, Any]:
    for key in pattern:
        if key not in PATTERN_KEYS_CUSTOM:
            raise illegal(
                f"unknown key {key!r} in a custom pattern; keys: id, name, colors, def"
                + (" (params belong inside def)" if key == "params" else "")
            )
    name = pattern.get("name", "custom")
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME:
        raise illegal(f"name of a custom pattern must be a string of 1 to {MAX_NAME} characters, not {_describe(name)}")
    colors = pattern.get("colors", "fixed")
    if colors not in ("fixed", "either"):
        raise illegal(f"colors must be 'fixed' (builder red, blocker blue) or 'either', not {_describe(colors)}")
    if "def" not in pattern:
        raise illegal("a custom pattern needs a def: a primitive {PRIMITIVE: {params}} or {all: [...]} / {any: [...]}")
    definition = normalise_def(pattern["def"], side)
    full_board = _contains_full_board(definition)
    if "full_board" in pattern and pattern["full_board"] != full_board:
        raise illegal(
            f"full_board of this pattern is {_describe(full_board)}, not {_describe(pattern['full_board'])} "
            "(it is true exactly when the def contains odd or equicolored)"
        )
    return {"id": "custom", "name": name, "colors": colors, "def": definition, "full_board": full_board}


# --- compiled patterns ------------------------------------------------------------------------------
class Leaf:
    """One primitive of a compiled pattern. Monotone leaves own the bits 2*index (red) and
    2*index+1 (blue) of the state's `formed`."""

    __slots__ = ("agg_test", "cell_test", "full_board", "index", "kind", "mask", "params", "shift")

    def __init__(self, kind: str, params: dict[str, Any], index: int, side: int):
        self.kind = kind
        self.params = params
        self.mask = COLOUR_MASK.get(params.get("color", "any"), 3)
        self.index = index
        self.shift = 2 * index
        self.full_board = kind in FULL_BOARD_PRIMITIVES
        self.agg_test: Callable[[int, int], bool] | None = _agg_test(kind, params)
        self.cell_test: Callable[..., bool] | None = None
        if kind == "row":
            self.cell_test = _row_test(params["n"], hex_board(side).around)
        elif kind == "shape":
            self.cell_test = _shape_test(shape_table(_offsets_key(params["cells"]), side))

    @property
    def monotone(self) -> bool:
        return self.agg_test is not None or self.cell_test is not None


def _agg_test(kind: str, params: dict[str, Any]) -> Callable[[int, int], bool] | None:
    """A test on a group's (size, mask), for the primitives that read group aggregates."""
    if kind == "group":
        wanted = params["size"]
        return lambda size, mask: size >= wanted
    if kind == "connect":
        edges, mode = params["edges"], params["mode"]
        if mode == "opposite":

            def opposite(size: int, mask: int) -> bool:
                e = EDGES_OF_MASK[mask]
                return (e & (e >> 3) & 7) != 0

            return opposite
        if mode == "alternate":

            def alternate(size: int, mask: int) -> bool:
                e = EDGES_OF_MASK[mask]
                return (e & 21) == 21 or (e & 42) == 42

            return alternate
        return lambda size, mask: POPCOUNT[EDGES_OF_MASK[mask]] >= edges
    if kind == "fork":
        sides = params["sides"]
        return lambda size, mask: POPCOUNT[mask & 63] >= sides
    if kind == "bridge":
        return lambda size, mask: POPCOUNT[mask >> CORNERS_SHIFT] >= 2
    return None


def _row_test(n: int, around: tuple[tuple[int | None, ...], ...]) -> Callable[..., bool]:
    def test(cell: int, board: str, stone: str) -> bool:
        for d in (0, 1, 2):
            count = 1
            j = around[cell][d]
            while j is not None and board[j] == stone:
                count += 1
                j = around[j][d]
            j = around[cell][d + 3]
            while j is not None and board[j] == stone:
                count += 1
                j = around[j][d + 3]
            if count >= n:
                return True
        return False

    return test


def _shape_test(table: tuple[tuple[tuple[int, ...], ...], ...]) -> Callable[..., bool]:
    def test(cell: int, board: str, stone: str) -> bool:
        for placement in table[cell]:
            for j in placement:
                if board[j] != stone:
                    break
            else:
                return True
        return False

    return test


def _offsets_key(cells: list[list[int]]) -> tuple[tuple[int, int], ...]:
    return tuple((q, r) for q, r in cells)


@lru_cache(maxsize=256)
def shape_placements(cells: tuple[tuple[int, int], ...], side: int) -> tuple[tuple[int, ...], ...]:
    """Every on-board placement (cell indices) of every symmetric variant of a shape."""
    board = hex_board(side)
    found: list[tuple[int, ...]] = []
    for variant in shape_variants(cells):
        found.extend(translates(board, variant))
    return tuple(found)


@lru_cache(maxsize=256)
def shape_table(cells: tuple[tuple[int, int], ...], side: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """Per cell, the placements of the shape that contain it."""
    table: list[list[tuple[int, ...]]] = [[] for _ in range(hex_board(side).size)]
    for placement in shape_placements(cells, side):
        for i in placement:
            table[i].append(placement)
    return tuple(tuple(entry) for entry in table)


class Node:
    __slots__ = ("children", "op")

    def __init__(self, op: str, children: list[Any]):
        self.op = op
        self.children = children


class CompiledPattern:
    """A normalised pattern ready to judge positions of one board side."""

    def __init__(self, normalised: dict[str, Any], side: int):
        self.normalised = normalised
        self.id: str = normalised["id"]
        self.colors: str = normalised["colors"]
        self.full_board: bool = normalised["full_board"]
        self.side = side
        self.leaves: list[Leaf] = []
        self.root = self._build(normalised["def"])
        self.monotone = tuple(leaf for leaf in self.leaves if leaf.monotone)
        # Per colour: (leaf, bit) of the monotone leaves that colour can form.
        self.by_colour = tuple(
            tuple((leaf, 1 << (leaf.shift + ci)) for leaf in self.monotone if leaf.mask >> ci & 1) for ci in (0, 1)
        )

    def _build(self, definition: dict[str, Any]) -> Any:
        ((key, value),) = definition.items()
        if key in COMBINATORS:
            return Node(key, [self._build(item) for item in value])
        leaf = Leaf(key, value, len(self.leaves), self.side)
        self.leaves.append(leaf)
        return leaf


@lru_cache(maxsize=512)
def compile_pattern(text: str, side: int) -> CompiledPattern:
    """The compiled form of a normalised pattern given as JSON text (cached: patterns repeat)."""
    return CompiledPattern(orjson.loads(text), side)


def pattern_text(normalised: dict[str, Any]) -> str:
    return orjson.dumps(normalised).decode()


# --- per-cell constants -----------------------------------------------------------------------------
@cache
def cell_masks(side: int) -> tuple[int, ...]:
    """The mask (sides | corners << 6) of a lone stone on each cell."""
    board = hex_board(side)
    return tuple(board.side_mask[i] | board.corner_bit[i] << CORNERS_SHIFT for i in range(board.size))


@cache
def rim(side: int) -> tuple[int, ...]:
    board = hex_board(side)
    return tuple(i for i in range(board.size) if board.distance[i] == side - 1)


def empty_union_find(size: int) -> tuple[str, str, str]:
    """(parent, sizes, masks) of an empty board: every cell its own root, nothing in it."""
    return "".join(map(chr, range(size))), chr(ZERO) * size, chr(ZERO) * size


# --- the incremental step ---------------------------------------------------------------------------
def add_stone(
    comp: CompiledPattern,
    geometry: HexBoard,
    board: str,
    parent: str,
    sizes: str,
    masks: str,
    holes: list[int],
    formed: int,
    cell: int,
    ci: int,
) -> tuple[str, str, str, str, int]:
    """Put a stone of colour index `ci` on the empty `cell`. Updates `holes` in place; returns
    the new (board, parent, sizes, masks, formed)."""
    stone = "RB"[ci]
    board = board[:cell] + stone + board[cell + 1 :]
    around = geometry.around[cell]
    roots: list[int | None] = [None] * 6
    count = 0
    for d in range(6):
        j = around[d]
        if j is not None and board[j] == stone:
            p = ord(parent[j])
            while p != j:
                j = p
                p = ord(parent[j])
            roots[d] = j
            count += 1
    size = 1
    mask = cell_masks(geometry.side)[cell]
    root = cell
    if count:
        distinct = sorted({r for r in roots if r is not None})
        if count == 6:
            holes[ci] -= 1
        else:
            runs = 0
            for d in range(6):
                if roots[d] is not None and roots[d - 1] is None:
                    runs += 1
            holes[ci] += runs - len(distinct)
        biggest = -1
        for other in distinct:
            other_size = ord(sizes[other]) - ZERO
            size += other_size
            mask |= ord(masks[other]) - ZERO
            if other_size > biggest:
                biggest, root = other_size, other
        pointer = chr(root)
        for other in distinct:
            if other != root:
                parent = parent[:other] + pointer + parent[other + 1 :]
        parent = parent[:cell] + pointer + parent[cell + 1 :]
    sizes = sizes[:root] + chr(ZERO + size) + sizes[root + 1 :]
    masks = masks[:root] + chr(ZERO + mask) + masks[root + 1 :]
    for leaf, bit in comp.by_colour[ci]:
        if formed & bit:
            continue
        if leaf.agg_test is not None:
            if leaf.agg_test(size, mask):
                formed |= bit
        elif leaf.cell_test is not None and leaf.cell_test(cell, board, stone):
            formed |= bit
    return board, parent, sizes, masks, formed


# --- judging ----------------------------------------------------------------------------------------
class Position:
    """What the judge reads: any object with these attributes (the game state is one)."""

    side: int
    board: str
    parent: str
    sizes: str
    masks: str
    holes: tuple[int, int]
    formed: int


def find(parent: str, i: int) -> int:
    p = ord(parent[i])
    while p != i:
        i = p
        p = ord(parent[i])
    return i


def _odd(position: Any, k: int) -> bool:
    board, parent, sizes = position.board, position.parent, position.sizes
    count = 0
    for i, c in enumerate(board):
        if c != "." and ord(parent[i]) == i and ord(sizes[i]) - ZERO >= k:
            count += 1
    return count % 2 == 1


def _equicolored(position: Any, geometry: HexBoard) -> bool:
    board = position.board
    corners = set(geometry.corners)
    red = blue = 0
    for i, neighbours in enumerate(geometry.neighbours):
        if i in corners:
            continue
        reds = blues = 0
        for j in neighbours:
            c = board[j]
            if c == "R":
                reds += 1
            elif c == "B":
                blues += 1
        if reds == blues:
            if board[i] == "R":
                red += 1
            elif board[i] == "B":
                blue += 1
    return blue > red


def leaf_holds(leaf: Leaf, position: Any, ci: int | None = None) -> bool:
    """Whether the leaf is formed (for colour index `ci`, or for any colour it allows)."""
    mask = leaf.mask if ci is None else leaf.mask & (1 << ci)
    if leaf.kind == "ring":
        holes = position.holes
        return bool((mask & 1 and holes[0] > 0) or (mask & 2 and holes[1] > 0))
    if leaf.kind == "odd":
        return _odd(position, leaf.params["k"])
    if leaf.kind == "equicolored":
        return _equicolored(position, hex_board(position.side))
    return bool((position.formed >> leaf.shift) & mask)


def node_holds(node: Any, position: Any) -> bool:
    if isinstance(node, Leaf):
        return leaf_holds(node, position)
    if node.op == "all":
        return all(node_holds(child, position) for child in node.children)
    return any(node_holds(child, position) for child in node.children)


def judge(comp: CompiledPattern, position: Any, empty: int) -> bool:
    """Is the pattern formed in this position? Full-board patterns only on the full board."""
    if comp.full_board and empty:
        return False
    return node_holds(comp.root, position)


# --- witnesses ----------------------------------------------------------------------------------------
def witness(comp: CompiledPattern, position: Any, last: int | None = None) -> list[int] | None:
    """Cells (indices, ascending) that form the pattern, where the primitives can name them."""
    cells = _node_witness(comp.root, position, hex_board(position.side), last)
    return None if cells is None else sorted(cells)


def _node_witness(node: Any, position: Any, geometry: HexBoard, last: int | None) -> set[int] | None:
    if isinstance(node, Leaf):
        for ci in (0, 1):
            if node.mask >> ci & 1 and leaf_holds(node, position, ci):
                return _leaf_witness(node, position, geometry, ci, last)
        return None  # odd / equicolored name no cells
    if node.op == "any":
        for child in node.children:
            if node_holds(child, position):
                return _node_witness(child, position, geometry, last)
        return None
    found: set[int] | None = None
    for child in node.children:
        part = _node_witness(child, position, geometry, last)
        if part is not None:
            found = part if found is None else found | part
    return found


def _group_cells(position: Any, root: int) -> set[int]:
    board, parent = position.board, position.parent
    return {i for i, c in enumerate(board) if c != "." and find(parent, i) == root}


def _leaf_witness(leaf: Leaf, position: Any, geometry: HexBoard, ci: int, last: int | None) -> set[int] | None:
    board, parent = position.board, position.parent
    stone = "RB"[ci]
    if leaf.kind == "odd" or leaf.kind == "equicolored":
        return None
    if leaf.agg_test is not None:
        roots = [i for i, c in enumerate(board) if c == stone and ord(parent[i]) == i]
        if last is not None and board[last] == stone:
            roots.insert(0, find(parent, last))
        for root in roots:
            if leaf.agg_test(ord(position.sizes[root]) - ZERO, ord(position.masks[root]) - ZERO):
                return _group_cells(position, root)
        return None
    if leaf.kind == "row":
        order = ([last] if last is not None else []) + list(range(len(board)))
        for start in order:
            if board[start] != stone:
                continue
            for d in (0, 1, 2):
                run = [start]
                for step in (d, d + 3):
                    j = geometry.around[start][step]
                    while j is not None and board[j] == stone:
                        run.append(j)
                        j = geometry.around[j][step]
                if len(run) >= leaf.params["n"]:
                    return set(run)
        return None
    if leaf.kind == "shape":
        key = _offsets_key(leaf.params["cells"])
        candidates = list(shape_table(key, position.side)[last]) if last is not None else []
        for placement in candidates + list(shape_placements(key, position.side)):
            if all(board[j] == stone for j in placement):
                return set(placement)
        return None
    if leaf.kind == "ring":
        return _enclosing_group(position, geometry, stone, last)
    return None


def _reachable_from_rim(geometry: HexBoard, side: int, passable: Callable[[int], bool]) -> set[int]:
    stack = [i for i in rim(side) if passable(i)]
    seen = set(stack)
    while stack:
        i = stack.pop()
        for j in geometry.neighbours[i]:
            if j not in seen and passable(j):
                seen.add(j)
                stack.append(j)
    return seen


def _enclosing_group(position: Any, geometry: HexBoard, stone: str, last: int | None) -> set[int] | None:
    board, parent = position.board, position.parent
    reached = _reachable_from_rim(geometry, position.side, lambda i: board[i] != stone)
    enclosed = [i for i in range(len(board)) if board[i] != stone and i not in reached]
    candidates: list[int] = []
    if last is not None and board[last] == stone:
        candidates.append(find(parent, last))
    for i in enclosed:
        for j in geometry.neighbours[i]:
            if board[j] == stone:
                root = find(parent, j)
                if root not in candidates:
                    candidates.append(root)
    for root in candidates:
        group = _group_cells(position, root)
        outside = _reachable_from_rim(geometry, position.side, lambda i: i not in group)
        if len(outside) + len(group) < len(board):
            return group
    return None
