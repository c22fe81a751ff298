"""Random match logs (JSON Lines of move records) for replay tests and benchmarks."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from games.playout import random_playout_records

DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "mastermind": {},
    "strands": {"layout": "classic-6"},
    "mana": {},
    "mind_ninja": {"side": 7},
}


def random_match_records(game: str, matches: int, seed: int = 0, open_at_once: int = 20,
                         options: dict[str, Any] | None = None, prefix: str = "") -> Iterator[bytes]:
    """Records of `matches` complete random matches, `open_at_once` of them interleaved
    round-robin (as on a real partition)."""
    options = DEFAULT_OPTIONS[game] if options is None else options
    pending = iter(range(matches))
    running: list[Iterator] = []
    while True:
        while len(running) < open_at_once:
            number = next(pending, None)
            if number is None:
                break
            match_id = f"{prefix}{game}-{seed}-{number}"
            running.append(random_playout_records(game, options, seed * 1_000_003 + number, match_id))
        if not running:
            return
        for playout in list(running):
            taken = next(playout, None)
            if taken is None:
                running.remove(playout)
            else:
                yield taken[0]


def write_random_log(path: Path, game: str, matches: int, seed: int = 0) -> int:
    """Write a log file; returns the number of records."""
    count = 0
    with open(path, "wb") as out:
        for raw in random_match_records(game, matches, seed):
            out.write(raw + b"\n")
            count += 1
    return count
