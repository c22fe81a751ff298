"""The matches a tournament asks for: which pairings still need one, and the exact create record
for each (the same bytes every time, so writing it again after a restart is harmless: the rules
worker answers it `duplicate` or `match_exists`, never with a second match); and which matches must
end because their pairing was decided without them, with the exact `adjudicate` record for each
(again the same bytes every time: a second one is `duplicate`, never a second ending)."""

from __future__ import annotations

from typing import Any

from schemas.tournament import DIRECTOR

from ..timeutil import from_ms
from .state import Pairing, TournamentState


def to_create(state: TournamentState | None) -> list[Pairing]:
    """The undecided pairings of a running tournament, in pairing order."""
    if state is None or state.status != "running":
        return []
    return state.pending()


def create_record(state: TournamentState, pairing: Pairing, invite: bool = False) -> dict[str, Any]:
    """The move record that creates the pairing's match on `plylog.moves`, written by the service.

    `invite=False` seats both players: the match starts at once and its clock decides an absent
    player (the timekeeper claims the timeout). `invite=True` reserves the seats instead: the match
    starts when both have joined, and a pairing still waiting after `forfeit_wait_s` is forfeited by
    whoever has not joined (fed back as `match_joined`)."""
    settings = state.settings
    action: dict[str, Any] = {
        "type": "create",
        "game": settings.game,
        "seats": [None, None] if invite else list(pairing.seats),
        "options": settings.options,
    }
    if settings.clock is not None:
        action["clock"] = settings.clock.model_dump(mode="json")
    if invite:
        action["invited"] = list(pairing.seats)
    if not settings.rated:
        action["rated"] = False  # only then: the creates of rated tournaments keep their bytes
    if settings.rules is not None:  # the version the tournament's create stated; a legacy one's state none
        action["rules"] = settings.rules
    return {
        "v": 1,
        "event_id": pairing.event_id,
        "match_id": pairing.match_id,
        "player": DIRECTOR,
        "at": from_ms(pairing.paired_ms),
        "action": action,
    }


#: How a pairing decided without its match being played out ends that match (`adjudicate` reasons).
NOT_PLAYED = ("withdrawal", "forfeit", "double_forfeit")


def to_end(state: TournamentState | None) -> list[Pairing]:
    """Pairings decided without their match being played out (a withdrawal, a forfeit), in pairing
    order: their matches, where created, are still running and must end. A forfeit fed back from an
    aborted match is not one: that match is over."""
    if state is None:
        return []
    return [p for p in state.pairings if must_end(p)]


def must_end(pairing: Pairing) -> bool:
    decided = pairing.decided
    return decided is not None and decided.how in NOT_PLAYED and decided.reason != "aborted"


def adjudicate_record(pairing: Pairing) -> dict[str, Any]:
    """The move record by which the service ends a decided pairing's match: the pairing's winner
    (a seat, the same in the match), the way it was decided as the reason; unrated. Event id
    `<match_id>:adjudicate`, `at` the decision's time: the same bytes every time."""
    decided = pairing.decided
    assert decided is not None and must_end(pairing), f"{pairing.match_id} is not decided without play"
    return {
        "v": 1,
        "event_id": f"{pairing.match_id}:adjudicate",
        "match_id": pairing.match_id,
        "player": DIRECTOR,
        "at": from_ms(decided.at_ms),
        "action": {"type": "adjudicate", "winner": decided.winner, "reason": decided.how},
    }
