"""Tournament records through the fold: creation checks, who may do what, registration, the
reason codes, duplicates, unreadable records, the ids of the matches, and time from records."""

from __future__ import annotations

import os
import subprocess
import sys
import typing
from pathlib import Path

import orjson
import pytest

from games.fold import Replayer
from games.timeutil import from_ms
from games.tournaments import create_record, match_id_of, read, step, wake_at
from schemas.records import MoveRecord
from schemas.tournament import DIRECTOR, TOURNAMENT_REJECTION_MEANINGS, TournamentRejectionCode
from tests.schema_check import check
from tests.tournament_support import START, T0, Tourney

SWISS = {
    "type": "create",
    "name": "Cup",
    "format": "swiss",
    "game": "strands",
    "starts_at": from_ms(START),
    "clock": {"initial_s": 300},
}


def test_every_reason_code_has_a_meaning():
    assert set(TOURNAMENT_REJECTION_MEANINGS) == set(typing.get_args(TournamentRejectionCode))


# --- create ----------------------------------------------------------------------------------------
def test_create_fills_every_default_and_keeps_the_checked_game_options():
    t = Tourney()
    [created] = t.ok("alice", {**SWISS, "rounds": 5}, at=T0)
    check("tournament", t.lines[-1])
    assert created["type"] == "tournament_created" and created["created_by"] == "alice"
    settings = created["settings"]
    assert settings["rounds"] == 5 and settings["rated"] is True and settings["bots_allowed"] is False
    assert settings["options"] == {}  # as given: each match's create fills in the game's defaults
    assert t.state.status == "open"


@pytest.mark.parametrize(
    "change,words",
    [
        ({}, "swiss tournaments need rounds"),
        ({"rounds": 3, "duration_s": 600}, "take no duration_s"),
        ({"format": "arena"}, "arena tournaments need duration_s"),
        ({"format": "knockout", "rounds": 3}, "take no rounds"),
        ({"rounds": 3, "max_players": 200}, "at most 128"),
        ({"rounds": 3, "game": "mastermind", "options": {"rounds": 3}}, "rounds must be even"),
        ({"rounds": 3, "starts_at": from_ms(T0)}, "is not after the create"),
    ],
)
def test_create_refuses_settings_that_do_not_fit_the_format_or_the_game(change, words):
    t = Tourney()
    assert words in t.rejected("alice", {**SWISS, **change}, "illegal", at=T0)
    assert t.state is None


def test_a_clockless_create_from_before_the_clock_rule_folds_as_it_did():
    """Every old log folds as it did: the gateway refuses a create without a clock (its test:
    test_tournament_service_units.py), the fold does not. Such a tournament's matches have no clock,
    and only `forfeit_wait_s` decides its absent players (docs/tournaments.md, "Players who leave")."""
    t = Tourney()
    no_clock = {key: value for key, value in SWISS.items() if key != "clock"}
    [created] = t.ok("alice", {**no_clock, "rounds": 1, "forfeit_wait_s": 30}, at=T0)
    assert created["settings"]["clock"] is None
    t.register("a", "b")
    t.start()
    [pairing] = t.pending()
    assert "clock" not in create_record(t.state, pairing)["action"]
    [forfeited] = t.tick(pairing.paired_ms + 30_000)[:1]  # nobody joined: both forfeit
    assert forfeited["type"] == "pairing_decided" and forfeited["how"] == "double_forfeit"


def test_a_correspondence_clock_is_a_clock_every_match_gets():
    t = Tourney()
    days = {"kind": "correspondence", "days_per_move": 3}
    t.create("knockout", clock=days)
    t.register("a", "b")
    t.start()
    record = create_record(t.state, t.pending()[0])
    assert record["action"]["clock"] == {**days, "vacation_days": 7}
    assert Replayer().feed(orjson.dumps(record)).state.clock is not None


def test_create_checks_types_and_ids_as_the_schema_says():
    t = Tourney()
    assert t.rejected("alice", {**SWISS, "rounds": "3"}, "malformed", at=T0)
    assert t.rejected("alice", {**SWISS, "rounds": 3, "colour": "red"}, "malformed", at=T0)
    long_id = Tourney("x" * 41)
    assert "tournament_id" in long_id.rejected("alice", {**SWISS, "rounds": 3}, "malformed", at=T0)


def test_a_second_create_and_records_before_any_create_are_refused():
    t = Tourney()
    t.rejected("bob", {"type": "register"}, "unknown_tournament")
    t.ok("alice", {**SWISS, "rounds": 3}, at=T0)
    t.rejected("bob", {**SWISS, "rounds": 3}, "tournament_exists")


# --- registration and permissions ---------------------------------------------------------------
def test_players_register_themselves_and_only_the_creator_or_service_enters_others():
    t = Tourney()
    t.create("swiss", creator="alice")
    t.register("bob")
    t.rejected("bob", {"type": "register"}, "already_registered")
    assert "may not register 'carol'" in t.rejected("bob", {"type": "register", "player": "carol"}, "forbidden")
    t.ok("alice", {"type": "register", "player": "carol", "rating": 1700})
    t.ok(DIRECTOR, {"type": "register", "player": "dave"})
    t.rejected("bob", {"type": "withdraw", "player": "carol"}, "forbidden")
    assert [e.player for e in t.state.entrants] == ["bob", "carol", "dave"]
    assert t.state.entrant("carol").rating == 1700


def test_bots_enter_only_where_the_tournament_allows_them():
    closed, open_ = Tourney(), Tourney()
    closed.create("swiss")
    closed.rejected(DIRECTOR, {"type": "register", "player": "bot:greedy", "bot": True}, "bots_not_allowed")
    open_.create("swiss", bots_allowed=True)
    open_.register("bot:greedy", bot=True)
    assert open_.state.entrant("bot:greedy").bot


def test_a_full_tournament_refuses_entries_until_someone_leaves():
    t = Tourney()
    t.create("swiss", max_players=2)
    t.register("a", "b")
    t.rejected("c", {"type": "register"}, "full")
    t.ok("a", {"type": "withdraw"})
    t.register("c")
    t.rejected("a", {"type": "register"}, "full")


def test_withdraw_needs_an_active_entry():
    t = Tourney()
    t.create("swiss")
    t.rejected("a", {"type": "withdraw"}, "not_registered")
    t.register("a")
    t.ok("a", {"type": "withdraw"})
    assert "any more" in t.rejected("a", {"type": "withdraw"}, "not_registered")
    t.register("a")  # back before the start
    assert t.state.entrant("a").status == "active"


def test_only_the_service_writes_ticks_and_match_results():
    t = Tourney()
    t.create("swiss")
    for action in ({"type": "tick"}, {"type": "match_joined", "match_id": "cup-r1b1", "player": "a"}):
        assert DIRECTOR in t.rejected("mallory", action, "forbidden")


def test_the_creator_may_start_early_and_nobody_else():
    t = Tourney()
    t.create("swiss", creator="alice")
    t.register("a", "b")
    t.rejected("a", {"type": "start"}, "forbidden")
    events = t.ok("alice", {"type": "start"}, at=T0 + 1000)
    assert [e["type"] for e in events] == ["tournament_started", "round_paired"]
    t.rejected("alice", {"type": "start"}, "already_started")


def test_a_tournament_that_starts_with_one_player_ends_at_once():
    t = Tourney()
    t.create("knockout")
    t.register("a")
    [ended] = t.start()
    assert ended["type"] == "tournament_ended" and ended["reason"] == "not_enough_players"
    t.rejected("b", {"type": "register"}, "tournament_over")


def test_formats_without_late_entry_close_registration_at_the_start():
    for fmt, late in (("swiss", True), ("arena", True), ("round_robin", False), ("knockout", False)):
        t = Tourney()
        t.create(fmt)
        t.register("a", "b", "c")
        t.start()
        if late:
            t.register("late")
        else:
            t.rejected("late", {"type": "register"}, "registration_closed")


def test_what_fell_due_before_a_record_happens_first():
    t = Tourney()
    t.create("knockout")
    t.register("a", "b")
    # No tick was written at the start time; a late entry stamped after it finds the start done.
    assert "once started" in t.rejected("late", {"type": "register"}, "registration_closed", at=START + 5)
    assert t.state.status == "open"  # a rejected record changes nothing: the next record starts it
    [started, paired] = t.tick()
    assert started["at"] == paired["at"] == from_ms(START + 5)


def test_an_arena_result_after_the_window_is_refused_even_before_the_end_is_recorded():
    t = Tourney()
    t.create("arena", duration_s=60)
    t.register("a", "b")
    t.start()
    [pairing] = t.pending()
    t.join(pairing)
    outcome = {"winner": 0, "reason": "largest_group"}
    late = {"type": "match_ended", "match_id": pairing.match_id, "players": list(pairing.seats), "outcome": outcome}
    assert "ended (completed) by" in t.rejected(DIRECTOR, late, "tournament_over", at=START + 60_000)
    [ended] = t.tick()  # a tick is never refused for what fell due before it
    assert ended["type"] == "tournament_ended" and t.row("a")["points"] == 0


# --- results fed back ----------------------------------------------------------------------------
def test_results_for_unknown_or_decided_pairings_are_refused():
    t = Tourney()
    t.create("swiss")
    t.register("a", "b", "c", "d")
    t.start()
    pairing = t.pending()[0]
    t.rejected(DIRECTOR, {"type": "match_joined", "match_id": "cup-r9b9", "player": "a"}, "unknown_pairing")
    t.rejected(DIRECTOR, {"type": "match_joined", "match_id": pairing.match_id, "player": "z"}, "unknown_pairing")
    outcome = {"winner": 0, "reason": "largest_group"}
    wrong = {"type": "match_ended", "match_id": pairing.match_id, "players": ["z", None], "outcome": outcome}
    assert "has seats" in t.rejected(DIRECTOR, wrong, "unknown_pairing")
    t.play(pairing, pairing.seats[0])
    again = {**wrong, "players": list(pairing.seats)}
    assert "decided already (played" in t.rejected(DIRECTOR, again, "already_decided")


def test_a_join_fed_back_twice_changes_nothing_the_second_time():
    t = Tourney()
    t.create("swiss")
    t.register("a", "b")
    t.start()
    [pairing] = t.pending()
    action = {"type": "match_joined", "match_id": pairing.match_id, "player": "a"}
    assert t.ok(DIRECTOR, action) == [{"type": "pairing_joined", "match_id": pairing.match_id, "player": "a"}]
    assert t.ok(DIRECTOR, action) == []


# --- the fold ---------------------------------------------------------------------------------------
def test_a_retried_record_is_answered_duplicate_with_its_first_seq():
    t = Tourney()
    t.create("swiss")
    t.register("a")
    first = t.results[-1]
    retry = step(t.state, read(t.lines[-1]))
    assert retry.result["duplicate"] and retry.result["status"] == "accepted"
    assert retry.result["seq"] == first["seq"] == 2 and retry.result["events"] == [] and not retry.changed


def test_unreadable_records_are_rejected_malformed_with_what_could_be_salvaged():
    assert step(None, read(b"{nope")).result["reason"]["code"] == "malformed"
    assert "JSON list" in step(None, read(b"[1]")).result["reason"]["message"]
    record = {"v": 1, "event_id": "e1", "tournament_id": "cup", "actor": "a", "at": from_ms(T0)}
    bad = step(None, read(orjson.dumps({**record, "action": {"type": "dance"}}))).result
    assert bad["reason"]["code"] == "malformed" and bad["event_id"] == "e1" and bad["tournament_id"] == "cup"
    keyed = read(orjson.dumps({**record, "action": {"type": "tick"}}), key=b"other")
    assert "key" in step(None, keyed).result["reason"]["message"]
    huge = orjson.dumps({**record, "action": {"type": "tick", "pad": "x" * 70_000}})
    assert step(None, read(huge)).result["reason"]["code"] == "too_large"


def test_time_never_runs_backwards_a_late_stamped_record_does_not_undo_the_start():
    t = Tourney()
    t.create("swiss")
    t.register("a", "b")
    t.start()
    t.register("c")  # stamped before the start by a slow writer: still a late entry, at the state's time
    t.submit("c", {"type": "withdraw"}, at=T0 + 5)
    assert t.events[-1]["at"] == from_ms(START) and t.state.now_ms == START


# --- matches and ticks ----------------------------------------------------------------------------
def test_match_ids_and_create_records_are_derived_from_tournament_round_and_board():
    t = Tourney("spring-open")
    t.create("swiss", clock={"initial_s": 60, "increment_s": 1})
    t.register("a", "b", "c", "d")
    t.start()
    ids = sorted(p.match_id for p in t.pending())
    assert ids == ["spring-open-r1b1", "spring-open-r1b2"]
    assert match_id_of("x" * 40, 99999, 128, 6) == "x" * 40 + "-r99999b128g6"
    pairing = t.pending()[0]
    record = create_record(t.state, pairing)
    assert record == create_record(t.state, pairing)  # the same bytes after any restart
    parsed = MoveRecord.model_validate(record)
    assert parsed.event_id == f"{pairing.match_id}:create" and parsed.player == DIRECTOR
    assert record["action"]["seats"] == list(pairing.seats) and record["action"]["clock"]["initial_s"] == 60
    replayer = Replayer()
    first = replayer.feed(orjson.dumps(record))
    assert first.result["status"] == "accepted" and first.state.status == "active"
    again = replayer.feed(orjson.dumps(record))
    assert again.result["duplicate"]  # a restarted service writing it again makes no second match
    invited = create_record(t.state, pairing, invite=True)["action"]
    assert invited["seats"] == [None, None] and invited["invited"] == list(pairing.seats)
    assert Replayer().feed(orjson.dumps({**record, "action": invited})).state.status == "waiting"


def test_an_unrated_tournament_creates_unrated_matches_and_a_rated_one_rated_matches():
    for rated in (False, True):
        t = Tourney()
        t.create("knockout", clock={"initial_s": 60}, rated=rated)
        t.register("a", "b")
        t.start()
        record = create_record(t.state, t.pending()[0])
        assert record["action"].get("rated", True) is rated and ("rated" in record["action"]) is not rated
        replayer = Replayer()
        created = replayer.feed(orjson.dumps(record))
        resign = {**record, "event_id": "r", "player": record["action"]["seats"][0], "action": {"type": "resign"}}
        ended = replayer.feed(orjson.dumps(resign))
        assert created.state.rated is rated and ended.outcome["rated"] is rated


def test_wake_at_names_the_next_moment_a_tick_matters():
    t = Tourney()
    t.create("swiss", forfeit_wait_s=30, round_pause_s=10)
    assert wake_at(t.state) == START
    t.register("a", "b", "c", "d")
    t.start()
    first = t.pending()[0]
    assert wake_at(t.state) == START + 30_000  # the forfeit wait of the unstarted pairings
    for pairing in t.pending():
        t.play(pairing, pairing.seats[0])
    assert t.state.round_closed and wake_at(t.state) == t.now + 10_000  # the pause after the round
    assert t.tick(t.now + 9_999) == []
    assert [e["type"] for e in t.tick(t.now + 1)] == ["round_paired"]
    assert first.match_id.endswith("r1b1")


REPLAY_SCRIPT = """
import hashlib, random, orjson
from tests.tournament_support import Tourney, run_random
digest = hashlib.sha256()
for fmt, extra in (("swiss", {"rounds": 5}), ("round_robin", {}), ("knockout", {}), ("arena", {"duration_s": 300})):
    rng, t = random.Random(7), Tourney()
    t.create(fmt, **extra)
    for i in range(9):
        t.register(f"player-{i}", ratings={f"player-{i}": rng.randint(1200, 1800)})
    t.start()
    run_random(t, rng, leave_rate=0.1)
    digest.update(b"".join(orjson.dumps(r) for r in t.results) + t.state.model_dump_json().encode())
print(digest.hexdigest())
"""


def test_a_replay_gives_the_same_bytes_whatever_the_string_hash_seed():
    """No output depends on the order of a set or dict of player ids: Python randomises string
    hashes per process, so two processes with other seeds must agree byte for byte."""
    root = Path(__file__).resolve().parents[2]
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        done = subprocess.run([sys.executable, "-c", REPLAY_SCRIPT], env=env, capture_output=True, text=True, cwd=root)
        assert done.returncode == 0, done.stderr
        digests.add(done.stdout.strip())
    assert len(digests) == 1
