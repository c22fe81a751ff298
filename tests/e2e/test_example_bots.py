"""The two example bots of examples/bots/ (no plylog imports) play whole matches against a person
(the test) on the running stack: one only through the topics, one only through the HTTP API."""
from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .gateway_stack import auth, operator

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "bots"


def test_the_examples_import_nothing_of_plylog():
    for path in EXAMPLES.glob("*.py"):
        imports = [line for line in path.read_text().splitlines() if line.startswith(("import ", "from "))]
        assert not [line for line in imports if line.split()[1].split(".")[0] in ("games", "schemas", "services")]
        assert len(path.read_text().splitlines()) <= 100, path


def play_until_over(stack, match_id: str, token: str, seat: int, timeout: float = 90.0) -> dict:
    """The person's random legal moves, whenever it is their turn, until the match ends."""
    rng, deadline = random.Random(1), time.monotonic() + timeout
    while time.monotonic() < deadline:
        listing = stack.http.get(f"/v1/matches/{match_id}/legal-actions", headers=auth(token)).json()
        if listing["status"] == "over":
            return stack.http.get(f"/v1/matches/{match_id}").json()
        if listing["actions"]:
            stack.http.post(f"/v1/matches/{match_id}/actions?wait=true", headers=auth(token),
                            json={"action": rng.choice(listing["actions"]), "expected_seq": listing["seq"]})
        else:
            time.sleep(0.1)
    raise AssertionError(f"{match_id} did not end within {timeout}s: {stack.http.get(f'/v1/matches/{match_id}').text}")


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_the_topic_bot_plays_a_mastermind_match_to_its_end(stack):
    bot = start(str(EXAMPLES / "topic_bot.py"), "--player", "my-bot", "--bootstrap", stack.bootstrap,
                "--topic-prefix", stack.topics.prefix)
    try:
        assert "playing as my-bot" in bot.stdout.readline()
        created = stack.http.post("/v1/matches", headers=operator(),
                                  json={"game": "mastermind", "seats": ["ann", "my-bot"],
                                        "options": {"pegs": 3, "colors": 4}}).json()
        over = play_until_over(stack, created["match_id"], created["tokens"][0], 0)
    finally:
        bot.kill()
    assert over["status"] == "over" and over["outcome"]["reason"] in ("lowest_total", "draw")
    assert len(over["tries"]) == 2 and over["tries"][0]["points"] <= 8  # round 1: the bot solved ann's code


def test_the_http_bot_joins_the_seat_kept_for_it_and_plays_to_the_end(stack):
    bot = start(str(EXAMPLES / "http_bot.py"), "--gateway", stack.url, "--name", "mybot")
    try:
        bot_id = bot.stdout.readline().strip()
        assert bot_id.startswith("mybot~"), bot_id
        me = stack.http.post("/v1/players", json={"name": "ann"}).json()
        created = stack.http.post("/v1/matches", headers=auth(me["token"]),
                                  json={"game": "strands", "seats": [me["player"], bot_id],
                                        "options": {"layout": "small-4"}}).json()
        over = play_until_over(stack, created["match_id"], created["tokens"][0], 0)
    finally:
        bot.kill()
    assert over["status"] == "over" and over["seats"] == [me["player"], bot_id]
