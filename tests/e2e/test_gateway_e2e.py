"""End to end through HTTP: rules worker + projector + gateway as real processes on the real broker
and Redis. Full matches of every game, stats, auth, stream resume, secrets, time travel, timeouts."""

from __future__ import annotations

import os
import random
import secrets
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

import orjson
import pytest

from games.match import render
from games.public import PublicPosition
from games.registry import get_game
from services.common.moves_log import fold_match_from_topic
from tests.schema_check import check, check_result

from .gateway_stack import StreamReader, auth, operator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

GAMES = {
    "strands": {"layout": "small-4"},
    "mana": {"max_plies": 60},
    "mastermind": {},
    "mind_ninja": {"side": 3},
}
FINISHED: dict[str, str] = {}  # game -> a match played to its end in this module


def create(stack, game: str, seats=("ann", "ben"), **extra: Any) -> dict[str, Any]:
    answer = stack.http.post(
        "/v1/matches", json={"game": game, "seats": list(seats), "options": GAMES[game], **extra}, headers=operator()
    )
    assert answer.status_code == 201, answer.text
    check("view", answer.json()["view"], game=game)
    return answer.json()


def act(
    stack, match_id: str, token: str, action: dict[str, Any], validate: bool = True, **extra: Any
) -> dict[str, Any]:
    """POST an action with wait=true: the result record (validated against schemas/json/ unless
    `validate` is false, for timing)."""
    answer = stack.http.post(
        f"/v1/matches/{match_id}/actions",
        params={"wait": "true"},
        json={"action": action, **extra},
        headers=auth(token),
    )
    assert answer.status_code == 200, f"{answer.status_code} {answer.text}\n{stack.logs()}"
    return check_result(answer.json()) if validate else answer.json()


def legal(stack, match_id: str, token: str) -> dict[str, Any]:
    answer = stack.http.get(f"/v1/matches/{match_id}/legal-actions", headers=auth(token))
    assert answer.status_code == 200, answer.text
    return answer.json()


def play_random_move(
    stack, match_id: str, tokens: list[str], view: dict[str, Any], rng: random.Random, texts: list[str] | None = None
) -> dict[str, Any]:
    """One random legal action of the seat to move, chosen from the legal-actions endpoint."""
    seat = view["to_move"][0]
    listing = legal(stack, match_id, tokens[seat])
    assert listing["actions"], f"seat {seat} is to move but has no legal action: {listing}"
    result = act(stack, match_id, tokens[seat], rng.choice(listing["actions"]), expected_seq=view["seq"])
    if texts is not None:
        texts.append(orjson.dumps(listing).decode())
    assert result["status"] == "accepted", result
    return result


def play_to_end(stack, match: dict[str, Any], seed: int, limit: int = 400) -> dict[str, Any]:
    rng, view = random.Random(seed), match["view"]
    for _ in range(limit):
        if view["status"] == "over":
            return view
        view = play_random_move(stack, match["match_id"], match["tokens"], view, rng)["view"]
    raise AssertionError(f"{match['match_id']} did not end within {limit} moves")


def poll(fetch, condition, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if condition(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_a_full_match_of_each_game_then_leaderboards_and_players_show_it(stack):
    for number, game in enumerate(GAMES):
        match = create(stack, game)
        final = play_to_end(stack, match, seed=number)
        assert final["outcome"]["reason"], final
        FINISHED[game] = match["match_id"]
        assert stack.http.get(f"/v1/matches/{match['match_id']}").json()["status"] == "over"
    for game in GAMES:
        player = poll(
            lambda: stack.http.get("/v1/players/ann").json(),
            lambda p: p.get("games", {}).get(game, {}).get("played", 0) >= 1,
        )
        assert player["games"][game]["played"] == 1, player
        stats = player["games"][game]
        assert stats["wins"] + stats["losses"] + stats["draws"] == 1 and stats["rating"] > 0
        board = stack.http.get(f"/v1/leaderboards/{game}", params={"by": "played"}).json()
        assert {e["player"] for e in board["entries"]} >= {"ann", "ben"}, board
        assert stack.http.get(f"/v1/leaderboards/{game}").json()["entries"][0]["rank"] == 1
        activity = stack.http.get(f"/v1/stats/{game}/activity", params={"days": 2}).json()
        assert activity["totals"]["finished"] >= 1 and activity["days"][-1]["moves"] >= 1, activity
        recent = stack.http.get("/v1/matches", params={"status": "recent", "game": game}).json()["matches"]
        assert FINISHED[game] in [m["match_id"] for m in recent]


def test_positions_at_every_seq_equal_the_offline_replay(stack):
    assert FINISHED, "needs the full matches of the test above"
    for game, match_id in FINISHED.items():
        offline = {
            step.result["seq"]: step
            for step in fold_match_from_topic(match_id, stack.settings)
            if step.result["status"] == "accepted" and not step.result["duplicate"]
        }
        assert sorted(offline) == list(range(1, len(offline) + 1))
        for seq, step in offline.items():
            answer = stack.http.get(f"/v1/matches/{match_id}/positions/{seq}")
            assert answer.status_code == 200 and answer.json() == step.result["view"], (game, seq)
        assert stack.http.get(f"/v1/matches/{match_id}/positions/{len(offline) + 1}").status_code == 404
    # the CLI draws the same position from the public events
    match_id, seq = FINISHED["strands"], 5
    shown = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "show", match_id, "--at", str(seq)],
        env={**os.environ, "PLYLOG_GATEWAY_URL": stack.url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    state = next(s.state for s in fold_match_from_topic(match_id, stack.settings) if s.result["seq"] == seq)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == render(state).strip()


def test_a_player_cannot_act_for_the_other_seat(stack):
    match = create(stack, "strands", seats=("carol", "dave"))
    other = create(stack, "strands", seats=("carol", "erin"))
    mid, tokens = match["match_id"], match["tokens"]
    not_yours = act(stack, mid, tokens[1], {"type": "place", "cells": [[0, 0]]})
    assert not_yours["status"] == "rejected" and not_yours["reason"]["code"] == "not_your_turn"
    assert not_yours["player"] == "dave"
    answer = stack.http.post(
        f"/v1/matches/{mid}/actions", json={"action": {"type": "resign"}}, headers=auth(other["tokens"][0])
    )
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden"
    assert stack.http.post(f"/v1/matches/{mid}/actions", json={"action": {"type": "resign"}}).status_code == 401
    assert legal(stack, mid, tokens[1])["actions"] == []  # not to move
    assert legal(stack, mid, tokens[0])["actions"]
    # an open seat is taken with /join, which hands out the token of that seat
    lobby = create(stack, "strands", seats=("frank", None))
    assert lobby["tokens"][1] is None and lobby["view"]["status"] == "waiting"
    assert lobby["match_id"] in [m["match_id"] for m in stack.http.get("/v1/matches?status=open").json()["matches"]]
    joined = stack.http.post(
        f"/v1/matches/{lobby['match_id']}/join", json={"player": "gina"}, headers=operator()
    ).json()
    assert joined["seat"] == 1 and joined["view"]["status"] == "active"
    full = stack.http.post(f"/v1/matches/{lobby['match_id']}/join", json={"player": "hugo"}, headers=operator())
    assert full.status_code == 409 and full.json()["error"]["code"] == "illegal"
    assert act(stack, lobby["match_id"], joined["token"], {"type": "resign"})["player"] == "gina"


def test_stream_resumed_with_last_event_id_delivers_each_accepted_result_once_in_order(stack):
    match = create(stack, "strands")
    rng, view = random.Random(7), match["view"]
    first = StreamReader(stack.url, match["match_id"]).start()
    for _ in range(4):
        view = play_random_move(stack, match["match_id"], match["tokens"], view, rng)["view"]
    first.wait_for(lambda r: view["seq"] in r.accepted_seqs())
    first.close()  # the client goes away mid-match ...
    seen = first.accepted_seqs()
    for _ in range(3):  # ... moves are made meanwhile ...
        view = play_random_move(stack, match["match_id"], match["tokens"], view, rng)["view"]
    resumed = StreamReader(stack.url, match["match_id"], last_event_id=seen[-1]).start()  # ... and it comes back
    while view["status"] != "over":
        view = play_random_move(stack, match["match_id"], match["tokens"], view, rng)["view"]
    resumed.wait_for(lambda r: view["seq"] in r.accepted_seqs())
    resumed.close()
    assert seen + resumed.accepted_seqs() == list(range(1, view["seq"] + 1))
    last = [d for e, d, _ in resumed.results if e == "result"][-1]
    assert last["view"]["status"] == "over" and last["events"][-1]["type"] == "match_ended"


def test_no_answer_or_stream_event_contains_the_mastermind_secret_during_the_round(stack):
    match = create(stack, "mastermind", seats=("ivan", "judy"))
    mid, tokens = match["match_id"], match["tokens"]
    spectator = StreamReader(stack.url, mid).start()
    view = match["view"]
    maker = view["codemaker"]
    code, salt = [random.randrange(6) for _ in range(4)], secrets.token_hex(16)
    texts: list[str] = []
    result = act(stack, mid, tokens[maker], {"type": "set_code", "code": code, "salt": salt})
    assert result["status"] == "accepted"
    texts.append(orjson.dumps(result).decode())
    rng, view, revealed = random.Random(3), result["view"], False
    while not revealed:
        step = play_random_move(stack, mid, tokens, view, rng, texts)
        texts.append(orjson.dumps(step).decode())
        view = step["view"]
        revealed = any(e["type"] == "secret_revealed" for e in step["events"])
        if not revealed:  # every read endpoint, while the code is secret
            for path in (
                f"/v1/matches/{mid}",
                f"/v1/matches/{mid}/events",
                f"/v1/matches/{mid}/positions/{view['seq']}",
                "/v1/matches?status=active",
            ):
                texts.append(stack.http.get(path).text)
            texts.append(stack.http.get(f"/v1/matches/{mid}/legal-actions", headers=auth(tokens[maker])).text)
    spectator.wait_for(lambda r: view["seq"] in r.accepted_seqs())
    spectator.close()
    revealing_seq = view["seq"]
    stream_text = "\n".join(spectator.raw)
    before_reveal = [d for e, d, _ in spectator.results if d.get("seq", 0) < revealing_seq]
    assert len(texts) > 10 and before_reveal
    for text in texts[:-1] + [orjson.dumps(d).decode() for d in before_reveal]:
        assert salt not in text and '"secret"' not in text and '"_code"' not in text and '"_salt"' not in text
    assert salt in stream_text  # and it is revealed once the try is over (so the check above can fail)


def test_a_timed_match_ends_by_timeout_when_its_player_stops(stack):
    match = create(stack, "strands", seats=("kim", "lou"), clock={"initial_s": 1.0, "increment_s": 0})
    view = play_random_move(stack, match["match_id"], match["tokens"], match["view"], random.Random(1))["view"]
    assert view["to_move"] == [1]
    final = poll(
        lambda: stack.http.get(f"/v1/matches/{match['match_id']}").json(), lambda v: v["status"] == "over", timeout=20
    )
    assert final["status"] == "over", f"{final}\n{stack.logs()}"
    assert final["outcome"]["winner"] == 0 and final["outcome"]["reason"] == "timeout"
    last = stack.http.get(f"/v1/matches/{match['match_id']}/events").json()["results"][-1]
    assert last["player"] == "plylog-timekeeper"


def test_concurrent_clients_each_get_every_result_in_order(stack):
    """N clients (PLYLOG_PERF_CLIENTS, 4) play Strands matches at once through HTTP with wait=true
    for PLYLOG_PERF_SECONDS (6): every action gets its own accepted result, each match's log has
    every seq once, in order, and ends in the position the clients reached. The rate and latency
    are printed (pytest -s); speed goals live in `make bench`."""
    clients = int(os.environ.get("PLYLOG_PERF_CLIENTS", "4"))
    seconds = float(os.environ.get("PLYLOG_PERF_SECONDS", "6"))
    latencies: list[float] = []
    played: dict[str, int] = {}  # match id -> the seq its client last saw
    lock = threading.Lock()

    def client(number: int) -> None:
        rng = random.Random(number)
        local: list[float] = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            match = create(stack, "strands", seats=(f"perf{number}a", f"perf{number}b"))
            log = stack.http.get(f"/v1/matches/{match['match_id']}/events").json()["results"]
            position = PublicPosition.from_log(log)  # Strands hides nothing: the public fold is the state
            while position.state.status != "over" and time.monotonic() < end:
                state = position.state
                seat = state.to_move()[0]
                action = get_game("strands").random_action(state.board, seat, rng)
                started = time.perf_counter()
                result = act(stack, match["match_id"], match["tokens"][seat], action, validate=False)
                local.append(time.perf_counter() - started)
                assert result["status"] == "accepted" and result["seq"] == position.seq + 1, result
                position.apply(result)
            with lock:
                played[match["match_id"]] = position.seq
        with lock:
            latencies.extend(local)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(
        f"\nHTTP actions with wait=true: {len(latencies)} in {elapsed:.1f}s = {len(latencies) / elapsed:.0f}/s "
        f"with {clients} clients; latency p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"
    )
    assert len(played) >= clients and latencies
    for match_id, seq in played.items():
        log = poll(
            lambda: stack.http.get(f"/v1/matches/{match_id}/events").json()["results"],
            lambda entries: len(entries) >= seq,
        )
        assert [entry["seq"] for entry in log] == list(range(1, seq + 1)), match_id
