"""evolve(state, event) -> state: the only way a tournament state changes. It trusts its events
(the decider checked everything) and computes nothing the event does not carry."""

from __future__ import annotations

from typing import Any

from schemas.tournament import Settings

from ..timeutil import to_ms
from .state import Bye, Decision, Entrant, Pairing, TournamentState, bracket_slots

Event = dict[str, Any]


def initial(event: Event) -> TournamentState:
    """The state a `tournament_created` event makes."""
    return TournamentState(
        tournament_id=event["tournament_id"],
        settings=Settings.model_validate(event["settings"]),
        created_by=event["created_by"],
        created_ms=to_ms(event["at"]),
        now_ms=to_ms(event["at"]),
    )


def evolve(state: TournamentState | None, event: Event) -> TournamentState:
    kind = event["type"]
    if kind == "tournament_created":
        return initial(event)
    assert state is not None, f"{kind} before tournament_created"
    if "at" in event:
        state = state.evolved(now_ms=max(state.now_ms, to_ms(event["at"])))
    return _EVOLVE[kind](state, event)


def _registered(state: TournamentState, event: Event) -> TournamentState:
    player = event["player"]
    if state.entrant(player) is not None:  # a player who left comes back: points and history kept
        return _with_entrant(state, player, status="active")
    entrant = Entrant(player=player, rating=event["rating"], bot=event["bot"])
    return state.evolved(entrants=(*state.entrants, entrant))


def _withdrew(state: TournamentState, event: Event) -> TournamentState:
    return _with_entrant(state, event["player"], status="absent" if event["absent"] else "withdrawn")


def _started(state: TournamentState, event: Event) -> TournamentState:
    seeds = tuple(event["seeds"])
    at = to_ms(event["at"])
    bracket = (bracket_slots(seeds),) if state.settings.format == "knockout" else ()
    return state.evolved(status="running", seeds=seeds, started_ms=at, bracket=bracket)


def _paired(state: TournamentState, event: Event) -> TournamentState:
    at = to_ms(event["at"])
    pairings = tuple(
        Pairing(
            round=p["round"],
            board=p["board"],
            game=p["game"],
            match_id=p["match_id"],
            event_id=p["event_id"],
            seats=tuple(p["seats"]),
            paired_ms=at,
        )
        for p in event["pairings"]
    )
    byes = tuple(Bye(round=event["round"], player=b["player"], points=b["points"]) for b in event["byes"])
    for bye in byes:
        entrant = state.known_entrant(bye.player)
        state = _with_entrant(state, bye.player, points=entrant.points + bye.points, byes=entrant.byes + 1)
    new_round = event["round"] > state.round
    return state.evolved(
        pairings=state.pairings + pairings,
        byes=state.byes + byes,
        round=max(state.round, event["round"]),
        round_closed=False if new_round else state.round_closed,
    )


def _joined(state: TournamentState, event: Event) -> TournamentState:
    pairing = state.known_pairing(event["match_id"])
    return _with_pairing(state, pairing.evolved(joined=(*pairing.joined, event["player"])))


def _decided(state: TournamentState, event: Event) -> TournamentState:
    pairing = state.known_pairing(event["match_id"])
    decision = Decision(
        winner=event["winner"],
        how=event["how"],
        reason=event["reason"],
        points=tuple(event["points"]),
        at_ms=to_ms(event["at"]),
    )
    state = _with_pairing(state, pairing.evolved(decided=decision))
    streaks = event.get("streaks")
    for seat, player in enumerate(pairing.seats):
        entrant = state.known_entrant(player)
        changes: dict[str, Any] = {"points": entrant.points + decision.points[seat]}
        if decision.how == "played":
            changes["seats"] = entrant.seats + str(seat)
        if streaks is not None:
            changes["streak"] = streaks[seat]
        if player in event.get("absent", ()):
            changes["status"] = "absent"
        state = _with_entrant(state, player, **changes)
    return state


def _round_ended(state: TournamentState, event: Event) -> TournamentState:
    advanced = event.get("advanced")
    bracket = (*state.bracket, tuple(advanced)) if advanced is not None else state.bracket
    return state.evolved(round_closed=True, round_ended_ms=to_ms(event["at"]), bracket=bracket)


def _ended(state: TournamentState, event: Event) -> TournamentState:
    return state.evolved(status="over", ended_ms=to_ms(event["at"]), end_reason=event["reason"], winner=event["winner"])


def _with_entrant(state: TournamentState, player: str, **changes: Any) -> TournamentState:
    entrants = tuple(e.evolved(**changes) if e.player == player else e for e in state.entrants)
    return state.evolved(entrants=entrants)


def _with_pairing(state: TournamentState, pairing: Pairing) -> TournamentState:
    pairings = tuple(pairing if p.match_id == pairing.match_id else p for p in state.pairings)
    return state.evolved(pairings=pairings)


_EVOLVE = {
    "player_registered": _registered,
    "player_withdrew": _withdrew,
    "tournament_started": _started,
    "round_paired": _paired,
    "pairing_joined": _joined,
    "pairing_decided": _decided,
    "round_ended": _round_ended,
    "tournament_ended": _ended,
}
