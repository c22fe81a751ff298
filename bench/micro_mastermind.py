"""Micro-benchmark of the Mastermind rules: prints one JSON object.

- fold: records/s of `games.fold.Replayer().feed` over the raw record bytes of random complete
  matches made with `tests.support.random_playout` (JSON in, validation, decide, evolve, view,
  result record out), per option set (auto and manual feedback), also with `encode` of each result.
  Every run folds all matches into a fresh Replayer; median and best of --runs (best is the
  better estimate on a shared, loaded machine).
- feedback: calls/s of `games.mastermind.feedback` over random 4x6 code pairs.

Run: PYTHONPATH=. python bench/micro_mastermind.py [--matches 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time

from games.fold import Replayer, encode
from games.mastermind import all_codes, feedback
from tests.support import random_playout

OPTION_SETS = {
    "auto 4x6": {},
    "manual 4x6": {"feedback": "manual"},
    "auto 3x6": {"pegs": 3},
    "auto 8x10": {"pegs": 8, "colors": 10},
}


def fold_rate(records: list[bytes], runs: int, with_encode: bool) -> dict[str, int]:
    rates = []
    for _ in range(runs):
        replayer = Replayer()
        started = time.perf_counter()
        if with_encode:
            for raw in records:
                encode(replayer.feed(raw).result)
        else:
            for raw in records:
                replayer.feed(raw)
        rates.append(len(records) / (time.perf_counter() - started))
    return {"median": round(statistics.median(rates)), "best": round(max(rates))}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)

    report: dict = {"python": sys.version.split()[0], "machine": platform.machine(), "fold": {}}
    for name, options in OPTION_SETS.items():
        records: list[bytes] = []
        for seed in range(args.matches):
            records.extend(random_playout("mastermind", options, seed, match_id=f"b{seed}").records)
        report["fold"][name] = {
            "options": options,
            "matches": args.matches,
            "records": len(records),
            "records_per_match": round(len(records) / args.matches, 1),
            "records_per_s": fold_rate(records, args.runs, with_encode=False),
            "records_per_s_with_encode": fold_rate(records, args.runs, with_encode=True),
        }

    codes = all_codes((4, 6, True, None))
    rng = random.Random(1)
    pairs = [(rng.choice(codes), rng.choice(codes)) for _ in range(100_000)]
    started = time.perf_counter()
    for secret, guess in pairs:
        feedback(secret, guess)
    report["feedback_calls_per_s"] = round(len(pairs) / (time.perf_counter() - started))
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
