"""Mastermind, rule by rule, through the real fold (given a position, when an action, then events).

Colours in the worked examples are letters: R Y G B K W = 0 1 2 3 4 5.
"""

from __future__ import annotations

import hashlib
import random
from itertools import islice, product

import orjson
import pytest

from games.mastermind import (
    GAME,
    MAX_ATTEMPTS,
    all_codes,
    as_code,
    code_problem,
    feedback,
    feedback_shapes,
    iter_codes,
    listing_salt,
    random_code,
    space_size,
)
from tests.support import Match

LETTER = {letter: n for n, letter in enumerate("RYGBKW")}
SALT = "00112233445566778899aabbccddeeff"
SALT2 = "ffeeddccbbaa99887766554433221100"


def pegs(text: str) -> list[int]:
    return [LETTER[ch] for ch in text]


def mm(options=None, seats=("alice", "bob")) -> Match:
    match = Match()
    match.create("mastermind", options or {}, seats=seats)
    return match


def sha(match_id: str, round_: int, attempt: int, code: list[int], salt: str) -> str:
    """The commitment, computed here independently of the game: the rules' formula verbatim."""
    text = (
        "MM1|" + match_id + "|" + str(round_) + "|" + str(attempt) + "|" + ",".join(str(d) for d in code) + "|" + salt
    )
    return hashlib.sha256(text.encode()).hexdigest()


def events_of(match: Match, kind: str) -> list[dict]:
    return [e for s in match.steps for e in s.result["events"] if e["type"] == kind]


def play_auto_round(match: Match, maker: str, breaker: str, secret: list[int], guesses: list[list[int]]):
    match.ok(maker, {"type": "set_code", "code": secret, "salt": SALT})
    last = []
    for guess in guesses:
        last = match.ok(breaker, {"type": "guess", "code": guess})
    return last


# --- options ------------------------------------------------------------------------------------
def test_default_options_are_filled_in_on_create():
    events = mm().steps[0].result["events"]
    assert events[0]["options"] == {
        "pegs": 4,
        "colors": 6,
        "repeats": True,
        "max_distinct": None,
        "max_rows": 12,
        "rounds": 2,
        "feedback": "auto",
        "unsolved_penalty": 2,
    }


@pytest.mark.parametrize(
    "options",
    [
        {"pegs": 3},
        {"pegs": 2, "colors": 2},
        {"pegs": 8, "colors": 10},
        {"repeats": False, "pegs": 6, "colors": 6},
        {"max_distinct": 3},
        {"rounds": 4, "feedback": "manual", "max_rows": 8, "unsolved_penalty": 0},
    ],
)
def test_possible_option_sets_are_accepted(options):
    match = mm(options)
    assert match.view["status"] == "active"
    assert {k: match.view["options"][k] for k in options} == options


@pytest.mark.parametrize(
    "options,words",
    [
        ({"rounds": 3}, "rounds must be even"),
        ({"repeats": False, "pegs": 5, "colors": 4}, "5 pegs, 4 colours"),
        ({"max_distinct": 5}, "max_distinct 5 is more than the 4 pegs"),
        ({"pegs": 8, "colors": 4, "max_distinct": 5}, "max_distinct 5 is more than the 4 colours"),
        ({"repeats": False, "max_distinct": 3}, "leaves no valid code"),
    ],
)
def test_impossible_option_combinations_are_illegal(options, words):
    match = Match()
    message = match.rejected(
        "alice", {"type": "create", "game": "mastermind", "seats": ["alice", "bob"], "options": options}, "illegal"
    )
    assert words in message


@pytest.mark.parametrize(
    "options,field",
    [
        ({"pegs": 1}, "pegs"),
        ({"pegs": 9}, "pegs"),
        ({"colors": 1}, "colors"),
        ({"colors": 11}, "colors"),
        ({"feedback": "robot"}, "feedback"),
        ({"rounds": 0}, "rounds"),
        ({"pegs": "4"}, "pegs"),
        ({"colours": 6}, "colours"),
        ({"max_rows": 0}, "max_rows"),
        ({"unsolved_penalty": -1}, "unsolved_penalty"),
    ],
)
def test_out_of_range_or_unknown_options_are_malformed(options, field):
    match = Match()
    message = match.rejected(
        "alice", {"type": "create", "game": "mastermind", "seats": ["alice", "bob"], "options": options}, "malformed"
    )
    assert field in message


# --- feedback -------------------------------------------------------------------------------------
FEEDBACK_EXAMPLES = [
    ("RRGG", "RGRG", (2, 2)),
    ("RRRR", "RGBY", (1, 0)),
    ("RRYB", "GGRB", (1, 1)),
    ("YKGY", "GKYG", (1, 2)),
    ("RGBY", "YBGR", (0, 4)),
]


@pytest.mark.parametrize("secret,guess,expected", FEEDBACK_EXAMPLES)
def test_feedback_examples_of_the_rules(secret, guess, expected):
    assert feedback(as_code(pegs(secret)), as_code(pegs(guess))) == expected
    assert feedback(as_code(pegs(guess)), as_code(pegs(secret))) == expected


@pytest.mark.parametrize("secret,guess,expected", FEEDBACK_EXAMPLES)
def test_feedback_examples_through_the_fold(secret, guess, expected):
    match = mm()
    match.ok("alice", {"type": "set_code", "code": pegs(secret), "salt": SALT})
    events = match.ok("bob", {"type": "guess", "code": pegs(guess)})
    assert events[0] == {"type": "guessed", "round": 1, "attempt": 1, "row": 1, "code": pegs(guess)}
    assert events[1] == {
        "type": "feedback_given",
        "round": 1,
        "attempt": 1,
        "row": 1,
        "black": expected[0],
        "white": expected[1],
    }
    assert match.view["rows"] == [[as_code(pegs(guess)), *expected]]


@pytest.fixture(scope="module")
def table_4x6():
    """Feedback of every (secret, guess) pair of the 4x6 game, by the game's own function."""
    codes = all_codes((4, 6, True, None))
    return codes, [[feedback(s, g) for g in codes] for s in codes]


def test_feedback_over_all_1296_x_1296_pairs_is_symmetric_with_14_answers_and_never_3_1(table_4x6):
    codes, table = table_4x6
    assert len(codes) == 1296
    answers = set()
    for i, row in enumerate(table):
        answers.update(row)
        assert all(row[j] == table[j][i] for j in range(i)), f"asymmetric for secret {codes[i]}"
    assert len(answers) == 14
    assert (3, 1) not in answers
    assert answers == set(feedback_shapes(4))
    assert all(row[i] == (4, 0) for i, row in enumerate(table))


def test_knuth_minimax_from_1122_solves_every_code_in_at_most_5_guesses(table_4x6):
    np = pytest.importorskip("numpy")
    codes, table = table_4x6
    n = len(codes)
    answer = np.array([[b * 5 + w for b, w in row] for row in table], dtype=np.int64)  # [guess, secret], symmetric
    solved = 4 * 5

    def choose(candidates):
        if len(candidates) == 1:
            return candidates[0]
        offsets = answer[:, candidates] + 25 * np.arange(n)[:, None]
        worst = np.bincount(offsets.ravel(), minlength=n * 25).reshape(n, 25).max(1)
        best = np.flatnonzero(worst == worst.min())
        consistent = np.intersect1d(best, candidates)  # Knuth: prefer a possible code, then the lowest
        return consistent[0] if len(consistent) else best[0]

    def play(candidates, guess, depth):
        total, deepest = 0, 0
        answers = answer[guess, candidates]
        for value in np.unique(answers):
            part = candidates[answers == value]
            if value == solved:
                total, deepest = total + depth, max(deepest, depth)
            else:
                sub_total, sub_deepest = play(part, choose(part), depth + 1)
                total, deepest = total + sub_total, max(deepest, sub_deepest)
        return total, deepest

    first = codes.index("0011")  # Knuth's 1122
    total, deepest = play(np.arange(n), first, 1)
    assert deepest <= 5
    assert total == 5801


def test_feedback_shapes_exclude_p_minus_1_and_1():
    assert len(list(feedback_shapes(4))) == 14
    assert (3, 1) not in set(feedback_shapes(4))
    assert (2, 1) not in set(feedback_shapes(3))
    assert set(feedback_shapes(2)) == {(0, 0), (0, 1), (0, 2), (1, 0), (2, 0)}


# --- the commitment -------------------------------------------------------------------------------------
def test_set_code_commits_with_the_mm1_formula_and_shows_no_code():
    match = mm()
    events = match.ok("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT})
    assert events == [
        {"type": "secret_committed", "round": 1, "attempt": 1, "commitment": sha("m1", 1, 1, [0, 1, 2, 3], SALT)}
    ]
    expected = hashlib.sha256(b"MM1|m1|1|1|0,1,2,3|" + SALT.encode()).hexdigest()
    assert events[0]["commitment"] == expected
    assert match.view["commitment"] == expected
    raw = orjson.dumps(match.steps[-1].result)
    assert b"[0,1,2,3]" not in raw and b"0123" not in raw and SALT.encode() not in raw


@pytest.mark.parametrize("salt", ["0" * 16, "a" * 128, "ABCDEF0123456789"])
def test_salts_of_16_to_128_hex_characters_are_accepted(salt):
    match = mm()
    events = match.ok("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": salt})
    assert events[0]["commitment"] == sha("m1", 1, 1, [0, 1, 2, 3], salt)


@pytest.mark.parametrize(
    "salt,words",
    [
        ("0" * 15, "not 15 characters"),
        ("a" * 129, "not 129 characters"),
        ("0123456789abcdeg", "must be hex"),
        ("", "not 0 characters"),
    ],
)
def test_bad_salts_are_illegal(salt, words):
    match = mm()
    message = match.rejected("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": salt}, "illegal")
    assert "salt" in message and words in message


# --- code validity ----------------------------------------------------------------------------------------
INVALID_CODES = [  # options, code, what a guess's rejection says, what a secret's says
    ({}, [0, 1, 2], "must have 4 pegs, not 3", "must have 4 pegs, not 3"),
    ({}, [0, 1, 2, 3, 4], "must have 4 pegs, not 5", "must have 4 pegs, not 5"),
    ({}, [0, 1, 2, 6], "peg 4 is colour 6, but colours are 0 to 5", "has a peg outside the colours 0 to 5"),
    ({}, [-1, 1, 2, 3], "peg 1 is colour -1", "has a peg outside the colours 0 to 5"),
    ({"repeats": False}, [0, 1, 1, 3], "colour 1 appears 2 times, but repeats are off", "repeats a colour"),
    (
        {"max_distinct": 2},
        [0, 1, 2, 2],
        "uses 3 distinct colours, but at most 2 are allowed (max_distinct)",
        "uses more than the 2 distinct colours allowed (max_distinct)",
    ),
]


@pytest.mark.parametrize("options,code,guess_words,secret_words", INVALID_CODES)
def test_an_invalid_guess_is_illegal_and_the_message_says_which_peg(options, code, guess_words, secret_words):
    match = mm(options)
    match.ok(
        "alice",
        {"type": "set_code", "code": [0, 1, 2, 3] if not options.get("max_distinct") else [0, 1, 1, 0], "salt": SALT},
    )
    message = match.rejected("bob", {"type": "guess", "code": code}, "illegal")
    assert message.startswith("the guess") and guess_words in message


@pytest.mark.parametrize("options,code,guess_words,secret_words", INVALID_CODES)
def test_an_invalid_secret_is_illegal_and_the_public_message_shows_no_peg_of_it(
    options, code, guess_words, secret_words
):
    for kind, match in (("set_code", mm(options)), ("reveal", _at_reveal(options))):
        message = match.rejected("alice", {"type": kind, "code": code, "salt": SALT}, "illegal")
        assert secret_words in message, message
        assert not any(f"colour {c}" in message or f"peg {n}" in message for n, c in enumerate(code, start=1)), message


def _at_reveal(options) -> Match:
    match = mm({**options, "feedback": "manual", "max_rows": 1})
    match.ok("alice", {"type": "commit", "commitment": "ab" * 32})
    match.ok("bob", {"type": "guess", "code": [0, 1, 1, 0] if options.get("max_distinct") else [0, 1, 2, 3]})
    match.ok("alice", {"type": "feedback", "black": 0, "white": 0})
    return match


def test_max_distinct_lets_a_code_use_fewer_colours_and_repeats_them():
    match = mm({"max_distinct": 2})
    match.ok("alice", {"type": "set_code", "code": [4, 4, 1, 4], "salt": SALT})
    events = match.ok("bob", {"type": "guess", "code": [4, 1, 1, 4]})
    assert events[1]["black"] == 3 and events[1]["white"] == 0


@pytest.mark.parametrize(
    "action",
    [
        {"type": "guess", "code": ["R", "G", "B", "Y"]},
        {"type": "guess", "code": [0, 1, 2, 3], "extra": 1},
        {"type": "guess", "code": [True, 1, 2, 3]},
        {"type": "guess"},
    ],
)
def test_wrongly_typed_actions_are_malformed(action):
    match = mm()
    match.ok("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT})
    match.rejected("bob", action, "malformed")


# --- whose turn -----------------------------------------------------------------------------------------
def test_the_codebreaker_cannot_set_the_code_or_guess_before_the_code():
    match = mm()
    assert match.view["to_move"] == [0] and match.view["codemaker"] == 0 and match.view["codebreaker"] == 1
    match.rejected("bob", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT}, "not_your_turn")
    match.rejected("bob", {"type": "guess", "code": [0, 1, 2, 3]}, "not_your_turn")


def test_the_codemaker_cannot_guess_nor_set_the_code_twice():
    match = mm()
    match.ok("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT})
    assert match.view["to_move"] == [1]
    match.rejected("alice", {"type": "guess", "code": [0, 1, 2, 3]}, "not_your_turn")
    match.rejected("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT}, "not_your_turn")


def test_hot_seat_guess_before_code_and_second_set_code_are_illegal():
    match = mm(seats=("alice", "alice"))
    message = match.rejected("alice", {"type": "guess", "code": [0, 1, 2, 3]}, "illegal")
    assert "guess is the codebreaker's action" in message and "seat 0 is the codemaker" in message
    match.ok("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT})
    message = match.rejected("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT}, "illegal")
    assert "set_code is the codemaker's action" in message


@pytest.mark.parametrize(
    "action,words",
    [
        ({"type": "commit", "commitment": "a" * 64}, "feedback 'auto'"),
        ({"type": "feedback", "black": 0, "white": 0}, "only with feedback 'manual'"),
        ({"type": "reveal", "code": [0, 1, 2, 3], "salt": SALT}, "only with feedback 'manual'"),
    ],
)
def test_manual_actions_are_illegal_in_auto_mode(action, words):
    match = mm()
    assert words in match.rejected("alice", action, "illegal")


def test_set_code_is_illegal_in_manual_mode():
    match = mm({"feedback": "manual"})
    message = match.rejected("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT}, "illegal")
    assert "feedback 'manual'" in message and "commit" in message


# --- auto rounds and scoring ---------------------------------------------------------------------------
def test_found_on_row_k_scores_k_and_the_roles_swap():
    match = mm()
    last = play_auto_round(match, "alice", "bob", [0, 1, 2, 3], [[5, 5, 5, 5], [0, 0, 1, 1], [0, 1, 2, 3]])
    assert [e["type"] for e in last] == [
        "guessed",
        "feedback_given",
        "secret_revealed",
        "round_scored",
        "round_started",
    ]
    assert last[1] == {"type": "feedback_given", "round": 1, "attempt": 1, "row": 3, "black": 4, "white": 0}
    assert last[2] == {"type": "secret_revealed", "round": 1, "attempt": 1, "code": [0, 1, 2, 3], "salt": SALT}
    assert last[3] == {"type": "round_scored", "round": 1, "breaker": 1, "points": 3}
    assert last[4] == {"type": "round_started", "round": 2, "attempt": 1, "codemaker": 1, "codebreaker": 0}
    view = match.view
    assert view["totals"] == [0, 3] and view["round"] == 2 and view["codemaker"] == 1 and view["to_move"] == [1]
    assert view["rows"] == [] and view["commitment"] is None
    assert view["tries"] == [
        {
            "round": 1,
            "attempt": 1,
            "codemaker": 0,
            "commitment": sha("m1", 1, 1, [0, 1, 2, 3], SALT),
            "code": "0123",
            "salt": SALT,
            "points": 3,
        }
    ]
    match.rejected("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT}, "not_your_turn")
    match.ok("bob", {"type": "set_code", "code": [1, 1, 1, 1], "salt": SALT})
    assert match.view["to_move"] == [0]


def test_found_on_the_first_row_scores_1():
    match = mm()
    last = play_auto_round(match, "alice", "bob", [2, 2, 4, 4], [[2, 2, 4, 4]])
    assert last[3]["points"] == 1


def test_unsolved_after_12_rows_scores_14():
    match = mm()
    last = play_auto_round(match, "alice", "bob", [0, 1, 2, 3], [[5, 5, 5, 5]] * 12)
    assert last[1]["row"] == 12
    assert last[3] == {"type": "round_scored", "round": 1, "breaker": 1, "points": 14}
    assert last[2]["code"] == [0, 1, 2, 3]


def test_unsolved_scores_max_rows_plus_unsolved_penalty():
    match = mm({"max_rows": 3, "unsolved_penalty": 5})
    last = play_auto_round(match, "alice", "bob", [0, 1, 2, 3], [[5, 5, 5, 5]] * 3)
    assert last[3]["points"] == 8


def test_a_round_ends_on_the_solving_row_even_on_the_last_row():
    match = mm({"max_rows": 2})
    last = play_auto_round(match, "alice", "bob", [0, 1, 2, 3], [[5, 5, 5, 5], [0, 1, 2, 3]])
    assert last[3]["points"] == 2


def test_lowest_total_wins_with_scores_per_seat():
    match = mm()
    play_auto_round(match, "alice", "bob", [0, 1, 2, 3], [[5, 5, 5, 5], [0, 1, 2, 3]])  # bob 2 points
    last = play_auto_round(match, "bob", "alice", [3, 3, 3, 3], [[0, 0, 0, 0], [1, 1, 1, 1], [3, 3, 3, 3]])  # alice 3
    assert last[-2] == {"type": "round_scored", "round": 2, "breaker": 0, "points": 3}
    assert last[-1]["type"] == "match_ended" and last[-1]["winner"] == 1 and last[-1]["reason"] == "lowest_total"
    assert last[-1]["scores"] == [3, 2]
    assert match.view["outcome"] == {"winner": 1, "reason": "lowest_total", "scores": [3, 2]}
    assert match.view["to_move"] == [] and match.steps[-1].outcome["outcome"]["scores"] == [3, 2]
    assert not events_of(match, "round_started")[1:]  # no round 3
    match.rejected("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT}, "match_over")


def test_equal_totals_are_a_draw():
    match = mm()
    play_auto_round(match, "alice", "bob", [0, 1, 2, 3], [[5, 5, 5, 5], [0, 1, 2, 3]])
    last = play_auto_round(match, "bob", "alice", [3, 3, 3, 3], [[0, 0, 0, 0], [3, 3, 3, 3]])
    assert last[-1]["type"] == "match_ended"
    assert match.view["outcome"] == {"winner": None, "reason": "draw", "scores": [2, 2]}


def test_four_rounds_alternate_codemakers_and_sum_points():
    match = mm({"rounds": 4, "max_rows": 1, "unsolved_penalty": 0})
    makers = []
    for round_ in range(1, 5):
        maker, breaker = ("alice", "bob") if round_ % 2 else ("bob", "alice")
        makers.append(match.view["codemaker"])
        play_auto_round(match, maker, breaker, [0, 1, 2, 3], [[0, 1, 2, 3] if round_ == 1 else [5, 5, 5, 5]])
    assert makers == [0, 1, 0, 1]
    assert [e["points"] for e in events_of(match, "round_scored")] == [1, 1, 1, 1]
    assert match.view["outcome"] == {"winner": None, "reason": "draw", "scores": [2, 2]}


def test_resign_at_any_time_lets_the_other_seat_win():
    match = mm()
    match.ok("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT})
    events = match.ok("alice", {"type": "resign"})
    assert events[-1]["winner"] == 1 and events[-1]["reason"] == "resign"


# --- manual mode ------------------------------------------------------------------------------------------
def manual(options=None, seats=("alice", "bob")) -> Match:
    return mm({"feedback": "manual", **(options or {})}, seats=seats)


def test_manual_round_commit_guess_feedback_reveal():
    match = manual()
    secret = [0, 1, 2, 3]
    commitment = sha("m1", 1, 1, secret, SALT)
    assert match.ok("alice", {"type": "commit", "commitment": commitment.upper()}) == [
        {"type": "secret_committed", "round": 1, "attempt": 1, "commitment": commitment}
    ]
    assert match.ok("bob", {"type": "guess", "code": [0, 0, 1, 1]}) == [
        {"type": "guessed", "round": 1, "attempt": 1, "row": 1, "code": [0, 0, 1, 1]}
    ]
    assert match.view["to_move"] == [0] and match.view["rows"] == [["0011", None, None]]
    match.rejected("bob", {"type": "guess", "code": [0, 0, 1, 1]}, "not_your_turn")
    assert match.ok("alice", {"type": "feedback", "black": 1, "white": 1}) == [
        {"type": "feedback_given", "round": 1, "attempt": 1, "row": 1, "black": 1, "white": 1}
    ]
    match.ok("bob", {"type": "guess", "code": [0, 1, 2, 3]})
    match.ok("alice", {"type": "feedback", "black": 4, "white": 0})
    assert match.view["phase"] == "reveal" and match.view["to_move"] == [0]
    assert "no feedback now" in match.rejected("alice", {"type": "feedback", "black": 4, "white": 0}, "illegal")
    events = match.ok("alice", {"type": "reveal", "code": secret, "salt": SALT})
    assert events == [
        {"type": "secret_revealed", "round": 1, "attempt": 1, "code": secret, "salt": SALT},
        {"type": "round_scored", "round": 1, "breaker": 1, "points": 2},
        {"type": "round_started", "round": 2, "attempt": 1, "codemaker": 1, "codebreaker": 0},
    ]
    assert match.view["totals"] == [0, 2] and match.view["penalties"] == [0, 0]


@pytest.mark.parametrize(
    "black,white,words",
    [
        (-1, 0, "must be >= 0"),
        (0, -1, "must be >= 0"),
        (3, 2, "black + white = 5 is more than the 4 pegs"),
        (0, 5, "is more than the 4 pegs"),
        (3, 1, "black 3, white 1 cannot happen"),
    ],
)
def test_impossible_feedback_shapes_are_illegal(black, white, words):
    match = manual()
    match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, 1, [0, 1, 2, 3], SALT)})
    match.ok("bob", {"type": "guess", "code": [0, 1, 2, 4]})
    assert words in match.rejected("alice", {"type": "feedback", "black": black, "white": white}, "illegal")


def test_p_minus_1_and_1_is_illegal_for_3_pegs_too():
    match = manual({"pegs": 3})
    match.ok("alice", {"type": "commit", "commitment": "ab" * 32})
    match.ok("bob", {"type": "guess", "code": [0, 1, 2]})
    assert "black 2, white 1" in match.rejected("alice", {"type": "feedback", "black": 2, "white": 1}, "illegal")
    match.ok("alice", {"type": "feedback", "black": 0, "white": 3})


@pytest.mark.parametrize(
    "commitment,words", [("a" * 63, "got 63 characters"), ("g" * 64, "not all hex"), ("a" * 65, "got 65 characters")]
)
def test_commitments_must_be_64_hex(commitment, words):
    match = manual()
    message = match.rejected("alice", {"type": "commit", "commitment": commitment}, "illegal")
    assert "64 hex" in message and words in message


def test_reveal_when_not_due_is_refused():
    match = manual()
    assert "no reveal due" in match.rejected("alice", {"type": "reveal", "code": [0, 1, 2, 3], "salt": SALT}, "illegal")
    match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, 1, [0, 1, 2, 3], SALT)})
    match.rejected("alice", {"type": "reveal", "code": [0, 1, 2, 3], "salt": SALT}, "not_your_turn")
    match.ok("bob", {"type": "guess", "code": [0, 1, 2, 4]})
    message = match.rejected("alice", {"type": "reveal", "code": [0, 1, 2, 3], "salt": SALT}, "illegal")
    assert "no reveal due" in message and "black == 4" in message and "last row (12)" in message
    match.ok("alice", {"type": "feedback", "black": 3, "white": 0})
    assert "codemaker's action" in match.rejected(
        "bob", {"type": "reveal", "code": [0, 1, 2, 3], "salt": SALT}, "illegal"
    )


def test_reveal_is_due_after_the_last_rows_feedback_and_scores_unsolved():
    match = manual({"max_rows": 2})
    match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, 1, [0, 1, 2, 3], SALT)})
    for _ in range(2):
        match.ok("bob", {"type": "guess", "code": [5, 5, 5, 5]})
        match.ok("alice", {"type": "feedback", "black": 0, "white": 0})
    assert match.view["phase"] == "reveal"
    match.rejected("bob", {"type": "guess", "code": [0, 1, 2, 3]}, "not_your_turn")
    events = match.ok("alice", {"type": "reveal", "code": [0, 1, 2, 3], "salt": SALT})
    assert events[1] == {"type": "round_scored", "round": 1, "breaker": 1, "points": 4}


def test_reveal_of_an_invalid_code_is_illegal():
    match = manual({"max_rows": 1})
    match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, 1, [0, 1, 2], SALT)})
    match.ok("bob", {"type": "guess", "code": [5, 5, 5, 5]})
    match.ok("alice", {"type": "feedback", "black": 0, "white": 0})
    assert "must have 4 pegs" in match.rejected("alice", {"type": "reveal", "code": [0, 1, 2], "salt": SALT}, "illegal")
    assert "salt" in match.rejected("alice", {"type": "reveal", "code": [0, 1, 2, 3], "salt": "xyz"}, "illegal")


def test_bad_commitment_costs_the_codemaker_3_and_replays_the_round_with_attempt_2():
    match = manual()
    match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, 1, [0, 1, 2, 3], SALT)})
    match.ok("bob", {"type": "guess", "code": [0, 1, 2, 3]})
    match.ok("alice", {"type": "feedback", "black": 4, "white": 0})
    events = match.ok("alice", {"type": "reveal", "code": [0, 1, 2, 3], "salt": SALT2})
    assert events == [
        {
            "type": "indication_error",
            "round": 1,
            "attempt": 1,
            "rows": [],
            "reason": "bad_commitment",
            "codemaker": 0,
            "penalty": 3,
            "code": [0, 1, 2, 3],
            "salt": SALT2,
        },
        {"type": "round_started", "round": 1, "attempt": 2, "codemaker": 0, "codebreaker": 1},
    ]
    view = match.view
    assert view["totals"] == [3, 0] and view["penalties"] == [3, 0]  # the solved row scores nothing
    assert view["round"] == 1 and view["attempt"] == 2 and view["rows"] == [] and view["to_move"] == [0]
    assert view["tries"][0]["error"] == "bad_commitment"
    # Same roles, from step 1; the commitment now binds attempt 2.
    match.rejected("bob", {"type": "guess", "code": [0, 1, 2, 3]}, "not_your_turn")
    events = match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, 2, [4, 4, 4, 4], SALT)})
    assert events[0]["attempt"] == 2
    match.ok("bob", {"type": "guess", "code": [4, 4, 4, 4]})
    match.ok("alice", {"type": "feedback", "black": 4, "white": 0})
    events = match.ok("alice", {"type": "reveal", "code": [4, 4, 4, 4], "salt": SALT})
    assert events[0] == {"type": "secret_revealed", "round": 1, "attempt": 2, "code": [4, 4, 4, 4], "salt": SALT}
    assert events[1] == {"type": "round_scored", "round": 1, "breaker": 1, "points": 1}
    assert events[2] == {"type": "round_started", "round": 2, "attempt": 1, "codemaker": 1, "codebreaker": 0}
    assert match.view["totals"] == [3, 1]


def test_the_attempt_1_commitment_does_not_open_at_attempt_2():
    match = manual({"max_rows": 1})
    for attempt in (1, 2):
        match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, 1, [0, 1, 2, 3], SALT)})
        match.ok("bob", {"type": "guess", "code": [5, 5, 5, 5]})
        match.ok("alice", {"type": "feedback", "black": 0, "white": 0 if attempt == 2 else 1})
        events = match.ok("alice", {"type": "reveal", "code": [0, 1, 2, 3], "salt": SALT})
        assert events[0]["type"] == "indication_error"
        assert events[0]["reason"] == ("wrong_feedback" if attempt == 1 else "bad_commitment")
    assert match.view["totals"] == [6, 0] and match.view["attempt"] == 3


def test_the_last_allowed_try_ending_in_an_indication_error_loses_the_match_for_the_codemaker():
    match = manual({"max_rows": 1})
    for attempt in range(1, MAX_ATTEMPTS + 1):
        match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, attempt, [0, 1, 2, 3], SALT)})
        match.ok("bob", {"type": "guess", "code": [5, 5, 5, 5]})
        match.ok("alice", {"type": "feedback", "black": 1, "white": 0})  # a lie every time
        events = match.ok("alice", {"type": "reveal", "code": [0, 1, 2, 3], "salt": SALT})
        assert events[0]["type"] == "indication_error" and events[0]["attempt"] == attempt
    assert events[1] == {"type": "round_forfeited", "round": 1, "codemaker": 0, "attempts": MAX_ATTEMPTS}
    assert events[2]["type"] == "match_ended" and events[2]["winner"] == 1
    assert match.view["outcome"] == {"winner": 1, "reason": "indication_errors", "scores": [3 * MAX_ATTEMPTS, 0]}
    match.rejected("alice", {"type": "commit", "commitment": "ab" * 32}, "match_over")


def test_wrong_feedback_lists_the_wrong_rows_and_voids_the_try():
    match = manual()
    secret = pegs("RRGG")
    match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, 1, secret, SALT)})
    answers = [("RGRG", (2, 1)), ("RRRR", (2, 0)), ("YKGY", (1, 0)), ("GGRR", (4, 0))]  # 1 and 4 are wrong
    for guess, (black, white) in answers:
        match.ok("bob", {"type": "guess", "code": pegs(guess)})
        match.ok("alice", {"type": "feedback", "black": black, "white": white})
    assert match.view["phase"] == "reveal"
    events = match.ok("alice", {"type": "reveal", "code": secret, "salt": SALT})
    assert events[0] == {
        "type": "indication_error",
        "round": 1,
        "attempt": 1,
        "rows": [1, 4],
        "reason": "wrong_feedback",
        "codemaker": 0,
        "penalty": 3,
        "code": secret,
        "salt": SALT,
    }
    assert events[1]["attempt"] == 2 and events[1]["codemaker"] == 0
    assert match.view["totals"] == [3, 0]
    assert match.view["tries"][0]["wrong_rows"] == [1, 4]


def test_indication_error_in_round_2_penalises_seat_1_and_can_decide_the_match():
    match = manual({"max_rows": 1})
    match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, 1, [0, 1, 2, 3], SALT)})
    match.ok("bob", {"type": "guess", "code": [0, 1, 2, 3]})
    match.ok("alice", {"type": "feedback", "black": 4, "white": 0})
    match.ok("alice", {"type": "reveal", "code": [0, 1, 2, 3], "salt": SALT})  # bob: 1 point
    match.ok("bob", {"type": "commit", "commitment": sha("m1", 2, 1, [5, 5, 5, 5], SALT)})
    match.ok("alice", {"type": "guess", "code": [5, 5, 5, 5]})
    match.ok("bob", {"type": "feedback", "black": 0, "white": 0})  # a lie
    events = match.ok("bob", {"type": "reveal", "code": [5, 5, 5, 5], "salt": SALT})
    assert events[0]["codemaker"] == 1 and events[0]["rows"] == [1]
    assert match.view["totals"] == [0, 4] and match.view["round"] == 2 and match.view["attempt"] == 2
    match.ok("bob", {"type": "commit", "commitment": sha("m1", 2, 2, [5, 5, 5, 5], SALT)})
    match.ok("alice", {"type": "guess", "code": [5, 5, 5, 5]})
    match.ok("bob", {"type": "feedback", "black": 4, "white": 0})
    events = match.ok("bob", {"type": "reveal", "code": [5, 5, 5, 5], "salt": SALT})
    assert events[-1]["type"] == "match_ended"
    assert match.view["outcome"] == {"winner": 0, "reason": "lowest_total", "scores": [1, 4]}


def test_manual_mode_never_needs_the_code_before_the_reveal():
    match = manual()
    match.ok("alice", {"type": "commit", "commitment": sha("m1", 1, 1, [0, 1, 2, 3], SALT)})
    assert match.state.board.secret is None and match.state.board.salt is None


# --- views and secrets -----------------------------------------------------------------------------------
def test_only_the_codemakers_own_view_shows_the_running_secret():
    match = mm()
    match.ok("alice", {"type": "set_code", "code": [0, 1, 2, 3], "salt": SALT})
    board = match.state.board
    public = orjson.dumps(GAME.view(board, None))
    breaker = orjson.dumps(GAME.view(board, 1))
    for raw in (public, breaker, orjson.dumps(match.view)):
        assert b"0123" not in raw and b"[0,1,2,3]" not in raw and SALT.encode() not in raw
    assert GAME.view(board, 0)["secret"] == {"code": "0123", "salt": SALT}
    assert set(GAME.view(board, None)) >= {
        "round",
        "attempt",
        "codemaker",
        "codebreaker",
        "rows",
        "commitment",
        "tries",
        "totals",
        "penalties",
    }


def test_render_shows_rows_as_colour_letters_and_hides_the_secret():
    match = mm()
    match.ok("alice", {"type": "set_code", "code": pegs("RYGB"), "salt": SALT})
    match.ok("bob", {"type": "guess", "code": pegs("RRGG")})
    text = GAME.render(match.state.board)
    assert "R R G G" in text and "black 2, white 0" in text and "? ? ? ?" in text
    assert "R Y G B" not in text
    wide = mm({"colors": 8})
    wide.ok("alice", {"type": "set_code", "code": [6, 7, 0, 5], "salt": SALT})
    wide.ok("bob", {"type": "guess", "code": [7, 6, 5, 0]})
    assert "7 6 W R" in GAME.render(wide.state.board)


# --- listings and bots -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "key",
    [
        (4, 6, True, None),
        (3, 6, True, None),
        (4, 6, False, None),
        (5, 8, True, 2),
        (6, 4, True, 3),
        (2, 2, True, 1),
        (4, 4, False, 4),
        (6, 5, True, 1),
        (5, 6, True, 3),
    ],
)
def test_code_space_is_counted_and_enumerated_exactly(key):
    pegs_, colors, repeats, distinct = key
    brute = [
        "".join(map(str, c))
        for c in product(range(colors), repeat=pegs_)
        if (repeats or len(set(c)) == pegs_) and (distinct is None or len(set(c)) <= distinct)
    ]
    assert list(iter_codes(key)) == brute
    assert space_size(key) == len(brute)


def test_legal_actions_list_every_valid_guess_and_set_code_with_one_salt():
    match = mm({"repeats": False})
    board = match.state.board
    set_codes = list(GAME.legal_actions(board, 0))
    assert len(set_codes) == 360 and {a["salt"] for a in set_codes} == {listing_salt(board)}
    assert list(GAME.legal_actions(board, 1)) == []
    match.ok("alice", set_codes[17])
    guesses = list(GAME.legal_actions(match.state.board, 1))
    assert len(guesses) == 360 and guesses[0] == {"type": "guess", "code": [0, 1, 2, 3]}


def test_legal_feedback_lists_the_14_shapes_for_4_pegs():
    match = manual()
    match.ok("alice", {"type": "commit", "commitment": "cd" * 32})
    match.ok("bob", {"type": "guess", "code": [0, 1, 2, 3]})
    listed = list(GAME.legal_actions(match.state.board, 0))
    assert len(listed) == 14 and {"type": "feedback", "black": 3, "white": 1} not in listed


@pytest.mark.parametrize("key", [(8, 10, True, None), (8, 10, False, None), (8, 10, True, 2), (7, 9, True, 1)])
def test_random_codes_are_valid_without_enumerating(key):
    from games.mastermind import Settings

    settings = Settings(
        pegs=key[0],
        colors=key[1],
        repeats=key[2],
        max_distinct=key[3],
        max_rows=12,
        rounds=2,
        feedback="auto",
        unsolved_penalty=2,
    )
    rng = random.Random(5)
    for _ in range(300):
        code = random_code(key, rng)
        assert code_problem(settings, [int(c) for c in code], "code") is None


def test_manual_bots_recover_their_own_code_and_play_to_the_end():
    from tests.support import random_playout

    played = random_playout("mastermind", {"feedback": "manual", "pegs": 8, "colors": 10, "max_rows": 4}, seed=3)
    assert played.state.status == "over"
    assert events_of(played, "secret_revealed")


def test_few_distinct_colours_in_a_large_space_are_enumerated_in_order():
    """8 pegs of 9 colours, one distinct: 9 codes of 43 million (the gateway's CPU for listing them
    is measured in tests/e2e/test_gateway_door.py)."""
    assert list(iter_codes((8, 9, True, 1))) == [str(c) * 8 for c in range(9)]
    assert list(islice(iter_codes((8, 10, True, 2)), 3)) == ["00000000", "00000001", "00000002"]
