"""The tournament views in Redis: written by the tournament service, read by the gateway and the CLI.

key                                      type    content
---------------------------------------  ------  ---------------------------------------------------
<p>tournament:<tid>                      string  JSON view: settings, status, standings, pairings,
                                                 byes, crosstable, seq (`view_of`)
<p>tournaments                           zset    every tournament; score = created (epoch ms)
<p>tournament-summaries                  hash    tournament id -> JSON lobby row (`summary_of`)
<p>tournament-offsets                    hash    "<outcomes topic>" -> next outcomes offset to read
<p>tournament-result:<tid>:<event id>    string  JSON result record of one tournament record (10 min)
<p>tournament-live:<tid>                 pubsub  the view, each time it changes

A tournament id is of one grammar (letters, digits, '_', '-'), so its keys never collide; an event
id (any text) is only ever the last part of a key of its own family.
"""

from __future__ import annotations

import re
from typing import Any

from games.timeutil import from_ms
from games.tournaments import TournamentState, crosstable, standings
from schemas.tournament import TOURNAMENT_ID_PATTERN

RESULT_TTL_S = 600
_ID = re.compile(TOURNAMENT_ID_PATTERN)


def is_tournament_id(value: object) -> bool:
    return isinstance(value, str) and _ID.match(value) is not None


class TournamentKeys:
    def __init__(self, prefix: str):
        self.prefix = prefix
        self.index = f"{prefix}tournaments"

    def _checked(self, tournament_id: str) -> str:
        if not is_tournament_id(tournament_id):
            raise ValueError(f"not a tournament id: {tournament_id!r}")
        return tournament_id

    def view(self, tournament_id: str) -> str:
        return f"{self.prefix}tournament:{self._checked(tournament_id)}"

    def result(self, tournament_id: str, event_id: str) -> str:
        return f"{self.prefix}tournament-result:{self._checked(tournament_id)}:{event_id}"

    def live(self, tournament_id: str) -> str:
        return f"{self.prefix}tournament-live:{self._checked(tournament_id)}"


def view_of(state: TournamentState) -> dict[str, Any]:
    """What people see of a tournament: derived from its state alone (a replay gives the same)."""
    pairings = [
        {
            "round": p.round,
            "board": p.board,
            "game": p.game,
            "match_id": p.match_id,
            "seats": list(p.seats),
            "paired_at": from_ms(p.paired_ms),
            "result": None
            if p.decided is None
            else {
                "winner": p.decided.winner,
                "how": p.decided.how,
                "reason": p.decided.reason,
                "points": list(p.decided.points),
                "at": from_ms(p.decided.at_ms),
            },
        }
        for p in state.pairings
    ]
    return {
        "tournament_id": state.tournament_id,
        "settings": state.settings.model_dump(mode="json"),
        "created_by": state.created_by,
        "created_at": from_ms(state.created_ms),
        "status": state.status,
        "round": state.round,
        "winner": state.winner,
        "end_reason": state.end_reason,
        "entrants": [
            {"player": e.player, "rating": e.rating, "bot": e.bot, "status": e.status} for e in state.entrants
        ],
        "standings": standings(state),
        "pairings": pairings,
        "current": [p for p in pairings if p["round"] == state.round],
        "byes": [{"round": b.round, "player": b.player, "points": b.points} for b in state.byes],
        "crosstable": crosstable(state),
        "seq": state.seq,
    }


def summary_of(view: dict[str, Any]) -> dict[str, Any]:
    """A lobby row of a tournament view."""
    settings = view["settings"]
    return {
        "tournament_id": view["tournament_id"],
        "name": settings["name"],
        "format": settings["format"],
        "game": settings["game"],
        "starts_at": settings["starts_at"],
        "status": view["status"],
        "players": sum(1 for e in view["entrants"] if e["status"] == "active"),
        "max_players": settings["max_players"],
        "bots_allowed": settings["bots_allowed"],
        "round": view["round"],
        "winner": view["winner"],
    }
