"""The gateway's door against a hostile guest, on the whole stack with the default limits: every
request costs the gateway a bounded amount of CPU whatever options a match was made with or how
long its log is; legal actions are rate-limited like actions; a match id outside the one grammar
never reaches Redis; plylog's own names cannot be taken; and only actions the rules could accept,
of a bounded size, for matches not over, are written to the forever log (plylog.moves).

CPU is the gateway process's own (all its threads) around one request; the bound asserted is
generous (a slow, shared machine passes it), the figure is printed (pytest -s)."""

from __future__ import annotations

import base64
import time
import uuid
from typing import Any

import orjson
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from games.fold import Replayer
from games.match import view as match_view
from games.playout import move_record
from services.common.kafka_partition import partition_of
from services.gateway.identity import Authenticator

from .gateway_stack import SECRET, auth, running_stack
from .socket_client import open_socket, receive, receive_until, refused

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
PARTITIONS = 3
CPU_BOUND_S = 0.25  # the issue's ~50 ms, with room for a slow machine; the unbounded requests took seconds


@pytest.fixture(scope="module")
def stack(kafka_bootstrap, redis_url, tmp_path_factory):
    """The whole stack with the gateway's default limits (rate, work budget, move size)."""
    with running_stack(kafka_bootstrap, redis_url, tmp_path_factory.mktemp("door"), "door", PARTITIONS) as running:
        yield running


def guest(stack, name: str) -> tuple[str, str]:
    answer = stack.http.post("/v1/players", json={"name": name})
    assert answer.status_code == 201, answer.text
    return answer.json()["player"], answer.json()["token"]


def duel(stack, game: str, options: dict[str, Any], match_id: str | None = None) -> tuple[str, list[str], dict]:
    """A match of two new guests, both seated: (its id, the seat tokens, its view)."""
    ann, ben = guest(stack, "ann"), guest(stack, "ben")
    chosen = {"match_id": match_id} if match_id else {}
    created = stack.http.post(
        "/v1/matches",
        json={"game": game, "seats": [ann[0], ben[0]], "options": options, **chosen},
        headers=auth(ann[1]),
    )
    assert created.status_code == 201, created.text
    match_id = created.json()["match_id"]
    joined = stack.http.post(f"/v1/matches/{match_id}/join", headers=auth(ben[1]))
    assert joined.status_code == 200, joined.text
    return match_id, [created.json()["tokens"][0], joined.json()["token"]], joined.json()["view"]


def gateway_cpu_s(stack, request) -> tuple[float, Any]:
    """(CPU seconds the gateway process used while `request()` ran, its answer)."""
    before = stack.gateway.cpu_seconds()
    answer = request()
    time.sleep(0.05)  # what the request left for the loop to finish (a log line, a metric)
    return stack.gateway.cpu_seconds() - before, answer


def moves_written(stack) -> int:
    """Records on plylog.moves now (every partition's end offset)."""
    consumer = KafkaConsumer(bootstrap_servers=stack.bootstrap)
    try:
        partitions = [TopicPartition(stack.topics.moves, p) for p in range(PARTITIONS)]
        return sum(consumer.end_offsets(partitions).values())
    finally:
        consumer.close()


# --- finding 1: bounded work per request -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "listed", "truncated"),
    [
        ({"pegs": 8, "colors": 9, "max_distinct": 1}, 9, False),  # 43 million codes walked for 9 (11.2 s)
        ({"pegs": 8, "colors": 10, "max_distinct": 2}, 500, True),
        ({"pegs": 8, "colors": 10}, 500, True),
    ],
)
def test_legal_actions_of_any_options_cost_the_gateway_bounded_cpu(stack, options, listed, truncated):
    match_id, tokens, view = duel(stack, "mastermind", options)
    seat = view["to_move"][0]
    cpu, answer = gateway_cpu_s(
        stack, lambda: stack.http.get(f"/v1/matches/{match_id}/legal-actions", headers=auth(tokens[seat]))
    )
    print(f"\nlegal actions of mastermind {options}: gateway CPU {cpu * 1000:.1f} ms")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert len(body["actions"]) == listed and body["truncated"] is truncated
    assert all(len(set(a["code"])) <= options.get("max_distinct", 10) for a in body["actions"])
    assert cpu < CPU_BOUND_S, f"one legal-actions request cost the gateway {cpu:.3f} s of CPU"


def test_legal_actions_are_rate_limited_like_actions_over_http_and_the_socket(stack):
    match_id, tokens, view = duel(stack, "strands", {"layout": "small-4"})
    seat = view["to_move"][0]
    answers = [
        stack.http.get(f"/v1/matches/{match_id}/legal-actions", headers=auth(tokens[seat])) for _ in range(40)
    ]  # the default bucket: 20 at once, 10 a second
    limited = [a for a in answers if a.status_code == 429]
    assert limited and all(a.status_code in (200, 429) for a in answers), [a.status_code for a in answers]
    assert limited[0].json()["error"]["code"] == "rate_limited" and int(limited[0].headers["Retry-After"]) >= 1
    time.sleep(2.5)  # the bucket refills
    with open_socket(stack.url, match_id, tokens[seat]) as socket:
        assert receive(socket)["type"] == "hello"
        for _ in range(40):
            socket.send(orjson.dumps({"type": "legal_actions"}).decode())
        got = receive_until(socket, lambda m: m["type"] == "error", timeout=30)
        assert got[-1]["code"] == "rate_limited" and got[-1]["retry_after_s"] >= 1, got[-1]


def long_mastermind(match_id: str) -> list[bytes]:
    """A Mastermind match as long as its options allow (100 rounds of 50 wrong guesses: 5,101
    accepted records), each accepted record followed by a rejected one (a guess out of turn)."""
    replayer, records, at = Replayer(), [], 1_795_989_600_000

    def add(player: str, action: dict[str, Any]) -> dict:
        raw = move_record(match_id, player, action, f"e{len(records)}", at + len(records))
        records.append(raw)
        return replayer.feed(raw).result

    options = {"pegs": 4, "colors": 6, "rounds": 100, "max_rows": 50}
    add("alice", {"type": "create", "game": "mastermind", "seats": ["alice", "bob"], "options": options})
    while (state := replayer.states[match_id]).status != "over":
        maker, breaker = state.seats[state.board.codemaker], state.seats[state.board.codebreaker]
        if state.board.phase == "code":
            assert add(maker, {"type": "set_code", "code": [0, 0, 0, 0], "salt": "00" * 16})["status"] == "accepted"
        else:
            assert add(breaker, {"type": "guess", "code": [1, 1, 1, 1]})["status"] == "accepted"
        assert add(maker, {"type": "guess", "code": [2, 2, 2, 2]})["status"] == "rejected"
    return records


def test_a_long_matchs_time_travel_and_events_cost_each_request_bounded_cpu(stack):
    """Refolding a match of 10,000 records takes far more than one request may cost: the gateway
    folds it over several requests (503 with Retry-After until done), each within its budget."""
    match_id = f"long-{uuid.uuid4().hex[:8]}"
    records = long_mastermind(match_id)
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap, linger_ms=20, acks="all")
    home = partition_of(match_id.encode(), PARTITIONS)
    for raw in records:
        producer.send(stack.topics.moves, raw, key=match_id.encode(), partition=home)
    producer.flush()
    producer.close()
    deadline = time.monotonic() + 300
    while (found := stack.http.get(f"/v1/matches/{match_id}")).status_code != 200 or found.json()["status"] != "over":
        assert time.monotonic() < deadline, "the long match was not projected in time"
        time.sleep(1)
    expected = Replayer()
    for raw in records[:9]:  # seq 5 is the fifth accepted record
        expected.feed(raw)
    worst, answers = 0.0, []
    while not answers or answers[-1].status_code != 200:
        assert len(answers) < 200, "time travel made no progress"
        cpu, answer = gateway_cpu_s(stack, lambda: stack.http.get(f"/v1/matches/{match_id}/positions/5"))
        worst, answers = max(worst, cpu), [*answers, answer]
        assert answer.status_code in (200, 429, 503), answer.text
        if answer.status_code == 429:  # the client address's bucket: reading the log is limited
            time.sleep(int(answer.headers["Retry-After"]))
        elif answer.status_code == 503:
            assert answer.headers["Retry-After"] == "1"
    pending = sum(a.status_code == 503 for a in answers)
    print(f"\ntime travel, {len(records)} records: {pending} answers 503, then 200; worst {worst * 1e3:.1f} ms")
    assert answers[-1].json() == match_view(expected.states[match_id], None)
    assert worst < CPU_BOUND_S, f"one time-travel request cost the gateway {worst:.3f} s of CPU"
    cpu, again = gateway_cpu_s(stack, lambda: stack.http.get(f"/v1/matches/{match_id}/positions/5101"))
    assert again.status_code == 200 and again.json()["status"] == "over" and cpu < CPU_BOUND_S
    cpu, events = gateway_cpu_s(stack, lambda: stack.http.get(f"/v1/matches/{match_id}/events"))
    print(f"events of {len(events.json()['results'])} results: {cpu * 1000:.1f} ms")
    assert [r["seq"] for r in events.json()["results"]] == list(range(1, 5102)) and cpu < CPU_BOUND_S
    for path in ("/v1/stats/mastermind/activity?days=366", "/v1/matches?status=recent&limit=200&offset=1000"):
        cpu, answer = gateway_cpu_s(stack, lambda path=path: stack.http.get(path))
        print(f"{path}: {cpu * 1000:.1f} ms")
        assert answer.status_code == 200 and cpu < CPU_BOUND_S, (path, cpu)


# --- finding 2: one match-id grammar ---------------------------------------------------------------------
def test_a_match_id_outside_the_grammar_is_refused_at_every_door_and_reaches_no_redis_key(stack):
    """`M:log` on the same home partition as M named M's log (a zset) as if it were a match's hash."""
    match_id = next(
        m
        for n in range(1000)
        if partition_of((m := f"m-{uuid.uuid4().hex[:8]}").encode(), PARTITIONS)
        == partition_of(f"{m}:log".encode(), PARTITIONS)
    )
    match_id, tokens, _ = duel(stack, "strands", {"layout": "small-4"}, match_id)
    eve = guest(stack, "eve")[1]
    for bad in (f"{match_id}:log", f"{match_id}%7B0%7D", "x" * 65):  # match M's log zset, a hash tag, too long
        error, code, _ = refused(stack.url, bad, token=eve)
        assert code == 4422 and error["code"] == "malformed" and "not a match id" in error["message"], (bad, code)
        for path in (f"/v1/matches/{bad}", f"/v1/matches/{bad}/stream", f"/v1/matches/{bad}/legal-actions"):
            assert stack.http.get(path, headers=auth(tokens[0])).status_code == 422, path
    with open_socket(stack.url, match_id, tokens[0]) as socket:  # the match itself is untouched
        assert receive(socket)["type"] == "hello"
    assert stack.gateway.alive


def test_the_rules_worker_refuses_creates_whose_match_id_is_outside_the_grammar(stack):
    """From a Kafka client nobody here wrote. A record whose match_id fails the grammar has no match
    to answer to (results are keyed and partitioned by match id): it gets a dead letter saying
    `malformed` (one whose id only adds a line break gets a rejected `malformed` result under it, as
    it always has: the fold of old logs stays as it was). No match is made, no key named after it."""
    target, _, _ = duel(stack, "strands", {"layout": "small-4"})
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap, acks="all")
    bad_ids = [f"{target}:log", "m-{0}", "m é", "m-newline\n"]
    sent = []
    for number, bad in enumerate(bad_ids):
        create = {"type": "create", "game": "strands", "seats": ["mallory", None], "options": {"layout": "small-4"}}
        event_id = f"bad-{uuid.uuid4().hex[:8]}-{number}"
        raw = orjson.dumps(
            {"v": 1, "event_id": event_id, "match_id": bad, "player": "mallory", "at": "2026-12-06T00:00:00Z",
             "action": create}
        )  # fmt: skip
        producer.send(stack.topics.moves, raw, key=bad.encode())
        sent.append(event_id)
    producer.flush()
    producer.close()
    answers = _answers_of(stack, set(sent))
    for event_id in sent[:-1]:
        assert answers[event_id]["error"].startswith("malformed: "), answers[event_id]  # a dead letter
    last = answers[sent[-1]]
    assert last["status"] == "rejected" and last["reason"]["code"] == "malformed" and last["view"] is None, last
    client = stack.redis()
    keys = [k.decode("utf-8", "replace") for k in client.scan_iter(match=f"{stack.keys.prefix}*", count=1000)]
    assert not [k for k in keys if any(bad in k for bad in ["m-{0}", "m é", "m-newline", f"{target}:log:"])], keys
    assert client.type(stack.keys.match_log(target)) == b"zset"
    assert stack.http.get(f"/v1/matches/{target}").json()["status"] == "active"


def _answers_of(stack, event_ids: set[str], timeout: float = 60.0) -> dict[str, dict]:
    """The result or the dead letter of each move record named by its event id."""
    topics = [stack.topics.results, stack.topics.deadletter]
    consumer = KafkaConsumer(*topics, bootstrap_servers=stack.bootstrap, auto_offset_reset="earliest")
    found: dict[str, dict] = {}
    deadline = time.monotonic() + timeout
    try:
        while set(found) != event_ids and time.monotonic() < deadline:
            for messages in consumer.poll(timeout_ms=1000).values():
                for message in messages:
                    answer = orjson.loads(message.value)
                    if "raw_b64" in answer:
                        answer["event_id"] = orjson.loads(base64.b64decode(answer["raw_b64"])).get("event_id")
                    if answer.get("event_id") in event_ids:
                        found[answer["event_id"]] = answer
    finally:
        consumer.close()
    assert set(found) == event_ids, f"no result or dead letter of {event_ids - set(found)}"
    return found


# --- finding 3: names ------------------------------------------------------------------------------------
def test_plylogs_own_names_and_broken_names_cannot_be_taken(stack):
    for name in ("plylog-timekeeper", "plylog-operator", "PLYLOG-x", "Plylog-bots", "alice\n", "al\nice", "a\x00"):
        answer = stack.http.post("/v1/players", json={"name": name})
        assert answer.status_code == 422 and answer.json()["error"]["code"] == "malformed", (name, answer.text)
    assert stack.http.post("/v1/players", json={"name": "plylog_fan"}).status_code == 201
    forged = Authenticator(SECRET.encode(), "guest", None)  # tokens a gateway minted before names were checked
    for player in ("plylog-timekeeper~ttuihp", "alice\n~gtt6iq"):
        token = forged._guest_token(player)
        assert stack.http.get("/v1/whoami", headers=auth(token)).status_code == 401, player
    ann = guest(stack, "ann")
    for seat in ("PLYLOG-timekeeper", "Bot:random", "ｂｏｔ:random", "eve\u200b"):  # nobody can hold these seats
        answer = stack.http.post("/v1/matches", json={"game": "strands", "seats": [ann[0], seat]}, headers=auth(ann[1]))
        assert answer.status_code == 422, (seat, answer.text)


# --- finding 10: actions checked at the door -------------------------------------------------------------
def test_only_actions_the_rules_could_take_reach_the_forever_log(stack):
    match_id, tokens, view = duel(stack, "mind_ninja", {"side": 3})
    seat = view["to_move"][0]
    before = moves_written(stack)
    junk = "x" * 60_000
    refused_actions = [
        ({"type": "bid", "value": 0, "junk": junk}, 422),  # a field the game has not
        ({"type": "bid", "value": junk}, 422),  # the wrong type
        ({"type": "fly", "to": junk}, 422),  # no such action
        ({"type": "resign", "why": junk}, 422),  # lifecycle actions are their type alone
        ({"type": "create", "game": "strands", "seats": [None, None]}, 422),  # creates are not a match's actions
        ({"type": "choose_pattern", "pattern": {"id": "custom", "def": "x" * 30_000}}, 413),  # shaped, too large
    ]
    for action, status in refused_actions:
        answer = stack.http.post(f"/v1/matches/{match_id}/actions", json={"action": action}, headers=auth(tokens[seat]))
        assert answer.status_code == status, (action["type"], answer.text[:300])
    with open_socket(stack.url, match_id, tokens[seat]) as socket:
        assert receive(socket)["type"] == "hello"
        socket.send(orjson.dumps({"action": {"type": "bid", "value": 0, "junk": junk}, "event_id": "j-1"}).decode())
        error = receive_until(socket, lambda m: m["type"] == "error")[-1]
        assert error["code"] == "malformed" and error["event_id"] == "j-1", error
    assert moves_written(stack) == before, "a refused action was written to plylog.moves"
    # the match ends; actions of ~60 KB for it are refused, and none is written
    resigned = stack.http.post(
        f"/v1/matches/{match_id}/actions?wait=true", json={"action": {"type": "resign"}}, headers=auth(tokens[seat])
    )
    assert resigned.json()["status"] == "accepted", resigned.text
    deadline = time.monotonic() + 30
    while stack.view(match_id)["status"] != "over":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    before = moves_written(stack)
    for _ in range(6):
        answer = stack.http.post(
            f"/v1/matches/{match_id}/actions",
            json={"action": {"type": "bid", "value": 1}, "event_id": "e" * 64, "expected_seq": 7},
            headers=auth(tokens[1 - seat]),
        )
        assert answer.status_code == 409 and answer.json()["error"]["code"] == "match_over", answer.text
        large = stack.http.post(
            f"/v1/matches/{match_id}/actions", json={"action": {"type": "pass", "x": junk}}, headers=auth(tokens[0])
        )
        assert large.status_code in (409, 422), large.text
    with open_socket(stack.url, match_id, tokens[0]) as socket:
        assert receive(socket)["type"] == "hello"
        socket.send(orjson.dumps({"action": {"type": "pass"}}).decode())
        assert receive_until(socket, lambda m: m["type"] == "error")[-1]["code"] == "match_over"
    assert moves_written(stack) == before, "an action for a finished match was written to plylog.moves"
