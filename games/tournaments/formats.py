"""What every format shares: its interface to the decider, points, and the events that make
pairings and end rounds. A format decides only what is due at a moment (`due`); the decider
handles records, withdrawals and forfeits, which are the same for every format."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..core import illegal
from ..timeutil import from_ms
from .state import DRAW, LOSS, WIN, Pairing, TournamentState, create_event_id, match_id_of

Event = dict[str, Any]


class Format:
    name: ClassVar[str]
    #: Whether new players may enter after the start (a player who left may always come back).
    late_entry: ClassVar[bool] = False
    #: The largest field: pairing costs grow with it (Swiss pairs by an O(n³) matching).
    max_field: ClassVar[int] = 256

    def check(self, settings: dict[str, Any]) -> None:
        """Raise `illegal` for settings that do not fit the format."""
        if settings["max_players"] > self.max_field:
            raise illegal(f"{self.name} tournaments take at most {self.max_field} players")
        for name, kind in (("rounds", "swiss"), ("duration_s", "arena")):
            if (settings[name] is None) == (self.name == kind):
                required = "need" if self.name == kind else "take no"
                raise illegal(f"{self.name} tournaments {required} {name}")

    def due(self, state: TournamentState, now_ms: int) -> Event | None:
        """The next event the format makes at `now_ms` (pairings, a round's end, the end), or None."""
        raise NotImplementedError

    def wake_at(self, state: TournamentState) -> int | None:
        """When the format next has something to do without a record (a paused round, a wave)."""
        return None

    def points(
        self, state: TournamentState, pairing: Pairing, winner: int | None, how: str
    ) -> tuple[tuple[int, int], list[int] | None]:
        """(points per seat, streaks per seat or None) of a decided pairing."""
        if winner is None:
            return ((DRAW, DRAW) if how == "played" else (LOSS, LOSS)), None
        return ((WIN, LOSS) if winner == 0 else (LOSS, WIN)), None

    def winner(self, state: TournamentState) -> str | None:
        """The winner of a completed tournament."""
        from .standings import standings

        rows = standings(state)
        return rows[0]["player"] if rows else None


def paired(
    state: TournamentState,
    round_: int,
    seats: list[tuple[str, str]],
    now_ms: int,
    byes: Sequence[tuple[str, int]] = (),
    boards: list[int] | None = None,
    game: int = 1,
) -> Event:
    """A `round_paired` event: each pair gets its board (1, 2, ... unless `boards`) and the match
    and create-record ids derived from (tournament, round, board, game)."""
    pairings = []
    for index, pair in enumerate(seats):
        board = boards[index] if boards is not None else index + 1
        match_id = match_id_of(state.tournament_id, round_, board, game)
        pairings.append(
            {
                "round": round_,
                "board": board,
                "game": game,
                "match_id": match_id,
                "event_id": create_event_id(match_id),
                "seats": list(pair),
            }
        )
    return {
        "type": "round_paired",
        "round": round_,
        "pairings": pairings,
        "byes": [{"player": player, "points": points} for player, points in byes],
        "at": from_ms(now_ms),
    }


def ended(state: TournamentState, reason: str, now_ms: int, winner: str | None = None) -> Event:
    return {"type": "tournament_ended", "reason": reason, "winner": winner, "at": from_ms(now_ms)}


class RoundBased(Format):
    """Swiss, round robin and knockout: a round is paired when the previous one has ended and the
    pause after it has passed; it ends when every pairing in it is decided."""

    def due(self, state: TournamentState, now_ms: int) -> Event | None:
        if not state.round_closed:
            follow_up = self.follow_up(state, now_ms)
            if follow_up is not None:
                return follow_up
            if all(p.decided is not None for p in state.of_round(state.round)):
                return self.round_ended(state, now_ms)
            return None
        if self.finished(state):
            return ended(state, "completed", now_ms, self.winner(state))
        if state.round_ended_ms is not None and now_ms < state.round_ended_ms + state.settings.round_pause_s * 1000:
            return None
        return self.pair(state, now_ms)

    def wake_at(self, state: TournamentState) -> int | None:
        if state.round_closed and state.round_ended_ms is not None and not self.finished(state):
            return state.round_ended_ms + state.settings.round_pause_s * 1000
        return None

    def follow_up(self, state: TournamentState, now_ms: int) -> Event | None:
        """A pairing the round needs before it can end (a knockout replay); None by default."""
        return None

    def round_ended(self, state: TournamentState, now_ms: int) -> Event:
        return {"type": "round_ended", "round": state.round, "at": from_ms(now_ms)}

    def finished(self, state: TournamentState) -> bool:
        raise NotImplementedError

    def pair(self, state: TournamentState, now_ms: int) -> Event:
        """The next round's `round_paired` event (or `tournament_ended` when nobody is left to pair)."""
        raise NotImplementedError
