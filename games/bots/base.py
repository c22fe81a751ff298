"""What every bot shares: the `Bot` protocol, the search `Budget`, and the checks on the
match state a bot is asked to act in.

A bot is a pure function of (match state, seat, rng, budget): no I/O and no clock, except
that a `Budget` with `seconds` lets a search read `time.perf_counter` to stop early (a
playout budget alone keeps a bot deterministic).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from games.core import ActionDict, Game
from games.match import MatchState


class BotError(Exception):
    """The bot was asked to act where it cannot (match not active, not this seat's turn,
    a game the bot does not play)."""


@dataclass(frozen=True)
class Budget:
    """How much a search may spend on one decision. `playouts`: simulated games (the
    deterministic budget); `seconds`: a wall-clock cap on top (the search stops at whichever
    comes first, so a time cap makes the choice depend on the machine's speed)."""

    playouts: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.playouts is None and self.seconds is None:
            raise ValueError("a budget needs playouts, seconds or both")
        if self.playouts is not None and self.playouts < 1:
            raise ValueError(f"playouts must be at least 1, not {self.playouts}")
        if self.seconds is not None and self.seconds <= 0:
            raise ValueError(f"seconds must be positive, not {self.seconds}")

    def meter(self) -> Meter:
        return Meter(self)


class Meter:
    """Counts playouts against a budget (and reads the clock only when it has seconds)."""

    def __init__(self, budget: Budget):
        self.budget = budget
        self.used = 0
        self._deadline = None if budget.seconds is None else time.perf_counter() + budget.seconds

    def spend(self, n: int = 1) -> None:
        self.used += n

    @property
    def exhausted(self) -> bool:
        if self.budget.playouts is not None and self.used >= self.budget.playouts:
            return True
        return self._deadline is not None and self.used > 0 and time.perf_counter() >= self._deadline


@runtime_checkable
class Bot(Protocol):
    """A player. `choose` returns an action dict that `decide` accepts for `seat` in
    `state` (the match state folded from the log), in every phase the seat can act in."""

    id: str
    games: frozenset[str]

    def choose(self, state: MatchState, seat: int, rng: random.Random, budget: Budget | None = None) -> ActionDict: ...


def acting_board(state: MatchState, seat: int, bot_id: str, games: frozenset[str]) -> tuple[Game, Any]:
    """(the game, its board state) when `seat` is to act in `state`, else BotError saying why."""
    if state.game not in games:
        raise BotError(f"bot {bot_id!r} does not play {state.game} (it plays {', '.join(sorted(games))})")
    if state.status != "active":
        raise BotError(f"match {state.match_id} is {state.status}: nobody is to act")
    if seat not in state.to_move():
        raise BotError(f"seat {seat} is not to act in match {state.match_id} (to move: {list(state.to_move())})")
    return state.rules, state.board
