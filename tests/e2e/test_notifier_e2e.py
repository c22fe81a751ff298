"""The notifier on the real stack: rules worker, projector, gateway and notifier processes on the real
broker and Redis, a real HTTP receiver and a real SMTP server (aiosmtpd) in this process. Players
register endpoints through the gateway; correspondence matches are played by writing their move
records to plylog.moves; what arrives is compared with what the pure rules say should."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections import Counter
from typing import Any

import orjson
import pytest

from bench.procs import free_port
from games.playout import random_playout_records
from services.notifier import rules
from tests.integration.harness import produce
from tests.support import record

from .gateway_stack import guest, running_stack
from .notify_support import hooks, mails, notifier_on, register_endpoint, verified, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]
ONE_DAY = {"kind": "correspondence", "days_per_move": 1, "vacation_days": 7}
OPTIONS = {"layout": "small-4"}


@pytest.fixture(scope="module")
def world(kafka_bootstrap, redis_url, tmp_path_factory, mailbox):
    home = tmp_path_factory.mktemp("notify")
    with (
        running_stack(kafka_bootstrap, redis_url, home, "notify", 3, PLYLOG_NOTIFY_ALLOW_PRIVATE="1") as stack,
        notifier_on(stack, home, mailbox[0]) as notifier,
    ):
        yield stack, notifier


def _play(bootstrap: str, topic: str, players: tuple[str, str], seed: int, pace_s: float = 0.0) -> dict[str, Any]:
    """Play a correspondence Strands match to its end (records written to plylog.moves); what the
    rules say each player should be told at once (your_move, match_over), by player."""
    match_id = f"n{uuid.uuid4().hex[:10]}"
    now = int(time.time() * 1000)
    steps = list(
        random_playout_records("strands", OPTIONS, seed, match_id, players, start_ms=now, step_ms=1, clock=ONE_DAY)
    )
    expected: dict[str, set[str]] = {p: set() for p in players}
    for _, taken in steps:
        for n in rules.from_result(taken.result):
            if n.due_ms == 0:
                expected[n.player].add(n.id)
    last = steps[-1][1].result
    assert last["view"]["status"] == "over"
    for player in players:
        expected[player].add(rules.notification_id("match_over", match_id, last["seq"], player))
    produce(bootstrap, topic, [(match_id.encode(), raw) for raw, _ in steps], pace_s=pace_s)
    return {"match_id": match_id, "expected": expected}


def test_each_move_sends_the_opponent_a_signed_webhook_and_an_email(world, http_receiver, mailbox):
    stack, _ = world
    base, received = http_receiver
    ann, ann_auth = guest(stack, "ann")
    bob, bob_auth = guest(stack, "bob")
    ann_hook = register_endpoint(stack, ann_auth, channel="webhook", url=f"{base}/ok/{ann}")
    bob_hook = register_endpoint(stack, bob_auth, channel="webhook", url=f"{base}/ok/{bob}")
    register_endpoint(stack, bob_auth, channel="email", address="bob@example.org")
    assert "secret" not in stack.http.get("/v1/notifications/endpoints", headers=bob_auth).json()["endpoints"][0]

    played = _play(stack.bootstrap, stack.topics.moves, (ann, bob), seed=3)
    expected = played["expected"]
    assert len(expected[bob]) >= 3

    def ids(path: str) -> list[str]:
        return [h["Plylog-Notification"] for h, _ in hooks(received, path)]

    wait_until(lambda: set(ids(f"/ok/{bob}")) >= expected[bob], what="bob's webhooks")
    wait_until(lambda: set(ids(f"/ok/{ann}")) >= expected[ann], what="ann's webhooks")
    mail_ids = lambda: [m["Plylog-Notification"] for m in mails(mailbox[1], "bob@example.org")]  # noqa: E731
    wait_until(lambda: set(mail_ids()) >= expected[bob], what="bob's e-mails")
    time.sleep(1.0)  # anything extra would arrive now
    assert sorted(ids(f"/ok/{bob}")) == sorted(expected[bob])  # each once, nothing else
    assert sorted(ids(f"/ok/{ann}")) == sorted(expected[ann])
    assert sorted(mail_ids()) == sorted(expected[bob])
    for headers, body in hooks(received, f"/ok/{bob}"):
        assert verified(bob_hook["secret"], headers, body)
        assert not verified(ann_hook["secret"], headers, body)
        payload = orjson.loads(body)
        assert payload["player"] == bob and payload["match_id"] == played["match_id"]
        assert payload["kind"] in ("your_move", "match_over") and payload["id"] == headers["Plylog-Notification"]
    over = [orjson.loads(b) for _, b in hooks(received, f"/ok/{bob}") if orjson.loads(b)["kind"] == "match_over"]
    assert len(over) == 1 and over[0]["details"]["result"] in ("won", "lost", "draw")
    assert any(m["Subject"].startswith("Your move in strands") for m in mails(mailbox[1], "bob@example.org"))


def test_an_invitation_and_a_clock_running_low_are_told(world, http_receiver):
    """A reserved seat invites its player; a correspondence turn whose deadline is near (the records'
    times are 20 hours in the past) sends `clock_low` at once, with the deadline."""
    stack, _ = world
    base, received = http_receiver
    nia, _ = guest(stack, "nia")
    oto, oto_auth = guest(stack, "oto")
    register_endpoint(stack, oto_auth, channel="webhook", url=f"{base}/ok/{oto}")
    invite = f"i{uuid.uuid4().hex[:10]}"
    create = {"type": "create", "game": "strands", "seats": [nia, None], "invited": [None, oto], "options": OPTIONS}
    produce(stack.bootstrap, stack.topics.moves, [(invite.encode(), record(invite, nia, create, 0, at_ms=_ms()))])
    late = f"c{uuid.uuid4().hex[:10]}"
    steps = random_playout_records(
        "strands", OPTIONS, 1, late, (nia, oto), start_ms=_ms() - 20 * 3_600_000, clock=ONE_DAY
    )
    first_two = [next(steps), next(steps)]  # the create, then nia's move: oto to move, 4 hours left
    reminder = [n for n in rules.from_result(first_two[1][1].result) if n.kind == "clock_low"]
    assert len(reminder) == 1 and reminder[0].player == oto and reminder[0].due_ms < _ms()
    produce(stack.bootstrap, stack.topics.moves, [(late.encode(), raw) for raw, _ in first_two])

    def kinds() -> dict[str, dict[str, Any]]:
        return {orjson.loads(b)["kind"]: orjson.loads(b) for _, b in hooks(received, f"/ok/{oto}")}

    wait_until(lambda: {"invited", "your_move", "clock_low"} <= set(kinds()), what="oto's three notifications")
    assert kinds()["invited"]["match_id"] == invite and kinds()["invited"]["details"] == {"seat": 1, "by": nia}
    low = kinds()["clock_low"]
    assert low["id"] == reminder[0].id and low["details"]["deadline_ms"] == reminder[0].details["deadline_ms"]


def _ms() -> int:
    return int(time.time() * 1000)


def test_preferences_choose_kinds_and_channels(world, http_receiver, mailbox):
    stack, _ = world
    base, received = http_receiver
    cy, cy_auth = guest(stack, "cy")
    dee, _ = guest(stack, "dee")
    register_endpoint(stack, cy_auth, channel="webhook", url=f"{base}/ok/{cy}")
    register_endpoint(stack, cy_auth, channel="email", address="cy@example.org")
    answer = stack.http.put(
        "/v1/notifications/preferences", json={"kinds": ["match_over"], "channels": ["webhook"]}, headers=cy_auth
    )
    assert answer.status_code == 200 and answer.json() == {"kinds": ["match_over"], "channels": ["webhook"]}
    _play(stack.bootstrap, stack.topics.moves, (cy, dee), seed=5)
    wait_until(lambda: any(orjson.loads(b)["kind"] == "match_over" for _, b in hooks(received, f"/ok/{cy}")))
    time.sleep(1.0)
    assert [orjson.loads(b)["kind"] for _, b in hooks(received, f"/ok/{cy}")] == ["match_over"]
    assert mails(mailbox[1], "cy@example.org") == []


def test_endpoints_are_bounded_and_checked(world, http_receiver):
    stack, _ = world
    base, _ = http_receiver
    _, eve = guest(stack, "eve")
    post = lambda **body: stack.http.post("/v1/notifications/endpoints", json=body, headers=eve)  # noqa: E731
    assert post(channel="webhook", url="http://127.0.0.1/").status_code == 201  # allowed here (private allowed)
    gateway_port = stack.url.rsplit(":", 1)[1]
    for bad in ("ftp://x.org/", f"http://127.0.0.1:{gateway_port}/", "http://u:p@x.org/", "http://x.org/" + "a" * 600):
        answer = post(channel="webhook", url=bad)
        assert answer.status_code == 422 and answer.json()["error"]["code"] == "bad_endpoint", bad
    assert post(channel="email", address="not-an-address").status_code == 422
    assert post(channel="email", url=f"{base}/x").status_code == 422
    for n in range(4):
        assert post(channel="email", address=f"eve{n}@example.org").status_code == 201
    assert post(channel="email", address="eve9@example.org").status_code == 422  # the sixth
    assert stack.http.get("/v1/notifications/endpoints").status_code == 401
    platform = stack.http.post(
        "/v1/notifications/endpoints", json={"channel": "email", "address": "x@x.org", "platform": True}, headers=eve
    )
    assert platform.status_code == 403


def test_the_notifier_runs_at_a_lower_cpu_priority_than_the_match_path(world):
    """Off the match path: the notifier's process yields the CPU to the rules worker, the projector
    and the gateway (started as this test's children, at its own priority)."""
    _, notifier = world
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, notifier.pid) == min(mine + 10, 19)


def test_a_dead_endpoint_ends_as_dead_letters_with_the_reason_while_results_flow(world, http_receiver):
    stack, _ = world
    base, received = http_receiver
    fay, fay_auth = guest(stack, "fay")
    gus, gus_auth = guest(stack, "gus")
    register_endpoint(stack, fay_auth, channel="webhook", url=f"{base}/dead/{fay}")
    closed = free_port()  # nothing listens there
    register_endpoint(stack, fay_auth, channel="webhook", url=f"http://127.0.0.1:{closed}/hook")
    register_endpoint(stack, gus_auth, channel="webhook", url=f"{base}/ok/{gus}")
    played = _play(stack.bootstrap, stack.topics.moves, (fay, gus), seed=7)
    view = lambda: stack.http.get(f"/v1/matches/{played['match_id']}")  # noqa: E731
    over = lambda: view().status_code == 200 and view().json()["status"] == "over"  # noqa: E731
    wait_until(over, what="the match over in the views")
    gus_ids = lambda: {h["Plylog-Notification"] for h, _ in hooks(received, f"/ok/{gus}")}  # noqa: E731
    wait_until(lambda: gus_ids() >= played["expected"][gus], what="gus's webhooks")
    wanted = 2 * len(played["expected"][fay])

    def letters() -> list[dict[str, Any]]:
        answer = stack.http.get("/v1/notifications/deadletters", params={"limit": 200}, headers=fay_auth)
        return answer.json()["dead_letters"]

    wait_until(lambda: len(letters()) >= wanted, what=f"{wanted} dead letters")
    found = letters()
    assert {d["notification"] for d in found} == played["expected"][fay]
    reasons = Counter(d["reason"].split(" (after")[0] for d in found)
    assert reasons["HTTP 503"] == len(played["expected"][fay]), reasons
    assert sum(n for r, n in reasons.items() if r.startswith("http: Connect")) == len(played["expected"][fay])
    assert all(d["attempts"] == 3 for d in found)
    assert len(hooks(received, f"/dead/{fay}")) == 3 * len(played["expected"][fay])  # tried 3 times each


def test_a_silent_endpoints_queue_holds_up_no_otherregister_endpoint(world, http_receiver):
    """An endpoint that takes connections and never answers (each attempt waits out the timeout)
    has a long queue; another player's deliveries still go at once, not after that queue."""
    stack, _ = world
    base, received = http_receiver
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1024)  # never accepted: connections complete, requests are never answered
    try:
        lou, lou_auth = guest(stack, "lou")
        max_, max_auth = guest(stack, "max")
        hook = register_endpoint(stack, lou_auth, channel="webhook", url=f"http://127.0.0.1:{silent.getsockname()[1]}/")
        register_endpoint(stack, max_auth, channel="webhook", url=f"{base}/ok/{max_}")
        waiting = 0
        for seed in range(24):
            waiting += len(
                _play(stack.bootstrap, stack.topics.moves, (lou, "nobody"), seed=100 + seed)["expected"][lou]
            )
        pending = f"{stack.keys.prefix}notify:{{notify}}:pending"
        client = stack.redis()
        wait_until(lambda: int(client.hget(pending, hook["id"]) or 0) >= waiting - 10, what="lou's queue")
        played = _play(stack.bootstrap, stack.topics.moves, (max_, "nobody"), seed=7)
        ids = lambda: {h["Plylog-Notification"] for h, _ in hooks(received, f"/ok/{max_}")}  # noqa: E731
        wait_until(lambda: ids() >= played["expected"][max_], timeout=60, what="max's webhooks behind lou's queue")
        # lou's queue is still long: max's went past it, not after it
        assert int(client.hget(pending, hook["id"]) or 0) > waiting // 2
    finally:
        silent.close()


def test_a_notifier_killed_mid_run_sends_nothing_twice_and_loses_nothing(world, http_receiver, mailbox):
    stack, notifier = world
    base, received = http_receiver
    players = [guest(stack, name) for name in ("hal", "ida", "jon", "kim")]
    for player, headers in players:
        register_endpoint(stack, headers, channel="webhook", url=f"{base}/ok/{player}")
        register_endpoint(stack, headers, channel="email", address=f"{player.split('~')[0]}@example.org")
    (hal, _), (ida, _), (jon, _), (kim, _) = players
    expected: dict[str, set[str]] = {p: set() for p, _ in players}
    done = threading.Event()

    def play() -> None:
        for seed in range(4):
            for pair in ((hal, ida), (jon, kim)):
                played = _play(stack.bootstrap, stack.topics.moves, pair, seed=11 + seed, pace_s=0.02)
                for player, ids in played["expected"].items():
                    expected[player] |= ids
        done.set()

    thread = threading.Thread(target=play, daemon=True)
    thread.start()
    hooks = lambda: [h for p, h, _ in list(received) if p in {f"/ok/{x}" for x, _ in players}]  # noqa: E731
    wait_until(lambda: len(hooks()) >= 10, what="the first deliveries")
    notifier.kill()  # SIGKILL, mid-run: records still coming, deliveries on their way
    killed_at = len(hooks())
    notifier.start().wait_ready(timeout=90)
    thread.join(timeout=240)
    assert done.is_set()
    everyone = set().union(*expected.values())
    mails = lambda: [m["Plylog-Notification"] for m in mailbox[1].messages if m["Plylog-Notification"] in everyone]  # noqa: E731
    wait_until(lambda: {h["Plylog-Notification"] for h in hooks()} >= everyone, what="every webhook")
    wait_until(lambda: set(mails()) >= everyone, what="every e-mail")
    time.sleep(1.0)
    by_delivery = Counter(h["Plylog-Delivery"] for h in hooks())
    repeated = {d: n for d, n in by_delivery.items() if n > 1}
    assert {h["Plylog-Notification"] for h in hooks()} == everyone  # nothing lost, nothing else
    assert len(by_delivery) == len(everyone)  # one delivery per notification and endpoint
    # The one repeat possible: a delivery on its way when the process died (its answer never
    # recorded) is sent again, with the same ids (receivers deduplicate on them) and a later attempt.
    assert all(n == 2 for n in repeated.values()) and len(repeated) <= 2 * len(players), repeated
    for delivery in repeated:
        attempts = sorted(int(h["Plylog-Attempt"]) for h in hooks() if h["Plylog-Delivery"] == delivery)
        assert attempts[0] < attempts[1]
    mail_counts = Counter(mails())
    assert sum(n - 1 for n in mail_counts.values()) <= 2 * len(players), mail_counts
    assert killed_at < len(hooks())  # the kill was mid-run: deliveries came after it
