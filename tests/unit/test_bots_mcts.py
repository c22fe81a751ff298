"""MCTS bots on tiny positions, through the real fold: they take an immediate win, block an
immediate loss, stay inside their budget and are deterministic given a seed."""

from __future__ import annotations

import random

import pytest

from games.bots import BotError, Budget, make_bot
from games.bots.mana_policy import hands_over_daimyo
from games.bots.mcts import Search, SearchSettings
from games.bots.strands_policy import StrandsPolicy
from games.mana import position
from tests.support import Match
from tests.unit.test_mana import match_at, pic

A, B = "alice", "bob"
TINY = Budget(playouts=8)


def accepted(m: Match, seat: int, action: dict) -> dict:
    """The action, after checking the fold accepts it from `seat`."""
    m.ok(m.state.seats[seat], action)
    return action


def mind_ninja_builder_to_move(red, blue=(), side=5, pattern=None) -> Match:
    """Alice passes (chooser, no free moves) and takes builder; Bob sets up `red`/`blue`."""
    m = Match()
    m.create("mind_ninja", {"side": side})
    m.ok(A, {"type": "pass"})
    m.ok(B, {"type": "choose_pattern", "pattern": pattern or {"id": "five_in_a_row"}})
    setup = [{"cell": list(c), "color": "red"} for c in red] + [{"cell": list(c), "color": "blue"} for c in blue]
    m.ok(B, {"type": "setup", "stones": setup})
    m.ok(B, {"type": "end_setup"})
    m.ok(A, {"type": "choose_role", "role": "builder"})
    return m


def test_mind_ninja_builder_completes_five_in_a_row():
    m = mind_ninja_builder_to_move(red=[(-2, 0), (-1, 0), (0, 0), (1, 0)], blue=[(-3, 0)])
    action = make_bot("mcts-1").choose(m.state, 0, random.Random(1), TINY)
    accepted(m, 0, action)
    assert action["cell"] == [2, 0]
    assert m.state.outcome["winner"] == 0


def test_mind_ninja_blocker_blocks_the_only_completing_cell():
    m = mind_ninja_builder_to_move(red=[(-2, 0), (-1, 0), (0, 0)], blue=[(-3, 0), (0, 2)])
    m.ok(A, {"type": "place", "cell": [1, 0], "color": "red"})  # four in a row, one end blocked
    action = make_bot("mcts-2").choose(m.state, 1, random.Random(3), Budget(playouts=120))
    accepted(m, 1, action)
    assert action["cell"] == [2, 0]


def test_mana_takes_the_daimyo_when_it_can():
    # Black Ronin on b2 (3 marks) reaches the White Daimyo on e2 in three steps.
    board = pic("""
    . . . . . .
    . . . . . .
    . . . . . .
    . . . . . .
    . R . . d .
    D . . . . r
    """)
    m = match_at(position(board, turn=0))
    action = make_bot("mcts-1").choose(m.state, 0, random.Random(0), TINY)
    accepted(m, 0, action)
    assert m.state.outcome == {"winner": 0, "reason": "daimyo_captured", "scores": None}


def test_mana_root_drops_moves_that_hand_over_the_daimyo():
    board = pic("""
    . . . . . .
    . . . . . .
    . . . . . .
    . . . . . .
    . . . . . .
    D R . . r d
    """)
    m = match_at(position(board, turn=0))
    game, state = m.state.rules, m.state.board
    for seed in range(3):
        action = make_bot("mcts-1").choose(m.state, 0, random.Random(seed), TINY)
        safe_exists = any(not hands_over_daimyo(game, state, 0, a) for a in game.legal_actions(state, 0))
        assert not (safe_exists and hands_over_daimyo(game, state, 0, action)), action


def test_strands_wins_the_last_move_of_a_tiny_board():
    # Side-2 layout, centre 1 and six 2s; Black to cover what is left.
    m = Match()
    m.create("strands", {"layout": {"side": 2, "rows": ["22", "212", "22"]}})
    for player, cells in ((A, [[1, 0]]), (B, [[0, -1], [-1, 1]]), (A, [[0, 0]]), (B, [[1, -1]])):
        m.ok(player, {"type": "place", "cells": cells})
    # Left: [-1,0] and [0,1], both marked 2. Covering both joins Black's stones into one group of 4.
    action = make_bot("mcts-1").choose(m.state, 0, random.Random(0), TINY)
    accepted(m, 0, action)
    assert m.state.outcome["winner"] == 0


@pytest.mark.parametrize("bot_id", ["mcts-1", "mcts-2"])
def test_same_seed_same_move(bot_id):
    m = Match()
    m.create("strands", {"layout": "small-5"})
    m.ok(A, {"type": "place", "cells": [[1, 0]]})
    bot = make_bot(bot_id)
    first = bot.choose(m.state, 1, random.Random(42), Budget(playouts=20))
    assert first == bot.choose(m.state, 1, random.Random(42), Budget(playouts=20))
    accepted(m, 1, first)


def test_a_playout_budget_is_the_number_of_iterations():
    m = Match()
    m.create("strands", {"layout": "small-5"})
    m.ok(A, {"type": "place", "cells": [[1, 0]]})
    search = Search(m.state.rules, StrandsPolicy(), SearchSettings(widening=(3.0, 1.0)), random.Random(0))
    calls = []
    original = search._iterate
    search._iterate = lambda root: (calls.append(1), original(root))
    search.choose(m.state.board, 1, Budget(playouts=13))
    assert len(calls) == 13


def test_a_time_budget_stops_the_search():
    m = Match()
    m.create("mind_ninja", {"side": 7})
    m.ok(A, {"type": "pass"})
    m.ok(B, {"type": "choose_pattern", "pattern": {"id": "hex"}})
    m.ok(B, {"type": "end_setup"})
    import time

    started = time.perf_counter()
    action = make_bot("mcts-3").choose(m.state, 0, random.Random(0), Budget(playouts=10**9, seconds=0.2))
    assert time.perf_counter() - started < 2.0
    accepted(m, 0, action)


def test_bots_refuse_to_act_out_of_turn_or_in_the_wrong_game():
    m = Match()
    m.create("strands", {"layout": "small-4"})
    with pytest.raises(BotError, match="not to act"):
        make_bot("mcts-1").choose(m.state, 1, random.Random(0))
    with pytest.raises(BotError, match="does not play strands"):
        make_bot("knuth").choose(m.state, 0, random.Random(0))


def test_budget_needs_a_positive_limit():
    with pytest.raises(ValueError):
        Budget()
    with pytest.raises(ValueError):
        Budget(playouts=0)
    with pytest.raises(ValueError):
        Budget(seconds=-1.0)
