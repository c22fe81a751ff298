"""Correspondence clocks (days per move) and vacations, given/when/then through the real fold
(Strands on a 7-cell board is the vehicle; times are the records' `at`, days apart)."""

from __future__ import annotations

import orjson
import pytest

from games import match as lifecycle
from games.clocks import DAY_MS
from games.match import TIMEKEEPER, MatchState
from games.timeutil import from_ms
from schemas.records import ResultRecord
from services.projector.plan import deadline
from tests.support import T0_MS, Match

SIDE2 = {"side": 2, "rows": ["22", "212", "22"]}
HOUR_MS = 3_600_000
ALICE_MOVE = {"type": "place", "cells": [[1, 0]]}
BOB_MOVE = {"type": "place", "cells": [[0, -1]]}
ALICE_AGAIN = {"type": "place", "cells": [[-1, 0], [-1, 1]]}
CLAIM = {"type": "claim_timeout"}


def given_match(days: int = 1, vacation_days: int = 7) -> Match:
    """alice (seat 0, to move) and bob, started at T0 + 1 s."""
    match = Match()
    clock = {"kind": "correspondence", "days_per_move": days, "vacation_days": vacation_days}
    match.create("strands", {"layout": SIDE2}, clock=clock)
    return match


def at(match: Match, ms: int) -> int:
    """The advance that puts the next record at `ms`."""
    return ms - match.clock_ms


def clock(match: Match) -> dict:
    return match.view["clock"]


START = T0_MS + 1000


# --- the rule: days per move, reset by each move ------------------------------------------------------
def test_a_correspondence_match_shows_its_deadline_and_vacation_allowance():
    match = given_match(days=3, vacation_days=5)
    created = match.steps[-1].result["events"][0]
    assert created["clock"] == {"kind": "correspondence", "days_per_move": 3, "vacation_days": 5}
    assert clock(match) == {
        "kind": "correspondence",
        "days_per_move": 3,
        "remaining_ms": [3 * DAY_MS, 3 * DAY_MS],
        "since_ms": START,
        "deadline_ms": START + 3 * DAY_MS,
        "vacation_days_left": [5, 5],
        "vacation_until_ms": [None, None],
    }
    ResultRecord.model_validate(match.steps[-1].result)


def test_the_seat_to_move_times_out_when_its_days_run_out():
    match = given_match(days=1)
    message = match.rejected(TIMEKEEPER, CLAIM, "not_timed_out", advance_ms=at(match, START + DAY_MS - 1))
    assert "seat 0: 0.000 day(s)" in message
    events = match.ok(TIMEKEEPER, CLAIM, advance_ms=1)
    assert events[0]["winner"] == 1 and events[0]["reason"] == "timeout"
    assert match.view["clock"]["remaining_ms"] == [0, DAY_MS] and match.view["clock"]["deadline_ms"] is None


def test_a_move_gives_the_mover_the_full_days_again_and_starts_the_other_seats():
    match = given_match(days=2)
    match.ok("alice", ALICE_MOVE, advance_ms=at(match, START + 47 * HOUR_MS))  # 1 h to spare: not kept
    moved = START + 47 * HOUR_MS
    assert clock(match)["remaining_ms"] == [2 * DAY_MS, 2 * DAY_MS]
    assert clock(match)["since_ms"] == moved and clock(match)["deadline_ms"] == moved + 2 * DAY_MS
    match.ok("bob", BOB_MOVE, advance_ms=HOUR_MS)  # quick: still only the full days, nothing banked
    assert clock(match)["remaining_ms"] == [2 * DAY_MS, 2 * DAY_MS]
    assert clock(match)["deadline_ms"] == moved + HOUR_MS + 2 * DAY_MS


def test_a_move_after_the_days_ran_out_is_refused_and_the_claim_ends_the_match():
    match = given_match(days=1)
    assert "clock ran out" in match.rejected("alice", ALICE_MOVE, "illegal", advance_ms=at(match, START + DAY_MS))
    assert match.ok("bob", CLAIM)[0]["winner"] == 1


# --- vacation --------------------------------------------------------------------------------------------
def test_vacation_pauses_the_seat_to_move_and_its_clock_resumes_when_it_ends():
    match = given_match(days=1)
    taken = START + 10 * HOUR_MS
    events = match.ok("alice", {"type": "vacation", "days": 2}, advance_ms=at(match, taken))
    until = taken + 2 * DAY_MS
    assert events == [{"type": "vacation_started", "seat": 0, "days": 2, "until": from_ms(until), "at": from_ms(taken)}]
    assert clock(match)["remaining_ms"][0] == 14 * HOUR_MS  # charged up to the vacation
    assert clock(match)["since_ms"] == until and clock(match)["deadline_ms"] == until + 14 * HOUR_MS
    assert clock(match)["vacation_days_left"] == [5, 7] and clock(match)["vacation_until_ms"] == [until, None]
    message = match.rejected(TIMEKEEPER, CLAIM, "not_timed_out", advance_ms=at(match, START + DAY_MS + HOUR_MS))
    assert f"seat 0 is on vacation until {from_ms(until)}" in message and "0.58 day(s)" in message
    match.rejected(TIMEKEEPER, CLAIM, "not_timed_out", advance_ms=at(match, until + 14 * HOUR_MS - 1))
    assert match.ok(TIMEKEEPER, CLAIM, advance_ms=1)[0]["reason"] == "timeout"  # the vacation ended by itself


def test_ending_a_vacation_early_gives_back_the_days_not_begun_and_restarts_the_clock():
    match = given_match(days=1)
    taken = START + 10 * HOUR_MS
    match.ok("alice", {"type": "vacation", "days": 3}, advance_ms=at(match, taken))
    back = taken + DAY_MS + 5 * HOUR_MS  # in the vacation's second day: its third goes back
    events = match.ok("alice", {"type": "end_vacation"}, advance_ms=at(match, back))
    assert events == [{"type": "vacation_ended", "seat": 0, "days_back": 1, "at": from_ms(back)}]
    assert clock(match)["vacation_days_left"] == [5, 7] and clock(match)["vacation_until_ms"] == [None, None]
    assert clock(match)["since_ms"] == back and clock(match)["deadline_ms"] == back + 14 * HOUR_MS


def test_a_vacation_taken_while_the_other_seat_moves_starts_its_clock_at_the_vacations_end():
    match = given_match(days=1)
    match.ok("bob", {"type": "vacation", "days": 2}, advance_ms=at(match, START + HOUR_MS))
    assert clock(match)["deadline_ms"] == START + DAY_MS  # alice's clock is untouched
    moved = START + 5 * HOUR_MS
    match.ok("alice", ALICE_MOVE, advance_ms=at(match, moved))
    until = START + HOUR_MS + 2 * DAY_MS
    assert clock(match)["since_ms"] == until and clock(match)["deadline_ms"] == until + DAY_MS
    match.ok("bob", BOB_MOVE, advance_ms=HOUR_MS)  # moving on vacation is allowed and ends nothing
    assert (
        clock(match)["vacation_until_ms"] == [None, until] and clock(match)["deadline_ms"] == moved + HOUR_MS + DAY_MS
    )


def test_a_vacation_beyond_the_allowance_is_refused_with_the_days_left():
    match = given_match(days=1, vacation_days=2)
    message = match.rejected("alice", {"type": "vacation", "days": 3}, "illegal", advance_ms=HOUR_MS)
    assert message == "seat 0 has 2 vacation day(s) left in this match and asked for 3"
    match.ok("alice", {"type": "vacation", "days": 2})
    after = clock(match)["vacation_until_ms"][0]
    message = match.rejected("alice", {"type": "vacation", "days": 1}, "illegal", advance_ms=at(match, after))
    assert message.endswith("asked for 1; the allowance is used up")


def test_claim_timeout_is_refused_during_the_vacation_even_after_the_days_per_move():
    match = given_match(days=1)
    match.ok("alice", {"type": "vacation", "days": 7}, advance_ms=at(match, START + 23 * HOUR_MS))
    for day in (1, 3, 6):
        message = match.rejected("bob", CLAIM, "not_timed_out", advance_ms=at(match, START + day * DAY_MS + HOUR_MS))
        assert "seat 0 is on vacation until" in message


@pytest.mark.parametrize(
    ("setup", "action", "expected"),
    [
        ({"clock": {"initial_s": 600}}, {"type": "vacation", "days": 1}, "this match has a Fischer clock"),
        ({}, {"type": "vacation", "days": 1}, "this match has no clock"),
        ({"seats": ("alice", None)}, {"type": "vacation", "days": 1}, "the match has not started"),
        ({}, {"type": "end_vacation"}, "this match has no clock"),
    ],
)
def test_vacations_need_a_running_correspondence_clock(setup, action, expected):
    match = Match()
    seats = setup.pop("seats", ("alice", "bob"))
    match.create("strands", {"layout": SIDE2}, seats=seats, **setup)
    assert expected in match.rejected("alice", action, "illegal")


def test_one_vacation_at_a_time_and_only_a_vacationer_comes_back():
    match = given_match(days=1)
    assert match.rejected("alice", {"type": "end_vacation"}, "illegal") == "seat 0 is not on vacation"
    match.ok("alice", {"type": "vacation", "days": 1})
    assert "on vacation until" in match.rejected("alice", {"type": "vacation", "days": 1}, "illegal")
    ended = clock(match)["vacation_until_ms"][0]
    message = match.rejected("alice", {"type": "end_vacation"}, "illegal", advance_ms=at(match, ended))
    assert message == f"seat 0 is not on vacation (the last one ended at {from_ms(ended)})"
    match.rejected("mallory", {"type": "vacation", "days": 1}, "not_seated")


@pytest.mark.parametrize("days", [0, 31, True, "2", 1.5])
def test_vacation_days_are_a_whole_number_from_1_to_30(days):
    match = given_match(days=1)
    assert match.rejected("alice", {"type": "vacation", "days": days}, "malformed").startswith("vacation action")
    assert match.rejected("alice", {"type": "end_vacation", "days": 1}, "malformed")


@pytest.mark.parametrize(
    "clock",
    [
        {"kind": "correspondence", "days_per_move": 4},
        {"kind": "correspondence", "days_per_move": True},
        {"kind": "correspondence", "days_per_move": 1, "vacation_days": 31},
        {"kind": "correspondence"},
        {"kind": "fischer", "initial_s": 60},
        {"kind": "correspondence", "days_per_move": 1, "initial_s": 60},
    ],
)
def test_bad_correspondence_clocks_are_malformed(clock):
    match = Match()
    action = {"type": "create", "game": "strands", "seats": ["a", "b"], "options": {"layout": SIDE2}, "clock": clock}
    assert "clock." in match.rejected("a", action, "malformed")


def test_a_resignation_during_a_vacation_stops_the_clock_with_the_time_left():
    match = given_match(days=1)
    match.ok("alice", {"type": "vacation", "days": 2}, advance_ms=at(match, START + 6 * HOUR_MS))
    match.ok("bob", {"type": "resign"}, advance_ms=DAY_MS)
    assert clock(match)["remaining_ms"] == [18 * HOUR_MS, DAY_MS] and clock(match)["since_ms"] is None


# --- event-level replay and the projected deadline --------------------------------------------------------
def played_with_vacations() -> Match:
    match = given_match(days=2, vacation_days=5)
    match.ok("bob", {"type": "vacation", "days": 2}, advance_ms=HOUR_MS)
    match.ok("alice", ALICE_MOVE, advance_ms=3 * HOUR_MS)
    match.ok("alice", {"type": "vacation", "days": 1}, advance_ms=HOUR_MS)
    match.ok("bob", {"type": "end_vacation"}, advance_ms=DAY_MS)
    match.ok("bob", BOB_MOVE, advance_ms=5 * HOUR_MS)
    match.ok("alice", ALICE_AGAIN, advance_ms=DAY_MS)
    match.ok(TIMEKEEPER, CLAIM, advance_ms=2 * DAY_MS)
    return match


def test_evolve_over_the_events_rebuilds_what_the_fold_built():
    match = played_with_vacations()
    rebuilt = None
    for raw, taken in zip(match.records, match.steps, strict=True):
        for event in taken.result["events"]:
            rebuilt = lifecycle.evolve(rebuilt, event)
        if taken.state.game_actions > rebuilt.game_actions:
            player = taken.result["player"]
            seat = next(s for s in (0, 1) if rebuilt.seats[s] == player)
            rebuilt = lifecycle.count_game_action(rebuilt, seat, taken.result["at"])
        assert rebuilt.evolved(seq=taken.state.seq, recent_ids=taken.state.recent_ids) == taken.state, raw
        assert MatchState.from_json(orjson.loads(taken.state.json_bytes())) == taken.state  # the worker's table
    assert match.state.outcome["reason"] == "timeout"


def test_the_projectors_deadline_is_the_views_at_every_step():
    match = played_with_vacations()
    for taken in match.steps:
        view = taken.result["view"]
        ResultRecord.model_validate(taken.result)
        assert deadline(view) == view["clock"]["deadline_ms"]
    views = [s.result["view"] for s in match.steps]
    assert [v["clock"]["deadline_ms"] is None for v in views] == [False] * (len(views) - 1) + [True]
