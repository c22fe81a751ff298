"""A codebreaker against every secret of a variant, offline through the fold: one match per
secret (rounds 2, up to 50 rows), the secret set by the codemaker seat, the bot guessing in
round 1 until the round is scored. Pure, like arena: pass a clock to time the guesses."""

from __future__ import annotations

import random
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from games.fold import Replayer
from games.mastermind import as_list

from .arena import Clock, feed, move_rng, percentile
from .base import Bot

MAX_ROWS = 50


@dataclass
class BreakTally:
    guesses: list[int] = field(default_factory=list)  # per secret: the row it was found on
    unsolved: int = 0
    seconds: list[float] = field(default_factory=list)
    seconds_by_row: dict[int, list[float]] = field(default_factory=dict)  # most rows after the tabled first two search

    def summary(self) -> dict[str, Any]:
        found = self.guesses
        return {
            "games": len(found),
            "total": sum(found),
            "mean": sum(found) / len(found) if found else None,
            "max": max(found) if found else None,
            "unsolved": self.unsolved,
            "histogram": {str(k): v for k, v in sorted(Counter(found).items())},
            "median_ms_per_move": statistics.median(self.seconds) * 1000 if self.seconds else None,
            "p95_ms_per_move": percentile(self.seconds, 0.95) * 1000 if self.seconds else None,
            "max_ms_per_move": max(self.seconds) * 1000 if self.seconds else None,
            "moves": len(self.seconds),
            "median_ms_by_row": {
                str(row): round(statistics.median(times) * 1000, 3)
                for row, times in sorted(self.seconds_by_row.items())
            },
        }


def break_one(
    bot: Bot,
    options: dict[str, Any],
    secret: str,
    seed: int,
    match_id: str,
    clock: Clock | None = None,
    tally: BreakTally | None = None,
) -> int:
    """The row on which `bot` found `secret` (MAX_ROWS + 1 if it did not)."""
    replayer = Replayer()
    players = ("maker", f"bot:{bot.id}")
    options = {**options, "rounds": 2, "max_rows": MAX_ROWS, "feedback": "auto"}
    feed(
        replayer,
        match_id,
        players[0],
        {"type": "create", "game": "mastermind", "seats": list(players), "options": options},
        0,
    )
    salt = f"{random.Random(f'{seed}|{match_id}').getrandbits(64):016x}"
    state = feed(replayer, match_id, players[0], {"type": "set_code", "code": as_list(secret), "salt": salt}, 1)
    for n in range(2, MAX_ROWS + 2):
        board = state.board
        if board.round != 1 or board.phase != "guess":
            return board.tries[0].points if board.tries[0].points <= MAX_ROWS else MAX_ROWS + 1
        started = clock() if clock else 0.0
        action = bot.choose(state, 1, move_rng(seed, match_id, n))
        if clock and tally is not None:
            spent = clock() - started
            tally.seconds.append(spent)
            tally.seconds_by_row.setdefault(n - 1, []).append(spent)
        state = feed(replayer, match_id, players[1], action, n)
    return MAX_ROWS + 1


def break_all(
    bot: Bot,
    options: dict[str, Any],
    secrets: Iterable[str],
    seed: int,
    clock: Clock | None = None,
    on_secret: Callable[[int, str, int], None] | None = None,
) -> BreakTally:
    tally = BreakTally()
    for i, secret in enumerate(secrets):
        rows = break_one(bot, options, secret, seed, f"mm-{seed}-{i}", clock, tally)
        if rows > MAX_ROWS:
            tally.unsolved += 1
        else:
            tally.guesses.append(rows)
        if on_secret:
            on_secret(i, secret, rows)
    return tally
