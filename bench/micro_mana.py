"""Micro-benchmark of the Mana rules: prints one JSON object.

- `legal_actions`: full enumeration (moves with every bird square, and drops) in mid-game
  positions (plies 20–80 of random matches), calls/s and actions per call; also
  `random_action` and `has_action` calls/s.
- fold: records/s of `games.fold.Replayer().feed` over the raw record bytes of random
  matches generated with `tests.support.random_playout` (JSON in, validation, decide,
  evolve, view, result record out), and the same including `encode` of each result.

Rates use this process's CPU time (`time.process_time`), best of several rounds: on an idle
machine that equals wall time for this single-threaded code, on a shared one it is steadier.

Run: PYTHONPATH=. python bench/micro_mana.py [--matches 40] [--seconds 1.5] [--options '{"bird_blocks": false}']
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time

from games.fold import Replayer, encode
from games.mana import GAME
from tests.support import random_playout


def rate(fn, items, seconds: float, rounds: int = 3) -> float:
    """Calls per CPU second of fn over `items` (cycled) for about `seconds`; best of `rounds`."""
    best = 0.0
    for _ in range(rounds):
        calls = 0
        start = time.process_time()
        deadline = start + seconds / rounds
        while True:
            for item in items:
                fn(item)
            calls += len(items)
            now = time.process_time()
            if now >= deadline:
                break
        best = max(best, calls / (now - start))
    return best


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--matches", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--options", default="{}", help="Mana options as JSON")
    args = parser.parse_args(argv)
    options = json.loads(args.options)

    matches = [random_playout("mana", options, seed, match_id=f"b{seed}") for seed in range(args.matches)]
    positions = []
    for played in matches:
        for taken in played.steps:
            board = taken.state.board
            if taken.state.status == "active" and board.phase == "play" and 20 <= board.ply <= 80:
                positions.append(board)
    rng = random.Random(1)
    positions = rng.sample(positions, min(400, len(positions)))
    sizes = [sum(1 for _ in GAME.legal_actions(p, p.turn)) for p in positions]

    legal_rate = rate(lambda p: list(GAME.legal_actions(p, p.turn)), positions, args.seconds)
    random_rate = rate(lambda p: GAME.random_action(p, p.turn, rng), positions, args.seconds)
    has_rate = rate(GAME.has_action, positions, args.seconds)

    records = [raw for played in matches for raw in played.records]
    best_fold = best_encoded = 0.0
    for _ in range(5):
        replayer = Replayer()
        start = time.process_time()
        for raw in records:
            replayer.feed(raw)
        best_fold = max(best_fold, len(records) / (time.process_time() - start))
        replayer = Replayer()
        start = time.process_time()
        for raw in records:
            encode(replayer.feed(raw).result)
        best_encoded = max(best_encoded, len(records) / (time.process_time() - start))

    report = {
        "game": "mana",
        "options": options,
        "python": platform.python_version(),
        "timer": "process_time",
        "midgame_positions": len(positions),
        "legal_actions": {
            "calls_per_s": round(legal_rate),
            "mean_actions": round(sum(sizes) / len(sizes), 1),
            "max_actions": max(sizes),
        },
        "random_action_calls_per_s": round(random_rate),
        "has_action_calls_per_s": round(has_rate),
        "fold": {
            "matches": len(matches),
            "records": len(records),
            "mean_records_per_match": round(len(records) / len(matches), 1),
            "records_per_s": round(best_fold),
            "records_per_s_with_encode": round(best_encoded),
        },
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
