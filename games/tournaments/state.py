"""A tournament's state: immutable, JSON round trip exact, built only by `evolve`.

Points are integers in every format: a win is 2, a draw 1, a loss 0 (Swiss, round robin and
knockout show half of them: 1, ½, 0); an arena adds its streak doubling on top.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from schemas.tournament import Settings

from ..core import Frozen

EntrantStatus = Literal["active", "withdrawn", "absent"]
Status = Literal["open", "running", "over"]

WIN, DRAW, LOSS = 2, 1, 0


def match_id_of(tournament_id: str, round_: int, board: int, game: int = 1) -> str:
    """The match of a pairing: one per (tournament, round, board, game), so a service that
    restarts and writes its creates again finds them taken (`match_exists`), never a second match.
    The suffix has no '-' after its first character, so different tournaments never share an id."""
    replay = f"g{game}" if game > 1 else ""
    return f"{tournament_id}-r{round_}b{board}{replay}"


def create_event_id(match_id: str) -> str:
    """The event id of the create record of a pairing's match."""
    return f"{match_id}:create"


def bracket_order(size: int) -> list[int]:
    """Seed numbers in bracket order for a power-of-two `size`: 1 meets `size` in round 1, and
    seeds 1 and 2 can meet only in the final ([1, 8, 4, 5, 2, 7, 3, 6] for 8)."""
    order = [1]
    while len(order) < size:
        mirror = 2 * len(order) + 1
        order = [seed for top in order for seed in (top, mirror - top)]
    return order


def bracket_slots(seeds: tuple[str, ...] | list[str]) -> tuple[str | None, ...]:
    """A knockout's first-round slots: the seeds in bracket order, None where the seed number is
    beyond the field (a bye, which falls to the top seeds)."""
    size = 1
    while size < len(seeds):
        size *= 2
    return tuple(seeds[n - 1] if n <= len(seeds) else None for n in bracket_order(size))


class Entrant(Frozen):
    player: str
    rating: int
    bot: bool
    status: EntrantStatus = "active"
    points: int = 0
    seats: str = ""  # the seat ('0' first, '1' second) of each game played, in order
    byes: int = 0
    streak: int = 0  # arena: wins in a row

    @property
    def colour_difference(self) -> int:
        """Games in seat 0 minus games in seat 1."""
        return self.seats.count("0") - self.seats.count("1")


class Decision(Frozen):
    winner: int | None  # a seat, or None: a draw or a double forfeit
    how: Literal["played", "forfeit", "double_forfeit", "withdrawal"]
    reason: str
    points: tuple[int, int]
    at_ms: int


class Pairing(Frozen):
    round: int
    board: int
    game: int = 1
    match_id: str
    event_id: str
    seats: tuple[str, str]
    paired_ms: int
    joined: tuple[str, ...] = ()
    decided: Decision | None = None

    @property
    def started(self) -> bool:
        return all(player in self.joined for player in self.seats)

    def result_of(self, player: str) -> int | None:
        """The player's points from this pairing (None while undecided)."""
        if self.decided is None:
            return None
        return self.decided.points[self.seats.index(player)]


class Bye(Frozen):
    round: int
    player: str
    points: int


class TournamentState(Frozen):
    tournament_id: str
    settings: Settings
    created_by: str
    created_ms: int
    status: Status = "open"
    entrants: tuple[Entrant, ...] = ()  # in registration order
    seeds: tuple[str, ...] = ()  # the starting order: rating, then player id
    round: int = 0  # the latest round (arena: pairing wave) paired
    round_closed: bool = True  # the latest round has ended (or none was paired yet)
    round_ended_ms: int | None = None
    pairings: tuple[Pairing, ...] = ()
    byes: tuple[Bye, ...] = ()
    bracket: tuple[tuple[str | None, ...], ...] = ()  # knockout: who holds each slot, per round
    started_ms: int | None = None
    ended_ms: int | None = None
    end_reason: str | None = None
    winner: str | None = None
    now_ms: int = 0  # the latest `at` of an event: time never runs backwards
    seq: int = 0  # fold bookkeeping: accepted records
    recent_ids: str = ""  # fold bookkeeping: digests of the latest accepted records' ids

    # --- lookups ----------------------------------------------------------------------------
    def entrant(self, player: str) -> Entrant | None:
        for entrant in self.entrants:
            if entrant.player == player:
                return entrant
        return None

    def known_entrant(self, player: str) -> Entrant:
        """The entrant `player`, who the caller knows has entered (paired, given a bye, seeded)."""
        entrant = self.entrant(player)
        if entrant is None:
            raise LookupError(f"{player!r} has not entered tournament {self.tournament_id!r}")
        return entrant

    def active(self) -> list[Entrant]:
        return [e for e in self.entrants if e.status == "active"]

    def pairing(self, match_id: str) -> Pairing | None:
        for pairing in reversed(self.pairings):
            if pairing.match_id == match_id:
                return pairing
        return None

    def known_pairing(self, match_id: str) -> Pairing:
        """The pairing of match `match_id`, which the caller knows was paired (an event names it)."""
        pairing = self.pairing(match_id)
        if pairing is None:
            raise LookupError(f"match {match_id!r} is not a pairing of tournament {self.tournament_id!r}")
        return pairing

    def pending(self) -> list[Pairing]:
        """Pairings not decided yet: each has a match to create (or already created)."""
        return [p for p in self.pairings if p.decided is None]

    def busy(self) -> set[str]:
        return {player for p in self.pending() for player in p.seats}

    def of_round(self, round_: int) -> list[Pairing]:
        return [p for p in self.pairings if p.round == round_]

    def pairings_of(self, player: str) -> list[Pairing]:
        return [p for p in self.pairings if player in p.seats]

    def opponents(self, player: str) -> set[str]:
        """Everyone the player was paired with (a forfeited pairing counts: they met)."""
        return {p.seats[1 - p.seats.index(player)] for p in self.pairings if player in p.seats}

    def seed_of(self, player: str) -> int:
        """1 for the top seed; entrants without a seed (late entry) after all seeded ones."""
        return self.seeds.index(player) + 1 if player in self.seeds else len(self.seeds) + 1


def ranked(entrants: Iterable[Entrant]) -> list[Entrant]:
    """By points, then rating, then player id: the order pairings and standings start from."""
    return sorted(entrants, key=lambda e: (-e.points, -e.rating, e.player))


def colour_order(first: Entrant, second: Entrant, first_ranked_higher: bool = True, parity: int = 0) -> tuple[str, str]:
    """(seat 0, seat 1) of a pairing, balancing first moves: the player with fewer games in seat 0
    takes it; at equal counts the one who sat in seat 1 more recently; with the same history the
    higher-ranked player alternates their last seat, or takes seat 0 when `parity` is even (no
    history: alternate boards of round 1)."""
    a, b = (first, second) if first_ranked_higher else (second, first)
    if a.colour_difference != b.colour_difference:
        return (a.player, b.player) if a.colour_difference < b.colour_difference else (b.player, a.player)
    for seat_a, seat_b in zip(reversed(a.seats), reversed(b.seats), strict=False):
        if seat_a != seat_b:
            return (a.player, b.player) if seat_a == "1" else (b.player, a.player)
    if a.seats:
        return (a.player, b.player) if a.seats[-1] == "1" else (b.player, a.player)
    return (a.player, b.player) if parity % 2 == 0 else (b.player, a.player)
