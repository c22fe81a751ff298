"""Random match logs (JSON Lines of move records) for replay tests and benchmarks."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from games.playout import random_playout_records
from games.registry import current_rules

DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "mastermind": {},
    "strands": {"layout": "classic-6"},
    "mana": {},
    "mind_ninja": {"side": 7},
}


def match_id_for(game: str, seed: int, number: int, prefix: str = "") -> str:
    return f"{prefix}{game}-{seed}-{number}"


def random_match(
    game: str, seed: int, number: int, options: dict[str, Any] | None = None, prefix: str = ""
) -> Iterator[bytes]:
    """The records of one complete random match (number `number` of `seed`), lazily. Its create
    states the rules in force, as the gateway's do: the fold chains its results (a receipt)."""
    options = DEFAULT_OPTIONS[game] if options is None else options
    match_id = match_id_for(game, seed, number, prefix)
    seed_of_match, rules = seed * 1_000_003 + number, current_rules(game)
    return (raw for raw, _ in random_playout_records(game, options, seed_of_match, match_id, rules=rules))


def interleave(matches: Iterable[Iterator[bytes]], open_at_once: int) -> Iterator[bytes]:
    """Records of many matches, `open_at_once` of them interleaved round-robin (as on a real
    partition); each match's records stay in order, so the result folds as each match alone."""
    pending = iter(matches)
    running: list[Iterator[bytes]] = []
    while True:
        while len(running) < open_at_once:
            match = next(pending, None)
            if match is None:
                break
            running.append(match)
        if not running:
            return
        for match in list(running):
            raw = next(match, None)
            if raw is None:
                running.remove(match)
            else:
                yield raw


def random_match_records(
    game: str,
    matches: int,
    seed: int = 0,
    open_at_once: int = 20,
    options: dict[str, Any] | None = None,
    prefix: str = "",
) -> Iterator[bytes]:
    """Records of `matches` complete random matches, `open_at_once` of them interleaved
    round-robin (as on a real partition)."""
    return interleave((random_match(game, seed, number, options, prefix) for number in range(matches)), open_at_once)


def write_random_log(path: Path, game: str, matches: int, seed: int = 0) -> int:
    """Write a log file; returns the number of records."""
    count = 0
    with open(path, "wb") as out:
        for raw in random_match_records(game, matches, seed):
            out.write(raw + b"\n")
            count += 1
    return count
