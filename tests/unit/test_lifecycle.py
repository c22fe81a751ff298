"""The match lifecycle and the envelope checks of the fold, shared by every game
(Strands on a 7-cell board is the vehicle)."""

from __future__ import annotations

import orjson
import pytest

from games.fold import DIGEST_CHARS, ID_MEMORY, Placement, Replayer, id_digest, read, remembered_at, step
from games.match import TIMEKEEPER, MatchState
from tests.support import Match, record

SIDE2 = {"side": 2, "rows": ["22", "212", "22"]}
OPEN = {"type": "place", "cells": [[1, 0]]}


def new(seats=("alice", "bob"), clock=None) -> Match:
    match = Match()
    extra = {"clock": clock} if clock else {}
    match.create("strands", {"layout": SIDE2}, seats=seats, **extra)
    return match


# --- create, join, start ------------------------------------------------------------------------
def test_create_with_both_seats_starts_at_once():
    match = Match()
    events = match.create("strands", {"layout": SIDE2})
    assert [e["type"] for e in events] == ["match_created", "match_started"]
    assert events[0]["options"] == {"layout": {"id": "custom", **SIDE2}, "seed": None, "placement": "up_to"}
    assert match.view["status"] == "active" and match.view["seq"] == 1 and match.view["to_move"] == [0]


def test_open_seat_waits_for_a_join_then_starts():
    match = new(seats=("alice", None))
    assert match.view["status"] == "waiting" and match.view["to_move"] == []
    assert "not started" in match.rejected("alice", OPEN, "illegal")
    events = match.ok("carol", {"type": "join"})
    assert events[0] == {"type": "seat_joined", "seat": 1, "player": "carol"}
    assert events[1]["type"] == "match_started" and events[1]["seats"] == ["alice", "carol"]
    assert match.view["status"] == "active"


def test_join_checks_seat_and_room():
    match = new(seats=(None, None))
    match.ok("carol", {"type": "join"})
    match.rejected("carol", {"type": "join"}, "already_seated")
    match.ok("dave", {"type": "join"})
    assert match.view["seats"] == ["carol", "dave"]
    assert "no open seat" in match.rejected("erin", {"type": "join"}, "illegal")


def test_a_seat_reserved_for_a_named_player_waits_for_that_player_to_join():
    match = Match()
    events = match.create("strands", {"layout": SIDE2}, seats=("alice", None), invited=[None, "bob"])
    assert events[0]["invited"] == [None, "bob"] and match.view["invited"] == [None, "bob"]
    assert match.view["status"] == "waiting"
    assert "reserved: seat 1 for 'bob'" in match.rejected("mallory", {"type": "join"}, "illegal")
    events = match.ok("bob", {"type": "join"})
    assert events[0] == {"type": "seat_joined", "seat": 1, "player": "bob"} and events[1]["type"] == "match_started"


def test_an_invited_player_takes_their_own_seat_and_others_the_free_one():
    match = Match()
    match.create("strands", {"layout": SIDE2}, seats=(None, None), invited=["bob", None])
    assert match.ok("carol", {"type": "join"})[0]["seat"] == 1
    assert match.ok("bob", {"type": "join"})[0]["seat"] == 0


def test_a_reserved_seat_must_be_open_and_reserved_for_one_player():
    match = Match()
    action = {
        "type": "create",
        "game": "strands",
        "seats": ["alice", "bob"],
        "options": {"layout": SIDE2},
        "invited": [None, "carol"],
    }
    assert "cannot be reserved" in match.rejected("alice", action, "illegal")
    twice = {**action, "seats": [None, None], "invited": ["carol", "carol"]}
    assert "both seats are reserved" in match.rejected("alice", twice, "illegal")


def test_a_create_without_reservations_keeps_the_shape_it_always_had():
    match = new()
    assert "invited" not in match.steps[-1].result["events"][0] and "invited" not in match.view


def test_create_of_an_existing_match_is_rejected_and_a_retry_is_a_duplicate():
    match = new()
    create = {"type": "create", "game": "strands", "seats": ["x", "y"], "options": {"layout": SIDE2}}
    match.rejected("x", create, "match_exists")
    retry = match.replayer.feed(match.records[0])
    assert retry.result["duplicate"] is True and retry.result["status"] == "accepted"
    assert retry.result["seq"] == 1 and retry.result["events"] == []


def test_actions_on_an_unknown_match_are_rejected():
    match = Match("nope")
    result = match.send("alice", OPEN).result
    assert result["reason"]["code"] == "unknown_match" and result["view"] is None and result["seq"] == 0


@pytest.mark.parametrize(
    "action",
    [
        {"type": "create", "game": "chess", "seats": ["a", "b"]},
        {"type": "create", "game": "strands", "seats": ["a"]},
        {"type": "create", "game": "strands", "seats": ["a", "b"], "colour": "red"},
        {"type": "create", "game": "strands", "seats": ["a", "b"], "clock": {"initial_s": -1}},
    ],
)
def test_bad_create_actions_are_malformed(action):
    assert Match().rejected("alice", action, "malformed")


# --- seats and turns ------------------------------------------------------------------------------
def test_only_the_seated_player_to_move_may_act():
    match = new()
    assert "alice" in match.rejected("bob", OPEN, "not_your_turn")
    match.rejected("mallory", OPEN, "not_seated")
    match.ok("alice", OPEN)


def test_hot_seat_player_acts_for_whichever_seat_is_to_move_and_is_unrated():
    match = new(seats=("solo", "solo"))
    match.ok("solo", OPEN)
    match.ok("solo", {"type": "place", "cells": [[0, -1], [1, -1]]})
    assert match.view["to_move"] == [0]
    events = match.ok("solo", {"type": "resign"})
    assert events[0]["winner"] == 1  # seat 0 was to move and resigned
    assert match.steps[-1].outcome["rated"] is False


# --- resign, abort ---------------------------------------------------------------------------------
def test_resign_gives_the_other_seat_the_win_even_out_of_turn():
    match = new()
    match.ok("alice", OPEN)
    events = match.ok("alice", {"type": "resign"})
    assert events == [
        {
            "type": "match_ended",
            "winner": 1,
            "reason": "resign",
            "scores": {"black": [1], "white": []},
            "at": match.view["ended_at"],
        }
    ]
    outcome = match.steps[-1].outcome
    assert outcome["rated"] is True and outcome["players"] == ["alice", "bob"] and outcome["seq"] == 3
    match.rejected("bob", OPEN, "match_over")
    match.rejected("mallory", {"type": "resign"}, "match_over")


def test_resign_needs_a_seat_and_a_started_match():
    match = new(seats=("alice", None))
    match.rejected("bob", {"type": "resign"}, "not_seated")
    assert "abort" in match.rejected("alice", {"type": "resign"}, "illegal")


def test_abort_before_the_first_game_action_ends_unrated():
    match = new()
    events = match.ok("bob", {"type": "abort"})
    assert events[0]["winner"] is None and events[0]["reason"] == "aborted"
    assert match.steps[-1].outcome["rated"] is False


def test_abort_after_the_first_game_action_is_refused():
    match = new()
    match.ok("alice", OPEN)
    assert "resign" in match.rejected("bob", {"type": "abort"}, "illegal")
    match.rejected("mallory", {"type": "abort"}, "not_seated")


def test_lifecycle_actions_take_no_fields():
    match = new()
    assert "unknown field" in match.rejected("alice", {"type": "resign", "why": "bored"}, "malformed")


# --- clocks -----------------------------------------------------------------------------------------
CLOCK = {"initial_s": 10, "increment_s": 2}


def test_clock_charges_the_mover_and_adds_the_increment():
    match = new(clock=CLOCK)
    assert match.view["clock"]["remaining_ms"] == [10000, 10000]
    match.ok("alice", OPEN, advance_ms=3000)
    assert match.view["clock"]["remaining_ms"] == [9000, 10000]
    match.ok("bob", {"type": "place", "cells": [[0, -1]]}, advance_ms=500)
    assert match.view["clock"]["remaining_ms"] == [9000, 11500]


def test_claim_timeout_is_refused_while_time_remains_and_accepted_after():
    match = new(clock=CLOCK)
    match.ok("alice", OPEN, advance_ms=1000)
    message = match.rejected("alice", {"type": "claim_timeout"}, "not_timed_out", advance_ms=9000)
    assert "still has time" in message
    events = match.ok("alice", {"type": "claim_timeout"}, advance_ms=2000)  # bob used 11 s of 10
    assert events[0]["winner"] == 0 and events[0]["reason"] == "timeout"
    assert match.view["clock"]["remaining_ms"][1] <= 0


def test_the_timekeeper_may_claim_without_a_seat_but_others_may_not():
    match = new(clock=CLOCK)
    match.rejected("mallory", {"type": "claim_timeout"}, "not_seated", advance_ms=20000)
    events = match.ok(TIMEKEEPER, {"type": "claim_timeout"})
    assert events[0]["winner"] == 1  # alice (seat 0) was to move and ran out


def test_a_move_after_the_flag_fell_is_refused():
    match = new(clock=CLOCK)
    assert "clock ran out" in match.rejected("alice", OPEN, "illegal", advance_ms=10001)


def test_claim_timeout_on_an_untimed_match_is_illegal():
    assert "no clock" in new().rejected("alice", {"type": "claim_timeout"}, "illegal")


# --- envelope: duplicates, stale, malformed, too large -------------------------------------------------
def test_duplicate_event_id_changes_nothing_and_returns_the_original_seq():
    match = new()
    match.ok("alice", OPEN)
    again = match.replayer.feed(match.records[-1]).result
    assert again["duplicate"] is True and again["seq"] == 2 and again["events"] == []
    assert again["view"] == match.view
    assert match.state.seq == 2


def test_a_duplicate_carries_the_seq_its_event_got_when_first_accepted():
    match = new()
    match.ok("alice", OPEN)  # seq 2
    first = match.records[-1]
    match.ok("bob", {"type": "place", "cells": [[0, -1], [-1, 1]]})  # seq 3
    again = match.replayer.feed(first).result
    assert again["duplicate"] is True and again["seq"] == 2 and again["view"]["seq"] == 3


def test_the_same_event_id_from_another_player_is_another_submission():
    """A remembered id is a duplicate only for the player who sent it: nobody can use up an id
    another player (the timekeeper, a bot) will send, to have its action answered `duplicate`."""
    match = new(clock={"initial_s": 5})
    claim_id = "timeout-1795989606000"
    match.ok("alice", OPEN, event_id=claim_id)  # seat 0 moves with the timekeeper's id
    claim = record("m1", TIMEKEEPER, {"type": "claim_timeout"}, 60, event_id=claim_id)
    result = match.replayer.feed(claim).result
    assert result["duplicate"] is False and result["status"] == "accepted"
    assert result["events"][0]["reason"] == "timeout"


def test_retries_are_recognised_within_the_last_id_memory_accepted_records():
    match = Match()
    match.create("mastermind", {"pegs": 2, "colors": 2, "max_rows": 50, "rounds": 100})
    guesses = []
    while len(match.state.recent_ids) < ID_MEMORY * DIGEST_CHARS or len(guesses) < ID_MEMORY + 5:
        seat = match.state.to_move()[0]
        player = match.state.seats[seat]
        action = match.state.rules.random_action(match.state.board, seat, __import__("random").Random(len(guesses)))
        match.ok(player, action)
        guesses.append(match.records[-1])
    assert len(match.state.recent_ids) == ID_MEMORY * DIGEST_CHARS
    recent = match.replayer.feed(match.records[-ID_MEMORY]).result
    assert recent["duplicate"] is True and recent["seq"] == match.state.seq - ID_MEMORY + 1
    forgotten = match.replayer.feed(match.records[-ID_MEMORY - 1]).result
    assert forgotten["duplicate"] is False


def test_only_a_whole_remembered_digest_counts_not_one_across_two_neighbours():
    first, second = id_digest("alice", "e1"), id_digest("bob", "e2")
    across = (first + second)[DIGEST_CHARS // 2 : DIGEST_CHARS // 2 + DIGEST_CHARS]
    assert remembered_at(first + second, second) == 1 and remembered_at(first + second, first) == 0
    assert remembered_at(first + second, across) is None
    assert remembered_at(across + first + second, across) == 0


def test_a_state_stored_with_its_digests_as_a_list_loads_with_them_joined():
    """States stored before the digests were joined (a worker upgraded over its changelog)."""
    match = new()
    match.ok("alice", OPEN)
    stored = match.state.to_json()
    digests = [stored["recent_ids"][i : i + DIGEST_CHARS] for i in range(0, len(stored["recent_ids"]), DIGEST_CHARS)]
    assert len(digests) == match.state.seq
    loaded = MatchState.from_json({**stored, "recent_ids": digests})
    assert loaded == match.state
    assert step(loaded, read(match.records[-1])).result["duplicate"] is True


def test_a_rejected_event_id_is_decided_again_when_retried():
    match = new()
    first = match.send("bob", OPEN)  # not bob's turn
    assert first.result["status"] == "rejected"
    raw = record("m1", "alice", OPEN, 99, event_id=orjson.loads(match.records[-1])["event_id"])
    assert match.replayer.feed(raw).result["status"] == "accepted"


def test_expected_seq_gives_optimistic_concurrency():
    match = new()
    message = match.rejected("alice", OPEN, "stale", expected_seq=5)
    assert "expected seq 5" in message and "seq 1" in message
    match.ok("alice", OPEN, expected_seq=1)
    assert match.view["seq"] == 2


def test_unknown_record_fields_and_bad_ids_are_malformed():
    replayer = Replayer()
    good = orjson.loads(record("m1", "alice", {"type": "join"}, 1))
    for broken in (
        {**good, "colour": 1},
        {**good, "event_id": "has space"},
        {**good, "at": "yesterday"},
        {**good, "v": 2},
        {k: v for k, v in good.items() if k != "player"},
    ):
        result = replayer.feed(orjson.dumps(broken)).result
        assert result["status"] == "rejected" and result["reason"]["code"] == "malformed", broken


def test_unreadable_lines_give_malformed_results_with_null_ids():
    replayer = Replayer()
    for raw in (b"", b"not json", b"[1,2]", b'"text"', b"\xff\xfe"):
        result = replayer.feed(raw).result
        assert result["reason"]["code"] == "malformed"
        assert result["event_id"] is None and result["match_id"] is None and result["view"] is None


def test_an_oversized_record_is_too_large_and_keeps_its_ids():
    raw = record("m1", "alice", {"type": "join", "pad": "x" * 70000}, 1)
    result = Replayer().feed(raw).result
    assert result["reason"]["code"] == "too_large"
    assert result["event_id"] == "m1-e1" and result["match_id"] == "m1"


@pytest.mark.parametrize("field,value", [("v", True), ("expected_seq", True), ("expected_seq", "1")])
def test_integer_record_fields_are_json_integers(field, value):
    raw = orjson.dumps({**orjson.loads(record("m1", "alice", {"type": "join"}, 1)), field: value})
    result = Replayer().feed(raw).result
    assert result["reason"]["code"] == "malformed" and field in result["reason"]["message"]


def test_integer_action_fields_refuse_booleans_and_strings():
    match = new()
    assert "integer" in match.rejected("alice", {"type": "place", "cells": [["1", "0"]]}, "malformed")
    assert "integer" in match.rejected("alice", {"type": "place", "cells": [[True, 0]]}, "malformed")
    ninja = Match("m2")
    ninja.create("mind_ninja", {"side": 3})
    assert "integer" in ninja.rejected("alice", {"type": "bid", "value": True}, "malformed")
    ninja.ok("alice", {"type": "bid", "value": 1})


def test_a_record_off_its_home_partition_is_rejected_naming_both_partitions():
    match = new()
    raw = record("m1", "bob", {"type": "resign"}, 9)
    result = match.replayer.feed(raw, key=b"m1", placement=Placement("plylog.moves", 8, 1)).result
    assert result["reason"]["code"] == "malformed" and result["seq"] == 0 and result["view"] is None
    message = result["reason"]["message"]
    assert "partition 8" in message and "partition 1" in message and "partitioner=murmur2_random" in message
    assert match.state.status == "active"  # the match on its home partition is untouched


def test_an_unreadable_record_in_its_matchs_log_is_rejected_with_the_match_view():
    """The worker and every refold fold it the same way (audit compares them byte for byte)."""
    match = new()
    home = Placement("plylog.moves", 1, 1)
    for raw in match.records:
        match.replayer.feed(raw, key=b"m1", placement=home)
    broken = orjson.dumps({**orjson.loads(record("m1", "bob", {"type": "resign"}, 9)), "colour": 1})
    in_log = match.replayer.feed(broken, key=b"m1", placement=home).result
    assert in_log["reason"]["code"] == "malformed" and in_log["seq"] == 1 and in_log["view"]["seq"] == 1
    elsewhere = match.replayer.feed(broken, key=b"m1", placement=Placement("plylog.moves", 2, 1)).result
    assert elsewhere["seq"] == 0 and elsewhere["view"] is None


def test_record_key_must_equal_match_id():
    raw = record("m1", "alice", {"type": "join"}, 1)
    parsed = read(raw, key=b"m2")
    result = step(None, parsed).result
    assert result["reason"]["code"] == "malformed" and "differs" in result["reason"]["message"]
    assert read(raw, key=b"m1").match_id == "m1"


def test_result_records_follow_the_contract_shape():
    match = new()
    result = match.steps[-1].result
    assert list(result) == [
        "v",
        "event_id",
        "match_id",
        "player",
        "status",
        "seq",
        "duplicate",
        "events",
        "view",
        "at",
        "source",
    ]
    rejected = match.send("bob", OPEN).result
    assert rejected["events"] == [] and rejected["seq"] == 1 and rejected["view"]["seq"] == 1
    assert set(rejected["reason"]) == {"code", "message"}


def test_an_outcome_the_game_did_not_decide_carries_the_games_scores_so_far():
    match = Match()
    match.create("mastermind", {"pegs": 3})
    match.ok("alice", {"type": "set_code", "code": [0, 1, 2], "salt": "ab" * 8})
    for _ in range(12):
        match.ok("bob", {"type": "guess", "code": [5, 5, 5]})
    assert match.view["totals"] == [0, 14]
    events = match.ok("alice", {"type": "resign"})
    assert events[0]["winner"] == 1 and events[0]["scores"] == [0, 14]


def test_a_wrong_key_is_quoted_in_part_however_large_it_is():
    """Kafka lets a key be as large as a record; a rejection quoting all of it was too large to send."""
    good = record("m1", "alice", {"type": "create", "game": "strands", "seats": ["alice", None]}, 0)
    rejected = step(None, read(good, b"k" * 1_010_000)).result
    assert rejected["reason"]["code"] == "malformed" and len(orjson.dumps(rejected)) < 2_000
    assert "(1010000 characters)" in rejected["reason"]["message"]
    assert "record key 'other' differs" in step(None, read(good, b"other")).result["reason"]["message"]
