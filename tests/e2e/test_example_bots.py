"""The three example bots of examples/bots/ (no plylog imports) play whole matches against a person
(the test) on the running stack: one only through the topics, one only through the HTTP API, one
on the seat socket (GET /v1/matches/{id}/play)."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from .gateway_stack import auth, operator

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "bots"
#: import names of the distributions pyproject.toml lists that differ from the distribution's name
IMPORT_NAMES = {"kafka-python": "kafka"}


def test_the_examples_import_nothing_of_plylog_and_only_what_make_setup_installs():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    installed = {
        IMPORT_NAMES.get(name, name).replace("-", "_")
        for name in (re.split(r"[\[<>=!~; ]", requirement)[0].lower() for requirement in project["dependencies"])
    }
    paths = sorted(EXAMPLES.glob("*.py"))
    assert {p.name for p in paths} >= {"topic_bot.py", "http_bot.py", "ws_bot.py"}
    for path in paths:
        imports = [line for line in path.read_text().splitlines() if line.startswith(("import ", "from "))]
        roots = {line.split()[1].split(".")[0] for line in imports}
        assert not roots & {"games", "schemas", "services", "bench"}, path
        outside = {root for root in roots - set(sys.stdlib_module_names) if root not in installed}
        assert not outside, f"{path.name} imports {outside}: not a dependency in pyproject.toml"
        assert len(path.read_text().splitlines()) <= 100, path


def play_until_over(stack, match_id: str, token: str, seat: int, timeout: float = 90.0) -> dict:
    """The person's random legal moves, whenever it is their turn, until the match's view says it ended
    (legal-actions folds the log, which can be a result ahead of the projector's view)."""
    rng, deadline = random.Random(1), time.monotonic() + timeout
    while time.monotonic() < deadline:
        listing = stack.http.get(f"/v1/matches/{match_id}/legal-actions", headers=auth(token)).json()
        if listing["status"] == "over":  # the log says so; the view in Redis follows it
            view = stack.http.get(f"/v1/matches/{match_id}").json()
            if view["status"] == "over":
                return view
            time.sleep(0.05)
            continue
        if listing["actions"]:
            stack.http.post(
                f"/v1/matches/{match_id}/actions?wait=true",
                headers=auth(token),
                json={"action": rng.choice(listing["actions"]), "expected_seq": listing["seq"]},
            )
        else:
            time.sleep(0.1)
    raise AssertionError(f"{match_id} did not end within {timeout}s: {stack.http.get(f'/v1/matches/{match_id}').text}")


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_the_topic_bot_plays_a_mastermind_match_to_its_end(stack):
    bot = start(
        str(EXAMPLES / "topic_bot.py"),
        "--player",
        "my-bot",
        "--bootstrap",
        stack.bootstrap,
        "--topic-prefix",
        stack.topics.prefix,
    )
    try:
        assert "playing as my-bot" in bot.stdout.readline()
        created = stack.http.post(
            "/v1/matches",
            headers=operator(),
            json={"game": "mastermind", "seats": ["ann", "my-bot"], "options": {"pegs": 3, "colors": 4}},
        ).json()
        over = play_until_over(stack, created["match_id"], created["tokens"][0], 0)
    finally:
        bot.kill()
    assert over["status"] == "over" and over["outcome"]["reason"] in ("lowest_total", "draw")
    assert len(over["tries"]) == 2 and over["tries"][0]["points"] <= 8  # round 1: the bot solved ann's code


def test_the_http_bot_joins_the_seat_kept_for_it_and_plays_to_the_end(stack):
    bot = start(str(EXAMPLES / "http_bot.py"), "--gateway", stack.url, "--name", "mybot")
    try:
        bot_id = bot.stdout.readline().strip()
        assert bot_id.startswith("g~"), bot_id  # an opaque guest id; "mybot" is its profile's name
        me = stack.http.post("/v1/players", json={"name": "ann"}).json()
        created = stack.http.post(
            "/v1/matches",
            headers=auth(me["token"]),
            json={"game": "strands", "seats": [me["player"], bot_id], "options": {"layout": "small-4"}},
        ).json()
        over = play_until_over(stack, created["match_id"], created["tokens"][0], 0)
    finally:
        bot.kill()
    assert over["status"] == "over" and over["seats"] == [me["player"], bot_id]


def test_the_ws_bot_joins_the_seat_kept_for_it_and_plays_to_the_end_on_its_socket(stack):
    bot = start(str(EXAMPLES / "ws_bot.py"), "--gateway", stack.url, "--name", "sockbot")
    try:
        bot_id = bot.stdout.readline().strip()
        assert bot_id.startswith("g~"), bot_id
        me = stack.http.post("/v1/players", json={"name": "ann"}).json()
        created = stack.http.post(
            "/v1/matches",
            headers=auth(me["token"]),
            json={"game": "strands", "seats": [me["player"], bot_id], "options": {"layout": "small-4"}},
        ).json()
        wait_for_open_sockets(stack, 1)  # the bot joined and opened its seat's socket
        over = play_until_over(stack, created["match_id"], created["tokens"][0], 0)  # ann plays over HTTP
        wait_for_open_sockets(stack, 0)  # and closes it once the match is over
    finally:
        bot.kill()
    assert over["status"] == "over" and over["seats"] == [me["player"], bot_id]
    results = stack.http.get(f"/v1/matches/{created['match_id']}/events").json()["results"]
    assert sum(1 for r in results if r["player"] == bot_id and r["events"][0]["type"] == "stones_placed") >= 2


def wait_for_open_sockets(stack, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [
            line
            for line in stack.http.get("/metrics").text.splitlines()
            if line.startswith("plylog_gateway_open_sockets ")
        ]
        if lines and float(lines[0].split()[1]) == count:
            return
        time.sleep(0.1)
    raise AssertionError(f"the gateway did not have {count} open sockets within {timeout}s")
