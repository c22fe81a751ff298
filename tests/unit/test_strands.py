"""Strands, rule by rule, through the real fold (given a position, when an action, then events)."""

from __future__ import annotations

import random

import pytest

from games.hexgrid import hex_board
from games.strands import GAME, RANDOM_LAYOUTS, compare_groups, named_layouts, random_layout
from tests.support import Match

SIDE2 = {"side": 2, "rows": ["22", "212", "22"]}


def strands(options=None, seats=("alice", "bob")) -> Match:
    match = Match()
    match.create("strands", options if options is not None else {"layout": SIDE2}, seats=seats)
    return match


# --- geometry ---------------------------------------------------------------------------------
@pytest.mark.parametrize("side", [2, 3, 4, 5, 6, 7, 10])
def test_hexhex_board_has_3n_n_minus_1_plus_1_cells_in_canonical_order(side):
    board = hex_board(side)
    assert board.size == 3 * side * (side - 1) + 1
    n = side - 1
    rows = [[cell for cell in board.cells if cell[1] == r] for r in range(-n, n + 1)]
    assert [cell for row in rows for cell in row] == list(board.cells)
    for r, row in zip(range(-n, n + 1), rows, strict=False):
        assert [q for q, _ in row] == list(range(max(-n, -n - r), min(n, n - r) + 1))


def test_neighbours_follow_the_six_axial_directions():
    board = hex_board(3)
    centre = board.index[(0, 0)]
    expected = [(1, 0), (1, -1), (0, -1), (-1, 0), (-1, 1), (0, 1)]
    assert [board.cells[i] for i in board.around[centre]] == expected
    corner = board.index[(2, 0)]
    assert len(board.neighbours[corner]) == 3


# --- layouts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout_id", sorted(named_layouts()))
def test_every_named_layout_loads_with_its_side_and_rows(layout_id):
    match = strands({"layout": layout_id})
    layout = match.view["layout"]
    assert layout == {"id": layout_id, **named_layouts()[layout_id]}
    assert len(match.view["board"]) == hex_board(layout["side"]).size


def test_classic_6_is_the_original_board():
    board = hex_board(6)
    numbers = "".join(named_layouts()["classic-6"]["rows"])
    by_distance = {}
    for i in range(board.size):
        by_distance.setdefault(board.distance[i], set()).add(numbers[i])
    assert by_distance[0] == {"1"}
    assert by_distance[1] == by_distance[2] == by_distance[3] == {"2"}
    assert by_distance[4] == {"3"}
    assert {numbers[i] for i in board.corners} == {"6"}
    assert {numbers[i] for i in board.ring(5) if i not in board.corners} == {"5"}
    assert "4" not in numbers


def test_alt_6_is_classic_with_the_edge_fives_as_fours():
    classic = "".join(named_layouts()["classic-6"]["rows"])
    alt = "".join(named_layouts()["alt-6"]["rows"])
    assert alt == classic.replace("5", "4")


@pytest.mark.parametrize("name", sorted(RANDOM_LAYOUTS))
def test_random_layout_uses_the_ring_multisets_with_corners_highest(name):
    rows = random_layout(name, seed=12345)
    board = hex_board(len(RANDOM_LAYOUTS[name]))
    numbers = "".join(rows)
    for distance, multiset in RANDOM_LAYOUTS[name].items():
        ring = board.ring(distance)
        got = sorted(int(numbers[i]) for i in ring)
        assert got == sorted(n for n, count in multiset.items() for _ in range(count))
        corner_values = [int(numbers[i]) for i in ring if board.is_corner_of_ring(i)]
        assert min(corner_values) >= max((int(numbers[i]) for i in ring if not board.is_corner_of_ring(i)), default=0)


def test_random_layout_is_determined_by_the_seed_and_recorded_in_the_log():
    first = strands({"layout": "random-6", "seed": 99})
    second = strands({"layout": "random-6", "seed": 99})
    other = strands({"layout": "random-6", "seed": 100})
    created = first.steps[0].result["events"][0]
    assert created["options"]["layout"]["rows"] == first.view["layout"]["rows"]
    assert first.view["layout"] == second.view["layout"]
    assert first.view["layout"]["rows"] != other.view["layout"]["rows"]


def test_random_layout_without_seed_is_rejected():
    match = Match()
    message = match.rejected(
        "alice",
        {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": {"layout": "random-7"}},
        "illegal",
    )
    assert "seed" in message


@pytest.mark.parametrize(
    "rows,fragment",
    [
        (["22", "212"], "3 rows"),
        (["22", "2122", "22"], "row 1 must have 3 cells"),
        (["22", "272", "22"], "digits 1-6"),
        (["33", "313", "33"], "marked 2"),
    ],
)
def test_custom_layout_is_validated(rows, fragment):
    match = Match()
    message = match.rejected(
        "alice",
        {
            "type": "create",
            "game": "strands",
            "seats": ["alice", "bob"],
            "options": {"layout": {"side": 2, "rows": rows}},
        },
        "illegal",
    )
    assert fragment in message


def test_unknown_layout_and_unknown_option_are_rejected():
    match = Match()
    base = {"type": "create", "game": "strands", "seats": ["alice", "bob"]}
    assert "unknown layout" in match.rejected("alice", {**base, "options": {"layout": "hexy"}}, "illegal")
    assert "unknown field" in match.rejected("alice", {**base, "options": {"colour": "red"}}, "malformed")


# --- play ---------------------------------------------------------------------------------------
def test_worked_game_white_wins_with_four_against_three():
    for placement in ("up_to", "exact"):
        match = strands({"layout": SIDE2, "placement": placement})
        match.ok("alice", {"type": "place", "cells": [[1, 0]]})
        match.ok("bob", {"type": "place", "cells": [[0, -1], [-1, 1]]})
        match.ok("alice", {"type": "place", "cells": [[0, 0]]})
        match.ok("bob", {"type": "place", "cells": [[1, -1], [-1, 0]]})
        events = match.ok("alice", {"type": "place", "cells": [[0, 1]]})
        assert events[-1] == {
            "type": "match_ended",
            "winner": 1,
            "reason": "largest_group",
            "scores": {"black": [3], "white": [4]},
            "at": match.view["ended_at"],
        }
        assert match.view["status"] == "over" and match.view["to_move"] == []
        assert match.steps[-1].outcome["outcome"]["winner"] == 1


def test_stones_placed_event_lists_cells_in_canonical_order():
    match = strands()
    match.ok("alice", {"type": "place", "cells": [[1, 0]]})
    events = match.ok("bob", {"type": "place", "cells": [[-1, 1], [0, -1]]})
    assert events == [{"type": "stones_placed", "seat": 1, "color": "white", "number": 2, "cells": [[0, -1], [-1, 1]]}]


def test_opening_must_be_exactly_one_cell_marked_2():
    match = strands({"layout": "small-4"})
    board = hex_board(4)
    assert "opening" in match.rejected("alice", {"type": "place", "cells": [[0, 0]]}, "illegal")  # the 1
    two_cells = [
        list(board.cells[i]) for i in range(board.size) if "".join(named_layouts()["small-4"]["rows"])[i] == "2"
    ][:2]
    assert "opening" in match.rejected("alice", {"type": "place", "cells": two_cells}, "illegal")
    match.ok("alice", {"type": "place", "cells": two_cells[:1]})


def test_white_moves_second_then_turns_alternate():
    match = strands()
    match.rejected("bob", {"type": "place", "cells": [[1, 0]]}, "not_your_turn")
    match.ok("alice", {"type": "place", "cells": [[1, 0]]})
    assert match.view["to_move"] == [1]
    match.rejected("alice", {"type": "place", "cells": [[0, 0]]}, "not_your_turn")


@pytest.mark.parametrize(
    "cells,fragment",
    [
        ([[0, 0], [1, -1]], "same number"),
        ([[1, -1], [1, -1]], "twice"),
        ([[1, 0]], "occupied"),
        ([[5, 5]], "off the board"),
        ([[1, -1], [0, -1], [-1, 0]], "too many"),
    ],
)
def test_illegal_placements_name_the_broken_rule(cells, fragment):
    match = strands()
    match.ok("alice", {"type": "place", "cells": [[1, 0]]})
    message = match.rejected("bob", {"type": "place", "cells": cells}, "illegal")
    assert fragment in message
    assert match.view["seq"] == 2  # a rejection changes nothing


def test_exact_placement_requires_min_of_x_and_the_empty_cells_marked_x():
    match = strands({"layout": SIDE2, "placement": "exact"})
    match.ok("alice", {"type": "place", "cells": [[1, 0]]})
    assert "too few" in match.rejected("bob", {"type": "place", "cells": [[0, -1]]}, "illegal")
    match.ok("bob", {"type": "place", "cells": [[0, -1], [1, -1]]})
    match.ok("alice", {"type": "place", "cells": [[0, 0]]})  # the only 1
    match.ok("bob", {"type": "place", "cells": [[-1, 0], [-1, 1]]})
    # one cell marked 2 is left: exact = min(2, 1) = 1
    match.ok("alice", {"type": "place", "cells": [[0, 1]]})
    assert match.view["status"] == "over"


def test_up_to_placement_allows_fewer_than_x():
    match = strands()
    match.ok("alice", {"type": "place", "cells": [[1, 0]]})
    match.ok("bob", {"type": "place", "cells": [[0, -1]]})
    assert match.view["turn"] == 2


def test_wrong_action_shape_is_malformed():
    match = strands()
    match.rejected("alice", {"type": "place", "cells": []}, "malformed")
    match.rejected("alice", {"type": "place", "cell": [1, 0]}, "malformed")
    match.rejected("alice", {"type": "move", "cells": [[1, 0]]}, "malformed")


@pytest.mark.parametrize(
    "black,white,winner",
    [
        ([10, 4, 1], [10, 3, 3, 2], 0),
        ([7, 7], [7, 6, 2], 0),
        ([5, 3], [5, 3, 1], 1),
        ([4], [4], None),
    ],
)
def test_group_lists_compare_element_by_element_padded_with_zeros(black, white, winner):
    assert compare_groups(black, white) == winner


def test_view_has_layout_board_turn_groups_and_to_move():
    match = strands()
    match.ok("alice", {"type": "place", "cells": [[1, 0]]})
    match.ok("bob", {"type": "place", "cells": [[0, -1], [1, -1]]})
    view = match.view
    assert view["board"] == "WW..B.."
    assert view["turn"] == 2 and view["to_move"] == [0]
    assert view["groups"] == {"black": [1], "white": [2]}
    assert view["layout"]["rows"] == SIDE2["rows"]


def test_groups_merge_when_a_placement_joins_them():
    match = strands({"layout": "small-4"})
    board = hex_board(4)
    numbers = "".join(named_layouts()["small-4"]["rows"])
    twos = [board.cells[i] for i in range(board.size) if numbers[i] == "2"]
    # Black opens at (-1,0); White plays far away; Black joins (1,0) and then (0,0)? (0,0) is the 1.
    match.ok("alice", {"type": "place", "cells": [[-1, 0]]})
    match.ok("bob", {"type": "place", "cells": [[0, -2]]})
    match.ok("alice", {"type": "place", "cells": [[1, 0]]})
    assert match.view["groups"]["black"] == [1, 1]
    match.ok("bob", {"type": "place", "cells": [[2, -2]]})
    match.ok("alice", {"type": "place", "cells": [[0, 0]]})
    assert match.view["groups"]["black"] == [3]
    assert (-1, 0) in twos and (1, 0) in twos


def test_incremental_groups_equal_a_full_rescan_in_random_games():
    rng = random.Random(3)
    for seed in range(15):
        match = strands({"layout": "random-6", "seed": seed})
        while match.state.status == "active":
            state = match.state
            seat = state.to_move()[0]
            match.ok(state.seats[seat], GAME.random_action(state.board, seat, rng))
            board = match.state.board
            geometry = hex_board(board.side)
            for stone, colour in (("B", "black"), ("W", "white")):
                sizes = sorted((len(g) for g in geometry.groups(board.board, stone)), reverse=True)
                assert match.view["groups"][colour] == sizes


def test_resign_ends_the_game_at_once():
    match = strands()
    match.ok("alice", {"type": "place", "cells": [[1, 0]]})
    events = match.ok("alice", {"type": "resign"})
    assert events[0]["winner"] == 1 and events[0]["reason"] == "resign"
    match.rejected("bob", {"type": "place", "cells": [[0, 0]]}, "match_over")


def test_render_shows_numbers_on_empty_cells_and_stones():
    match = strands()
    match.ok("alice", {"type": "place", "cells": [[1, 0]]})
    text = GAME.render(match.state.board)
    assert text.splitlines()[1].split() == ["2", "1", "B"]
