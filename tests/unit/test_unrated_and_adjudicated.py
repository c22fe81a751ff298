"""Unrated matches (a create that says `rated: false`) and adjudication (the tournament service,
when it created a match without a seat, ends it unrated before its first move): given a match, when
an action comes, then its events, outcome and state. Other matches keep their bytes
(tests/unit/test_clock_compat.py)."""

from __future__ import annotations

import orjson

from games.match import MatchState
from schemas.tournament import DIRECTOR
from tests.support import Match

SIDE2 = {"side": 2, "rows": ["22", "212", "22"]}
OPEN = {"type": "place", "cells": [[1, 0]]}


def create(match: Match, creator: str = "alice", seats=("alice", "bob"), **extra) -> list[dict]:
    action = {"type": "create", "game": "strands", "seats": list(seats), "options": {"layout": SIDE2}, **extra}
    return match.ok(creator, action)


def test_an_unrated_create_says_so_in_its_event_view_state_and_outcome():
    match = Match()
    events = create(match, rated=False)
    assert events[0]["rated"] is False and match.view["rated"] is False
    assert b'"unrated":true' in match.state.json_bytes()
    match.ok("alice", {"type": "resign"})
    outcome = match.steps[-1].outcome
    assert outcome["rated"] is False and outcome["outcome"]["reason"] == "resign"
    assert match.view["rated"] is False


def test_a_rated_create_keeps_the_bytes_it_always_had():
    for extra in ({}, {"rated": True}):
        match = Match()
        events = create(match, **extra)
        assert "rated" not in events[0] and "rated" not in match.view
        state = match.state.json_bytes()
        assert b"unrated" not in state and b"creator" not in state
        match.ok("alice", {"type": "resign"})
        assert match.steps[-1].outcome["rated"] is True and "rated" not in match.steps[-1].result["events"][0]


def test_an_unrated_state_survives_its_json_round_trip():
    match = Match()
    create(match, rated=False)
    again = MatchState.from_json(orjson.loads(match.state.json_bytes()))
    assert again == match.state and again.unrated and not again.rated


def test_rated_must_be_a_boolean():
    match = Match()
    action = {"type": "create", "game": "strands", "seats": ["a", "b"], "options": {"layout": SIDE2}, "rated": "no"}
    assert "rated" in match.rejected("a", action, "malformed")


# --- adjudicate ---------------------------------------------------------------------------------------
def director_match() -> Match:
    match = Match("cup-r1b1")
    events = create(match, creator=DIRECTOR)
    assert "_creator" not in events[0] and "creator" not in events[0]  # private: results keep their bytes
    assert match.state.creator == DIRECTOR
    return match


def test_the_creator_operator_adjudicates_a_started_match_before_its_first_move_unrated():
    match = director_match()
    assert match.view["status"] == "active"  # both seats taken: it started, nobody has moved
    events = match.ok(DIRECTOR, {"type": "adjudicate", "winner": 0, "reason": "withdrawal"})
    assert [e["type"] for e in events] == ["match_ended"]
    assert events[0]["winner"] == 0 and events[0]["reason"] == "withdrawal" and events[0]["rated"] is False
    outcome = match.steps[-1].outcome
    assert outcome["rated"] is False and outcome["outcome"]["winner"] == 0
    assert outcome["outcome"]["reason"] == "withdrawal"
    assert match.view["status"] == "over" and match.view["rated"] is False
    match.rejected("alice", OPEN, "match_over")  # nobody plays on


def test_after_the_first_move_a_match_is_played_out_rated_whatever_the_operator_says():
    """A losing player who withdraws from the tournament cannot make the service end their match
    unrated: once a move is made, `adjudicate` is refused like `abort`, and the loss is rated."""
    match = director_match()
    match.ok("alice", OPEN)
    message = match.rejected(DIRECTOR, {"type": "adjudicate", "winner": 0, "reason": "withdrawal"}, "illegal")
    assert "first move has been made" in message and "played out" in message
    assert match.view["status"] == "active" and "rated" not in match.view
    match.ok("bob", {"type": "resign"})
    outcome = match.steps[-1].outcome
    assert outcome["rated"] is True and outcome["outcome"]["winner"] == 0 and outcome["outcome"]["reason"] == "resign"


def test_a_double_forfeit_is_adjudicated_to_nobody():
    match = director_match()
    events = match.ok(DIRECTOR, {"type": "adjudicate", "winner": None, "reason": "double_forfeit"})
    assert events[0]["winner"] is None and match.steps[-1].outcome["rated"] is False


def test_nobody_else_may_adjudicate():
    match = director_match()
    for player in ("alice", "bob", "mallory", "plylog-matchmaker"):
        message = match.rejected(player, {"type": "adjudicate", "winner": 0, "reason": "forfeit"}, "forbidden")
        assert DIRECTOR in message
    assert match.view["status"] == "active"


def test_a_seated_or_guest_creator_may_not_adjudicate_its_own_match():
    match = Match()
    create(match, creator="alice", seats=("alice", "bob"))
    assert match.state.creator is None
    match.rejected("alice", {"type": "adjudicate", "winner": 0, "reason": "forfeit"}, "forbidden")
    guest = Match("m2")
    create(guest, creator="carol", seats=("alice", "bob"))  # a player who is not an operator stores nothing
    assert guest.state.creator is None
    guest.rejected("carol", {"type": "adjudicate", "winner": 0, "reason": "forfeit"}, "forbidden")


def test_only_the_tournament_service_is_kept_as_creator_not_other_operators():
    """The matchmaker's and the operator's seatless creates store no creator: their matches' states
    keep the bytes they had, and those operators may not adjudicate them."""
    for operator in ("plylog-matchmaker", "plylog-operator"):
        match = Match(f"by-{operator}")
        create(match, creator=operator, seats=("alice", "bob"))
        assert match.state.creator is None and b"creator" not in match.state.json_bytes()
        message = match.rejected(operator, {"type": "adjudicate", "winner": 0, "reason": "forfeit"}, "forbidden")
        assert DIRECTOR in message


def test_an_adjudication_must_name_a_known_reason_and_seat():
    match = director_match()
    match.rejected(DIRECTOR, {"type": "adjudicate", "winner": 0, "reason": "because"}, "malformed")
    match.rejected(DIRECTOR, {"type": "adjudicate", "winner": 2, "reason": "forfeit"}, "malformed")
    match.rejected(DIRECTOR, {"type": "adjudicate", "reason": "forfeit"}, "malformed")


def test_an_adjudicated_match_takes_no_second_ending():
    match = director_match()
    match.ok(DIRECTOR, {"type": "adjudicate", "winner": 1, "reason": "forfeit"})
    match.rejected(DIRECTOR, {"type": "adjudicate", "winner": 0, "reason": "forfeit"}, "match_over")
