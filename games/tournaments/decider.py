"""decide(state, record) -> events, or raise `Rejected`: the tournament decider.

First whatever fell due up to the record's time, one event at a time, each evolved before the
next is looked for: the start (or a cancellation when fewer than two have entered), withdrawals
decided, pairings forfeited, the format's pairings, round ends and the end. Then the record's own
events (a registration, a withdrawal, a result fed back), judged against that state (an arena
result that arrives after the window is refused), and again whatever they made due. A rejected
record changes nothing: what fell due is decided again by the next record (a tick is never refused
for what fell due before it). Time is the record's `at`,
never earlier than the latest event's: nothing here reads a clock or draws a random number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

from schemas.tournament import (
    DIRECTOR,
    CreateTournament,
    MatchEnded,
    MatchJoined,
    Register,
    Start,
    Tick,
    TournamentRecord,
    Withdraw,
)

from ..core import Rejected, illegal
from ..registry import get_game, rules_version
from ..timeutil import from_ms, to_ms
from .arena import Arena
from .evolve import evolve
from .formats import Event, Format, ended
from .knockout import Knockout
from .round_robin import RoundRobin
from .state import Pairing, TournamentState
from .swiss import Swiss

FORMATS: dict[str, Format] = {f.name: f for f in (Swiss(), RoundRobin(), Knockout(), Arena())}
#: Events one record may cause at most (a safety net: each due event changes the state, so the
#: loop ends long before; a bug must reject the record, not spin).
MAX_DUE_EVENTS = 10_000


def format_of(state: TournamentState) -> Format:
    return FORMATS[state.settings.format]


def decide(state: TournamentState | None, record: TournamentRecord) -> list[Event]:
    action = record.action
    now = to_ms(record.at) if state is None else max(state.now_ms, to_ms(record.at))
    if action.type == "create":
        if state is not None:
            raise Rejected("tournament_exists", f"tournament {state.tournament_id!r} already exists")
        return [_create(record, action, now)]
    if state is None:
        raise Rejected("unknown_tournament", "no tournament with this id; create it first")
    if state.status == "over":
        raise Rejected("tournament_over", f"the tournament has ended ({state.end_reason}); no more records")
    before, state = advance(state, now)  # what fell due up to the record's time happened first
    if state.status == "over" and action.type != "tick":
        raise Rejected("tournament_over", f"the tournament ended ({state.end_reason}) by {record.at}")
    own = _own(state, record, action, now)
    for event in own:
        state = evolve(state, event)
    return before + own + advance(state, now)[0]


def advance(state: TournamentState, now: int) -> tuple[list[Event], TournamentState]:
    """Every event due at `now`, and the state after them."""
    events: list[Event] = []
    for _ in range(MAX_DUE_EVENTS):
        event = due(state, now)
        if event is None:
            return events, state
        events.append(event)
        state = evolve(state, event)
    raise AssertionError("a tournament kept making events at one moment")


def due(state: TournamentState, now: int) -> Event | None:
    if state.status == "open":
        return start_event(state, now) if now >= to_ms(state.settings.starts_at) else None
    if state.status == "over":
        return None
    for pairing in state.pending():
        left = [p for p in pairing.seats if state.known_entrant(p).status != "active"]
        if left:
            return _decided(state, pairing, _other_seat(pairing, left), "withdrawal", "withdrew", now)
    wait = state.settings.forfeit_wait_s * 1000
    for pairing in state.pending():
        if not pairing.started and now >= pairing.paired_ms + wait:
            absent = [p for p in pairing.seats if p not in pairing.joined]
            how = "double_forfeit" if len(absent) == 2 else "forfeit"
            return _decided(state, pairing, _other_seat(pairing, absent), how, "absent", now, absent)
    return format_of(state).due(state, now)


def wake_at(state: TournamentState | None) -> int | None:
    """The earliest time (epoch ms) at which a `tick` would make an event, or None: the service
    writes a tick then, and none in between."""
    if state is None or state.status == "over":
        return None
    if state.status == "open":
        return to_ms(state.settings.starts_at)
    wait = state.settings.forfeit_wait_s * 1000
    times = [p.paired_ms + wait for p in state.pending() if not p.started]
    own = format_of(state).wake_at(state)
    return min([*times, *([own] if own is not None else [])], default=None)


def start_event(state: TournamentState, now: int) -> Event:
    active = state.active()
    if len(active) < 2:
        return ended(state, "not_enough_players", now)
    seeds = [e.player for e in sorted(active, key=lambda e: (-e.rating, e.player))]
    return {"type": "tournament_started", "seeds": seeds, "at": from_ms(now)}


# --- the records ------------------------------------------------------------------------------------
def _own(
    state: TournamentState,
    record: TournamentRecord,
    action: Register | Withdraw | Start | Tick | MatchJoined | MatchEnded,
    now: int,
) -> list[Event]:
    """The events of the record's own `action`, by its type (a create is decided before: it has no state)."""
    match action:
        case Register():
            return _register(state, record, action, now)
        case Withdraw():
            return _withdraw(state, record, action, now)
        case Start():
            return _start(state, record, now)
        case Tick():
            _check_director(record, "tick")
            return []
        case MatchJoined():
            return _match_joined(state, record, action)
        case MatchEnded():
            return _match_ended(state, record, action, now)
        case _:  # mypy checks that the cases above cover every action but create
            assert_never(action)


def _create(record: TournamentRecord, action: CreateTournament, now: int) -> Event:
    # `rules` only when stated: a create written before versions keeps its `tournament_created` bytes
    unstated = {"type"} if action.rules is not None else {"type", "rules"}
    settings: dict[str, Any] = action.model_dump(mode="json", exclude=unstated)
    if to_ms(settings["starts_at"]) <= now:
        raise illegal(f"starts_at {settings['starts_at']} is not after the create ({record.at})")
    version = 1 if action.rules is None else rules_version(action.game, action.rules)  # else `unknown_rules`
    # Checked by the game, kept as given: every match's create carries them (a normalised form
    # need not be valid input again, e.g. a Strands layout by name).
    get_game(settings["game"], version).normalise_options(settings["options"])
    FORMATS[settings["format"]].check(settings)
    return {
        "type": "tournament_created",
        "tournament_id": record.tournament_id,
        "settings": settings,
        "created_by": record.actor,
        "at": from_ms(now),
    }


def _register(state: TournamentState, record: TournamentRecord, action: Register, now: int) -> list[Event]:
    player = action.player or record.actor
    _check_acts_for(state, record.actor, player, "register")
    if action.bot and not state.settings.bots_allowed:
        raise Rejected("bots_not_allowed", f"bots may not enter {state.settings.name!r} (bots_allowed is false)")
    entrant = state.entrant(player)
    if entrant is not None and entrant.status == "active":
        raise Rejected("already_registered", f"{player!r} is entered already")
    if entrant is None and state.status == "running" and not format_of(state).late_entry:
        raise Rejected("registration_closed", f"a {state.settings.format} tournament takes no entries once started")
    if len(state.active()) >= state.settings.max_players:
        raise Rejected("full", f"the tournament has its {state.settings.max_players} players")
    return [
        {"type": "player_registered", "player": player, "rating": action.rating, "bot": action.bot, "at": from_ms(now)}
    ]


def _withdraw(state: TournamentState, record: TournamentRecord, action: Withdraw, now: int) -> list[Event]:
    player = action.player or record.actor
    _check_acts_for(state, record.actor, player, "withdraw")
    entrant = state.entrant(player)
    if entrant is None or entrant.status != "active":
        raise Rejected("not_registered", f"{player!r} is not entered" + (" any more" if entrant else ""))
    return [{"type": "player_withdrew", "player": player, "absent": False, "at": from_ms(now)}]


def _start(state: TournamentState, record: TournamentRecord, now: int) -> list[Event]:
    if record.actor not in (state.created_by, DIRECTOR):
        raise Rejected("forbidden", f"only the creator ({state.created_by!r}) may start the tournament early")
    if state.status != "open":
        raise Rejected("already_started", "the tournament has started")
    return [start_event(state, now)]


def _match_joined(state: TournamentState, record: TournamentRecord, action: MatchJoined) -> list[Event]:
    _check_director(record, "match_joined")
    pairing = _pending_pairing(state, action.match_id)
    if action.player not in pairing.seats:
        raise Rejected("unknown_pairing", f"{action.player!r} is not paired in match {action.match_id!r}")
    if action.player in pairing.joined:
        return []
    return [{"type": "pairing_joined", "match_id": action.match_id, "player": action.player}]


def _match_ended(state: TournamentState, record: TournamentRecord, action: MatchEnded, now: int) -> list[Event]:
    _check_director(record, "match_ended")
    pairing = _pending_pairing(state, action.match_id)
    for seat, player in enumerate(action.players):
        if player is not None and player != pairing.seats[seat]:
            raise Rejected(
                "unknown_pairing", f"match {action.match_id!r} has seats {list(pairing.seats)}, not {action.players}"
            )
    outcome = action.outcome
    if outcome.reason == "aborted":  # refusing to play: the aborter forfeits (both, if unknown)
        aborters = [action.aborted_by] if action.aborted_by in pairing.seats else list(pairing.seats)
        how = "double_forfeit" if len(aborters) == 2 else "forfeit"
        return [_decided(state, pairing, _other_seat(pairing, aborters), how, "aborted", now)]
    return [_decided(state, pairing, outcome.winner, "played", outcome.reason, now)]


# --- helpers ------------------------------------------------------------------------------------------
def _decided(
    state: TournamentState,
    pairing: Pairing,
    winner: int | None,
    how: str,
    reason: str,
    now: int,
    absent: Sequence[str] = (),
) -> Event:
    points, streaks = format_of(state).points(state, pairing, winner, how)
    event: Event = {
        "type": "pairing_decided",
        "match_id": pairing.match_id,
        "winner": winner,
        "how": how,
        "reason": reason,
        "points": list(points),
        "at": from_ms(now),
    }
    if streaks is not None:
        event["streaks"] = streaks
    if absent:
        event["absent"] = list(absent)
    return event


def _other_seat(pairing: Pairing, losers: list[str]) -> int | None:
    """The seat of the one player not among `losers`, or None when both are."""
    stayed = [seat for seat, player in enumerate(pairing.seats) if player not in losers]
    return stayed[0] if len(stayed) == 1 else None


def _pending_pairing(state: TournamentState, match_id: str) -> Pairing:
    pairing = state.pairing(match_id)
    if pairing is None:
        raise Rejected("unknown_pairing", f"match {match_id!r} is not a pairing of this tournament")
    if pairing.decided is not None:
        raise Rejected(
            "already_decided",
            f"the pairing of match {match_id!r} was decided already ({pairing.decided.how}, {pairing.decided.reason})",
        )
    return pairing


def _check_acts_for(state: TournamentState, actor: str, player: str, what: str) -> None:
    if actor != player and actor not in (state.created_by, DIRECTOR):
        raise Rejected("forbidden", f"{actor!r} may not {what} {player!r}: only the player, the creator or the service")


def _check_director(record: TournamentRecord, what: str) -> None:
    if record.actor != DIRECTOR:
        raise Rejected("forbidden", f"only the tournament service ({DIRECTOR}) writes {what} records")
