"""A pairing decided without its match being played out ends that match: given a tournament, when a
player withdraws (or is absent, or aborts), then `to_end` names the pairing and its `adjudicate`
record, fed to the match fold after the pairing's create, ends the match once, unrated, if nobody
has moved in it; a match under way is played out, rated."""

from __future__ import annotations

import orjson

from games.fold import Replayer
from games.tournaments import adjudicate_record, create_record, to_end
from schemas.records import MoveRecord
from schemas.tournament import DIRECTOR
from services.cli.tournament_audit import check_tournaments
from services.common.kafka_read import Record
from tests.tournament_support import Tourney


def knockout_of_four() -> Tourney:
    t = Tourney()
    t.create("knockout")
    t.register("a", "b", "c", "d", ratings={"a": 2000, "b": 1900, "c": 1800, "d": 1700})
    t.start()
    for pairing in t.pending():
        t.join(pairing)
    return t


def match_of(t: Tourney, pairing, moved: bool = False) -> Replayer:
    """The pairing's match as the rules worker folds it: created (both seated, so started), and
    with `moved` seat 0 has made the first move."""
    replayer = Replayer()
    assert replayer.feed(orjson.dumps(create_record(t.state, pairing))).result["status"] == "accepted"
    if moved:
        step = replayer.feed(first_move(replayer, pairing))
        assert step.result["status"] == "accepted", step.result
    return replayer


def first_move(replayer: Replayer, pairing) -> bytes:
    """A legal first move of seat 0 in the pairing's match, ten seconds after the start."""
    state = replayer.states[pairing.match_id]
    action = next(iter(state.rules.legal_actions(state.board, 0)))
    move = {"v": 1, "event_id": "m1", "match_id": pairing.match_id, "player": pairing.seats[0]}
    return orjson.dumps({**move, "at": "2023-11-14T22:14:30Z", "action": action})


def test_a_withdrawal_before_the_first_move_ends_that_match_once_with_the_withdrawal_outcome():
    t = knockout_of_four()
    board = t.board("a", "d")
    replayer = match_of(t, board)
    assert to_end(t.state) == []  # nothing decided yet
    t.ok("d", {"type": "withdraw"})
    [decided] = to_end(t.state)
    assert decided.match_id == board.match_id and decided.decided.how == "withdrawal"
    record = adjudicate_record(decided)
    assert record == adjudicate_record(t.state.pairing(board.match_id))  # the same bytes after any restart
    parsed = MoveRecord.model_validate(record)
    assert parsed.player == DIRECTOR and parsed.event_id == f"{board.match_id}:adjudicate"
    winner = board.seats.index("a")
    assert record["action"] == {"type": "adjudicate", "winner": winner, "reason": "withdrawal"}
    ended = replayer.feed(orjson.dumps(record))
    assert ended.result["status"] == "accepted" and ended.outcome is not None
    assert ended.outcome["outcome"]["winner"] == winner and ended.outcome["outcome"]["reason"] == "withdrawal"
    assert ended.outcome["rated"] is False
    again = replayer.feed(orjson.dumps(record))  # a restarted service writes it again
    assert again.result["duplicate"] and again.outcome is None  # never a second ending


def test_a_withdrawal_after_the_first_move_leaves_the_match_to_be_played_out_rated():
    """The withdrawing player (here the one to move, who may be losing) cannot end the match
    unrated by leaving the tournament: the service's `adjudicate` is refused, the clock decides, the
    loss is rated; the pairing stays decided by the withdrawal (the outcome is not fed back)."""
    t = knockout_of_four()
    board = t.board("a", "d")
    replayer = match_of(t, board, moved=True)
    leaver = board.seats[1]
    t.ok(leaver, {"type": "withdraw"})
    [decided] = to_end(t.state)
    refused = replayer.feed(orjson.dumps(adjudicate_record(decided)))
    assert refused.result["status"] == "rejected" and refused.result["reason"]["code"] == "illegal"
    assert replayer.states[board.match_id].status == "active"
    claim = {"v": 1, "event_id": "timeout", "match_id": board.match_id, "player": "plylog-timekeeper"}
    late = "2023-11-14T23:14:30Z"  # an hour on: seat 1's clock ran out long ago
    ended = replayer.feed(orjson.dumps({**claim, "at": late, "action": {"type": "claim_timeout"}}))
    assert ended.outcome is not None and ended.outcome["rated"] is True
    assert ended.outcome["outcome"]["winner"] == 0 and ended.outcome["outcome"]["reason"] == "timeout"
    fed_back = {"type": "match_ended", "match_id": board.match_id, "players": list(board.seats)}
    t.rejected(DIRECTOR, {**fed_back, "outcome": ended.outcome["outcome"]}, "already_decided")
    assert t.state.pairing(board.match_id).decided.how == "withdrawal"


def test_an_absence_forfeit_ends_the_match_and_a_played_or_aborted_pairing_does_not():
    t = Tourney()
    t.create("swiss", rounds=1, forfeit_wait_s=30)
    t.register("a", "b", "c", "d", "e", "f")
    t.start()
    played, aborted, absent = t.pending()
    t.play(played, played.seats[0])
    t.join(aborted)
    outcome = {"winner": None, "reason": "aborted", "scores": None}
    ended = {"type": "match_ended", "match_id": aborted.match_id, "players": list(aborted.seats), "outcome": outcome}
    t.ok(DIRECTOR, {**ended, "aborted_by": aborted.seats[1]})
    t.join(absent, absent.seats[0])
    t.tick(absent.paired_ms + 30_000)
    [forfeited] = to_end(t.state)
    assert forfeited.match_id == absent.match_id
    assert adjudicate_record(forfeited)["action"] == {"type": "adjudicate", "winner": 0, "reason": "forfeit"}


def test_a_double_forfeit_ends_the_match_with_no_winner():
    t = Tourney()
    t.create("knockout", forfeit_wait_s=30)
    t.register("a", "b")
    t.start()
    [pairing] = t.pending()
    t.tick(pairing.paired_ms + 30_000)
    [forfeited] = to_end(t.state)
    assert adjudicate_record(forfeited)["action"] == {"type": "adjudicate", "winner": None, "reason": "double_forfeit"}


def test_the_audit_takes_a_match_under_way_as_played_out_and_flags_one_left_running():
    """`plylog audit`: a match whose ending was refused because it was under way is being played out,
    not a problem; a match not ended after its pairing was decided without it is."""
    t = knockout_of_four()
    under_way, idle = t.board("a", "d"), t.board("b", "c")
    replayer, results = Replayer(), []

    def feed(raw: bytes) -> dict:
        result = replayer.feed(raw).result
        results.append(orjson.dumps(result))
        return result

    for pairing in (under_way, idle):
        assert feed(orjson.dumps(create_record(t.state, pairing)))["status"] == "accepted"
    assert feed(first_move(replayer, under_way))["status"] == "accepted"
    t.ok("d", {"type": "withdraw"})
    t.ok("c", {"type": "withdraw"})
    assert {p.match_id for p in to_end(t.state)} == {under_way.match_id, idle.match_id}
    assert feed(orjson.dumps(adjudicate_record(t.state.pairing(under_way.match_id))))["status"] == "rejected"
    # idle's ending is never written (a lost record): that match still runs
    records = [Record(0, offset, b"cup", line) for offset, line in enumerate(t.lines)]
    problems: list[str] = []
    assert check_tournaments(records, results, {}, problems.append) == 1
    assert len(problems) == 1 and idle.match_id in problems[0] and "still runs" in problems[0], problems


def test_the_audit_flags_a_pairing_match_created_under_other_rules_than_the_tournament_stated():
    """A tournament that stated `strands/2`: its matches created under it pass; one whose create states
    another version (or none) is a problem, as one with other seats is."""
    t = Tourney()
    t.create("knockout", rules="strands/2")
    t.register("a", "b", "c", "d")
    t.start()
    first, second = t.pending()
    right = create_record(t.state, first)
    wrong = create_record(t.state, second)
    del wrong["action"]["rules"]  # as the service would write it if it dropped the tournament's version
    results = [orjson.dumps(Replayer().feed(orjson.dumps(record)).result) for record in (right, wrong)]
    records = [Record(0, offset, b"cup", line) for offset, line in enumerate(t.lines)]
    problems: list[str] = []
    assert check_tournaments(records, results, {}, problems.append) == 1
    assert len(problems) == 1 and second.match_id in problems[0] and "not by the pairing" in problems[0], problems
