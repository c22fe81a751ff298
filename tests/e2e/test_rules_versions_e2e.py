"""Rules versions end to end: a strands/1 and a strands/2 match created through the gateway fold by
their own rules in the rules worker, before and after it is SIGKILLed and restarted, show so in the
projection in Redis, and refold to the same results offline (`plylog export --check`, `plylog
replay --file`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from services.common.kafka_read import read_topic
from services.common.moves_log import fold_match_from_topic

from .gateway_stack import auth, operator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
TINY = {"layout": {"side": 2, "rows": ["22", "212", "22"]}}  # a centre 1 and six 2s
ONE_OF_TWO = {"type": "place", "cells": [[0, -1]]}  # strands/1: legal; strands/2: too few cells


def create(stack, **extra: Any) -> dict[str, Any]:
    body = {"game": "strands", "seats": ["ann", "ben"], "options": TINY, **extra}
    answer = stack.http.post("/v1/matches", json=body, headers=operator())
    assert answer.status_code == 201, answer.text
    return answer.json()


def act(stack, match: dict[str, Any], seat: int, action: dict[str, Any]) -> dict[str, Any]:
    """The result record of the action (the gateway answers 200 with it, accepted or rejected)."""
    answer = stack.http.post(
        f"/v1/matches/{match['match_id']}/actions",
        params={"wait": "true"},
        json={"action": action},
        headers=auth(match["tokens"][seat]),
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def refused(result: dict[str, Any]) -> str:
    """The message of a result the rules refused as illegal."""
    assert result["status"] == "rejected" and result["reason"]["code"] == "illegal", result
    return result["reason"]["message"]


def projected(stack, match_id: str, seq: int, timeout: float = 30.0) -> dict[str, Any]:
    """The match's view in the projection once the projector has applied result `seq`."""
    deadline = time.monotonic() + timeout
    while (view := stack.view(match_id))["seq"] < seq:
        assert time.monotonic() < deadline, f"the projection of {match_id} is at seq {view['seq']}"
        time.sleep(0.1)
    assert view["seq"] == seq, view
    return view


def restart_rules_worker(stack) -> None:
    worker = stack.process("rules-1")
    worker.kill()
    worker.start()
    worker.wait_ready(timeout=90)


def cli(stack, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap, "PLYLOG_TOPIC_PREFIX": stack.topics.prefix}
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_v1_and_a_v2_match_fold_by_their_own_rules_online_after_a_restart_and_offline(stack, tmp_path: Path):
    # given a match under the rules in force and one asking for strands/2, each past its opening
    v1, v2 = create(stack), create(stack, rules="strands/2")
    for match in (v1, v2):
        assert act(stack, match, 0, {"type": "place", "cells": [[1, 0]]})["status"] == "accepted"
    # and a pair that gets White's one-cell move before the restart
    w1, w2 = create(stack), create(stack, rules="strands/2")
    for match in (w1, w2):
        act(stack, match, 0, {"type": "place", "cells": [[1, 0]]})
    assert act(stack, w1, 1, ONE_OF_TWO)["status"] == "accepted"
    refused(act(stack, w2, 1, ONE_OF_TWO))
    # when the rules worker is SIGKILLed and restarted, and White covers one cell in the first pair
    restart_rules_worker(stack)
    accepted = act(stack, v1, 1, ONE_OF_TWO)
    message = refused(act(stack, v2, 1, ONE_OF_TWO))
    # then each match folded by its own version, after the restart too
    assert accepted["status"] == "accepted" and "exactly 2" in message
    assert act(stack, v2, 1, {"type": "place", "cells": [[0, -1], [-1, 1]]})["status"] == "accepted"
    # and the projection in Redis shows it: each at seq 3 (v2's one-cell move changed nothing), Black to move
    for match in (v1, v2):
        view = projected(stack, match["match_id"], seq=3)
        assert view["to_move"] == [0], view
    # and offline: a refold of each match's log gives the topic's distinct results, byte for byte
    # (delivery is at least once: the SIGKILL may leave a result written twice, docs/contract.md)
    on_topic: dict[str, list[bytes]] = {}
    seen: set[tuple[int, int]] = set()
    for record in read_topic(stack.bootstrap, stack.topics.results):
        result = orjson.loads(record.value)
        identity = (result["source"]["partition"], result["source"]["offset"])  # one result per move record
        if identity not in seen:
            seen.add(identity)
            on_topic.setdefault(result["match_id"], []).append(record.value)
    for match, rules in ((v1, "strands/1"), (v2, "strands/2"), (w1, "strands/1"), (w2, "strands/2")):
        refolded = [orjson.dumps(step.result) for step in fold_match_from_topic(match["match_id"], stack.settings)]
        assert refolded == on_topic[match["match_id"]]
        assert orjson.loads(refolded[0])["events"][0]["rules"] == rules
        assert all("chain" in orjson.loads(r) for r in refolded if orjson.loads(r)["status"] == "accepted"), (
            "a stated match chains its results"
        )
    # and `plylog export --check` / `plylog replay --file` of the v2 match agree with the topic
    moves = tmp_path / "v2.moves.jsonl"
    exported = cli(stack, "export", "--match", v2["match_id"], "--out", str(moves), "--results", "--check")
    assert exported.returncode == 0, exported.stderr
    replayed = cli(stack, "replay", "--file", str(moves), "--out", str(tmp_path / "replayed.jsonl"))
    assert replayed.returncode == 0, replayed.stderr
    offline = [orjson.loads(line) for line in (tmp_path / "replayed.jsonl").read_bytes().splitlines()]
    assert [{**r, "source": None} for r in offline] == [
        {**orjson.loads(r), "source": None} for r in on_topic[v2["match_id"]]
    ]


def test_plylog_new_asks_for_a_rules_version_and_the_create_states_it(stack, tmp_path: Path):
    def as_ann(*args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PLYLOG_GATEWAY_URL": stack.url, "PLYLOG_HOME": str(tmp_path)}
        env.pop("PLYLOG_OPERATOR_KEY", None)
        return subprocess.run(
            [sys.executable, "-m", "services.cli.main", *args], env=env, capture_output=True, text=True, timeout=60
        )

    assert as_ann("login", "ann").returncode == 0
    created = as_ann("new", "strands", "--rules", "strands/2", "--seat", "me", "--seat", "-", "--json")
    assert created.returncode == 0, created.stderr
    match_id = orjson.loads(created.stdout)["match_id"]
    first = next(fold_match_from_topic(match_id, stack.settings)).result
    assert first["events"][0]["rules"] == "strands/2" and first["view"]["placement"] == "exact"
    refused = as_ann("new", "strands", "--rules", "strands/7", "--json")
    assert refused.returncode != 0 and "unknown_rules" in refused.stdout + refused.stderr
