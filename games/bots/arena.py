"""Bots against bots, offline through the fold: every action becomes a move record that
`games.fold.Replayer` folds exactly as the rules worker would, so a bot is judged on the
position the service will show it, and an action `decide` refuses is an error.

Pure: no clock unless the caller passes one (`clock`, e.g. time.perf_counter) to time the
decisions; seeds make every match reproducible.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from games.fold import Replayer
from games.match import MatchState
from games.playout import DEFAULT_START_MS, move_record

from .base import Bot, Budget

Clock = Callable[[], float]


class IllegalBotAction(Exception):
    """A bot returned an action the fold rejected."""


@dataclass
class MatchResult:
    winner: int | None
    reason: str
    plies: int
    seconds: list[list[float]] = field(default_factory=lambda: [[], []])  # decision times per seat
    final: MatchState | None = None  # the match as it ended


def player_ids(bots: tuple[Bot, Bot]) -> tuple[str, str]:
    """`bot:<id>` per seat (told apart by the seat when both seats hold the same bot)."""
    first, second = f"bot:{bots[0].id}", f"bot:{bots[1].id}"
    return (first, second) if first != second else (f"{first}#0", f"{second}#1")


def move_rng(seed: int, match_id: str, ply: int) -> random.Random:
    """The rng a bot gets for one decision: a function of the match seed and the ply."""
    return random.Random(f"{seed}|{match_id}|{ply}")


def play_match(
    game: str,
    options: dict[str, Any],
    bots: tuple[Bot, Bot],
    seed: int,
    match_id: str = "arena",
    budgets: tuple[Budget | None, Budget | None] = (None, None),
    clock: Clock | None = None,
    max_records: int = 5000,
) -> MatchResult:
    """One match from `create` to its end; bots[s] plays seat s."""
    replayer = Replayer()
    players = player_ids(bots)
    create = {"type": "create", "game": game, "seats": list(players), "options": options}
    feed(replayer, match_id, players[0], create, 0)
    result = MatchResult(None, "", 0)
    for n in range(1, max_records):
        state = replayer.states[match_id]
        if state.status == "over":
            result.winner, result.reason, result.final = state.outcome["winner"], state.outcome["reason"], state
            return result
        seat = state.to_move()[0]
        started = clock() if clock else 0.0
        action = bots[seat].choose(state, seat, move_rng(seed, match_id, n), budgets[seat])
        if clock:
            result.seconds[seat].append(clock() - started)
        feed(replayer, match_id, state.seats[seat], action, n)
        result.plies += 1
    raise RuntimeError(f"{game} match {match_id} did not end within {max_records} records")


def feed(replayer: Replayer, match_id: str, player: str, action: dict[str, Any], n: int) -> MatchState:
    """Fold one action as record `n` of the match; IllegalBotAction if the fold rejects it."""
    raw = move_record(match_id, player, action, f"{match_id}-{n}", DEFAULT_START_MS + n * 1000)
    taken = replayer.feed(raw)
    if taken.result["status"] != "accepted":
        raise IllegalBotAction(f"{player}'s action {action} was rejected: {taken.result['reason']}")
    return taken.state


@dataclass
class Tally:
    """A series from one bot's perspective (seats alternating)."""

    games: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0
    plies: int = 0
    seconds: list[float] = field(default_factory=list)  # the bot's decision times

    def add(self, result: MatchResult, seat: int) -> None:
        self.games += 1
        self.plies += result.plies
        if result.winner is None:
            self.draws += 1
        elif result.winner == seat:
            self.wins += 1
        else:
            self.losses += 1
        self.seconds.extend(result.seconds[seat])

    def summary(self) -> dict[str, Any]:
        return {
            "games": self.games,
            "wins": self.wins,
            "losses": self.losses,
            "draws": self.draws,
            "win_rate": self.wins / self.games if self.games else 0.0,
            "seconds_per_move": statistics.median(self.seconds) if self.seconds else None,
            "mean_seconds_per_move": statistics.fmean(self.seconds) if self.seconds else None,
            "p95_seconds_per_move": percentile(self.seconds, 0.95) if self.seconds else None,
            "moves": len(self.seconds),
            "mean_plies": self.plies / self.games if self.games else 0.0,
        }


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def series(
    game: str,
    options: dict[str, Any],
    bot: Bot,
    opponent: Bot,
    games: int,
    seed: int,
    budget: Budget | None = None,
    clock: Clock | None = None,
    on_match: Callable[[int, MatchResult, int], None] | None = None,
) -> Tally:
    """`games` matches, `bot` in seat 0 of the even ones and seat 1 of the odd ones."""
    tally = Tally()
    for i in range(games):
        seat = i % 2
        bots = (bot, opponent) if seat == 0 else (opponent, bot)
        budgets = (budget, None) if seat == 0 else (None, budget)
        result = play_match(game, options, bots, seed * 1_000_003 + i, f"eval-{seed}-{i}", budgets, clock)
        tally.add(result, seat)
        if on_match:
            on_match(i, result, seat)
    return tally
