"""A person (the test) plays a whole match of every game against a bot through the gateway, on the
real stack with the bot service; the bot service is SIGKILLed mid-match and restarted: the match
goes on, no bot move is applied twice, and the stack's audit is clean (running_stack checks it)."""

from __future__ import annotations

import random
import time
from collections import Counter

import orjson
import pytest

from services.common import kafka_admin
from services.common.kafka_read import read_topic

from .gateway_stack import auth, running_stack

pytestmark = pytest.mark.integration
OPTIONS = {
    "strands": {"layout": "small-4"},
    "mana": {"max_plies": 40},
    "mastermind": {"pegs": 3, "colors": 4},
    "mind_ninja": {"side": 3},
}


@pytest.fixture(scope="module")
def stack(kafka_bootstrap, redis_url, tmp_path_factory):
    with running_stack(
        kafka_bootstrap,
        redis_url,
        tmp_path_factory.mktemp("bots"),
        "bots",
        3,
        bots=True,
        PLYLOG_RATE_PER_S="1000",
        PLYLOG_RATE_BURST="1000",
    ) as running:
        yield running


def guest(stack, name: str) -> tuple[str, str]:
    answer = stack.http.post("/v1/players", json={"name": name}).json()
    return answer["player"], answer["token"]


def wait_view(stack, match_id: str, condition, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        view = stack.http.get(f"/v1/matches/{match_id}").json()
        if condition(view):
            return view
        assert time.monotonic() < deadline, f"{match_id} stuck at {view}\n{stack.logs()}"
        time.sleep(0.1)


def bots_listed(stack, game: str) -> list[str]:
    deadline = time.monotonic() + 30
    while True:
        listed = [b["player"] for b in stack.http.get(f"/v1/bots?game={game}").json()["bots"][game]]
        if listed or time.monotonic() > deadline:
            return listed
        time.sleep(0.5)


@pytest.mark.parametrize("game", sorted(OPTIONS))
def test_a_person_plays_a_whole_match_against_a_bot_that_survives_a_sigkill(stack, game):
    bot = next(b for b in bots_listed(stack, game) if b.endswith(("mcts-1", "most-parts")))
    me, credential = guest(stack, "person")
    created = stack.http.post(
        "/v1/matches", headers=auth(credential), json={"game": game, "seats": [me, bot], "options": OPTIONS[game]}
    )
    assert created.status_code == 201, created.text
    match_id, token = created.json()["match_id"], created.json()["tokens"][0]
    assert created.json()["seats"] == [me, bot] and created.json()["view"]["status"] == "active"
    rng, moves, killed = random.Random(game), 0, False
    view = created.json()["view"]
    while view["status"] != "over":
        view = wait_view(stack, match_id, lambda v: v["status"] == "over" or 0 in v["to_move"])
        if view["status"] == "over":
            break
        listing = stack.http.get(f"/v1/matches/{match_id}/legal-actions", headers=auth(token)).json()
        result = stack.http.post(
            f"/v1/matches/{match_id}/actions?wait=true",
            headers=auth(token),
            json={"action": rng.choice(listing["actions"]), "expected_seq": view["seq"]},
        ).json()
        assert result["status"] == "accepted", result
        view, moves = result["view"], moves + 1
        if moves == 2 and not killed:  # the bot is thinking about its answer, or about to
            service = stack.process("bots")
            service.kill()
            service.start().wait_ready(timeout=60)
            killed = True
    assert killed, f"{game}: the match ended before the bot service could be killed"
    results = [orjson.loads(r.value) for r in read_topic(stack.bootstrap, stack.topics.results)]
    mine = [r for r in results if r["match_id"] == match_id]
    bot_moves = Counter(
        r["event_id"] for r in mine if r["player"] == bot and r["status"] == "accepted" and not r["duplicate"]
    )
    assert bot_moves and max(bot_moves.values()) == 1, bot_moves
    seqs = [r["seq"] for r in mine if r["status"] == "accepted" and not r["duplicate"]]
    assert seqs == sorted(set(seqs)) == list(range(1, len(seqs) + 1))
    assert not [r for r in mine if r["player"] == bot and r["status"] == "rejected"], "a bot move was refused"


def test_a_bot_that_is_not_running_or_turned_off_cannot_take_a_seat(stack):
    me, credential = guest(stack, "person")
    for seats, words in (([me, "bot:nobody"], "no such bot"), ([me, "bot:most-parts"], "does not play strands")):
        answer = stack.http.post(
            "/v1/matches",
            headers=auth(credential),
            json={"game": "strands", "seats": seats, "options": OPTIONS["strands"]},
        )
        assert answer.status_code == 422 and words in answer.json()["error"]["message"], answer.text


def test_the_bot_service_joins_the_group_whose_coordinator_it_waits_for(stack):
    """Given the running bot service, when the broker describes `Topics.bots_group` (the group
    `python -m services.bots` waits for before it starts), then the service is a member of it."""
    with kafka_admin.admin(stack.bootstrap) as client:
        group = client.describe_groups([stack.topics.bots_group])[stack.topics.bots_group]
    assert group["group_state"] == "Stable", group
    assert "bots-bots" in [member["client_id"] for member in group["members"]], group
