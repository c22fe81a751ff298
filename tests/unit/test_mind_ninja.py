"""Mind Ninja through the real fold: phases, bidding, setup, roles, the free-move protocol, end
conditions, views, rejections, and the worked examples of docs/rules/mind-ninja.md.
(Patterns themselves: test_mind_ninja_patterns.py.)"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from games.mind_ninja import GAME
from tests.support import Match

A, B = "alice", "bob"  # seat 0, seat 1


def stones(red: Iterable = (), blue: Iterable = ()) -> list[dict]:
    return [{"cell": list(c), "color": "red"} for c in red] + [{"cell": list(c), "color": "blue"} for c in blue]


def ready(pattern: dict, side: int = 5, red: Iterable = (), blue: Iterable = (), role: str | None = None) -> Match:
    """Alice passes at once (chooser, no free moves), Bob invents `pattern` and sets up the stones;
    Alice then chooses `role` when given."""
    m = Match()
    m.create("mind_ninja", {"side": side})
    m.ok(A, {"type": "pass"})
    m.ok(B, {"type": "choose_pattern", "pattern": pattern})
    placed = stones(red, blue)
    if placed:
        m.ok(B, {"type": "setup", "stones": placed})
    m.ok(B, {"type": "end_setup"})
    if role:
        m.ok(A, {"type": "choose_role", "role": role})
    return m


def game(m: Match):
    return m.state.board


FIVE = {"id": "five_in_a_row"}


# --- options and the start ------------------------------------------------------------------------
def test_default_side_is_7_and_sides_3_to_10_are_allowed():
    m = Match()
    m.create("mind_ninja")
    assert m.view["side"] == 7 and len(m.view["board"]) == 127
    for side, cells in ((3, 19), (10, 271)):
        m = Match()
        m.create("mind_ninja", {"side": side})
        assert len(m.view["board"]) == cells
    for bad in (2, 11):
        m = Match()
        m.send(A, {"type": "create", "game": "mind_ninja", "seats": [A, B], "options": {"side": bad}})
        assert m.steps[-1].result["reason"]["code"] == "malformed"


def test_initial_view():
    m = Match()
    m.create("mind_ninja", {"side": 5})
    view = m.view
    assert view["phase"] == "bidding" and view["to_move"] == [0]
    assert view["bids"] == [] and view["high_bid"] is None
    assert view["chooser"] is None and view["inventor"] is None and view["pattern"] is None
    assert view["builder"] is None and view["free_moves"] == 0 and view["free_pending"] is False
    assert view["board"] == "." * 61


# --- bidding (worked example) ---------------------------------------------------------------------
def test_worked_bidding_example():
    m = Match()
    m.create("mind_ninja", {"side": 5})
    assert m.ok(A, {"type": "bid", "value": 2}) == [{"type": "bid_made", "seat": 0, "value": 2}]
    assert m.view["to_move"] == [1]
    m.ok(B, {"type": "bid", "value": 3})
    events = m.ok(A, {"type": "pass"})
    assert events == [{"type": "bidding_closed", "chooser": 0, "inventor": 1, "free_moves": 3}]
    view = m.view
    assert view["phase"] == "pattern" and view["chooser"] == 0 and view["inventor"] == 1
    assert view["free_moves"] == 3 and view["to_move"] == [1] and view["bids"] == [[0, 2], [1, 3]]


def test_a_bid_equal_to_the_current_bid_is_illegal():
    m = Match()
    m.create("mind_ninja", {"side": 5})
    m.ok(A, {"type": "bid", "value": 2})
    message = m.rejected(B, {"type": "bid", "value": 2}, "illegal")
    assert "exceed the current bid of 2" in message
    assert "exceed" in m.rejected(B, {"type": "bid", "value": 1}, "illegal")


def test_seat_0_passing_first_is_chooser_with_no_free_moves():
    m = Match()
    m.create("mind_ninja", {"side": 5})
    assert m.ok(A, {"type": "pass"}) == [{"type": "bidding_closed", "chooser": 0, "inventor": 1, "free_moves": 0}]


def test_seat_1_passing_makes_seat_1_chooser_with_seat_0s_bid():
    m = Match()
    m.create("mind_ninja", {"side": 5})
    m.ok(A, {"type": "bid", "value": 0})
    assert m.ok(B, {"type": "pass"}) == [{"type": "bidding_closed", "chooser": 1, "inventor": 0, "free_moves": 0}]
    assert m.view["to_move"] == [0]


def test_bid_limits():
    m = Match()
    m.create("mind_ninja", {"side": 5})
    assert "at least 0" in m.rejected(A, {"type": "bid", "value": -1}, "illegal")
    assert "at most 61" in m.rejected(A, {"type": "bid", "value": 62}, "illegal")
    m.ok(A, {"type": "bid", "value": 61})
    assert "at most 61" in m.rejected(B, {"type": "bid", "value": 62}, "illegal")
    assert list(GAME.legal_actions(game(m), 1)) == [{"type": "pass"}]
    assert m.rejected(A, {"type": "bid", "value": 3}, "not_your_turn")


def test_bids_and_passes_only_while_bidding():
    m = ready(FIVE)
    assert "bidding phase" in m.rejected(A, {"type": "bid", "value": 4}, "illegal")
    assert "bidding phase" in m.rejected(A, {"type": "pass"}, "illegal")


def test_legal_bids_list_every_value():
    m = Match()
    m.create("mind_ninja", {"side": 3})
    listed = list(GAME.legal_actions(game(m), 0))
    assert listed == [{"type": "bid", "value": v} for v in range(0, 20)] + [{"type": "pass"}]
    m.ok(A, {"type": "bid", "value": 7})
    assert [a.get("value") for a in GAME.legal_actions(game(m), 1)] == [*list(range(8, 20)), None]


# --- pattern, setup, roles ------------------------------------------------------------------------
def test_the_inventor_chooses_and_the_event_carries_the_normalised_pattern():
    m = Match()
    m.create("mind_ninja", {"side": 5})
    m.ok(A, {"type": "pass"})
    assert m.rejected(A, {"type": "choose_pattern", "pattern": FIVE}, "not_your_turn")
    events = m.ok(B, {"type": "choose_pattern", "pattern": {"id": "five_in_a_row", "params": {"n": 6}}})
    assert events == [
        {
            "type": "pattern_chosen",
            "seat": 1,
            "pattern": {
                "id": "five_in_a_row",
                "name": "five_in_a_row",
                "colors": "fixed",
                "params": {"n": 6, "color": "red"},
                "def": {"row": {"n": 6, "color": "red"}},
                "full_board": False,
            },
        }
    ]
    assert m.view["pattern"]["params"] == {"n": 6, "color": "red"}
    assert m.view["phase"] == "setup" and m.view["to_move"] == [1]


def test_setup_places_stones_in_several_actions_then_ends():
    m = Match()
    m.create("mind_ninja", {"side": 5})
    m.ok(A, {"type": "pass"})
    m.ok(B, {"type": "choose_pattern", "pattern": FIVE})
    events = m.ok(B, {"type": "setup", "stones": [{"cell": [1, 0], "color": "blue"}, {"cell": [0, 0], "color": "red"}]})
    assert events == [
        {
            "type": "stones_set_up",
            "seat": 1,
            "stones": [{"cell": [0, 0], "color": "red"}, {"cell": [1, 0], "color": "blue"}],
        }
    ]
    m.ok(B, {"type": "setup", "stones": [{"cell": [-4, 0], "color": "red"}]})
    board = m.view["board"]
    geometry = game(m).geometry
    assert board[geometry.index[(0, 0)]] == "R" and board[geometry.index[(1, 0)]] == "B"
    assert board[geometry.index[(-4, 0)]] == "R" and board.count(".") == 58
    assert m.ok(B, {"type": "end_setup"}) == [{"type": "setup_ended", "seat": 1}]
    assert m.view["phase"] == "roles" and m.view["to_move"] == [0]


def test_setup_rejections():
    m = Match()
    m.create("mind_ninja", {"side": 5})
    m.ok(A, {"type": "pass"})
    m.ok(B, {"type": "choose_pattern", "pattern": FIVE})
    m.ok(B, {"type": "setup", "stones": [{"cell": [0, 0], "color": "red"}]})
    assert "[0,0] is occupied" in m.rejected(
        B, {"type": "setup", "stones": [{"cell": [0, 0], "color": "blue"}]}, "illegal"
    )
    assert "[5,0] is off the board" in m.rejected(
        B, {"type": "setup", "stones": [{"cell": [5, 0], "color": "red"}]}, "illegal"
    )
    dup = [{"cell": [1, 1], "color": "red"}, {"cell": [1, 1], "color": "blue"}]
    assert "listed twice" in m.rejected(B, {"type": "setup", "stones": dup}, "illegal")
    m.rejected(B, {"type": "setup", "stones": []}, "malformed")
    m.rejected(B, {"type": "setup", "stones": [{"cell": [1, 1], "color": "green"}]}, "malformed")
    assert "setup phase" in m.rejected(B, {"type": "choose_pattern", "pattern": FIVE}, "illegal")
    assert m.rejected(A, {"type": "end_setup"}, "not_your_turn")


def test_role_choice_gives_the_other_role_to_the_inventor_and_builder_starts():
    m = ready(FIVE)
    assert "roles phase" in m.rejected(A, {"type": "place", "cell": [0, 0], "color": "red"}, "illegal")
    events = m.ok(A, {"type": "choose_role", "role": "blocker"})
    assert events == [{"type": "role_chosen", "seat": 0, "role": "blocker", "builder": 1, "blocker": 0}]
    assert m.view["builder"] == 1 and m.view["blocker"] == 0 and m.view["phase"] == "play"
    assert m.view["to_move"] == [1]
    assert "roles phase" in m.rejected(B, {"type": "choose_role", "role": "builder"}, "illegal")


def test_setup_already_holding_the_pattern_chooser_takes_builder_and_wins():
    m = ready(FIVE, red=[(-2, 0), (-1, 0), (0, 0), (1, 0), (2, 0)])
    events = m.ok(A, {"type": "choose_role", "role": "builder"})
    assert events[-1]["type"] == "match_ended"
    assert m.state.status == "over"
    outcome = m.state.outcome
    assert outcome["winner"] == 0 and outcome["reason"] == "pattern_formed"
    assert outcome["scores"] == {
        "pattern": "five_in_a_row",
        "builder": 0,
        "blocker": 1,
        "cells": [[-2, 0], [-1, 0], [0, 0], [1, 0], [2, 0]],
    }


def test_setup_holding_the_pattern_and_chooser_blocks_then_the_inventor_wins():
    m = ready(FIVE, red=[(-2, 0), (-1, 0), (0, 0), (1, 0), (2, 0)])
    m.ok(A, {"type": "choose_role", "role": "blocker"})
    assert m.state.outcome["winner"] == 1 and m.state.outcome["reason"] == "pattern_formed"


def test_setup_filling_the_board_without_the_pattern_blocker_wins_at_the_role_choice():
    geometry = GAME.initial({"side": 3}, "x").geometry
    m = ready(FIVE, side=3, blue=geometry.cells)
    m.ok(A, {"type": "choose_role", "role": "builder"})
    assert m.state.outcome["winner"] == 1 and m.state.outcome["reason"] == "board_full"
    assert m.state.outcome["scores"]["cells"] is None


# --- play ----------------------------------------------------------------------------------------
def test_play_alternates_from_the_builder_with_fixed_colours():
    m = ready(FIVE, role="builder")
    assert m.ok(A, {"type": "place", "cell": [0, 0], "color": "red"}) == [
        {"type": "stone_placed", "seat": 0, "cell": [0, 0], "color": "red", "free": False}
    ]
    assert m.view["to_move"] == [1]
    message = m.rejected(B, {"type": "place", "cell": [1, 0], "color": "red"}, "illegal")
    assert "blocker places blue" in message
    m.ok(B, {"type": "place", "cell": [1, 0], "color": "blue"})
    assert "builder places red" in m.rejected(A, {"type": "place", "cell": [2, 0], "color": "blue"}, "illegal")
    assert "[1,0] is occupied (a blue stone)" in m.rejected(
        A, {"type": "place", "cell": [1, 0], "color": "red"}, "illegal"
    )
    assert "off the board" in m.rejected(A, {"type": "place", "cell": [0, 5], "color": "red"}, "illegal")
    assert m.rejected(B, {"type": "place", "cell": [2, 0], "color": "blue"}, "not_your_turn")
    assert "no free move to decline" in m.rejected(A, {"type": "decline_free"}, "illegal")
    assert "setup phase" in m.rejected(A, {"type": "end_setup"}, "illegal")


def test_either_colours_let_both_players_place_both_colours():
    m = ready({"id": "odd"}, role="builder")
    m.ok(A, {"type": "place", "cell": [0, 0], "color": "blue"})
    m.ok(B, {"type": "place", "cell": [1, 0], "color": "red"})
    m.ok(A, {"type": "place", "cell": [2, 0], "color": "red"})
    colours = {a["color"] for a in GAME.legal_actions(game(m), 1) if a["type"] == "place"}
    assert colours == {"red", "blue"}


def test_the_builder_wins_even_when_the_blocker_completes_the_pattern():
    m = ready(
        {"id": "five_in_a_row", "params": {"color": "blue"}}, role="builder", blue=[(-2, 0), (-1, 0), (1, 0), (2, 0)]
    )
    m.ok(A, {"type": "place", "cell": [0, 3], "color": "red"})
    m.ok(B, {"type": "place", "cell": [0, 0], "color": "blue"})
    assert m.state.outcome["winner"] == 0 and m.state.outcome["reason"] == "pattern_formed"


def test_a_placement_forming_the_pattern_ends_the_game_for_the_builder():
    m = ready(FIVE, role="builder", red=[(-2, 0), (-1, 0), (1, 0), (2, 0)])
    events = m.ok(A, {"type": "place", "cell": [0, 0], "color": "red"})
    assert [e["type"] for e in events] == ["stone_placed", "match_ended"]
    assert events[-1]["winner"] == 0 and events[-1]["scores"]["cells"] == [[-2, 0], [-1, 0], [0, 0], [1, 0], [2, 0]]
    assert m.view["phase"] == "over" and m.view["to_move"] == []
    assert m.rejected(B, {"type": "place", "cell": [3, 0], "color": "blue"}, "match_over")


def test_the_full_board_without_the_pattern_gives_the_blocker_the_win():
    geometry = GAME.initial({"side": 3}, "x").geometry
    last = (0, 0)
    m = ready(FIVE, side=3, blue=[c for c in geometry.cells if c != last], role="builder")
    events = m.ok(A, {"type": "place", "cell": list(last), "color": "red"})
    assert events[-1]["type"] == "match_ended"
    assert m.state.outcome == {
        "winner": 1,
        "reason": "board_full",
        "scores": {"pattern": "five_in_a_row", "builder": 0, "blocker": 1, "cells": None},
    }


def test_a_last_placement_that_forms_the_pattern_wins_for_the_builder_on_a_full_board():
    geometry = GAME.initial({"side": 3}, "x").geometry
    row = [(-2, 0), (-1, 0), (0, 0), (1, 0), (2, 0)]
    rest = [c for c in geometry.cells if c not in row]
    m = ready(FIVE, side=3, red=row[:-1], blue=rest, role="builder")
    m.ok(A, {"type": "place", "cell": [2, 0], "color": "red"})
    assert m.state.outcome["winner"] == 0 and m.state.outcome["reason"] == "pattern_formed"


# --- free moves (worked example) ---------------------------------------------------------------------
def _free_move_match(free: int, role: str) -> Match:
    m = Match()
    m.create("mind_ninja", {"side": 5})
    if free:
        m.ok(A, {"type": "bid", "value": free - 1})
        m.ok(B, {"type": "bid", "value": free})
    m.ok(A, {"type": "pass"})
    assert m.view["chooser"] == 0 and m.view["free_moves"] == free
    m.ok(B, {"type": "choose_pattern", "pattern": FIVE})
    m.ok(B, {"type": "end_setup"})
    m.ok(A, {"type": "choose_role", "role": role})
    return m


def test_worked_free_move_example():
    m = _free_move_match(2, "blocker")  # chooser seat 0 blocks; builder seat 1 starts
    assert m.view["to_move"] == [1]
    assert m.ok(B, {"type": "place", "cell": [0, 0], "color": "red"})[0]["free"] is False
    assert m.view["to_move"] == [0] and not m.view["free_pending"]
    m.ok(A, {"type": "place", "cell": [1, 0], "color": "blue"})
    assert m.view["to_move"] == [0] and m.view["free_pending"] and m.view["free_moves"] == 2
    assert {"type": "decline_free"} in list(GAME.legal_actions(game(m), 0))
    assert m.ok(A, {"type": "decline_free"}) == [{"type": "free_move_declined", "seat": 0, "free_moves_left": 1}]
    assert m.view["free_moves"] == 1 and m.view["to_move"] == [1] and not m.view["free_pending"]
    m.ok(B, {"type": "place", "cell": [0, 1], "color": "red"})
    m.ok(A, {"type": "place", "cell": [1, 1], "color": "blue"})
    assert m.view["free_pending"] and m.view["to_move"] == [0]
    events = m.ok(A, {"type": "place", "cell": [2, 1], "color": "blue"})
    assert events == [{"type": "stone_placed", "seat": 0, "cell": [2, 1], "color": "blue", "free": True}]
    assert m.view["free_moves"] == 0 and m.view["to_move"] == [1] and not m.view["free_pending"]
    m.ok(B, {"type": "place", "cell": [0, 2], "color": "red"})
    m.ok(A, {"type": "place", "cell": [1, 2], "color": "blue"})  # F = 0: no free move
    assert m.view["to_move"] == [1] and not m.view["free_pending"]
    assert "no free move to decline" in m.rejected(B, {"type": "decline_free"}, "illegal")


def test_free_moves_follow_the_choosers_own_placements_when_the_chooser_builds():
    m = _free_move_match(1, "builder")
    m.ok(A, {"type": "place", "cell": [0, 0], "color": "red"})
    assert m.view["to_move"] == [0] and m.view["free_pending"]
    assert m.rejected(B, {"type": "place", "cell": [1, 0], "color": "blue"}, "not_your_turn")
    m.ok(A, {"type": "place", "cell": [1, 0], "color": "red"})  # the free stone: no further free move
    assert m.view["to_move"] == [1] and m.view["free_moves"] == 0 and not m.view["free_pending"]
    m.ok(B, {"type": "place", "cell": [2, 0], "color": "blue"})
    assert m.view["to_move"] == [0]


def test_no_free_move_is_offered_when_the_placement_ends_the_game():
    m = Match()
    m.create("mind_ninja", {"side": 5})
    m.ok(A, {"type": "bid", "value": 3})
    m.ok(B, {"type": "pass"})  # chooser seat 1 with F = 3
    m.ok(A, {"type": "choose_pattern", "pattern": FIVE})
    m.ok(A, {"type": "setup", "stones": stones(red=[(-2, 0), (-1, 0), (1, 0), (2, 0)])})
    m.ok(A, {"type": "end_setup"})
    m.ok(B, {"type": "choose_role", "role": "builder"})
    m.ok(B, {"type": "place", "cell": [0, 0], "color": "red"})
    assert m.state.status == "over" and m.state.outcome["winner"] == 1 and not m.view["free_pending"]


def test_a_free_move_can_win():
    m = _free_move_match(1, "builder")
    m.ok(A, {"type": "place", "cell": [0, 0], "color": "red"})
    m.ok(A, {"type": "place", "cell": [1, 0], "color": "red"})
    for q, blocked in ((2, -1), (-1, -2)):
        m.ok(B, {"type": "place", "cell": [blocked, 3], "color": "blue"})
        m.ok(A, {"type": "place", "cell": [q, 0], "color": "red"})
    m.ok(B, {"type": "place", "cell": [0, 3], "color": "blue"})
    m.ok(A, {"type": "place", "cell": [-2, 0], "color": "red"})
    assert m.state.outcome["winner"] == 0 and m.state.outcome["reason"] == "pattern_formed"


# --- views, lists, text --------------------------------------------------------------------------------
def test_view_in_play():
    m = _free_move_match(2, "blocker")
    m.ok(B, {"type": "place", "cell": [0, 0], "color": "red"})
    m.ok(A, {"type": "place", "cell": [1, 0], "color": "blue"})
    view = m.view
    geometry = game(m).geometry
    expected_board = ["."] * 61
    expected_board[geometry.index[(0, 0)]] = "R"
    expected_board[geometry.index[(1, 0)]] = "B"
    assert view["board"] == "".join(expected_board)
    assert (view["phase"], view["chooser"], view["inventor"], view["builder"], view["blocker"]) == ("play", 0, 1, 1, 0)
    assert view["free_moves"] == 2 and view["free_pending"] is True and view["bids"] == [[0, 1], [1, 2]]
    assert view["pattern"]["id"] == "five_in_a_row" and view["to_move"] == [0]
    assert GAME.view(game(m), 0) == GAME.view(game(m), None)


def test_legal_actions_per_phase():
    m = Match()
    m.create("mind_ninja", {"side": 3})
    m.ok(A, {"type": "pass"})
    assert [a["pattern"]["id"] for a in GAME.legal_actions(game(m), 1)] == [
        "five_in_a_row",
        "havannah",
        "hex",
        "y",
        "ring",
        "big_group",
        "triangle",
        "flower",
        "odd",
        "equicolored",
    ]
    assert list(GAME.legal_actions(game(m), 0)) == []
    m.ok(B, {"type": "choose_pattern", "pattern": FIVE})
    m.ok(B, {"type": "setup", "stones": stones(red=[(0, 0)])})
    listed = list(GAME.legal_actions(game(m), 1))
    assert len(listed) == 18 * 2 + 1 and listed[-1] == {"type": "end_setup"}
    assert {"type": "setup", "stones": [{"cell": [0, 0], "color": "red"}]} not in listed
    m.ok(B, {"type": "end_setup"})
    assert list(GAME.legal_actions(game(m), 0)) == [
        {"type": "choose_role", "role": "builder"},
        {"type": "choose_role", "role": "blocker"},
    ]
    m.ok(A, {"type": "choose_role", "role": "blocker"})
    listed = list(GAME.legal_actions(game(m), 1))
    assert len(listed) == 18 and all(a["color"] == "red" for a in listed)


def test_render_shows_the_board_and_the_state():
    m = ready(FIVE, red=[(-2, 0), (-1, 0), (0, 0), (1, 0), (2, 0)], blue=[(0, 1)], role="builder")
    text = GAME.render(game(m))
    assert "r r r r r" in text and "B" in text
    assert "pattern five_in_a_row" in text and "pattern_formed: seat 0 wins" in text


@pytest.mark.parametrize(
    "action",
    [
        {"type": "bid"},
        {"type": "bid", "value": "x"},
        {"type": "place", "cell": [0]},
        {"type": "choose_role", "role": "king"},
        {"type": "choose_pattern"},
        {"type": "choose_pattern", "pattern": "five"},
        {"type": "decline_free", "now": True},
    ],
)
def test_malformed_actions(action):
    m = Match()
    m.create("mind_ninja", {"side": 5})
    m.rejected(A, action, "malformed")
