"""Build the bots' tables in games/bots/data/ (deterministic; run after changing a strategy):

    python -m games.bots.build_tables [mastermind] [mind_ninja]

- mastermind-openings.json: per variant and strategy, the first guess and the second guess
  after each answer to it, chosen by the strategy over every valid code against every
  consistent code (exact) where that is at most `EXACT_WORK` feedbacks per answer, else on
  samples with a larger work budget than a move has.
- mind-ninja-balance.json: per board side, the builder's win rate in random playouts for
  each menu pattern, free-move count and chooser role (see mind_ninja_prelude).
"""

from __future__ import annotations

import random
import sys
import time

from games.mastermind import all_codes, feedback

from . import mind_ninja_prelude, tables
from .mastermind_breaker import MEASURES, OPENINGS, best_guess, first_guess, opening_id, search_guess
from .mastermind_space import Candidates, enumerable

MASTERMIND_VARIANTS = [(4, 6, True, None), (4, 6, False, None), (3, 6, True, None), (5, 8, True, None)]
EXACT_WORK = 3_000_000
SAMPLED_WORK = 600_000
MIND_NINJA_SIDES = range(3, 11)


def mastermind_opening(key, strategy: str) -> dict:
    first = first_guess(key, strategy)
    second = {}
    by_answer: dict[tuple[int, int], list[str]] = {}
    for code in all_codes(key):
        by_answer.setdefault(feedback(code, first), []).append(code)
    everything = list(all_codes(key))
    for (black, white), codes in sorted(by_answer.items()):
        if black == key[0]:
            continue
        codes_t = tuple(codes)
        if len(codes_t) <= 2:
            second[f"{black},{white}"] = codes_t[0]
        elif len(everything) * len(codes_t) <= EXACT_WORK:
            second[f"{black},{white}"] = best_guess(strategy, everything, codes_t, frozenset(codes_t))
        else:
            rng = random.Random(f"opening|{key}|{strategy}|{black},{white}")
            second[f"{black},{white}"] = search_guess(
                key, Candidates(codes_t, True), strategy, rng, SAMPLED_WORK, SAMPLED_WORK
            )
    return {"first": first, "second": second}


def build_mastermind() -> None:
    table = {}
    for key in MASTERMIND_VARIANTS:
        assert enumerable(key)
        for strategy in MEASURES:
            started = time.perf_counter()
            table[opening_id(key, strategy)] = mastermind_opening(key, strategy)
            print(f"mastermind {opening_id(key, strategy)}: {time.perf_counter() - started:.1f}s", flush=True)
    print("wrote", tables.save(OPENINGS, table))


def build_mind_ninja() -> None:
    table = {}
    for side in MIND_NINJA_SIDES:
        started = time.perf_counter()
        table[str(side)] = mind_ninja_prelude.build_side(side, mind_ninja_prelude.TABLE_PLAYOUTS)
        print(f"mind ninja side {side}: {time.perf_counter() - started:.1f}s", flush=True)
    print("wrote", tables.save(mind_ninja_prelude.TABLE, table))


if __name__ == "__main__":
    wanted = sys.argv[1:] or ["mastermind", "mind_ninja"]
    if "mastermind" in wanted:
        build_mastermind()
    if "mind_ninja" in wanted:
        build_mind_ninja()
