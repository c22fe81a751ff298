"""Arena: a fixed time window from the start; players are paired as soon as they are free.

Pairing waves: when two or more active players are free and `pairing_interval_s` has passed since
the last wave, the free players are ranked (points, rating, id) and paired with their neighbours,
1–2, 3–4, ...; with an odd count the player freed most recently waits (ties: the lowest-ranked).
Where a pair would repeat either player's last game, the stretch of the ranking around it is
re-paired by the best matching that avoids it (closest in rank), the stretch growing until no such
pair is left; when even all free players cannot avoid one, the best matching of them all decides
(fewest immediate rematches, then the most recently freed waits, then closest in rank). A pair
that still repeats a last game is not made while anyone else is busy: its players wait for the
next wave. A busy player (in an undecided pairing) is never paired.

Points, as Lichess: a win 2, a draw 1, a loss 0; after two wins in a row a player is on a streak and
each game is worth double (a win 4, a draw 2) until a game that is not a win ends the streak. A win
by forfeit (the opponent never took their seat, withdrew or aborted) scores 2 and leaves the streak
as it was; a loss by forfeit ends it. No berserk. At the end of the window pairing stops and the
tournament ends: games still running do not count (as on Lichess).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from .formats import Event, Format, ended, paired
from .matching import best_pairing
from .state import DRAW, LOSS, WIN, Entrant, Pairing, TournamentState, colour_order, ranked

WAIT = "\x00wait"  # the node that leaves one player unpaired: not a player id
STREAK_FROM = 2  # wins in a row after which games count double


class Arena(Format):
    name: ClassVar[str] = "arena"
    late_entry: ClassVar[bool] = True

    def ends_ms(self, state: TournamentState) -> int:
        duration_s = state.settings.duration_s
        assert duration_s is not None, "an arena has its duration (Format.check refuses one without)"
        return _started_ms(state) + duration_s * 1000

    def next_wave_ms(self, state: TournamentState) -> int:
        if not state.pairings:
            return _started_ms(state)
        return state.pairings[-1].paired_ms + state.settings.pairing_interval_s * 1000

    def wake_at(self, state: TournamentState) -> int | None:
        if wave(state):
            return min(self.ends_ms(state), self.next_wave_ms(state))
        return self.ends_ms(state)

    def due(self, state: TournamentState, now_ms: int) -> Event | None:
        if now_ms >= self.ends_ms(state):
            return ended(state, "completed", now_ms, self.winner(state))
        if now_ms < self.next_wave_ms(state):
            return None
        pairs = wave(state)
        return paired(state, state.round + 1, pairs, now_ms) if pairs else None

    def points(
        self, state: TournamentState, pairing: Pairing, winner: int | None, how: str
    ) -> tuple[tuple[int, int], list[int] | None]:
        points, streaks = [LOSS, LOSS], [0, 0]
        for seat, player in enumerate(pairing.seats):
            streak = state.known_entrant(player).streak
            double = 2 if streak >= STREAK_FROM else 1
            if how != "played":  # a forfeit: a flat win, or a loss that ends the streak
                points[seat], streaks[seat] = (WIN, streak) if winner == seat else (LOSS, 0)
            elif winner == seat:
                points[seat], streaks[seat] = WIN * double, streak + 1
            elif winner is None:
                points[seat], streaks[seat] = DRAW * double, 0
        return (points[0], points[1]), streaks


def _started_ms(state: TournamentState) -> int:
    assert state.started_ms is not None, "an arena is asked for its times only once started"
    return state.started_ms


def wave(state: TournamentState) -> list[tuple[str, str]]:
    """The pairs a wave makes now: the free players' pairing, less any immediate rematch while
    someone else is busy (they may be free for the next wave); with nobody busy a rematch that
    cannot be avoided is played."""
    free = free_players(state)
    if len(free) < 2:
        return []
    pairs = pair_free(state, free)
    if state.busy():
        pairs = [(a, b) for a, b in pairs if b != last_opponent(state, a) and a != last_opponent(state, b)]
    return pairs


def free_players(state: TournamentState) -> list[Entrant]:
    busy = state.busy()
    return [e for e in ranked(state.active()) if e.player not in busy]


def last_opponent(state: TournamentState, player: str) -> str | None:
    for pairing in reversed(state.pairings):
        if player in pairing.seats:
            return pairing.seats[1 - pairing.seats.index(player)]
    return None


def freed_ms(state: TournamentState, player: str) -> int:
    """When the player's last pairing was decided (0 if they never played: they waited longest)."""
    for pairing in reversed(state.pairings):
        if player in pairing.seats and pairing.decided is not None:
            return pairing.decided.at_ms
    return 0


def pair_free(state: TournamentState, free: list[Entrant]) -> list[tuple[str, str]]:
    """Seated pairs of the ranked free players (see the module's rules)."""
    rank = {e.player: i for i, e in enumerate(free)}
    by_id = {e.player: e for e in free}
    last = {e.player: last_opponent(state, e.player) for e in free}

    def rematch(a: str, b: str) -> bool:
        return last[a] == b or last[b] == a

    waiting = sorted(free, key=lambda e: (-freed_ms(state, e.player), -rank[e.player]))
    players = [e.player for e in free if len(free) % 2 == 0 or e is not waiting[0]]
    neighbours = [(players[i], players[i + 1]) for i in range(0, len(players), 2)]
    pairs = _repaired(neighbours, rematch, rank)
    if pairs is None:  # no repair keeps the waiter and avoids rematches: decide over everyone
        wait_rank = {e.player: i for i, e in enumerate(waiting)}

        def penalties(a: str, b: str) -> tuple[int, int, int]:
            if b == WAIT:
                return (0, wait_rank[a], 0)
            return (int(rematch(a, b)), 0, rank[b] - rank[a])

        nodes = [e.player for e in free] + ([WAIT] if len(free) % 2 else [])
        pairs = [(a, b) for a, b in best_pairing(nodes, penalties, hard_levels=1) if b != WAIT]
    return [colour_order(by_id[a], by_id[b], parity=rank[a]) for a, b in pairs]


def _repaired(
    pairs: list[tuple[str, str]], rematch: Callable[[str, str], bool], rank: dict[str, int]
) -> list[tuple[str, str]] | None:
    """The neighbour pairs with each stretch around an immediate rematch re-paired by the best
    matching of its players (closest in rank, no rematch); the stretch grows (2, 4, 8, ... pairs
    either side) until no rematch is left, or None when even all of them cannot avoid one."""
    reach = 1
    while True:
        bad = [i for i, (a, b) in enumerate(pairs) if rematch(a, b)]
        if not bad:
            return pairs
        if reach > len(pairs):
            return None
        chosen = sorted({j for i in bad for j in range(max(0, i - reach), min(len(pairs), i + reach + 1))})
        repaired = dict(enumerate(pairs))
        for stretch in _runs(chosen):
            nodes = sorted((p for j in stretch for p in pairs[j]), key=rank.__getitem__)

            def penalties(a: str, b: str) -> tuple[int, int]:
                return (int(rematch(a, b)), rank[b] - rank[a])

            for j, pair in zip(stretch, best_pairing(nodes, penalties, hard_levels=1), strict=True):
                repaired[j] = pair
        pairs = [repaired[j] for j in range(len(pairs))]
        reach *= 2


def _runs(indices: list[int]) -> list[list[int]]:
    """Consecutive runs of sorted indices: [1, 2, 3, 7, 8] -> [[1, 2, 3], [7, 8]]."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs
