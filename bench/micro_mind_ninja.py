"""Micro-benchmark of Mind Ninja's incremental pattern judging: prints one JSON object.

For `havannah` (ring, bridge, fork: union-find aggregates + the holes count) on side 5 and
side 10: random mid-game positions (play phase, 15-45 % of the cells filled by random legal
placements that did not end the game), then the mean cost of

- `decide_evolve_us`: `decide` + `evolve` of one random legal placement (what the fold pays
  per placement besides JSON and the view), and
- `judge_us`: the judging alone: `add_stone` (board, union-find, holes, formed bits) + `judge`,

over placements that do not end the game (a winning placement also names the winning cells
with one O(board) scan, once per game: reported separately as `winning_decide_evolve_us`).
Goal: side 10 costs less than 1.5x side 5 (`ratio`).

Timings are the best of --rounds alternating measurements (the machine may be shared); medians too.

Run: PYTHONPATH=. python bench/micro_mind_ninja.py [--positions 300] [--rounds 7] [--pattern havannah]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from typing import Any

from games.mind_ninja import GAME, MindNinjaState
from games.mind_ninja_patterns import COLOUR_INDEX, add_stone, judge
from schemas.mind_ninja import Place


def start(side: int, pattern: dict[str, Any]) -> MindNinjaState:
    state = GAME.initial({"side": side}, "bench")
    state = GAME.apply(
        state,
        [
            {"type": "bidding_closed", "chooser": 0, "inventor": 1, "free_moves": 0},
            *GAME.decide(
                GAME.evolve(state, {"type": "bidding_closed", "chooser": 0, "inventor": 1, "free_moves": 0}),
                1,
                GAME.parse_action({"type": "choose_pattern", "pattern": pattern}),
                0,
            ),
            {"type": "setup_ended", "seat": 1},
            {"type": "role_chosen", "seat": 0, "role": "builder", "builder": 0, "blocker": 1},
        ],
    )
    assert state.phase == "play"
    return state


def safe_placement(state: MindNinjaState, rng: random.Random, winning: bool = False, tries: int = 60):
    """(seat, Place) of a random legal placement that does (not) end the game, or None."""
    seat = state.mover
    empty = [i for i, c in enumerate(state.board) if c == "."]
    colours = GAME._colours(state, seat)
    for _ in range(tries):
        cell = state.geometry.cells[rng.choice(empty)]
        action = Place(type="place", cell=cell, color=rng.choice(colours))
        after = GAME.apply(state, GAME.decide(state, seat, action, 0))
        if (after.phase == "over") == winning:
            return seat, action
    return None


def positions(side: int, pattern: dict[str, Any], count: int, seed: int) -> list[MindNinjaState]:
    rng = random.Random(seed)
    found: list[MindNinjaState] = []
    while len(found) < count:
        state = start(side, pattern)
        target = int(state.empty * rng.uniform(0.15, 0.45))
        placed = 0
        while placed < target:
            move = safe_placement(state, rng)
            if move is None:
                break
            state = GAME.apply(state, GAME.decide(state, move[0], move[1], 0))
            placed += 1
        if placed == target:
            found.append(state)
    return found


def rate(fn, items, seconds: float) -> float:
    """Mean seconds per call of fn over `items` (cycled) for about `seconds`."""
    calls = 0
    start_time = time.perf_counter()
    deadline = start_time + seconds
    while True:
        for item in items:
            fn(item)
        calls += len(items)
        now = time.perf_counter()
        if now >= deadline:
            return (now - start_time) / calls


def decide_evolve(item) -> None:
    state, seat, action = item
    for event in GAME.decide(state, seat, action, 0):
        GAME.evolve(state, event)


def judge_only(item) -> None:
    state, _seat, action = item
    geometry = state.geometry
    cell = geometry.index[action.cell]
    holes = list(state.holes)
    add_stone(
        state.compiled,
        geometry,
        state.board,
        state.parent,
        state.sizes,
        state.masks,
        holes,
        state.formed,
        cell,
        COLOUR_INDEX[action.color],
    )
    judge(state.compiled, state, state.empty - 1)


def samples(side: int, pattern: dict[str, Any], count: int) -> tuple[list, list, int]:
    """(quiet placements, winning placements, cells) from `count` random mid-game positions."""
    rng = random.Random(side)
    states = positions(side, pattern, count, seed=side)
    quiet, winning = [], []
    for state in states:
        move = safe_placement(state, rng)
        if move is not None:
            quiet.append((state, *move))
        move = safe_placement(state, rng, winning=True, tries=30)
        if move is not None:
            winning.append((state, *move))
    return quiet, winning, states[0].geometry.size


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--positions", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=0.25, help="per measurement; best of --rounds")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pattern", default="havannah", help="catalogue id or a pattern as JSON")
    args = parser.parse_args(argv)
    pattern = json.loads(args.pattern) if args.pattern.startswith("{") else {"id": args.pattern}
    sets = {side: samples(side, pattern, args.positions) for side in (5, 10)}
    timings: dict[int, dict[str, list[float]]] = {
        side: {"decide_evolve": [], "judge": [], "winning": []} for side in sets
    }
    # Rounds alternate the sides so that machine load hits both alike; the best round counts.
    for _ in range(args.rounds):
        for side, (quiet, winning, _cells) in sets.items():
            timings[side]["decide_evolve"].append(rate(decide_evolve, quiet, args.seconds))
            timings[side]["judge"].append(rate(judge_only, quiet, args.seconds))
            if winning:
                timings[side]["winning"].append(rate(decide_evolve, winning, args.seconds / 4))
    report: dict[str, Any] = {"benchmark": "mind_ninja judge per placement", "pattern": pattern}
    for side, (quiet, winning, cells) in sets.items():
        t = timings[side]
        entry: dict[str, Any] = {
            "cells": cells,
            "positions": len(quiet),
            "decide_evolve_us": round(min(t["decide_evolve"]) * 1e6, 2),
            "decide_evolve_median_us": round(statistics.median(t["decide_evolve"]) * 1e6, 2),
            "judge_us": round(min(t["judge"]) * 1e6, 2),
            "judge_median_us": round(statistics.median(t["judge"]) * 1e6, 2),
        }
        if winning:
            entry["winning_decide_evolve_us"] = round(min(t["winning"]) * 1e6, 2)
            entry["winning_positions"] = len(winning)
        report[f"side{side}"] = entry
    report["ratio_decide_evolve"] = round(report["side10"]["decide_evolve_us"] / report["side5"]["decide_evolve_us"], 3)
    report["ratio_judge"] = round(report["side10"]["judge_us"] / report["side5"]["judge_us"], 3)
    report.update({"goal": "side 10 < 1.5x side 5", "python": sys.version.split()[0], "machine": platform.machine()})
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
