"""Everything the fold writes fits the committed JSON Schema files, checked with `jsonschema`
(tests/schema_check.py), not with the pydantic models the files come from.

Random playouts of every game and option set (some with a clock) and, per game, the
lifecycle around them (an open seat and a join, a timeout, resign, abort, duplicates and every
kind of rejection, dead letters) are folded; every move record, result, view, event, outcome
and dead letter is validated. The schemas must also refuse what the service never sends.
"""

from __future__ import annotations

import copy
import random

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.playout import random_playout_records
from services.rules.core import Incoming, dead_letter
from tests.schema_check import SchemaViolation, check, check_result
from tests.support import GAME_OPTIONS, Match

CASES = [(game, i) for game in GAME_OPTIONS for i in range(len(GAME_OPTIONS[game]))]
CLOCK = {"initial_s": 3600, "increment_s": 2}


def check_step(raw: bytes, taken) -> None:
    check("move", raw)
    check_result(taken.result)
    if taken.outcome is not None:
        check("outcome", taken.outcome)


@pytest.mark.parametrize("game,option_index", CASES)
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), clocked=st.booleans())
def test_every_record_of_a_random_playout_fits_the_schemas(game, option_index, seed, clocked):
    ended = False
    for raw, taken in random_playout_records(
        game, GAME_OPTIONS[game][option_index], seed, "p1", clock=CLOCK if clocked else None
    ):
        check_step(raw, taken)
        ended = ended or taken.outcome is not None
    assert ended


def _first_move(match: Match) -> tuple[str, dict]:
    state = match.state
    seat = state.to_move()[0]
    return state.seats[seat], state.rules.random_action(state.board, seat, random.Random(1))


@pytest.mark.parametrize("game", sorted(GAME_OPTIONS))
def test_lifecycle_records_fit_the_schemas(game):
    options = GAME_OPTIONS[game][0]
    timed = Match("t1")
    timed.create(game, options, seats=("alice", None), clock={"initial_s": 30, "increment_s": 1})
    timed.rejected("alice", {"type": "resign"}, "illegal")  # waiting: abort, not resign
    timed.ok("bob", {"type": "join"})
    timed.rejected("carol", {"type": "join"}, "illegal")  # no open seat
    timed.rejected("bob", {"type": "join"}, "already_seated")
    player, action = _first_move(timed)
    timed.ok(player, action)
    timed.rejected("carol", action, "not_seated")
    timed.rejected("plylog-timekeeper", {"type": "claim_timeout"}, "not_timed_out")
    timed.ok("plylog-timekeeper", {"type": "claim_timeout"}, advance_ms=120_000)
    timed.rejected(player, action, "match_over")
    timed.send(player, action, event_id="t1-e5")  # a retry of an accepted event
    assert timed.steps[-1].result["duplicate"]

    resigned = Match("r1")
    resigned.create(game, options)
    resigned.rejected("alice", {"type": "nope"}, "malformed")
    resigned.rejected("alice", {"type": "resign"}, "stale", expected_seq=7)
    resigned.rejected("alice", {"type": "create", "game": game, "seats": ["a", "b"]}, "match_exists")
    player, action = _first_move(resigned)
    other = resigned.state.seats[1 - resigned.state.seats.index(player)]
    resigned.rejected(other, action, "not_your_turn")
    resigned.ok(player, action)
    resigned.ok("alice", {"type": "resign"})

    aborted = Match("a1")
    aborted.create(game, options, seats=("alice", None), invited=[None, "bob"])  # a reserved seat
    aborted.rejected("carol", {"type": "join"}, "illegal")
    aborted.ok("bob", {"type": "join"})
    aborted.ok("bob", {"type": "abort"})

    unknown = Match("u1")
    unknown.rejected("alice", {"type": "join"}, "unknown_match")
    unreadable = unknown.replayer.feed(b'{"v": 1, "event_id": "e", "match_id": ')
    too_large = unknown.replayer.feed(
        orjson.dumps(
            {
                "v": 1,
                "event_id": "e",
                "match_id": "u1",
                "player": "p",
                "at": "2026-11-29T22:00:00Z",
                "action": {"pad": "x" * 70_000},
            }
        )
    )
    assert unreadable.result["reason"]["code"] == "malformed" and too_large.result["reason"]["code"] == "too_large"

    matches = (timed, resigned, aborted, unknown)
    for match in matches:
        for raw, taken in zip(match.records, match.steps, strict=False):
            check_step(raw, taken)
    for taken in (unreadable, too_large):
        check_result(taken.result)
    outcomes = [taken.outcome for match in matches for taken in match.steps if taken.outcome]
    assert [o["outcome"]["reason"] for o in outcomes] == ["timeout", "resign", "aborted"]
    assert timed.view["clock"]["since_ms"] is None and min(timed.view["clock"]["remaining_ms"]) < 0


def test_dead_letters_fit_the_schema():
    for value in (b"\xff\xfe not json", b"[1, 2]", None):
        letter = dead_letter(Incoming(b"k", value, 3, 99, "plylog.moves"), "malformed: not JSON")
        check("dead_letter", letter.value)


# --- the schemas refuse what the service never sends ----------------------------------------------
def _ended_mastermind_result() -> dict:
    *_, (_, last) = random_playout_records("mastermind", {}, 5, "m1")
    return last.result


@pytest.mark.parametrize(
    "mutate,where",
    [
        (lambda r: r["view"].update(secret={"code": [1, 2, 3, 4], "salt": "00" * 8}), "view"),
        (lambda r: r["view"].update(game="strands"), "view"),
        (lambda r: r["view"].pop("tries"), "view"),
        (lambda r: r["view"]["rows"].append([[1, 2, 3, 4], 4, 0]), "view"),
        (lambda r: r["view"]["outcome"].update(reason="checkmate"), "view"),
        (lambda r: r["view"].update(status="paused"), "view"),
        (
            lambda r: r["events"].append(
                {"type": "secret_committed", "round": 1, "attempt": 1, "commitment": "ab" * 32, "_code": [1, 2, 3, 4]}
            ),
            "events",
        ),
        (lambda r: r.update(status="done"), "status"),
        (lambda r: r.pop("seq"), "(the record)"),
    ],
    ids=[
        "secret",
        "wrong game",
        "missing key",
        "list code",
        "unknown reason",
        "unknown status",
        "private field",
        "bad status",
        "no seq",
    ],
)
def test_result_schema_refuses_what_the_service_never_sends(mutate, where):
    result = _ended_mastermind_result()
    check_result(copy.deepcopy(result))
    mutate(result)
    with pytest.raises(SchemaViolation) as refused:
        check("result", result)
    assert f"at {where}" in str(refused.value)


def test_outcome_schema_ties_scores_to_the_game():
    *_, (_, last) = random_playout_records("strands", {"layout": "small-4"}, 2, "s1")
    outcome = last.outcome
    check("outcome", outcome)
    with pytest.raises(SchemaViolation):
        check("outcome", {**outcome, "game": "mastermind"})
    with pytest.raises(SchemaViolation):
        check("outcome", {**outcome, "outcome": {**outcome["outcome"], "scores": [3, 4]}})


def test_a_missing_view_is_null_never_empty():
    result = Match("x1").send("alice", {"type": "join"}).result  # unknown match: no view
    assert result["view"] is None
    check("result", result)
    with pytest.raises(SchemaViolation):
        check("result", {**result, "view": {}})
