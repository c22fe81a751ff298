"""Mastermind codebreaker strategies: the published openings, every secret of small variants
solved, the opening table equal to what the code builds, sampling in huge spaces, and the
decision time."""

from __future__ import annotations

import random
import time

import pytest

from games.bots import tables
from games.bots.build_tables import mastermind_opening
from games.bots.mastermind_breaker import (
    MEASURES,
    OPENINGS,
    STRATEGIES,
    choose_guess,
    first_guess,
    opening_id,
    partition,
)
from games.bots.mastermind_space import answers_all, canonical_guesses, sample_consistent
from games.mastermind import Settings, all_codes, code_problem, feedback, random_code

STANDARD = (4, 6, True, None)


def solve(key, secret: str, strategy: str, seed: int = 0, limit: int = 30) -> int:
    """Guesses `strategy` needs to find `secret` (checking each guess is a valid code)."""
    rows = ()
    rng = random.Random(seed)
    settings = Settings(
        pegs=key[0],
        colors=key[1],
        repeats=key[2],
        max_distinct=key[3],
        max_rows=50,
        rounds=2,
        feedback="auto",
        unsolved_penalty=2,
    )
    for n in range(1, limit + 1):
        guess = choose_guess(key, rows, strategy, rng)
        assert code_problem(settings, [int(c) for c in guess], "guess") is None, guess
        black, white = feedback(secret, guess)
        if black == key[0]:
            return n
        rows += ((guess, black, white),)
    raise AssertionError(f"{strategy} did not find {secret} in {limit} guesses")


def test_published_openings_on_4_pegs_6_colours():
    assert first_guess(STANDARD, "knuth") == "0011"  # Knuth's 1122
    assert first_guess(STANDARD, "most-parts") == "0012"  # 1123
    assert first_guess(STANDARD, "entropy") == "0123"  # 1234
    assert max(partition("0011", all_codes(STANDARD)).values()) == 256  # Knuth's worst case after 1122


def test_canonical_guesses_are_the_shapes_of_a_code():
    assert canonical_guesses(STANDARD) == ["0000", "0001", "0011", "0012", "0123"]
    assert canonical_guesses((4, 6, False, None)) == ["0123"]
    assert canonical_guesses((5, 8, True, 2)) == ["00000", "00001", "00011"]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("key", [(3, 4, True, None), (4, 5, False, None), (3, 5, True, 2), (2, 2, True, None)])
def test_every_secret_of_a_small_variant_is_found(strategy, key):
    worst = max(solve(key, secret, strategy) for secret in all_codes(key))
    assert worst <= 7


def test_knuth_never_needs_more_than_five_guesses_on_4x6():
    secrets = random.Random(7).sample(all_codes(STANDARD), 40)
    assert max(solve(STANDARD, s, "knuth") for s in secrets) <= 5


def test_most_parts_beats_knuth_which_beats_random_consistent_guesses():
    key = (3, 5, True, None)  # all 125 secrets (4x6 takes a minute: `plylog bot-eval mastermind`)
    totals = {s: sum(solve(key, code, s) for code in all_codes(key)) for s in ("most-parts", "knuth", "consistent")}
    assert totals["most-parts"] < totals["knuth"] < totals["consistent"]


@pytest.mark.parametrize("key", [(3, 6, True, None), (4, 6, False, None)])
@pytest.mark.parametrize("strategy", MEASURES)
def test_the_stored_opening_table_is_what_the_code_builds(key, strategy):
    assert tables.load(OPENINGS)[opening_id(key, strategy)] == mastermind_opening(key, strategy)


@pytest.mark.parametrize("key", [(8, 10, True, None), (6, 9, False, None), (7, 10, True, 3)])
def test_huge_spaces_are_sampled_consistently(key):
    rng = random.Random(str(key))
    secret = random_code(key, rng)
    rows = ()
    for _ in range(4):
        guess = random_code(key, rng)
        rows += ((guess, *feedback(secret, guess)),)
    found, _ = sample_consistent(key, rows, random.Random(1), 50)
    assert found and all(answers_all(code, rows) for code in found)
    started = time.perf_counter()
    guess = choose_guess(key, rows, "most-parts", random.Random(2))
    assert time.perf_counter() - started < 1.0  # 100 ms on an idle machine; generous under load
    assert len(guess) == key[0]


def test_a_contradictory_history_still_gets_a_valid_guess():
    rows = (("0123", 4, 0), ("0123", 0, 0))  # a lying manual codemaker
    guess = choose_guess(STANDARD, rows, "knuth", random.Random(0))
    assert len(guess) == 4 and set(guess) <= set("012345")


def test_guessing_is_deterministic_given_the_rng():
    rows = (("01234", 1, 2),)
    key = (5, 8, True, None)
    assert choose_guess(key, rows, "knuth", random.Random(5)) == choose_guess(key, rows, "knuth", random.Random(5))
