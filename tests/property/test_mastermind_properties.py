"""Mastermind properties (hypothesis): feedback against a naive reference, no secret before its
reveal anywhere public, manual play with honest feedback scores exactly like auto play, and
score bookkeeping over random (manual: sometimes lying) playouts."""

from __future__ import annotations

import random

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.mastermind import GAME, as_code, as_list, commitment_of, feedback, random_code
from tests.support import Match, random_playout

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def reference_feedback(secret: list[int], guess: list[int]) -> tuple[int, int]:
    black = sum(1 for s, g in zip(secret, guess, strict=False) if s == g)
    common = sum(min(secret.count(c), guess.count(c)) for c in set(secret) | set(guess))
    return black, common - black


@st.composite
def code_pairs(draw):
    pegs = draw(st.integers(2, 8))
    colors = draw(st.integers(2, 10))
    code = st.lists(st.integers(0, colors - 1), min_size=pegs, max_size=pegs)
    return pegs, draw(code), draw(code)


@settings(max_examples=500, deadline=None)
@given(code_pairs())
def test_feedback_matches_the_definition_and_its_shape_rules(pair):
    pegs, secret, guess = pair
    answer = feedback(as_code(secret), as_code(guess))
    assert answer == reference_feedback(secret, guess)
    assert answer == feedback(as_code(guess), as_code(secret))
    black, white = answer
    assert black >= 0 and white >= 0 and black + white <= pegs and answer != (pegs - 1, 1)
    assert (black == pegs) == (secret == guess)


# --- no leaks ------------------------------------------------------------------------------------------
LEAK_OPTIONS = [
    {},
    {"pegs": 3},
    {"pegs": 3, "colors": 4, "max_rows": 3},
    {"repeats": False, "rounds": 4},
    {"pegs": 5, "colors": 8, "max_distinct": 3, "max_rows": 4},
    {"pegs": 8, "colors": 10, "max_rows": 2},
]


def _forms(code: str) -> list[bytes]:
    """Every way the code could be written in a record: a JSON list, a JSON string, the hashed "0,1,2,3"."""
    return [orjson.dumps(as_list(code)), orjson.dumps(code), orjson.dumps(",".join(code))]


@SETTINGS
@given(options=st.sampled_from(LEAK_OPTIONS), seed=st.integers(0, 2**32 - 1))
def test_no_result_view_or_event_shows_a_secret_before_its_reveal(options, seed):
    """The codemaker picks a code that has not appeared in the match before (as a secret or a
    guess) and a fresh random salt, so any appearance of either before the reveal is a leak."""
    rng = random.Random(seed)
    match = Match("leak")
    match.create("mastermind", options)
    seen: set[str] = set()
    secret = salt = None
    reveals = 0
    while match.state.status != "over":
        state = match.state
        board, seat = state.board, state.to_move()[0]
        if board.phase == "code":
            secret = random_code(board.settings.key, rng)
            while secret in seen:
                secret = random_code(board.settings.key, rng)
            salt = f"{rng.getrandbits(256):064x}"[: rng.randint(16, 64)]
            action = {"type": "set_code", "code": as_list(secret), "salt": salt}
        else:
            action = GAME.random_action(board, seat, rng)
        step = match.send(state.seats[seat], action)
        assert step.result["status"] == "accepted", step.result.get("reason")
        raw = orjson.dumps(step.result) + (orjson.dumps(step.outcome) if step.outcome else b"")
        assert b'"_' not in raw, "a private field left the fold"
        events = step.result["events"]
        revealed = [e for e in events if e["type"] == "secret_revealed"]
        if revealed:
            # The detector sees the code where it is meant to be: in the reveal.
            assert revealed[0]["code"] == as_list(secret) and revealed[0]["salt"] == salt
            assert orjson.dumps(as_list(secret)) in raw and salt.encode() in raw
            reveals += 1
            secret = salt = None
        else:
            board = match.state.board
            owner = orjson.dumps(GAME.view(board, board.codemaker))
            assert orjson.dumps(secret) in owner and salt.encode() in owner  # the detector works on views
            public = [raw, orjson.dumps(GAME.view(board, None)), orjson.dumps(GAME.view(board, board.codebreaker))]
            for blob in public:
                assert salt.encode() not in blob
                for form in _forms(secret):
                    assert form not in blob, (form, blob)
            for event in events:
                assert set(event) <= {"type", "round", "attempt", "row", "code", "black", "white", "commitment"}
        seen.update(as_code(e["code"]) for e in events if "code" in e)
        if action["type"] == "set_code":
            seen.add(as_code(action["code"]))
    assert reveals == match.state.board.settings.rounds


# --- manual with honest feedback == auto --------------------------------------------------------------
@SETTINGS
@given(
    options=st.sampled_from(
        [{}, {"pegs": 3}, {"repeats": False, "rounds": 4}, {"pegs": 5, "colors": 7, "max_rows": 5}]
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_manual_play_with_honest_feedback_scores_exactly_like_auto(options, seed):
    auto = random_playout("mastermind", options, seed, match_id="same")
    manual = Match("same")
    manual.create("mastermind", {**options, "feedback": "manual"})
    secrets = {}
    for raw, _taken in zip(auto.records[1:], auto.steps[1:], strict=False):
        record = orjson.loads(raw)
        action, player = record["action"], record["player"]
        if action["type"] == "set_code":
            board = manual.state.board
            secrets[board.round] = (as_code(action["code"]), action["salt"])
            manual.ok(
                player,
                {
                    "type": "commit",
                    "commitment": commitment_of("same", board.round, board.attempt, *secrets[board.round]),
                },
            )
            continue
        manual.ok(player, action)
        board = manual.state.board
        code, salt = secrets[board.round]
        maker = manual.state.seats[board.codemaker]
        black, white = feedback(code, board.pending)
        manual.ok(maker, {"type": "feedback", "black": black, "white": white})
        if manual.state.board.phase == "reveal":
            manual.ok(maker, {"type": "reveal", "code": as_list(code), "salt": salt})

    def game_events(match, kinds):
        return [e for s in match.steps for e in s.result["events"] if e["type"] in kinds]

    kinds = {
        "secret_committed",
        "guessed",
        "feedback_given",
        "secret_revealed",
        "round_scored",
        "round_started",
        "indication_error",
    }
    assert game_events(manual, kinds) == game_events(auto, kinds)
    assert manual.state.outcome == auto.state.outcome


# --- bookkeeping over random playouts ---------------------------------------------------------------------
@SETTINGS
@given(
    options=st.sampled_from(
        [
            {},
            {"feedback": "manual"},
            {"feedback": "manual", "pegs": 3, "max_rows": 3},
            {"feedback": "manual", "rounds": 4, "repeats": False, "max_rows": 6},
            {"pegs": 2, "colors": 3, "max_rows": 1, "unsolved_penalty": 7},
        ]
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_totals_are_points_plus_penalties_and_roles_follow_round_parity(options, seed):
    played = random_playout("mastermind", options, seed)
    board = played.state.board
    totals = [0, 0]
    scored_rounds, attempts, current = [], {}, 1
    for step in played.steps:
        for event in step.result["events"]:
            kind = event["type"]
            if kind == "round_scored":
                assert event["breaker"] == (1 if event["round"] % 2 else 0)
                totals[event["breaker"]] += event["points"]
                scored_rounds.append(event["round"])
                assert (
                    1 <= event["points"] <= board.settings.max_rows
                    or event["points"] == board.settings.max_rows + board.settings.unsolved_penalty
                )
            elif kind == "indication_error":
                assert event["codemaker"] == (0 if event["round"] % 2 else 1) and event["penalty"] == 3
                totals[event["codemaker"]] += 3
            elif kind == "round_started":
                assert event["codemaker"] == (0 if event["round"] % 2 else 1)
                if event["attempt"] == 1:  # a new round (round 1 attempt 1 starts with the match)
                    assert event["round"] == current + 1
                    current = event["round"]
                else:  # a replay of the same round
                    assert event["round"] == current and event["attempt"] == attempts.get(current, 1) + 1
                attempts[event["round"]] = event["attempt"]
    assert scored_rounds == list(range(1, board.settings.rounds + 1))
    outcome = played.state.outcome
    assert outcome["scores"] == totals == list(board.totals)
    if totals[0] == totals[1]:
        assert outcome["winner"] is None and outcome["reason"] == "draw"
    else:
        assert outcome["winner"] == (0 if totals[0] < totals[1] else 1) and outcome["reason"] == "lowest_total"
    assert all(a <= 2 for a in attempts.values()), "random play replays a round at most once"
