"""Swiss: a fixed number of rounds; each round pairs the active players by score.

The pairing is the best perfect matching (games.tournaments.matching) of the active players, plus
a bye node when their count is odd, under these criteria, most important first (a simplified
Dutch system, solved globally rather than score group by score group):

1. no rematch: two players who were paired before (even by a forfeit) do not meet again. When
   every pairing of the field has a rematch, the tournament ends (`exhausted`), as Lichess's
   Swiss does when its pairing engine finds no valid pairing;
2. nobody gets a second bye (unless only that avoids a rematch: a tiny field);
3. the colour limit: nobody's first-move difference (games in seat 0 minus games in seat 1)
   goes beyond ±2;
4. the bye goes to the lowest-ranked player without one;
5. the smallest score differences (summed squares, in half points): pairs within score groups;
6. the most players get the seat their history asks for (fewer games in seat 0, else the other
   seat than last time);
7. the Dutch order within a score group: the top half meets the bottom half (1 v 1+g/2, ...); a
   player who floats down meets the highest of the group below.

Seats are given by `colour_order`. A bye scores a win (1 point). Late entrants join with 0.
"""

from __future__ import annotations

from typing import ClassVar

from .formats import Event, RoundBased, ended, paired
from .matching import best_pairing
from .state import WIN, Entrant, TournamentState, colour_order, ranked

BYE = "\x00bye"  # the bye node: not a player id (player ids are printable)
COLOUR_LIMIT = 2


class Swiss(RoundBased):
    name: ClassVar[str] = "swiss"
    late_entry: ClassVar[bool] = True
    max_field: ClassVar[int] = 128

    def finished(self, state: TournamentState) -> bool:
        rounds = state.settings.rounds
        assert rounds is not None, "a Swiss has its rounds (Format.check refuses one without)"
        return state.round >= rounds

    def pair(self, state: TournamentState, now_ms: int) -> Event:
        players = ranked(state.active())
        if len(players) < 2:
            return ended(state, "completed", now_ms, self.winner(state))
        pairs, bye = pair_players(players, state)
        if any(b in state.opponents(a) for a, b in pairs):  # the best pairing has one: all have
            return ended(state, "exhausted", now_ms, self.winner(state))
        byes = [(bye, WIN)] if bye is not None else []
        return paired(state, state.round + 1, pairs, now_ms, byes=byes)


def pair_players(players: list[Entrant], state: TournamentState) -> tuple[list[tuple[str, str]], str | None]:
    """(seated pairs, bye or None) for the ranked `players`; boards in order of the higher-ranked
    player of each pair."""
    nodes = [p.player for p in players] + ([BYE] if len(players) % 2 else [])
    context = _Context(players, state)
    matched = best_pairing(nodes, context.penalties, hard_levels=3)
    pairs, bye = [], None
    for a, b in matched:
        if b == BYE:
            bye = a
        else:
            pairs.append(context.seats(a, b))
    return pairs, bye


class _Context:
    """What the penalties of a round look at: ranks, score groups, histories."""

    def __init__(self, players: list[Entrant], state: TournamentState):
        self.by_id = {p.player: p for p in players}
        self.rank = {p.player: i for i, p in enumerate(players)}
        self.opponents = {p.player: state.opponents(p.player) for p in players}
        groups: dict[int, list[str]] = {}
        for p in players:
            groups.setdefault(p.points, []).append(p.player)
        self.group = {player: members for members in groups.values() for player in members}
        without_bye = [p.player for p in players if p.byes == 0]
        self.bye_rank = {player: len(without_bye) - 1 - i for i, player in enumerate(without_bye)}

    def seats(self, a: str, b: str) -> tuple[str, str]:
        return colour_order(self.by_id[a], self.by_id[b], parity=self.rank[a])

    def penalties(self, a: str, b: str) -> tuple[int, ...]:
        if b == BYE:
            entrant = self.by_id[a]
            return (0, int(entrant.byes > 0), 0, self.bye_rank.get(a, len(self.by_id)), 0, 0, 0)
        first, second = self.seats(a, b)
        return (
            int(b in self.opponents[a]),
            0,
            int(violates_colour_limit(self.by_id[first], self.by_id[second])),
            0,
            (self.by_id[a].points - self.by_id[b].points) ** 2,
            colour_misses(self.by_id[first], self.by_id[second]),
            self._order(a, b),
        )

    def _order(self, a: str, b: str) -> int:
        group_a, group_b = self.group[a], self.group[b]
        if group_a is group_b:
            return abs(group_a.index(b) - group_a.index(a) - len(group_a) // 2)
        return (len(group_a) - 1 - group_a.index(a)) + group_b.index(b)


def violates_colour_limit(first: Entrant, second: Entrant) -> bool:
    """Whether seating `first` in seat 0 takes either player's first-move difference beyond ±2."""
    return first.colour_difference + 1 > COLOUR_LIMIT or second.colour_difference - 1 < -COLOUR_LIMIT


def preferred_seat(entrant: Entrant) -> int | None:
    """The seat the player's history asks for: the one played less, else the other than last time."""
    difference = entrant.colour_difference
    if difference:
        return 1 if difference > 0 else 0
    return None if not entrant.seats else 1 - int(entrant.seats[-1])


def colour_misses(first: Entrant, second: Entrant) -> int:
    return int(preferred_seat(first) == 1) + int(preferred_seat(second) == 0)
