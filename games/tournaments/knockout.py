"""Knockout: single elimination, seeded by rating.

The bracket has the next power of two of slots; seeds go in standard bracket order (1 v N, and
seeds 1 and 2 meet only in the final), and the missing seeds are byes, which fall to the top
seeds. Round r pairs slot 2k with slot 2k+1 of the slots after round r−1 (board k+1):

- both hold an active player: they play; the one with fewer games in seat 0 takes it (else the
  higher seed);
- one slot is empty, or its player has left: the other advances without playing (a bye);
- both empty: the slot after the round is empty (its next opponent advances without playing).

A drawn game is replayed with the seats swapped, up to `draw_replays` times (`game` 2, 3, ... of
the same board); a draw after that is won by the higher seed (the lower seed number). A pairing
forfeited by both players empties the slot; a withdrawal or a forfeit by one sends the other on.
"""

from __future__ import annotations

from typing import ClassVar

from ..timeutil import from_ms
from .formats import Event, RoundBased, paired
from .state import Pairing, TournamentState, colour_order


class Knockout(RoundBased):
    name: ClassVar[str] = "knockout"

    def finished(self, state: TournamentState) -> bool:
        return len(state.bracket[-1]) == 1

    def winner(self, state: TournamentState) -> str | None:
        return state.bracket[-1][0]

    def pair(self, state: TournamentState, now_ms: int) -> Event:
        round_ = state.round + 1
        slots = state.bracket[-1]
        pairs, boards, byes = [], [], []
        for board in range(1, len(slots) // 2 + 1):
            a, b = (self._present(state, slots[2 * board - 2]), self._present(state, slots[2 * board - 1]))
            if a is not None and b is not None:
                first, second = state.known_entrant(a), state.known_entrant(b)
                higher_first = state.seed_of(a) < state.seed_of(b)
                pairs.append(colour_order(first, second, higher_first))
                boards.append(board)
            elif a is not None:
                byes.append((a, 0))
            elif b is not None:
                byes.append((b, 0))
        return paired(state, round_, pairs, now_ms, byes=byes, boards=boards)

    def follow_up(self, state: TournamentState, now_ms: int) -> Event | None:
        """A replay of the first drawn game whose board has replays left."""
        for pairing in _last_games(state, state.round).values():
            decided = pairing.decided
            if (
                decided is not None
                and decided.how == "played"
                and decided.winner is None
                and pairing.game <= state.settings.draw_replays
            ):
                swapped = (pairing.seats[1], pairing.seats[0])
                return paired(state, pairing.round, [swapped], now_ms, boards=[pairing.board], game=pairing.game + 1)
        return None

    def round_ended(self, state: TournamentState, now_ms: int) -> Event:
        slots = state.bracket[-1]
        games = _last_games(state, state.round)
        advanced: list[str | None] = []
        for board in range(1, len(slots) // 2 + 1):
            pairing = games.get(board)
            if pairing is None:  # nobody or one player was there: a bye
                advanced.append(self._walkover(state, slots[2 * board - 2], slots[2 * board - 1]))
            else:
                advanced.append(self._advancing(state, pairing))
        return {"type": "round_ended", "round": state.round, "advanced": advanced, "at": from_ms(now_ms)}

    # --- rules -------------------------------------------------------------------------------------
    @staticmethod
    def _present(state: TournamentState, player: str | None) -> str | None:
        if player is None:
            return None
        entrant = state.entrant(player)
        return player if entrant is not None and entrant.status == "active" else None

    @staticmethod
    def _walkover(state: TournamentState, a: str | None, b: str | None) -> str | None:
        """Who advances from a board that was not played: the bye recorded for it, if any."""
        byes = {bye.player for bye in state.byes if bye.round == state.round}
        for player in (a, b):
            if player is not None and player in byes:
                return player
        return None

    @staticmethod
    def _advancing(state: TournamentState, pairing: Pairing) -> str | None:
        decided = pairing.decided
        assert decided is not None, "a round ends once each of its pairings is decided"
        if decided.winner is not None:
            return pairing.seats[decided.winner]
        if decided.how == "played":  # drawn, replays used up: the higher seed
            return min(pairing.seats, key=state.seed_of)
        return None  # forfeited by both


def _last_games(state: TournamentState, round_: int) -> dict[int, Pairing]:
    """The latest game of each board of the round."""
    games: dict[int, Pairing] = {}
    for pairing in state.of_round(round_):
        if pairing.board not in games or pairing.game > games[pairing.board].game:
            games[pairing.board] = pairing
    return games
