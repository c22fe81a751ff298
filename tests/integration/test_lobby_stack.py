"""Seeks and pools through the real gateway, matchmaker, rules worker and projector, on the real
broker and Redis (docs/matchmaking.md): a seek agreed by two players creates one correspondence
match; twenty players of spread ratings in a pool are paired within the widening rule, and a replay
of the lobby topic makes the same pairings; a matchmaker SIGKILLed and restarted from an older
checkpoint (so it writes its creates again) creates no match twice."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import orjson
import pytest

from games.matchmaking import replay
from services.common.kafka_read import read_topic
from tests.e2e.gateway_stack import RunningStack, guest, running_stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]
ONE_DAY = {"kind": "correspondence", "days_per_move": 1, "vacation_days": 7}
POOL = {"game": "strands", "options": {"layout": "small-4"}, "clock": ONE_DAY}


def _poll(fetch, condition, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if condition(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; last value: {value}")
        time.sleep(0.3)


def _lobby_steps(stack: RunningStack) -> list[Any]:
    return list(replay(record.value for record in read_topic(stack.bootstrap, stack.topics.lobby)))


def _restart_from_scratch(stack: RunningStack) -> None:
    """A crash after the creates and before the checkpoint, at its worst: the matchmaker folds the
    whole topic again and writes every create once more."""
    matchmaker = stack.process("matchmaker")
    matchmaker.kill()
    client = stack.redis()
    client.delete(stack.keys.lobby_checkpoint)
    client.close()
    matchmaker.start()
    matchmaker.wait_ready(timeout=60)


def _caught_up(stack: RunningStack) -> bool:
    end = len(read_topic(stack.bootstrap, stack.topics.lobby))
    client = stack.redis()
    raw = client.get(stack.keys.lobby_checkpoint)
    client.close()
    return raw is not None and orjson.loads(raw)["offset"] >= end


def test_two_players_agree_a_correspondence_match_through_a_seek_once(kafka_bootstrap, redis_url, tmp_path):
    with running_stack(kafka_bootstrap, redis_url, tmp_path, "seek", 2, matchmaker=True) as stack:
        ann, ann_auth = guest(stack, "ann")
        ben, ben_auth = guest(stack, "ben")
        assert stack.http.post("/v1/lobby/seeks", json=POOL).status_code == 401  # a player's credential only
        # the decider seats a pool entry's bot without asking it: only a bot may be named
        as_bot = stack.http.post("/v1/lobby/pool", json={**POOL, "bot": ben, "bot_after_s": 0}, headers=ann_auth)
        assert as_bot.status_code == 422 and as_bot.json()["error"]["code"] == "unknown_bot"
        posted = stack.http.post("/v1/lobby/seeks", json={**POOL, "seat": 0}, headers=ann_auth, params={"wait": 10})
        assert posted.status_code == 200, posted.text
        opened = posted.json()["events"][0]
        assert opened["type"] == "seek_opened" and opened["player"] == ann and opened["rating"] == 1500
        listed = stack.http.get("/v1/lobby").json()
        assert [s["seek_id"] for s in listed["seeks"]] == [opened["seek_id"]]
        assert stack.http.post(f"/v1/lobby/seeks/{opened['seek_id']}/accept", headers=ann_auth).status_code == 409
        accepted = stack.http.post(f"/v1/lobby/seeks/{opened['seek_id']}/accept", headers=ben_auth, params={"wait": 10})
        assert accepted.status_code == 200, accepted.text
        made = accepted.json()["events"][-1]
        assert made["type"] == "match_made" and made["seats"] == [ann, ben]
        match_id = made["match_id"]
        view = _poll(lambda: stack.http.get(f"/v1/matches/{match_id}"), lambda r: r.status_code == 200).json()
        assert view["seats"] == [ann, ben] and view["clock"]["kind"] == "correspondence"
        assert stack.http.get("/v1/lobby").json()["seeks"] == []
        # the seek is gone: a second accept is refused, and nobody else gets a match from it
        assert stack.http.post(f"/v1/lobby/seeks/{opened['seek_id']}/accept", headers=ben_auth).status_code == 404

        _restart_from_scratch(stack)
        _poll(lambda: _caught_up(stack), bool)
        _poll(lambda: stack.creates(), lambda counts: match_id in counts)
        time.sleep(2)  # the rewritten create has had time to reach the rules worker
        assert stack.creates() == Counter({match_id: 1})


def test_a_pool_of_twenty_pairs_within_the_widening_rule_and_replays_the_same(kafka_bootstrap, redis_url, tmp_path):
    with running_stack(kafka_bootstrap, redis_url, tmp_path, "pool", 2, matchmaker=True) as stack:
        players: dict[str, dict[str, str]] = {}
        ratings: dict[str, int] = {}
        client = stack.redis()
        for n in range(20):
            player, headers = guest(stack, f"p{n}")
            players[player] = headers
            ratings[player] = 1100 + 130 * n  # neighbours 130 apart: paired once their windows widened to 150
            client.hset(stack.keys.player(player), mapping={"strands:rating": ratings[player], "strands:played": 3})
        client.close()
        for player, headers in players.items():
            answer = stack.http.post("/v1/lobby/pool", json=POOL, headers=headers, params={"wait": 10})
            assert answer.status_code == 200, answer.text
            assert answer.json()["events"][0]["rating"] == ratings[player]
        # mid-run: a crash, and a restart that folds (and writes) everything again
        time.sleep(3)
        _restart_from_scratch(stack)

        def made() -> list[dict[str, Any]]:
            events = [e for step in _lobby_steps(stack) for e in step.result["events"]]
            return [e for e in events if e["type"] == "match_made"]

        pairs = _poll(made, lambda found: len(found) == 10, timeout=180)
        paired = [player for event in pairs for player in event["seats"]]
        assert sorted(paired) == sorted(players)  # nobody twice, nobody left out
        for event in pairs:
            low, high = sorted(ratings[p] for p in event["seats"])
            assert event["via"] == "pool" and high - low <= event["window"], event
            assert event["window"] >= 150  # none fitted before the windows widened
        # a replay of the lobby topic makes the same pairings, byte for byte
        assert [orjson.dumps(e) for e in made()] == [orjson.dumps(e) for e in pairs]
        _poll(lambda: _caught_up(stack), bool)
        _poll(lambda: len(stack.creates()), lambda n: n == 10)
        time.sleep(2)
        assert stack.creates() == Counter({event["match_id"]: 1 for event in pairs})
