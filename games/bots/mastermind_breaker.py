"""Mastermind codebreaker strategies: pick the guess whose answers split the consistent
codes best, by one of the classic measures (Knuth 1977; Kooi 2005):

- `knuth`: minimise the largest part (worst case); ties: a consistent code, then the
  lexicographically smallest. 4×6: first guess 0011 (1122), 5,801 guesses over the 1,296 codes.
- `most-parts`: maximise the number of parts; the same ties. 4×6: 0012 (1123), 4.373 published.
- `entropy`: maximise the entropy of the answer; `expected-size`: minimise the expected part size.
- `consistent`: a uniformly random consistent code (the weak, fast baseline).

Cost: scoring a guess costs one `feedback` per consistent code. A move may spend `WORK`
feedback computations (about 70 ms here) when that scores every valid guess against every
consistent code; where it does not, guesses and consistent codes are sampled within
`SAMPLED_WORK` (with the rng, so a seed fixes the choice).
The first guess is chosen among shapes only (0011 stands for every code with two pairs); the
second comes from the opening table (tables built by `python -m games.bots.build_tables`),
computed exactly offline, and is computed like any other move where the table has no entry.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from functools import lru_cache, partial

from games.mastermind import all_codes, feedback, random_code, space_size

from . import tables
from .mastermind_space import Candidates, Key, Rows, canonical_guesses, consistent, enumerable

WORK = 100_000  # feedback computations per decision beyond the tables, for an exact search
SAMPLED_WORK = 40_000  # ... and where guesses must be sampled anyway (drawing them costs too)
FIRST_GUESS_SAMPLE = 1_500  # codes a first guess is scored against in spaces too large to list
MAX_SAMPLED_CONSISTENT = 100  # consistent codes drawn in spaces too large to list
MAX_SAMPLED_POOL = 300  # guesses scored in spaces too large to list (each new code costs its signature)
OPENINGS = "mastermind-openings"


def _entropy(parts: Counter) -> float:
    total = sum(parts.values())
    return -sum(n / total * math.log2(n / total) for n in parts.values())


# Each measure: larger is better.
MEASURES: dict[str, Callable[[Counter], float]] = {
    "knuth": lambda parts: -max(parts.values()),
    "most-parts": lambda parts: len(parts),
    "entropy": _entropy,
    "expected-size": lambda parts: -sum(n * n for n in parts.values()),
}
STRATEGIES = (*tuple(MEASURES), "consistent")


def partition(guess: str, codes: tuple[str, ...]) -> Counter:
    """How many of `codes` give each answer to `guess`."""
    return Counter(map(partial(feedback, guess), codes))


def best_guess(strategy: str, guesses: list[str], codes: tuple[str, ...], consistent_set: frozenset[str]) -> str:
    """The best of `guesses` (in their order on ties, after preferring consistent ones)."""
    measure = MEASURES[strategy]
    best, best_score = guesses[0], None
    for guess in guesses:
        score = (measure(partition(guess, codes)), guess in consistent_set)
        if best_score is None or score > best_score:
            best, best_score = guess, score
    return best


@lru_cache(maxsize=256)
def first_guess(key: Key, strategy: str) -> str:
    """The best opening among the code shapes, scored against every code (or a fixed sample)."""
    if strategy == "consistent":
        return canonical_guesses(key)[0]
    table = tables.load(OPENINGS).get(opening_id(key, strategy))
    if table:
        return table["first"]
    if enumerable(key):
        codes = all_codes(key)
    else:
        sampler = random.Random(f"first-guess|{key}")
        codes = tuple(random_code(key, sampler) for _ in range(FIRST_GUESS_SAMPLE))
    return best_guess(strategy, canonical_guesses(key), codes, frozenset())


def opening_id(key: Key, strategy: str) -> str:
    pegs, colors, repeats, max_distinct = key
    distinct = "" if max_distinct is None else f"-max{max_distinct}"
    return f"{pegs}x{colors}{'' if repeats else '-norepeat'}{distinct}|{strategy}"


def second_from_table(key: Key, strategy: str, rows: Rows) -> str | None:
    table = tables.load(OPENINGS).get(opening_id(key, strategy))
    if not table or len(rows) != 1 or rows[0][0] != table["first"]:
        return None
    return table["second"].get(f"{rows[0][1]},{rows[0][2]}")


def choose_guess(key: Key, rows: Rows, strategy: str, rng: random.Random, work: int = WORK) -> str:
    """The codebreaker's next guess after `rows` ((guess, black, white) so far)."""
    if not rows:
        return first_guess(key, strategy)
    tabled = second_from_table(key, strategy, rows)
    if tabled is not None:
        return tabled
    found = consistent(key, rows, rng, want=MAX_SAMPLED_CONSISTENT)
    if not found.codes:  # contradictory answers (a lying manual codemaker): any valid code
        return random_code(key, rng)
    if len(found.codes) <= 2 or strategy == "consistent":
        return found.codes[0] if strategy != "consistent" else rng.choice(found.codes)
    return search_guess(key, found, strategy, rng, work)


def search_guess(
    key: Key, found: Candidates, strategy: str, rng: random.Random, work: int, sampled_work: int = SAMPLED_WORK
) -> str:
    codes = found.codes
    if not (enumerable(key) and space_size(key) * len(codes) <= work):
        work = min(work, sampled_work)
    if len(codes) * 20 > work:  # keep room for at least 20 guesses
        codes = tuple(sorted(rng.sample(codes, work // 20)))
    guesses = guess_pool(key, found.codes, codes, rng, work // len(codes))
    return best_guess(strategy, guesses, codes, frozenset(found.codes))


def guess_pool(
    key: Key, consistent_codes: tuple[str, ...], scored: tuple[str, ...], rng: random.Random, size: int
) -> list[str]:
    """Every valid code when they fit in `size` (lexicographic, for Knuth's tie rule); else
    consistent codes (half at most) and random valid codes."""
    if enumerable(key) and space_size(key) <= size:
        return list(all_codes(key))
    if not enumerable(key):
        size = min(size, MAX_SAMPLED_POOL)
    pool = list(scored[: size // 2])
    if len(consistent_codes) > len(pool):
        pool = sorted(rng.sample(consistent_codes, min(len(consistent_codes), size // 2)))
    chosen = set(pool)
    attempts = 0
    while len(pool) < size and attempts < 4 * size:
        attempts += 1
        code = random_code(key, rng)
        if code not in chosen:
            chosen.add(code)
            pool.append(code)
    return sorted(pool)
