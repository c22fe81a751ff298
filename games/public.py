"""A match rebuilt from its public events (the results' `events`, or the projection's log): what
anyone may know of it. Board and lifecycle, never a secret (a Mastermind code is only its
commitment until revealed); clocks are not charged (the result's `view` has them). Used by
whoever plays or draws a match from the outside: the CLI, the bot service."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .match import MatchState, evolve


@dataclass
class PublicPosition:
    """A match rebuilt from its public events (board and lifecycle; secrets never; clocks not
    charged), enough for `games.match.render`."""

    state: MatchState | None = None
    seq: int = 0
    views: dict[int, Any] = field(default_factory=dict)

    def apply(self, result: dict[str, Any]) -> bool:
        """Fold one accepted result (a log entry or an SSE `result`); False if already seen."""
        seq = result["seq"]
        if seq <= self.seq:
            return False
        for event in result.get("events", []):
            self.state = evolve(self.state, event)
        self.seq = seq
        if self.state is not None:
            self.state = self.state.evolved(seq=seq)
        if result.get("view"):
            self.views[seq] = result["view"]
        return True

    @classmethod
    def from_log(cls, entries: list[dict[str, Any]], upto: int | None = None) -> PublicPosition:
        position = cls()
        for entry in entries:
            if upto is None or entry["seq"] <= upto:
                position.apply(entry)
        return position
