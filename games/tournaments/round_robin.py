"""Round robin by Berger tables: everyone meets everyone once (twice with `cycles: 2`, seats
swapped in the second cycle).

Players are numbered by seed (rating, then id); with an odd count a dummy number n+1 is added and
meeting it is a bye (no points: every player rests once per cycle). Round 1 is 1–n, 2–(n−1), ...,
(n/2)–(n/2+1), the first number in seat 0. Each next round adds n/2 to every number but n
(modulo n−1, within 1..n−1), and n alternates between seat 1 and seat 0 on board 1 (the circle
method; FIDE's Berger tables). The schedule is fixed at the start: a pairing with a player who
has left is decided at once (a win for the other, no match).
"""

from __future__ import annotations

from typing import ClassVar

from .formats import Event, RoundBased, paired
from .state import TournamentState


def berger_round(count: int, round_: int) -> list[tuple[int, int]]:
    """(seat 0 number, seat 1 number) per board of `round_` (1-based) for an even `count`;
    rounds past count−1 repeat the first cycle with seats swapped."""
    assert count % 2 == 0 and count >= 2
    cycle_rounds = count - 1
    cycle, index = divmod(round_ - 1, cycle_rounds)
    shift = index * (count // 2)

    def moved(number: int) -> int:
        return (number - 1 + shift) % cycle_rounds + 1

    boards = []
    for board in range(count // 2):
        top, bottom = board + 1, count - board
        if bottom == count:
            pair = (moved(top), count) if index % 2 == 0 else (count, moved(top))
        else:
            pair = (moved(top), moved(bottom))
        boards.append(pair if cycle % 2 == 0 else (pair[1], pair[0]))
    return boards


class RoundRobin(RoundBased):
    name: ClassVar[str] = "round_robin"
    max_field: ClassVar[int] = 64

    def rounds(self, state: TournamentState) -> int:
        count = len(state.seeds) + len(state.seeds) % 2
        return (count - 1) * state.settings.cycles

    def finished(self, state: TournamentState) -> bool:
        return state.round >= self.rounds(state)

    def pair(self, state: TournamentState, now_ms: int) -> Event:
        round_ = state.round + 1
        numbered: list[str | None] = [*state.seeds, *([None] if len(state.seeds) % 2 else [])]
        pairs, boards, byes = [], [], []
        for board, (first, second) in enumerate(berger_round(len(numbered), round_), start=1):
            seat0, seat1 = numbered[first - 1], numbered[second - 1]
            if seat0 is not None and seat1 is not None:
                pairs.append((seat0, seat1))
                boards.append(board)
            elif seat0 is not None:  # the other is the empty slot of an odd field: a bye
                byes.append((seat0, 0))
            elif seat1 is not None:
                byes.append((seat1, 0))
        return paired(state, round_, pairs, now_ms, byes=byes, boards=boards)
