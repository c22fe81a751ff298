"""Bots play whole matches against themselves through the fold, so they act in every phase
their game has (Mind Ninja: bid, pattern, setup, role, play, free moves; Mastermind: code,
guess, feedback, reveal in both modes), and every action they return is accepted."""

from __future__ import annotations

from collections import defaultdict

import pytest

from games.bots import Budget, make_bot
from games.bots.arena import play_match

TINY = Budget(playouts=3)


class Recording:
    """A bot wrapper that notes the phase of every position it is asked to act in."""

    def __init__(self, bot, phase_of):
        self.bot, self.phase_of = bot, phase_of
        self.id, self.games = bot.id, bot.games
        self.phases: dict[str, int] = defaultdict(int)

    def choose(self, state, seat, rng, budget=None):
        self.phases[self.phase_of(state.board)] += 1
        return self.bot.choose(state, seat, rng, budget)


def mind_ninja_phase(board) -> str:
    return "free" if board.free_pending else board.phase


@pytest.mark.parametrize("side,free", [(3, False), (5, True), (7, True)])
def test_mind_ninja_bots_act_in_every_phase(side, free):
    """On side 3 the bot concedes no free move (bid limit 0), so the chooser gets none."""
    bot = Recording(make_bot("mcts-1"), mind_ninja_phase)
    result = play_match("mind_ninja", {"side": side}, (bot, bot), seed=side, budgets=(TINY, TINY))
    assert result.winner in (0, 1)
    expected = {"bidding", "pattern", "setup", "roles", "play"} | ({"free"} if free else set())
    assert set(bot.phases) == expected, dict(bot.phases)


@pytest.mark.parametrize("mode", ["auto", "manual"])
@pytest.mark.parametrize("bot_id", ["random", "consistent", "knuth", "most-parts"])
def test_mastermind_bots_play_both_roles_in_both_modes(mode, bot_id):
    bot = Recording(make_bot(bot_id), lambda board: board.phase)
    result = play_match("mastermind", {"feedback": mode, "pegs": 3, "colors": 5}, (bot, bot), seed=3)
    assert result.reason in ("lowest_total", "draw")
    expected = {"code", "guess"} | ({"feedback", "reveal"} if mode == "manual" else set())
    assert set(bot.phases) == expected


@pytest.mark.parametrize(
    "game,options",
    [
        ("strands", {"layout": "small-4"}),
        ("strands", {"placement": "exact", "layout": "small-5"}),
        ("mana", {"max_plies": 60}),
        ("mana", {"bird_blocks": False, "max_plies": 60}),
    ],
)
def test_mcts_bots_finish_matches(game, options):
    bots = (make_bot("mcts-1"), make_bot("mcts-2"))
    result = play_match(game, options, bots, seed=11, budgets=(TINY, TINY))
    assert result.plies > 0 and result.reason


def test_matches_do_not_depend_on_the_hash_seed():
    """A restarted bot service gets a new PYTHONHASHSEED; the bots' choices must not change."""
    import os
    import subprocess
    import sys

    script = (
        "from games.bots import make_bot, Budget; from games.bots.arena import play_match; "
        "r = play_match('strands', {'layout': 'small-4'}, (make_bot('mcts-2'), make_bot('mcts-1')), 5,"
        " budgets=(Budget(playouts=12), None)); "
        "m = play_match('mind_ninja', {'side': 3}, (make_bot('mcts-1'), make_bot('mcts-2')), 5,"
        " budgets=(None, Budget(playouts=6))); print(r.final.board.board, m.final.board.board)"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1 and outputs.pop().strip()
