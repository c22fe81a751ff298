"""Standings, tie-breaks and the crosstable of a tournament state (pure reads, no events).

Tie-breaks (Swiss: Buchholz, then Sonneborn–Berger; round robin: Sonneborn–Berger, then wins)
are computed over the rounds that have ended. For each such round of a player:

- a game played against an opponent adds the opponent's score to Buchholz, and the opponent's
  score times the player's result (1, ½, 0) to Sonneborn–Berger;
- a round without a played game (a bye, a forfeit either way, a round missed by joining late or
  being away) counts as a game against a virtual opponent with the player's own score (as FIDE's
  2023 tie-break rules do), with the points the player actually got that round as the result.

Scores are those at the time of reading (final scores once the tournament is over).
"""

from __future__ import annotations

from typing import Any

from .state import Entrant, Pairing, TournamentState


def standings(state: TournamentState) -> list[dict[str, Any]]:
    """One row per entrant, best first, with `rank` 1..n (ties broken down to the player id)."""
    breaks = tiebreaks(state) if state.settings.format in ("swiss", "round_robin") else {}
    rows = [_row(state, entrant, breaks) for entrant in state.entrants]
    rows.sort(key=_SORT_KEYS[state.settings.format])
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return rows


def closed_rounds(state: TournamentState) -> int:
    if state.settings.format == "arena":
        return 0
    return state.round if state.round_closed else state.round - 1


def tiebreaks(state: TournamentState) -> dict[str, tuple[int, int]]:
    """(Buchholz in half points, Sonneborn–Berger in quarter points) per entrant."""
    scores = {e.player: e.points for e in state.entrants}
    rounds = closed_rounds(state)
    earned: dict[tuple[str, int], int] = {}  # (player, round) -> points got that round
    opponent: dict[tuple[str, int], str] = {}  # (player, round) -> opponent of a played game
    for pairing in state.pairings:
        if pairing.decided is None or pairing.round > rounds:
            continue
        for seat, player in enumerate(pairing.seats):
            earned[player, pairing.round] = earned.get((player, pairing.round), 0) + pairing.decided.points[seat]
            if pairing.decided.how == "played":
                opponent[player, pairing.round] = pairing.seats[1 - seat]
    for bye in state.byes:
        if bye.round <= rounds:
            earned[bye.player, bye.round] = earned.get((bye.player, bye.round), 0) + bye.points
    result = {}
    for player, own in scores.items():
        buchholz = berger = 0
        for round_ in range(1, rounds + 1):
            faced = scores[opponent[player, round_]] if (player, round_) in opponent else own
            buchholz += faced
            berger += faced * earned.get((player, round_), 0)
        result[player] = (buchholz, berger)
    return result


def _row(state: TournamentState, entrant: Entrant, breaks: dict[str, tuple[int, int]]) -> dict[str, Any]:
    games = [p for p in state.pairings_of(entrant.player) if p.decided is not None]
    tally = {"wins": 0, "draws": 0, "losses": 0, "forfeits_won": 0, "forfeits_lost": 0}
    for pairing in games:
        tally[_tally_key(pairing, entrant.player)] += 1
    arena = state.settings.format == "arena"
    row: dict[str, Any] = {
        "player": entrant.player,
        "rating": entrant.rating,
        "bot": entrant.bot,
        "status": entrant.status,
        "points": entrant.points,
        "score": entrant.points if arena else entrant.points / 2,
        "games": len(games),
        **tally,
        "byes": entrant.byes,
        "seed": state.seed_of(entrant.player) if entrant.player in state.seeds else None,
    }
    if breaks:
        buchholz, berger = breaks[entrant.player]
        row["buchholz"] = buchholz / 2
        row["sonneborn_berger"] = berger / 4
    if state.settings.format == "knockout":
        row["reached"] = max((r + 1 for r, slots in enumerate(state.bracket) if entrant.player in slots), default=0)
    if arena:
        row["streak"] = entrant.streak
    return row


def _tally_key(pairing: Pairing, player: str) -> str:
    decided = pairing.decided
    assert decided is not None, "only decided pairings are tallied"
    seat = pairing.seats.index(player)
    if decided.how != "played":
        return "forfeits_won" if decided.winner == seat else "forfeits_lost"
    if decided.winner is None:
        return "draws"
    return "wins" if decided.winner == seat else "losses"


_SORT_KEYS = {
    "swiss": lambda r: (-r["points"], -r["buchholz"], -r["sonneborn_berger"], -r["rating"], r["player"]),
    "round_robin": lambda r: (-r["points"], -r["sonneborn_berger"], -r["wins"], -r["rating"], r["player"]),
    "knockout": lambda r: (-r["reached"], r["seed"] or 10**6, r["player"]),
    "arena": lambda r: (-r["points"], -r["wins"], -r["rating"], r["player"]),
}


def crosstable(state: TournamentState) -> dict[str, list[dict[str, Any]]]:
    """Per entrant, each pairing and bye in order: round, board, game, opponent, seat, result
    ('win', 'draw', 'loss', 'bye' or 'pending'), how it was decided, points, match id."""
    table: dict[str, list[dict[str, Any]]] = {e.player: [] for e in state.entrants}
    for pairing in state.pairings:
        for seat, player in enumerate(pairing.seats):
            decided = pairing.decided
            if decided is None:
                result = "pending"
            elif decided.winner is None:
                result = "draw" if decided.how == "played" else "loss"
            else:
                result = "win" if decided.winner == seat else "loss"
            table[player].append(
                {
                    "round": pairing.round,
                    "board": pairing.board,
                    "game": pairing.game,
                    "opponent": pairing.seats[1 - seat],
                    "seat": seat,
                    "result": result,
                    "how": decided.how if decided else None,
                    "points": decided.points[seat] if decided else None,
                    "match_id": pairing.match_id,
                }
            )
    for bye in state.byes:
        table[bye.player].append({"round": bye.round, "result": "bye", "points": bye.points})
    for entries in table.values():
        entries.sort(key=lambda e: (e["round"], e.get("game", 0)))
    return table
