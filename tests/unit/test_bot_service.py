"""The bot service's decisions (services/bots/players.py) on public positions, without Kafka."""

from __future__ import annotations

from games.public import PublicPosition
from services.bots.players import BotPlayers, our_rejected_move
from tests.support import Match

KEY = b"k" * 32


def public(match: Match) -> PublicPosition:
    return PublicPosition.from_log([step.result for step in match.steps if step.result["status"] == "accepted"])


def strands_vs_bot() -> Match:
    match = Match()
    match.create("strands", {"layout": "small-4"}, seats=("ann", "bot:mcts-1"))
    match.ok("ann", {"type": "place", "cells": [[0, -2]]})
    return match


def test_a_bot_moves_only_where_its_seat_is_to_move_with_an_id_that_names_the_turn():
    players = BotPlayers(["mcts-1"], KEY)
    match = strands_vs_bot()
    turns = players.turns(match.view)
    assert [(t.seat, t.player, t.seq) for t in turns] == [(1, "bot:mcts-1", 2)]
    record = players.move(turns[0], public(match), match.view, 1_795_989_700_000)
    assert record["event_id"] == "bot:mcts-1:2" and record["expected_seq"] == 2 and record["player"] == "bot:mcts-1"
    assert match.send("bot:mcts-1", record["action"]).result["status"] == "accepted"
    assert players.turns(match.view) == []  # ann to move


def test_the_same_turn_is_decided_the_same_way_and_answered_duplicate_when_sent_twice():
    players = BotPlayers(["mcts-1"], KEY)
    match = strands_vs_bot()
    turn = players.turns(match.view)[0]
    first = players.move(turn, public(match), match.view, 1)
    again = BotPlayers(["mcts-1"], KEY).move(turn, public(match), match.view, 2)  # a restarted service
    assert first["action"] == again["action"] and first["event_id"] == again["event_id"]
    import orjson

    assert match.replayer.feed(orjson.dumps(first)).result["status"] == "accepted"
    assert match.replayer.feed(orjson.dumps(again)).result["duplicate"] is True


def test_a_mastermind_codebreaker_bot_decides_on_the_public_position_only():
    players = BotPlayers(["most-parts"], KEY)
    match = Match()
    match.create("mastermind", {"pegs": 3, "colors": 4}, seats=("ann", "bot:most-parts"))
    match.ok("ann", {"type": "set_code", "code": [1, 2, 3], "salt": "ab" * 8})
    position = public(match)
    assert position.state.board.secret is None  # what the bot sees
    turn = players.turns(match.view)[0]
    assert players.move(turn, position, match.view, 1)["action"]["type"] == "guess"


def test_with_a_clock_a_bot_thinks_within_a_share_of_its_time():
    players = BotPlayers(["mcts-3"], KEY)
    view = {"game": "strands", "clock": {"since_ms": 1_000, "remaining_ms": [60_000, 9_000]}}
    budget = players._budget(players.bots["bot:mcts-3"], view, 1, 4_000)
    assert budget.seconds == 0.2 and budget.playouts == 512


def test_a_refused_bot_move_is_retried_once_but_not_a_stale_one():
    players = BotPlayers(["mcts-1"], KEY)
    rejected = {"status": "rejected", "player": "bot:mcts-1", "event_id": "bot:mcts-1:5", "reason": {"code": "illegal"}}
    assert our_rejected_move(rejected, players)
    assert not our_rejected_move({**rejected, "event_id": "bot:mcts-1:5:retry"}, players)
    assert not our_rejected_move({**rejected, "reason": {"code": "stale"}}, players)
    assert not our_rejected_move({**rejected, "player": "ann"}, players)
