"""Erasure end to end (docs/personal-data.md): a guest with a distinctive name plays a rated match
and registers an e-mail address (kept in their sealed profile, never in Redis); `plylog players
erase` then leaves the name nowhere in Redis (every key and value), in the API's answers or in
`plylog export`'s output, before and after a gateway restart; the name shows as erased, the
ratings and results stay, the moves topic still refolds, `plylog audit --all` is clean and `plylog
rebuild --check` finds the projection equal."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from services.common.moves_log import fold_match_from_topic
from services.common.profiles import ERASED_NAME

from .gateway_stack import OPERATOR_KEY, RunningStack, auth, guest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def cli(stack: RunningStack, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PLYLOG_GATEWAY_URL": stack.url,
        "PLYLOG_OPERATOR_KEY": OPERATOR_KEY,
        "KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap,
        "PLYLOG_TOPIC_PREFIX": stack.topics.prefix,
        "REDIS_URL": stack.redis_url,
        "PLYLOG_REDIS_PREFIX": stack.keys.prefix,
    }
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", *args], env=env, capture_output=True, text=True, timeout=120
    )


def redis_text(client: redis.Redis) -> bytes:
    """Every key and every value in the Redis database, as one lump of bytes."""
    parts: list[bytes] = []
    for key in client.scan_iter(count=1000):
        kind = client.type(key)
        parts.append(key)
        if kind == b"string":
            parts.append(client.get(key) or b"")
        elif kind == b"hash":
            parts.extend(b for pair in client.hgetall(key).items() for b in pair)
        elif kind == b"list":
            parts.extend(client.lrange(key, 0, -1))
        elif kind == b"set":
            parts.extend(client.smembers(key))
        elif kind == b"zset":
            parts.extend(m for m, _ in client.zrange(key, 0, -1, withscores=True))
        elif kind == b"stream":
            parts.extend(b for _, fields in client.xrange(key) for pair in fields.items() for b in pair)
    return b"\n".join(parts).lower()


def api_text(stack: RunningStack, player: str, match_id: str, headers: dict[str, str]) -> str:
    paths = [
        "/v1/names?player=" + player,
        f"/v1/players/{player}",
        f"/v1/players/{player}/games",
        f"/v1/players/{player}/recent",
        f"/v1/players/{player}/ratings/strands",
        f"/v1/matches/{match_id}",
        f"/v1/matches/{match_id}/events",
        "/v1/matches?status=recent",
        "/v1/leaderboards/strands",
        "/v1/notifications/endpoints",
        "/v1/whoami",
    ]
    return "\n".join(stack.http.get(p, headers=headers).text for p in paths).lower()


def play_and_finish(stack: RunningStack, headers: dict[str, str], other_headers: dict[str, str]) -> str:
    created = stack.http.post(
        "/v1/matches",
        json={"game": "strands", "seats": [stack.http.get("/v1/whoami", headers=headers).json()["player"], None]},
        headers=headers,
    ).json()
    match_id = created["match_id"]
    stack.http.post(f"/v1/matches/{match_id}/join", headers=other_headers).raise_for_status()
    stack.http.post(
        f"/v1/matches/{match_id}/actions",
        params={"wait": "true"},
        json={"action": {"type": "resign"}},
        headers=auth(created["tokens"][0]),
    ).raise_for_status()
    deadline = time.monotonic() + 30
    while stack.http.get(f"/v1/matches/{match_id}").json().get("status") != "over":
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(0.1)
    return match_id


def wait_rated(stack: RunningStack, player: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while (answer := stack.http.get(f"/v1/players/{player}")).status_code != 200:
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(0.1)
    return answer.json()


def test_after_erasure_the_name_is_nowhere_and_results_stay(stack, tmp_path: Path):
    name = f"Zebediah{secrets.token_hex(4)}"
    player, headers = guest(stack, name)
    _, other_headers = guest(stack, "ben")
    assert name.lower() not in player.lower()  # an opaque id
    assert stack.http.get("/v1/names", params={"player": player}).json()["names"] == {player: name}
    stack.http.post(
        "/v1/notifications/endpoints", json={"channel": "email", "address": f"{name}@example.org"}, headers=headers
    ).raise_for_status()
    match_id = play_and_finish(stack, headers, other_headers)
    rated = wait_rated(stack, player)
    client = stack.redis()
    assert name.lower().encode() not in redis_text(client)  # the contact address: in the sealed profile
    assert name.lower() in api_text(stack, player, match_id, headers)

    refused = stack.http.post(f"/v1/players/{player}/erase", headers=other_headers)
    assert refused.status_code == 403  # the operator's alone; names stay
    assert stack.http.get("/v1/names", params={"player": player}).json()["names"] == {player: name}
    erased = cli(stack, "players", "erase", player)
    assert erased.returncode == 0 and f"{player}: erased" in erased.stdout, erased.stderr
    again = cli(stack, "players", "erase", player)
    assert again.returncode == 0 and "nothing left to erase" in again.stdout, again.stderr

    for restarted in (False, True):  # the gateway reads the erasure back from Kafka after a restart
        if restarted:
            stack.restart_gateway()
        assert stack.http.get("/v1/names", params={"player": player}).json()["names"] == {player: ERASED_NAME}
        assert name.lower().encode() not in redis_text(client)
        assert name.lower() not in api_text(stack, player, match_id, headers)
    assert wait_rated(stack, player) == rated  # ratings and results stay, under the id

    exported = tmp_path / "match.jsonl"
    done = cli(stack, "export", "--match", match_id, "--out", str(exported), "--results", "--check")
    assert done.returncode == 0, done.stderr
    assert name.lower() not in (exported.read_text() + exported.with_suffix(".results.jsonl").read_text()).lower()
    steps = [s.result for s in fold_match_from_topic(match_id, stack.settings)]
    assert steps and steps[-1]["status"] == "accepted"  # the moves topic still replays
    audit = cli(stack, "audit", "--all")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    check = cli(stack, "rebuild", "--check")
    assert check.returncode == 0 and "equals a rebuild" in check.stdout, check.stdout + check.stderr
