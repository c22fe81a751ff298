"""The match lifecycle shared by every game: create, join, start, resign, abort, clocks
(games.clocks: Fischer, or correspondence with vacations: games.vacation) and timeouts, seat and
turn checks. It wraps a game's decider; it knows no rule of any game.

`execute(state, record)` decides and evolves in one pass (what the fold uses);
`decide` here and `evolve` (games.match_state, with the state and its views) are the same logic
split for event-level replay and tests.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from schemas.lifecycle import Adjudicate, Create
from schemas.tournament import DIRECTOR
from schemas.upcast import stated_rules, upcast

from .core import Event, Rejected, describe_validation_error, illegal
from .match_state import LIFECYCLE_VIEW_KEYS, MatchState, count_game_action, evolve, render, view
from .registry import get_game, rules_name, rules_version
from .timeutil import to_ms
from .vacation import end_vacation, take_vacation, vacation_days, why_not_timed_out

__all__ = [  # the state and its views are imported from here too (games.match_state has them)
    "LIFECYCLE_VIEW_KEYS",
    "TIMEKEEPER",
    "MatchState",
    "check_action",
    "count_game_action",
    "create_match",
    "decide",
    "evolve",
    "execute",
    "render",
    "view",
]

TIMEKEEPER = "plylog-timekeeper"
LIFECYCLE_TYPES = frozenset(
    {"create", "join", "resign", "abort", "claim_timeout", "vacation", "end_vacation", "adjudicate"}
)


# --- decide + evolve ----------------------------------------------------------------------------
def execute(
    state: MatchState | None, player: str, action: dict[str, Any], at: str
) -> tuple[list[Event], MatchState, int | None]:
    """Decide the action and evolve the match: (events, new state, acting game seat or None).
    Raises `Rejected`. Record bookkeeping (seq, event ids) is the fold's job."""
    kind = action.get("type")
    if kind == "create":
        if state is not None:
            raise Rejected(
                "match_exists", f"match {state.match_id!r} already exists ({state.game}, created {state.created_at})"
            )
        raise AssertionError("create is handled by `create_match`")
    if state is None:
        raise Rejected("unknown_match", "no match with this id; create it first")
    if state.status == "over":
        reason = state.outcome["reason"] if state.outcome else "over"
        raise Rejected("match_over", f"the match is over ({reason}); no more actions")
    if kind in LIFECYCLE_TYPES:
        return LIFECYCLE[kind](state, player, action, at)
    return _game_action(state, player, action, at)


def check_action(game: str, action: dict[str, Any]) -> None:
    """The checks the fold makes of an action's shape whatever the match's position, for a door
    that refuses early what the rules would refuse anyway: a lifecycle action is its `type` alone (a
    vacation with its days, an adjudication with its winner and reason), a game action one of
    `game`'s action models (a create: `create_match`). Raises Rejected."""
    kind = action.get("type")
    if kind == "adjudicate":
        _parse_adjudicate(action)
    elif kind == "vacation":
        vacation_days(action)
    elif kind in LIFECYCLE_TYPES and kind != "create":
        _only_type(action)
    else:  # version 1's action models: every version of every game has the same ones so far; a
        # version that changes them must pass the match's version here (docs/evolving.md)
        get_game(game).parse_action(action)


def create_match(match_id: str, player: str, action: dict[str, Any], at: str) -> tuple[list[Event], MatchState]:
    try:
        create = Create.model_validate(action)
    except ValidationError as error:
        raise Rejected("malformed", describe_validation_error(error, "create action")) from None
    stated = stated_rules(action)
    # read in its current form (schemas/upcast.py): a create that names no rules is `<game>/1`
    version = rules_version(create.game, upcast("create", action)["rules"])
    game = get_game(create.game, version)
    options = game.normalise_options(create.options)
    created: Event = {
        "type": "match_created",
        "match_id": match_id,
        "game": create.game,
        "seats": list(create.seats),
        "options": options,
        "clock": create.clock.model_dump() if create.clock else None,
        "at": at,
    }
    if create.invited is not None and any(create.invited):
        _check_invitations(create.seats, create.invited)
        created["invited"] = list(create.invited)  # only then: the events of other creates keep their bytes
    if not create.rated:
        created["rated"] = False  # only then, likewise
    if stated:
        created["rules"] = rules_name(create.game, version)  # only then, likewise
    if player == DIRECTOR and player not in create.seats:
        # private: the state knows it, results keep their bytes; only the tournament service's, so
        # the states of every other operator's matches (matchmaker, operator) keep theirs too
        created["_creator"] = player
    return _start_when_full([created], evolve(None, created), at)


def _check_invitations(seats: list[str | None], invited: list[str | None]) -> None:
    for seat, (player, guest) in enumerate(zip(seats, invited, strict=False)):
        if guest is not None and player is not None:
            raise illegal(f"seat {seat} is taken by {player!r}, so it cannot be reserved for {guest!r} too")
    if invited[0] is not None and invited[0] == invited[1]:
        raise illegal(f"both seats are reserved for {invited[0]!r}; reserve one, or name them in both seats")


def _join(
    state: MatchState, player: str, action: dict[str, Any], at: str
) -> tuple[list[Event], MatchState, int | None]:
    _only_type(action)
    if player in state.seats:
        raise Rejected("already_seated", f"{player!r} already holds seat {state.seats.index(player)}")
    if None not in state.seats:
        raise illegal("no open seat: the match is full")
    seat = _seat_for(state, player)
    joined: Event = {"type": "seat_joined", "seat": seat, "player": player}
    return (*_start_when_full([joined], evolve(state, joined), at), None)


def _seat_for(state: MatchState, player: str) -> int:
    """The open seat reserved for `player`, else the first open seat reserved for nobody."""
    invited = state.invited or (None, None)
    open_seats = [seat for seat in (0, 1) if state.seats[seat] is None]
    for seat in open_seats:
        if invited[seat] == player:
            return seat
    for seat in open_seats:
        if invited[seat] is None:
            return seat
    reserved = " and ".join(f"seat {seat} for {invited[seat]!r}" for seat in open_seats)
    raise illegal(f"the open seats are reserved: {reserved}")


def _start_when_full(events: list[Event], state: MatchState, at: str) -> tuple[list[Event], MatchState]:
    """The match starts (`match_started`) in the result that fills its last seat."""
    if None in state.seats:
        return events, state
    started: Event = {"type": "match_started", "seats": list(state.seats), "at": at}
    return [*events, started], evolve(state, started)


def _resign(
    state: MatchState, player: str, action: dict[str, Any], at: str
) -> tuple[list[Event], MatchState, int | None]:
    _only_type(action)
    seat = _own_seat(state, player)
    if state.status == "waiting":
        raise illegal("the match has not started; abort it instead")
    return (*_end(state, {"winner": 1 - seat, "reason": "resign", "scores": state.rules.scores(state.board)}, at), None)


def _abort(
    state: MatchState, player: str, action: dict[str, Any], at: str
) -> tuple[list[Event], MatchState, int | None]:
    _only_type(action)
    _own_seat(state, player)
    if state.game_actions > 0:
        raise illegal("the first move has been made; a match can only be aborted before it (resign instead)")
    return (*_end(state, {"winner": None, "reason": "aborted", "scores": state.rules.scores(state.board)}, at), None)


def _claim_timeout(
    state: MatchState, player: str, action: dict[str, Any], at: str
) -> tuple[list[Event], MatchState, int | None]:
    _only_type(action)
    if player != TIMEKEEPER:
        _own_seat(state, player)
    if state.clock is None:
        raise illegal("this match has no clock")
    if state.status != "active":
        raise Rejected("not_timed_out", "the match has not started; no clock is running")
    now = to_ms(at)
    for seat in state.to_move():
        left = state.clock.left(seat, now, running=True)
        if left <= 0:
            return (
                *_end(state, {"winner": 1 - seat, "reason": "timeout", "scores": state.rules.scores(state.board)}, at),
                None,
            )
    raise Rejected("not_timed_out", why_not_timed_out(state.clock, state.to_move(), now, at))


def _vacation(
    state: MatchState, player: str, action: dict[str, Any], at: str
) -> tuple[list[Event], MatchState, int | None]:
    if state.status == "waiting":
        raise illegal("the match has not started; a vacation pauses a running clock")
    event = take_vacation(state, _own_seat(state, player), action, at)
    return [event], evolve(state, event), None


def _end_vacation(
    state: MatchState, player: str, action: dict[str, Any], at: str
) -> tuple[list[Event], MatchState, int | None]:
    _only_type(action)
    if state.status == "waiting":
        raise illegal("the match has not started; nobody is on vacation")
    event = end_vacation(state, _own_seat(state, player), at)
    return [event], evolve(state, event), None


def _adjudicate(
    state: MatchState, player: str, action: dict[str, Any], at: str
) -> tuple[list[Event], MatchState, int | None]:
    """The tournament service, its creator, ends a match that will not be played out (its pairing was
    decided without it), unrated, but only before the first game action, like an abort: once a move
    is made the match is played out, rated, or a losing player could withdraw their loss away."""
    adjudication = _parse_adjudicate(action)
    if state.creator is None or player != state.creator:
        raise Rejected(
            "forbidden",
            f"{player!r} may not adjudicate this match: only the tournament service ({DIRECTOR}) may, "
            "in a match it created",
        )
    if state.game_actions > 0:
        raise illegal("the first move has been made; the match is played out (by play or its clock)")
    outcome = {"winner": adjudication.winner, "reason": adjudication.reason, "scores": state.rules.scores(state.board)}
    return (*_end(state, outcome, at, rated=False), None)


def _parse_adjudicate(action: dict[str, Any]) -> Adjudicate:
    try:
        return Adjudicate.model_validate(action)
    except ValidationError as error:
        raise Rejected("malformed", describe_validation_error(error, "adjudicate action")) from None


LIFECYCLE = {
    "adjudicate": _adjudicate,
    "join": _join,
    "resign": _resign,
    "abort": _abort,
    "claim_timeout": _claim_timeout,
    "vacation": _vacation,
    "end_vacation": _end_vacation,
}


def _game_action(
    state: MatchState, player: str, action: dict[str, Any], at: str
) -> tuple[list[Event], MatchState, int | None]:
    game = state.rules
    parsed = game.parse_action(action)
    if state.status == "waiting":
        raise illegal("the match has not started: it is waiting for an open seat to be taken")
    seat = _acting_seat(state, player)
    now = to_ms(at)
    if state.clock is not None and state.clock.left(seat, now, running=True) <= 0:
        raise illegal(f"seat {seat}'s clock ran out; the match ends when the timeout is claimed")
    events, board = game.execute(state.board, seat, parsed, now)
    clock = state.clock
    if clock is not None:
        clock = clock.charged(seat, now, game.to_move(board) if clock.needs_next_movers else ())
    state = state.evolved(board=board, game_actions=state.game_actions + 1, clock=clock)
    outcome = game.outcome(board)
    if outcome is not None:
        ended, state = _end(state, outcome, at)
        events = events + ended
    return events, state, seat


def _end(state: MatchState, outcome: dict[str, Any], at: str, rated: bool = True) -> tuple[list[Event], MatchState]:
    ended: Event = {
        "type": "match_ended",
        "winner": outcome["winner"],
        "reason": outcome["reason"],
        "scores": outcome.get("scores"),
        "at": at,
    }
    if not rated:
        ended["rated"] = False  # only then: the events of every other ending keep their bytes
    return [ended], evolve(state, ended)


def _only_type(action: dict[str, Any]) -> None:
    extra = sorted(set(action) - {"type"})
    if extra:
        raise Rejected("malformed", f"{action['type']} action: unknown field(s) {', '.join(extra)}")


def _own_seat(state: MatchState, player: str) -> int:
    """The player's seat: the one to move when they hold both (hot seat)."""
    if player not in state.seats:
        raise Rejected("not_seated", f"{player!r} holds no seat in this match")
    for seat in state.to_move():
        if state.seats[seat] == player:
            return seat
    return state.seats.index(player)


def _acting_seat(state: MatchState, player: str) -> int:
    to_move = state.to_move()
    for seat in to_move:
        if state.seats[seat] == player:
            return seat
    if player not in state.seats:
        raise Rejected("not_seated", f"{player!r} holds no seat in this match")
    waiting_for = " and ".join(f"seat {s} ({state.seats[s]})" for s in to_move) or "nobody"
    raise Rejected("not_your_turn", f"it is not {player!r}'s turn; waiting for {waiting_for}")


def decide(state: MatchState | None, match_id: str, player: str, action: dict[str, Any], at: str) -> list[Event]:
    """The events an action produces (raises `Rejected`)."""
    if action.get("type") == "create" and state is None:
        return create_match(match_id, player, action, at)[0]
    return execute(state, player, action, at)[0]
