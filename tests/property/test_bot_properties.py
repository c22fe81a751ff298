"""Properties every bot must have, in random reachable positions of every game, option set
and phase (positions are prefixes of the games' own random playouts, folded as the rules
worker folds them):

- the action a bot returns is accepted by the fold, for every bot that plays the game;
- the same seed gives the same action;
- the Mastermind codemaker's commitment matches its reveal and its manual feedback is true
  (the rules check both at the reveal: an indication error would show either failing), and
  its secret can be derived again from (key, match, round, attempt) alone.
"""

from __future__ import annotations

import random

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.bots import Budget, bot_ids, make_bot
from games.bots.arena import play_match
from games.bots.mastermind_maker import Codemaker
from games.fold import read, step
from games.mastermind import MastermindState, Settings, commitment_of
from games.match import MatchState
from games.playout import random_playout_records
from tests.support import GAME_OPTIONS

CASES = [(game, i) for game in GAME_OPTIONS for i in range(len(GAME_OPTIONS[game]))]
TINY = Budget(playouts=4)
PROPERTY_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def reach(game: str, options: dict, seed: int, plies: int) -> MatchState:
    """The active match `plies` records into a random playout (or its last active state)."""
    last = None
    for n, (_, taken) in enumerate(random_playout_records(game, options, seed, "prop1")):
        if taken.state.status == "active":
            last = taken.state
        if n >= plies and last is not None:
            break
    return last


def fold_accepts(state: MatchState, seat: int, action: dict) -> dict:
    raw = orjson.dumps(
        {
            "v": 1,
            "event_id": "bot-probe",
            "match_id": state.match_id,
            "player": state.seats[seat],
            "at": "2026-11-30T00:00:00Z",
            "action": action,
        }
    )
    return step(state, read(raw)).result


@given(case=st.sampled_from(CASES), seed=st.integers(0, 2**32 - 1), plies=st.integers(1, 150), data=st.data())
@PROPERTY_SETTINGS
def test_every_bot_acts_legally_and_deterministically(case, seed, plies, data):
    game, option_index = case
    state = reach(game, GAME_OPTIONS[game][option_index], seed, plies)
    seat = state.to_move()[0]
    bot = make_bot(data.draw(st.sampled_from(bot_ids(game)), label="bot"))
    action = bot.choose(state, seat, random.Random(seed), TINY)
    result = fold_accepts(state, seat, action)
    assert result["status"] == "accepted", (bot.id, state.board, action, result.get("reason"))
    assert bot.choose(state, seat, random.Random(seed), TINY) == action


MANUAL = [
    {"feedback": "manual", "pegs": 3, "colors": 4, "max_rows": 5},
    {"feedback": "manual", "pegs": 4, "colors": 6, "repeats": False},
    {"feedback": "auto", "pegs": 2, "colors": 5, "max_distinct": 1},
]


@given(
    options=st.sampled_from(MANUAL),
    seed=st.integers(0, 2**32 - 1),
    bots=st.tuples(st.sampled_from(bot_ids("mastermind")), st.sampled_from(bot_ids("mastermind"))),
    key=st.binary(min_size=0, max_size=16),
)
@PROPERTY_SETTINGS
def test_the_codemaker_commits_answers_and_reveals_truthfully(options, seed, bots, key):
    players = (make_bot(bots[0], secret_key=key), make_bot(bots[1], secret_key=key))
    result = play_match("mastermind", options, players, seed, "mm-prop")
    assert result.reason in ("lowest_total", "draw")
    final = result.final
    assert final.board.penalties == (0, 0)
    for finished in final.board.tries:
        assert finished.error is None
        assert (
            commitment_of(final.match_id, finished.round, finished.attempt, finished.code, finished.salt)
            == finished.commitment
        )
        probe = MastermindState(
            match_id=final.match_id, settings=final.board.settings, round=finished.round, attempt=finished.attempt
        )
        assert Codemaker(key).secret(probe) == (finished.code, finished.salt)
        assert 16 <= len(finished.salt) <= 128


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=20, deadline=None)
def test_secrets_depend_on_the_key_and_the_try(seed):
    rng = random.Random(seed)
    board = MastermindState(
        match_id=f"m{seed}",
        settings=Settings(
            pegs=6,
            colors=10,
            repeats=True,
            max_distinct=None,
            max_rows=12,
            rounds=2,
            feedback="manual",
            unsolved_penalty=2,
        ),
        round=rng.randint(1, 4),
        attempt=rng.randint(1, 3),
    )
    mine, other = Codemaker(b"key one"), Codemaker(b"key two")
    assert mine.secret(board) == Codemaker(b"key one").secret(board)
    assert mine.secret(board) != other.secret(board)
    assert mine.secret(board) != mine.secret(board.evolved(attempt=board.attempt + 1))
