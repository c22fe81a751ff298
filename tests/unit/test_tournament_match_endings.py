"""A pairing decided without its match being played out ends that match: given a tournament, when a
player withdraws (or is absent, or aborts), then `to_end` names the pairing and its `adjudicate`
record, fed to the match fold after the pairing's create, ends the match once, unrated."""

from __future__ import annotations

import orjson

from games.fold import Replayer
from games.tournaments import adjudicate_record, create_record, to_end
from schemas.records import MoveRecord
from schemas.tournament import DIRECTOR
from tests.tournament_support import Tourney


def knockout_of_four() -> Tourney:
    t = Tourney()
    t.create("knockout")
    t.register("a", "b", "c", "d", ratings={"a": 2000, "b": 1900, "c": 1800, "d": 1700})
    t.start()
    for pairing in t.pending():
        t.join(pairing)
    return t


def match_of(t: Tourney, pairing) -> Replayer:
    """The pairing's match as the rules worker folds it: created, and seat 0 has moved."""
    replayer = Replayer()
    assert replayer.feed(orjson.dumps(create_record(t.state, pairing))).result["status"] == "accepted"
    state = replayer.states[pairing.match_id]
    action = next(iter(state.rules.legal_actions(state.board, 0)))
    move = {"v": 1, "event_id": "m1", "match_id": pairing.match_id, "player": pairing.seats[0]}
    moved = replayer.feed(orjson.dumps({**move, "at": "2023-11-14T22:14:30Z", "action": action}))
    assert moved.result["status"] == "accepted", moved.result
    return replayer


def test_a_withdrawal_mid_match_ends_that_match_once_with_the_withdrawal_outcome():
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
