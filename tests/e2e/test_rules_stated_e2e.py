"""Matches made by the matchmaker and by the tournament service state the rules version in force
(issue 42 follow-up, docs/evolving.md "Who states a version"): the gateway states it on the seek
and on the tournament's create, the services' folds copy it into the match creates, the rules
worker folds those matches under it with a receipt chain, and an export of one verifies offline
with `plylog verify`. Versions that do not exist are refused at the door, 422 `unknown_rules`."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from games.registry import current_rules

from .gateway_stack import auth, operator, running_stack
from .test_gateway_e2e import play_to_end
from .test_receipts_e2e import offline_env, plylog
from .test_tournaments_e2e import CLOCK, STRANDS, enter_bots, guest, results_of, soon, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def stack(kafka_bootstrap, redis_url, tmp_path_factory):
    with running_stack(
        kafka_bootstrap,
        redis_url,
        tmp_path_factory.mktemp("stated"),
        "stated",
        3,
        bots=True,
        matchmaker=True,
        tournaments=True,
        PLYLOG_RATE_PER_S="1000",
        PLYLOG_RATE_BURST="1000",
        PLYLOG_TIMEKEEPER_INTERVAL_S="0.2",
    ) as running:
        yield running


def _until(fetch, what: str, timeout: float = 60.0, ready=lambda value: value is not None) -> Any:
    """`fetch()`'s first value that is `ready`, asked for every 0.2 s until `timeout`."""
    deadline = time.monotonic() + timeout
    while not ready(value := fetch()):
        assert time.monotonic() < deadline, f"no {what}"
        time.sleep(0.2)
    return value


def _created_under(stack, match_id: str) -> str | None:
    """The `rules` of the match's `match_created`, as the rules worker wrote it."""
    created = _until(
        lambda: next((r for r in results_of(stack, match_id) if r["event_id"].endswith(":create")), None),
        f"create of {match_id}",
    )
    assert created["status"] == "accepted", created
    return created["events"][0].get("rules")


def _exported_and_verified(stack, match_id: str, tmp_path: Path) -> None:
    """Every accepted result of the match carries `chain`; its export verifies with no stack."""
    accepted = [r for r in results_of(stack, match_id) if r["status"] == "accepted" and not r["duplicate"]]
    assert accepted and all("chain" in r for r in accepted), accepted
    online = {**os.environ, "PLYLOG_HOME": str(stack.gateway.dir), "KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap}
    online["PLYLOG_TOPIC_PREFIX"] = stack.topics.prefix
    out = tmp_path / match_id / f"{match_id}.moves.jsonl"
    out.parent.mkdir()
    exported = plylog("export", "--match", match_id, "--results", "--check", "--out", str(out), env=online)
    assert exported.returncode == 0, exported.stderr
    keys = tmp_path / match_id / "keys.json"
    keys.write_bytes(stack.http.get("/v1/keys").content)
    verified = plylog("verify", str(out), "--keys", str(keys), "--require-receipt", env=offline_env(tmp_path))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _lobby(stack, answer, token: str) -> dict[str, Any]:
    if answer.status_code == 202:  # a slow matchmaker: ask for the answer until it is there
        event_id = answer.json()["event_id"]
        fetch = lambda: stack.http.get(f"/v1/lobby/results/{event_id}", headers=auth(token))  # noqa: E731
        answer = _until(fetch, "lobby answer", ready=lambda got: got.status_code == 200)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_seek_pairing_makes_a_match_under_the_rules_in_force_that_verifies(stack, tmp_path):
    (_, ann), (_, bob) = guest(stack, "ann"), guest(stack, "bob")
    seek = {"game": "strands", "options": STRANDS, "clock": CLOCK}
    opened = _lobby(stack, stack.http.post("/v1/lobby/seeks", json=seek, headers=auth(ann), params={"wait": 10}), ann)
    assert opened["events"][0]["rules"] == current_rules("strands")
    seek_id = opened["events"][0]["seek_id"]
    listed = stack.http.get("/v1/lobby").json()["seeks"]
    assert [s["rules"] for s in listed if s["seek_id"] == seek_id] == [current_rules("strands")]
    accept = stack.http.post(f"/v1/lobby/seeks/{seek_id}/accept", headers=auth(bob), params={"wait": 10})
    made = _lobby(stack, accept, bob)["events"][-1]
    assert made["type"] == "match_made" and made["rules"] == current_rules("strands")
    match_id = made["match_id"]
    assert _created_under(stack, match_id) == current_rules("strands")
    tokens_of = lambda: stack.http.get(f"/v1/matches/{match_id}/tokens", headers=operator())  # noqa: E731
    tokens = _until(tokens_of, "seat tokens", ready=lambda got: got.status_code == 200).json()["tokens"]
    play_to_end(stack, {"match_id": match_id, "tokens": tokens, "view": stack.view(match_id)}, seed=42)
    _exported_and_verified(stack, match_id, tmp_path)


def test_a_tournament_round_makes_matches_under_the_rules_in_force_that_verify(stack, tmp_path):
    _, token = guest(stack, "organiser")
    body = {"game": "strands", "options": STRANDS, "clock": CLOCK, "bots_allowed": True}
    created = stack.http.post(
        "/v1/tournaments", headers=auth(token), json={**body, "name": "Cup", "format": "knockout", "starts_at": soon(4)}
    )
    assert created.status_code == 201, created.text
    tid = created.json()["tournament_id"]
    assert created.json()["view"]["settings"]["rules"] == current_rules("strands")
    enter_bots(stack, token, tid, 2)
    final = wait_for(stack, tid, lambda seen: seen["status"] == "over", 180)
    match_id = final["pairings"][0]["match_id"]
    assert _created_under(stack, match_id) == current_rules("strands")
    _until(lambda: stack.view(match_id), "the match's end", ready=lambda seen: seen["status"] == "over")
    _exported_and_verified(stack, match_id, tmp_path)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/lobby/seeks", {"game": "strands", "rules": "strands/99"}),
        ("/v1/lobby/pool", {"game": "strands", "rules": "mana/1"}),
        ("/v1/tournaments", {"game": "strands", "rules": "strands/99", "name": "C", "format": "knockout"}),
    ],
)
def test_rules_that_do_not_exist_are_refused_at_the_door(stack, path, body):
    _, token = guest(stack, "hopeful")
    extra = {"clock": CLOCK, "starts_at": soon(60)} if path == "/v1/tournaments" else {}
    answer = stack.http.post(path, json={**body, **extra}, headers=auth(token))
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "unknown_rules", answer.text
