"""Shared test helpers: build move records, drive matches through the real fold, random playouts.

Everything goes through `games.fold` — the same code the rules worker runs — so a test
that passes here says something about the service, not about a test double.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from games.fold import Replayer, Step
from games.match import MatchState
from games.playout import random_playout_records
from games.timeutil import from_ms

Found = TypeVar("Found")


def wait_until(
    condition: Callable[[], Found], timeout: float = 20.0, what: str = "the condition", every: float = 0.05
) -> Found:
    """The first truthy value of `condition()`, asked every `every` seconds: for what another
    process or thread does meanwhile. AssertionError naming `what` when none came within `timeout`."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(every)
    return found


T0_MS = 1_795_989_600_000  # 2026-11-29T22:00:00Z

# Option sets the generic property tests play every game with.
GAME_OPTIONS: dict[str, list[dict[str, Any]]] = {
    "strands": [
        {"layout": "small-4"},
        {"layout": "small-5", "placement": "exact"},
        {"layout": "random-6", "seed": 7},
        {"layout": {"side": 2, "rows": ["22", "212", "22"]}},
    ],
    "mastermind": [
        {},
        {"pegs": 3, "colors": 6},
        {"feedback": "manual"},
        {"repeats": False, "rounds": 4},
        {"feedback": "manual", "pegs": 3, "colors": 4, "max_rows": 4, "rounds": 4},
        {"pegs": 5, "colors": 8, "max_distinct": 3, "max_rows": 6, "unsolved_penalty": 5},
    ],
    "mana": [{}, {"bird_blocks": False, "max_plies": 80}],
    "mind_ninja": [{"side": 4}, {"side": 5}, {"side": 3}, {}],
}


def record(
    match_id: str,
    player: str,
    action: dict[str, Any],
    n: int,
    *,
    event_id: str | None = None,
    expected_seq: int | None = None,
    at_ms: int | None = None,
) -> bytes:
    """The bytes of a move record; `n` makes the default event id and time (n seconds after T0)."""
    data: dict[str, Any] = {
        "v": 1,
        "event_id": event_id or f"{match_id}-e{n}",
        "match_id": match_id,
        "player": player,
        "at": from_ms(T0_MS + n * 1000 if at_ms is None else at_ms),
        "action": action,
    }
    if expected_seq is not None:
        data["expected_seq"] = expected_seq
    return orjson.dumps(data)


@dataclass
class Match:
    """Drives one match through the fold, keeping every record and step."""

    match_id: str = "m1"
    replayer: Replayer = field(default_factory=Replayer)
    records: list[bytes] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    clock_ms: int = T0_MS

    def send(self, player: str, action: dict[str, Any], *, advance_ms: int = 1000, **kwargs: Any) -> Step:
        self.clock_ms += advance_ms
        raw = record(self.match_id, player, action, len(self.records), at_ms=self.clock_ms, **kwargs)
        self.records.append(raw)
        result = self.replayer.feed(raw, {"file": "test", "line": len(self.records)})
        self.steps.append(result)
        return result

    def ok(self, player: str, action: dict[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
        """Send an action that must be accepted; returns its public events."""
        result = self.send(player, action, **kwargs)
        assert result.result["status"] == "accepted", result.result.get("reason")
        return result.result["events"]

    def rejected(self, player: str, action: dict[str, Any], code: str, **kwargs: Any) -> str:
        """Send an action that must be rejected with `code`; returns the message."""
        result = self.send(player, action, **kwargs)
        assert result.result["status"] == "rejected", f"expected {code}, got accepted: {result.result['events']}"
        assert result.result["reason"]["code"] == code, result.result["reason"]
        return result.result["reason"]["message"]

    def create(self, game: str, options: dict[str, Any] | None = None, seats=("alice", "bob"), **extra: Any):
        action = {"type": "create", "game": game, "seats": list(seats), "options": options or {}, **extra}
        return self.ok("alice", action)

    @property
    def state(self) -> MatchState:
        return self.replayer.states[self.match_id]

    @property
    def view(self) -> dict[str, Any]:
        return self.steps[-1].result["view"]


def random_playout(
    game: str, options: dict[str, Any], seed: int, max_records: int = 5000, match_id: str = "p1"
) -> Match:
    """Play random legal actions (the game's own `random_action`) until the match ends."""
    match = Match(match_id)
    for raw, taken in random_playout_records(game, options, seed, match_id, max_records=max_records):
        match.records.append(raw)
        match.steps.append(taken)
        if taken.state is not None:  # an accepted record of the playout always leaves a state
            match.replayer.states[match_id] = taken.state
    assert match.state.status == "over"
    return match
