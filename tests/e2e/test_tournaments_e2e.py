"""Tournaments on the real stack (rules worker, projector, gateway, bots and the tournament service
as processes): a Swiss with a person playing through the gateway, a knockout with a withdrawal and
the tournament service SIGKILLed mid-round, a withdrawal from a match under way (played out, rated),
an arena pairing everyone free. `running_stack` checks `plylog audit` of the stack's topics at the
end."""

from __future__ import annotations

import functools
import itertools
import random
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from games.timeutil import to_ms
from games.tournaments import replay
from services.common.kafka_read import read_topic
from services.gateway.config import load_secret
from services.gateway.identity import Authenticator
from tests import support

from .gateway_stack import OPERATOR_KEY, SECRET, auth, running_stack

pytestmark = pytest.mark.integration
STRANDS = {"layout": "small-4"}
CLOCK = {"initial_s": 60, "increment_s": 0}


@pytest.fixture(scope="module")
def stack(kafka_bootstrap, redis_url, tmp_path_factory):
    with running_stack(
        kafka_bootstrap,
        redis_url,
        tmp_path_factory.mktemp("tournaments"),
        "tournaments",
        3,
        bots=True,
        tournaments=True,
        PLYLOG_RATE_PER_S="1000",
        PLYLOG_RATE_BURST="1000",
        PLYLOG_TIMEKEEPER_INTERVAL_S="0.2",
    ) as running:
        yield running


def guest(stack, name: str) -> tuple[str, str]:
    answer = stack.http.post("/v1/players", json={"name": name}).json()
    return answer["player"], answer["token"]


def soon(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def legacy_guest(player: str) -> tuple[str, str]:
    """A guest id from before opaque ids (`<name>~<6 characters>`), with the token the gateway minted
    for it then: such ids stay valid. Used where a test needs a person whose id sorts before every
    `bot:` (a top seed at equal ratings); today's guests (`g~...`) sort after them."""
    secret = load_secret(Path("."), {"PLYLOG_SECRET": SECRET})
    return player, Authenticator(secret, "guest", OPERATOR_KEY)._guest_token(player)


def create(stack, token: str, **settings: Any) -> str:
    body = {"game": "strands", "options": STRANDS, "clock": CLOCK, "bots_allowed": True, **settings}
    answer = stack.http.post("/v1/tournaments", headers=auth(token), json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()["tournament_id"]


def enter_bots(stack, token: str, tournament_id: str, count: int) -> list[str]:
    bots = [f"bot:random~{n}" for n in range(1, count + 1)]
    for bot in bots:
        answer = stack.http.post(f"/v1/tournaments/{tournament_id}/register", headers=auth(token), json={"player": bot})
        assert answer.status_code == 200, answer.text
    return bots


def view(stack, tournament_id: str) -> dict[str, Any]:
    answer = stack.http.get(f"/v1/tournaments/{tournament_id}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def wait_for(stack, tournament_id: str, condition, timeout: float, each=None) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        seen = view(stack, tournament_id)
        if condition(seen):
            return seen
        if each is not None:
            each(seen)
        assert time.monotonic() < deadline, f"{tournament_id}: {seen['status']} round {seen['round']}\n{stack.logs()}"
        time.sleep(0.3)


def tournament_records(stack, tournament_id: str) -> list[bytes]:
    return [
        r.value
        for r in read_topic(stack.bootstrap, stack.topics.tournaments)
        if r.key == tournament_id.encode() and r.value is not None
    ]


def check_no_match_twice_and_no_result_lost(stack, final: dict[str, Any]) -> None:
    results = [orjson.loads(r.value) for r in read_topic(stack.bootstrap, stack.topics.results)]
    match_ids = {p["match_id"] for p in final["pairings"]}
    created = Counter(
        r["match_id"]
        for r in results
        if r["match_id"] in match_ids
        and r["status"] == "accepted"
        and not r["duplicate"]
        and any(e["type"] == "match_created" for e in r["events"])
    )
    assert created == Counter(match_ids), created  # every pairing's match created exactly once
    outcomes = {
        o["match_id"]: o for o in (orjson.loads(r.value) for r in read_topic(stack.bootstrap, stack.topics.outcomes))
    }
    for pairing in final["pairings"]:
        if pairing["result"]["how"] == "played":  # each played pairing's result is its match's outcome
            assert pairing["result"]["winner"] == outcomes[pairing["match_id"]]["outcome"]["winner"], pairing


def check_replays_to_the_same_view(stack, tournament_id: str, final: dict[str, Any]) -> None:
    from services.common.tournament_store import view_of

    state, _ = replay(tournament_records(stack, tournament_id))
    assert state is not None and view_of(state) == final


def test_a_swiss_of_eight_bots_and_a_person_runs_to_its_end(stack):
    me, token = guest(stack, "person")
    tid = create(stack, token, name="Swiss", format="swiss", rounds=3, starts_at=soon(6))
    enter_bots(stack, token, tid, 8)
    answer = stack.http.post(f"/v1/tournaments/{tid}/register", headers=auth(token))
    assert answer.status_code == 200 and answer.json()["player"] == me, answer.text
    rng, played = random.Random(44), set()

    def play_my_moves(seen: dict[str, Any]) -> None:
        for pairing in seen["current"]:
            if me not in pairing["seats"] or pairing["result"] is not None:
                continue
            match_id = pairing["match_id"]
            tokens = stack.http.get(f"/v1/matches/{match_id}/tokens", headers=auth(token))
            if tokens.status_code != 200:
                continue  # not created yet
            seat = pairing["seats"].index(me)
            seat_token = tokens.json()["tokens"][seat]
            match = stack.view(match_id)
            if match["status"] != "active" or seat not in match["to_move"]:
                continue
            legal = stack.http.get(f"/v1/matches/{match_id}/legal-actions", headers=auth(seat_token)).json()
            result = stack.http.post(
                f"/v1/matches/{match_id}/actions?wait=true",
                headers=auth(seat_token),
                json={"action": rng.choice(legal["actions"]), "expected_seq": match["seq"]},
            ).json()
            if result.get("status") == "accepted":
                played.add(match_id)

    final = wait_for(stack, tid, lambda v: v["status"] == "over", 300, each=play_my_moves)
    assert final["end_reason"] == "completed" and final["round"] == 3
    mine = [p for p in final["pairings"] if me in p["seats"]]
    assert played and {p["match_id"] for p in mine} >= played  # the person played their games
    assert all(p["result"]["how"] == "played" for p in final["pairings"]), final["pairings"]
    assert len(final["standings"]) == 9 and final["standings"][0]["rank"] == 1
    check_no_match_twice_and_no_result_lost(stack, final)
    check_replays_to_the_same_view(stack, tid, final)


def outcomes_of(stack, match_id: str) -> list[dict[str, Any]]:
    return [
        o for o in (orjson.loads(r.value) for r in read_topic(stack.bootstrap, stack.topics.outcomes))
        if o["match_id"] == match_id
    ]  # fmt: skip


def results_of(stack, match_id: str) -> list[dict[str, Any]]:
    return [
        r for r in (orjson.loads(raw.value) for raw in read_topic(stack.bootstrap, stack.topics.results))
        if r["match_id"] == match_id
    ]  # fmt: skip


def match_status(stack, match_id: str) -> str | None:
    answer = stack.http.get(f"/v1/matches/{match_id}")
    return answer.json()["status"] if answer.status_code == 200 else None


wait_until = functools.partial(support.wait_until, every=0.3)  # each ask is an HTTP request or two


def rating_history(stack, player: str) -> list[str]:
    """The match ids of the player's Strands rating history."""
    return [entry["match_id"] for entry in stack.http.get(f"/v1/players/{player}/ratings/strands").json()["history"]]


def test_a_knockout_with_a_withdrawal_survives_a_sigkilled_service(stack):
    """Seven bots and a person who never moves and withdraws mid-match while the service is down: the
    service, restarted, decides that pairing by the withdrawal and ends its match (unrated: nobody
    moved in it), once, even after a second SIGKILL and restart."""
    _, token = guest(stack, "director")
    leaver, leaver_token = legacy_guest("ace~k3f9xq")  # sorts before every bot:: seed 1, seat 0, the first to move
    tid = create(stack, token, name="Cup", format="knockout", starts_at=soon(5), clock={"initial_s": 600})
    bots = enter_bots(stack, token, tid, 7)
    answer = stack.http.post(f"/v1/tournaments/{tid}/register", headers=auth(leaver_token))
    assert answer.status_code == 200, answer.text
    running = wait_for(stack, tid, lambda v: v["status"] == "running" and v["pairings"], 60)
    mine = next(p["match_id"] for p in running["pairings"] if leaver in p["seats"])
    wait_until(lambda: match_status(stack, mine) == "active", 30, f"{mine} not created")
    assert stack.view(mine)["seats"][0] == leaver and stack.view(mine)["to_move"] == [0]  # so nobody moves
    service = stack.process("tournaments")
    service.kill()  # SIGKILL mid-round: pairings created, their results on their way
    answer = stack.http.post(f"/v1/tournaments/{tid}/withdraw", headers=auth(leaver_token))
    assert answer.status_code == 504 or answer.status_code == 200, answer.text  # nobody folds it until the restart
    time.sleep(3)  # matches end while nobody feeds their outcomes back
    assert stack.view(mine)["status"] == "active"  # the leaver's match waits on a 600 s clock
    service.start().wait_ready(timeout=60)
    final = wait_for(stack, tid, lambda v: v["status"] == "over", 240)
    assert final["end_reason"] == "completed" and final["winner"] in bots
    assert next(e for e in final["entrants"] if e["player"] == leaver)["status"] == "withdrawn"
    decided = next(p for p in final["pairings"] if p["match_id"] == mine)["result"]
    assert decided["how"] == "withdrawal"
    rounds = Counter(p["round"] for p in final["pairings"] if p["game"] == 1)
    assert rounds[1] == 4 and rounds[2] == 2 and rounds[3] == 1, rounds
    [ended] = wait_until(lambda: outcomes_of(stack, mine), 30, f"{mine} never ended")
    assert ended["outcome"]["reason"] == "withdrawal" and ended["outcome"]["winner"] == decided["winner"]
    assert ended["rated"] is False and stack.view(mine)["status"] == "over"
    service.kill()  # a second crash: the restarted service writes the ending again, answered duplicate
    service.start().wait_ready(timeout=60)
    endings = wait_until(
        lambda: [r for r in results_of(stack, mine) if r["event_id"] == f"{mine}:adjudicate"][1:], 30, "no re-send"
    )
    assert all(r["status"] == "accepted" and r["duplicate"] for r in endings), endings  # never a second ending
    assert len(outcomes_of(stack, mine)) == 1
    assert stack.http.get(f"/v1/players/{leaver}/ratings/strands").json()["history"] == []  # unrated
    check_no_match_twice_and_no_result_lost(stack, final)
    check_replays_to_the_same_view(stack, tid, final)


def test_a_withdrawal_after_the_first_move_does_not_unrate_the_match(stack):
    """A player who is losing withdraws once the match is under way (here the bot in seat 0 has moved):
    the pairing is decided by the withdrawal, but the service's `adjudicate` is refused (`illegal`),
    so the match is played out: the leaver loses on time, rated, and both ratings move."""
    _, token = guest(stack, "organiser")
    leaver, leaver_token = guest(stack, "zed")  # a g~ id, after every bot:: seed 2, seat 1, to move second
    tid = create(stack, token, name="Duel", format="knockout", starts_at=soon(3), clock={"initial_s": 15})
    [bot] = enter_bots(stack, token, tid, 1)
    answer = stack.http.post(f"/v1/tournaments/{tid}/register", headers=auth(leaver_token))
    assert answer.status_code == 200, answer.text
    running = wait_for(stack, tid, lambda v: v["status"] == "running" and v["pairings"], 60)
    mine = running["pairings"][0]["match_id"]
    moved = wait_until(lambda: match_status(stack, mine) == "active" and stack.view(mine)["seq"] >= 2, 30, "no move")
    assert moved and stack.view(mine)["seats"] == [bot, leaver] and stack.view(mine)["to_move"] == [1]
    answer = stack.http.post(f"/v1/tournaments/{tid}/withdraw", headers=auth(leaver_token))
    assert answer.status_code == 200, answer.text
    final = wait_for(stack, tid, lambda v: v["status"] == "over", 30)
    assert final["winner"] == bot and final["pairings"][0]["result"]["how"] == "withdrawal"
    [refused] = wait_until(
        lambda: [r for r in results_of(stack, mine) if r["event_id"] == f"{mine}:adjudicate"], 30, "no adjudicate"
    )
    assert refused["status"] == "rejected" and refused["reason"]["code"] == "illegal", refused
    [ended] = wait_until(lambda: outcomes_of(stack, mine), 30, f"{mine} never ended")  # the 15 s clock ran out
    assert ended["outcome"]["reason"] == "timeout" and ended["outcome"]["winner"] == 0 and ended["rated"] is True
    for player in (bot, leaver):  # the projector has rated it, once
        wait_until(lambda p=player: mine in rating_history(stack, p), 30, f"{mine} not in {player}'s ratings")
        assert rating_history(stack, player).count(mine) == 1
    check_replays_to_the_same_view(stack, tid, final)


def test_an_unrated_tournament_leaves_ratings_as_they_were_and_a_rated_one_moves_them(stack):
    _, token = guest(stack, "rater")
    histories = {}
    for rated, pair in ((False, (31, 32)), (True, (33, 34))):
        tid = create(stack, token, name="Duel", format="knockout", starts_at=soon(3), rated=rated, draw_replays=0)
        players = [f"bot:random~{n}" for n in pair]
        for player in players:
            answer = stack.http.post(f"/v1/tournaments/{tid}/register", headers=auth(token), json={"player": player})
            assert answer.status_code == 200, answer.text
        final = wait_for(stack, tid, lambda v: v["status"] == "over", 120)
        match_id = final["pairings"][0]["match_id"]
        for player in players:  # the projector has applied the outcome (rated or not)
            wait_until(
                lambda p=player: any(
                    m["match_id"] == match_id for m in stack.http.get(f"/v1/players/{p}/recent").json()["matches"]
                ),
                30,
                f"{match_id} not among {player}'s recent matches",
            )
            history = stack.http.get(f"/v1/players/{player}/ratings/strands").json()["history"]
            histories[(rated, player)] = [entry["match_id"] for entry in history]
        assert outcomes_of(stack, match_id)[0]["rated"] is rated
    assert histories[(False, "bot:random~31")] == histories[(False, "bot:random~32")] == []
    assert len(histories[(True, "bot:random~33")]) == len(histories[(True, "bot:random~34")]) == 1


@pytest.mark.timeout(400)
def test_an_arena_pairs_everyone_free_within_seconds(stack):
    """Ten bots for two minutes of Strands (as the issue asks): everyone free is paired within seconds."""
    _, token = guest(stack, "arena")
    tid = create(stack, token, name="Arena", format="arena", duration_s=120, pairing_interval_s=1, starts_at=soon(5))
    enter_bots(stack, token, tid, 10)
    final = wait_for(stack, tid, lambda v: v["status"] == "over", 300)
    ends = to_ms(final["settings"]["starts_at"]) + 120_000
    by_player: dict[str, list[dict[str, Any]]] = {}
    for pairing in final["pairings"]:
        for player in pairing["seats"]:
            by_player.setdefault(player, []).append(pairing)
    assert len(by_player) == 10
    waits = []
    for pairings in by_player.values():
        for before, after in itertools.pairwise(pairings):
            waits.append(to_ms(after["paired_at"]) - to_ms(before["result"]["at"]))
        last = pairings[-1]["result"]  # None: still playing when the window closed (that game does not count)
        assert last is None or to_ms(last["at"]) > ends - 15_000, "a player left unpaired long before the end"
    assert waits and max(waits) <= 10_000, sorted(waits)[-5:]  # paired within a few seconds of being free


def test_the_cli_runs_a_round_robin_and_replays_it_from_its_export(stack, tmp_path):
    import os
    import subprocess
    import sys

    _, token = guest(stack, "cli")
    env = {
        **os.environ,
        "PLYLOG_GATEWAY_URL": stack.url,
        "PLYLOG_PLAYER_TOKEN": token,
        "KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap,
        "PLYLOG_TOPIC_PREFIX": stack.topics.prefix,
        "PLYLOG_HOME": str(tmp_path),
    }

    def plylog(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "services.cli.main", "tournament", *args], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    tid = plylog(
        "create", "RR", "--format", "round_robin", "--starts-in", "600", "--bots", "--clock", "60",
        "-o", "layout=small-4", "--rules", "strands/2",
    ).strip()  # fmt: skip
    for n in (1, 2, 3):
        assert "entered" in plylog("register", tid, "--player", f"bot:random~{n}")
    plylog("start", tid)
    final = wait_for(stack, tid, lambda v: v["status"] == "over", 120)
    assert "standings:" in plylog("show", tid) and tid in plylog("list")
    assert final["settings"]["rules"] == "strands/2"  # --rules: every match under that version
    exported = tmp_path / "rr.jsonl"
    plylog("export", tid, "--out", str(exported))
    assert orjson.loads(plylog("replay", str(exported), "--json")) == final


def test_the_gateway_refuses_a_tournament_without_a_clock(stack):
    """The door's rule (the fold takes a clockless create, as old logs have them): 422 `illegal`,
    saying what to add, and no tournament."""
    _, token = guest(stack, "clockless")
    body = {
        "name": "No clock",
        "format": "knockout",
        "game": "strands",
        "starts_at": soon(60),
        "tournament_id": "noclock",
    }
    answer = stack.http.post("/v1/tournaments", headers=auth(token), json=body)
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "illegal", answer.text
    assert "initial_s" in answer.json()["error"]["message"]
    assert stack.http.get("/v1/tournaments/noclock").status_code == 404
    assert tournament_records(stack, "noclock") == []  # nothing was written


def test_nobody_enters_another_person_and_only_the_creator_withdraws_one(stack):
    """A guest creator could register a stranger, who then lost their games on time, rated."""
    organiser, token = guest(stack, "organiser")
    stranger, stranger_token = guest(stack, "stranger")
    other, other_token = guest(stack, "other")
    tid = create(stack, token, name="Open", format="swiss", rounds=1, starts_at=soon(600))

    def entry(kind: str, who_token: str, player: str | None = None):
        return stack.http.post(
            f"/v1/tournaments/{tid}/{kind}", headers=auth(who_token), json={"player": player} if player else None
        )

    refused = entry("register", token, stranger)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden", refused.text
    assert entry("register", token, "bot:random~51").status_code == 200  # the creator enters a bot
    assert entry("register", stranger_token).status_code == 200  # people enter themselves
    refused = entry("withdraw", other_token, stranger)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden", refused.text
    assert entry("withdraw", token, stranger).status_code == 200  # an organiser's power
    final = wait_for(stack, tid, lambda v: len(v["entrants"]) == 2 and v["entrants"][-1]["status"] != "active", 10)
    entrants = {e["player"]: e["status"] for e in final["entrants"]}
    assert entrants == {"bot:random~51": "active", stranger: "withdrawn"}, entrants
    assert organiser not in entrants and other not in entrants


def test_nobody_may_create_a_match_with_a_tournament_pairings_id(stack):
    me, token = guest(stack, "squatter")
    for match_id in ("cup-r1b1", "cup-r2b3g2"):
        answer = stack.http.post(
            "/v1/matches",
            headers=auth(token),
            json={"game": "strands", "options": STRANDS, "seats": [me, None], "match_id": match_id},
        )
        assert answer.status_code == 422 and answer.json()["error"]["code"] == "reserved_match_id", answer.text
    fine = stack.http.post(
        "/v1/matches",
        headers=auth(token),
        json={"game": "strands", "options": STRANDS, "seats": [me, None], "match_id": "cup-round1"},
    )
    assert fine.status_code == 201, fine.text
