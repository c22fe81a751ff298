"""The seat socket (GET /v1/matches/{id}/play) of a gateway process on the real broker and Redis,
with the projection and the results written by the test itself (no rules worker, no projector):
who may open one and the close codes of those who may not, the live-stream cap shared with SSE,
malformed messages answered without closing, the own result told from the updates, pending answers,
the rate limit, a client too slow to read, and results taken early from plylog.results. Whole matches
over sockets are in tests/e2e."""

from __future__ import annotations

import os
import time

import httpx
import orjson
import pytest
from kafka import KafkaConsumer, KafkaProducer

from services.gateway.tokens import SeatTokens
from tests.e2e.gateway_stack import SECRET
from tests.e2e.socket_client import open_socket, read_to_close, receive, receive_until, refused

from .gateway_under_test import GatewayUnderTest, running_gateway

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
TOKENS = SeatTokens(SECRET.encode())


class _Gateway(GatewayUnderTest):
    entry_player = "bob"

    def project(self, match_id: str, seats=("alice", "bob"), seq: int = 1, **view) -> None:
        super().project(match_id, seats, seq, to_move=[0], **view)

    def publish(
        self, match_id: str, seq: int, event_id: str = "", player: str = "", status: str = "accepted", pad: int = 0
    ) -> dict:
        """Announce a result as the projector does (an accepted one is stored in the log first)."""
        entry = self.entry(seq, event_id, player)
        result = self.result(match_id, entry, status)
        if status == "accepted":
            self.store_accepted(match_id, entry)
        else:
            result.update(events=[], reason={"code": "illegal", "message": "no"})
        if pad:  # random: the socket compresses (permessage-deflate)
            result["pad"] = os.urandom(pad // 2).hex()
        self.announce(match_id, result)
        return result


@pytest.fixture
def gateway(kafka_bootstrap, contract_topics, redis_db_url, redis_client, tmp_path):
    with running_gateway(
        _Gateway,
        kafka_bootstrap,
        contract_topics(partitions=2),
        2,
        redis_db_url,
        redis_client,
        tmp_path,
        PLYLOG_RATE_PER_S="2",
        PLYLOG_RATE_BURST="4",
        PLYLOG_WAIT_TIMEOUT_S="2",
        PLYLOG_STREAMS_PER_CLIENT="3",
        PLYLOG_SOCKET_QUEUE="8",
        PLYLOG_TIMEKEEPER_INTERVAL_S="0",
    ) as running:
        yield running


def moves(gateway: _Gateway, expect: int, timeout: float = 15.0) -> list[dict]:
    consumer = KafkaConsumer(
        gateway.topics.moves,
        bootstrap_servers=gateway.bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    got: list[dict] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and len(got) < expect:
            for batch in consumer.poll(timeout_ms=300).values():
                got.extend(orjson.loads(m.value) for m in batch)
    finally:
        consumer.close()
    return got


def test_who_may_open_a_seat_socket_and_the_close_codes_of_those_who_may_not(gateway):
    guest = gateway.http.post("/v1/players", json={"name": "ann"}).json()
    stranger = gateway.http.post("/v1/players", json={"name": "eve"}).json()
    gateway.project("m-ws", seats=(guest["player"], "bob"))
    gateway.project("m-other")
    url = gateway.url
    cases = [
        (dict(), 4401, "unauthorized"),  # no credential
        (dict(token="m-ws.0.forged"), 4401, "unauthorized"),
        (
            dict(token=SeatTokens(b"another-secret-xyz").issue("m-ws", 0)),
            4401,
            "unauthorized",
        ),  # another installation's
        (dict(token="g1.bm9ib2R5.forged"), 4401, "unauthorized"),
        (dict(token=TOKENS.issue("m-other", 0)), 4403, "forbidden"),  # another match's token
        (dict(token=stranger["token"]), 4403, "forbidden"),  # someone else's credential: holds no seat here
        (dict(token=TOKENS.issue("m-ws", 0), seat=1), 4403, "forbidden"),  # seat 0's token for seat 1
        (dict(token=TOKENS.issue("m-ws", 0), seat=2), 4422, "malformed"),
    ]
    for kwargs, code, error in cases:
        message, closed, reason = refused(url, "m-ws", **kwargs)
        assert (closed, message["code"]) == (code, error), (kwargs, message, closed)
        assert message["message"] and reason and len(reason.encode()) <= 123, (message, reason)
    message, closed, _ = refused(url, "m-nope", token=TOKENS.issue("m-nope", 0))
    assert (closed, message["code"]) == (4404, "unknown_match") and "m-nope" in message["message"]
    # those who may: a seat token, the seat's player credential, the token as a browser sends it
    with open_socket(url, "m-ws", TOKENS.issue("m-ws", 1)) as socket:
        hello = receive(socket)
    assert hello == {
        "type": "hello",
        "match_id": "m-ws",
        "seat": 1,
        "player": "bob",
        "seq": 1,
        "view": {
            "match_id": "m-ws",
            "game": "strands",
            "seats": [guest["player"], "bob"],
            "status": "active",
            "seq": 1,
            "to_move": [0],
        },
    }
    with open_socket(url, "m-ws", guest["token"]) as socket:
        assert receive(socket)["seat"] == 0
    with open_socket(url, "m-ws", subprotocols=["plylog.v1", "bearer." + TOKENS.issue("m-ws", 0)]) as socket:
        assert socket.subprotocol == "plylog.v1" and receive(socket)["player"] == guest["player"]
    gateway.project("m-hot", seats=(guest["player"], guest["player"]))  # hot seat: ?seat= picks one
    for seat, expected in ((None, 0), (1, 1), (0, 0)):
        with open_socket(url, "m-hot", guest["token"], seat=seat) as socket:
            assert receive(socket)["seat"] == expected
    metrics = gateway.http.get("/metrics").text
    assert 'plylog_gateway_socket_closes_total{code="4401"} 4.0' in metrics
    assert 'plylog_gateway_socket_closes_total{code="4403"} 3.0' in metrics


def test_sockets_are_not_compressed_unless_deflate_is_turned_on(
    gateway, kafka_bootstrap, contract_topics, redis_db_url, redis_client, tmp_path
):
    """The client offers permessage-deflate (the websockets package does by default): the gateway
    declines it unless PLYLOG_SOCKET_DEFLATE=1, and its messages read the same either way."""

    def extensions(running: _Gateway) -> tuple[str, int]:
        running.project("m-zip")
        with open_socket(running.url, "m-zip", TOKENS.issue("m-zip", 1)) as socket:
            return socket.response.headers.get("Sec-WebSocket-Extensions", ""), receive(socket)["seq"]

    assert extensions(gateway) == ("", 1)
    with running_gateway(
        _Gateway,
        kafka_bootstrap,
        contract_topics(partitions=2),
        2,
        redis_db_url,
        redis_client,
        tmp_path / "deflate",
        PLYLOG_SOCKET_DEFLATE="1",
        PLYLOG_TIMEKEEPER_INTERVAL_S="0",
    ) as zipping:
        offered, seq = extensions(zipping)
    assert offered.startswith("permessage-deflate") and seq == 1, offered


def test_sockets_count_with_the_sse_streams_toward_the_clients_cap(gateway):
    gateway.project("m-cap")
    token = TOKENS.issue("m-cap", 0)
    first, second = open_socket(gateway.url, "m-cap", token), open_socket(gateway.url, "m-cap", token)
    receive(first), receive(second)
    with httpx.stream("GET", f"{gateway.url}/v1/matches/m-cap/stream", timeout=10) as stream:
        assert stream.status_code == 200
        message, closed, _ = refused(gateway.url, "m-cap", token=token)
        assert (closed, message["code"]) == (4429, "rate_limited") and "PLYLOG_STREAMS_PER_CLIENT" in message["message"]
        assert gateway.http.get("/v1/matches/m-cap/stream").status_code == 429
        assert gateway.metric("plylog_gateway_open_sockets") == 2
    first.close()
    time.sleep(0.5)
    with open_socket(gateway.url, "m-cap", token) as again:  # a closed socket no longer counts
        assert receive(again)["type"] == "hello"
    second.close()


def test_malformed_messages_are_answered_and_the_socket_stays_open(gateway):
    gateway.project("m-bad")
    with open_socket(gateway.url, "m-bad", TOKENS.issue("m-bad", 0)) as socket:
        assert receive(socket)["type"] == "hello"
        for sent, code, says in [
            ("not json", "malformed", "not JSON"),
            ("[1, 2]", "malformed", "a JSON object"),
            ('{"type": "chat", "text": "hi"}', "malformed", "unknown message type 'chat'"),
            ('{"type": "place", "cells": [[0, 0]]}', "malformed", "unknown message type 'place'"),
            ('{"action": {"no": "type"}}', "malformed", '"type"'),
            ('{"action": {"type": "resign"}, "bogus": 1}', "malformed", "bogus"),
            ('{"action": {"type": "resign"}, "expected_seq": "3"}', "malformed", "expected_seq"),
            ('{"action": {"type": "resign"}, "event_id": "no spaces"}', "malformed", "event_id"),
            ('{"action": {"type": "resign"}, "seat": 1}', "forbidden", "seat 0, not seat 1"),
            ('{"type": "legal_actions", "x": 1}', "malformed", "no fields"),
        ]:
            socket.send(sent)
            answer = receive(socket)
            assert answer["type"] == "error" and answer["code"] == code and says in answer["message"], (sent, answer)
        socket.send(b'{"action": {"type": "resign"}, "event_id": "still-open"}')  # a binary frame: the same JSON
        assert [m["event_id"] for m in moves(gateway, 1)] == ["still-open"]  # nothing refused was written
        socket.send(orjson.dumps({"action": {"type": "resign", "pad": "x" * 70_000}}))  # over PLYLOG_MAX_BODY_BYTES
        _, code, _ = read_to_close(socket)
    assert code == 1009


def test_own_results_are_told_from_updates_once_each_and_late_ones_come_pending(gateway):
    gateway.project("m-own")
    with open_socket(gateway.url, "m-own", TOKENS.issue("m-own", 0)) as socket:
        assert receive(socket)["seq"] == 1
        socket.send(orjson.dumps({"action": {"type": "place", "cells": [[0, 0]]}, "expected_seq": 1}))
        record = moves(gateway, 1)[0]
        assert record["player"] == "alice" and record["expected_seq"] == 1 and record["action"]["type"] == "place"
        mine = gateway.publish("m-own", 2, record["event_id"], "alice")
        gateway.publish("m-own", 2, record["event_id"], "alice")  # redelivered: nothing more
        theirs = gateway.publish("m-own", 3, "bob-1", "bob")
        rejected = gateway.publish("m-own", 3, "bob-2", "bob", status="rejected")
        got = receive_until(socket, lambda m: m.get("event_id") == "bob-2")
        assert got == [{"type": "result", **mine}, {"type": "update", **theirs}, {"type": "update", **rejected}]
        # no result in time (PLYLOG_WAIT_TIMEOUT_S=2): pending, and the result comes later as an update
        socket.send(orjson.dumps({"action": {"type": "resign"}, "event_id": "slow-1"}))
        pending = receive(socket, timeout=10)
        assert (
            pending
            == {
                "type": "result",
                "status": "pending",
                "match_id": "m-own",
                "event_id": "slow-1",
                "message": pending["message"],
            }
            and "update" in pending["message"]
        )
        late = gateway.publish("m-own", 4, "slow-1", "alice")
        assert receive(socket) == {"type": "update", **late}
        # a rejection of its own action comes once, as its result
        socket.send(orjson.dumps({"action": {"type": "resign"}, "event_id": "bad-1"}))
        moves(gateway, 3)
        refusal = gateway.publish("m-own", 4, "bad-1", "alice", status="rejected")
        gateway.publish("m-own", 4, "bad-1", "alice", status="rejected")  # redelivered
        gateway.publish("m-own", 5, "bob-3", "bob")
        assert receive(socket) == {"type": "result", **refusal}
        assert receive(socket)["event_id"] == "bob-3"
    assert gateway.metric("plylog_gateway_wait_timeouts_total") == 1


def test_actions_over_a_socket_are_rate_limited_per_player_and_each_is_answered_once(gateway):
    gateway.project("m-rate")
    sent = [f"r{n}" for n in range(8)]
    with open_socket(gateway.url, "m-rate", TOKENS.issue("m-rate", 1)) as socket:
        receive(socket)
        for event_id in sent:
            socket.send(orjson.dumps({"action": {"type": "resign"}, "event_id": event_id}))
        answers = [receive(socket, timeout=10) for _ in sent]  # no rules worker: written ones end pending
    assert sorted(a["event_id"] for a in answers) == sent, answers
    limited = [a for a in answers if a["type"] == "error"]
    assert limited and all(a["code"] == "rate_limited" and a["retry_after_s"] >= 1 for a in limited), limited
    written = {a["event_id"] for a in answers if a["type"] == "result" and a["status"] == "pending"}
    assert len(written) >= 4 and written | {a["event_id"] for a in limited} == set(sent)  # the burst of 4
    assert {m["event_id"] for m in moves(gateway, len(written))} == written
    assert all(m["player"] == "bob" for m in moves(gateway, len(written)))


def test_a_client_too_slow_to_read_is_closed_with_1013(gateway):
    gateway.project("m-slow")
    with open_socket(gateway.url, "m-slow", TOKENS.issue("m-slow", 0), slow=True) as socket:
        assert receive(socket)["type"] == "hello"
        published = 400
        for seq in range(2, published + 2):  # 12 MB the client does not read
            gateway.publish("m-slow", seq, pad=30_000)
        deadline = time.monotonic() + 30
        while gateway.metric('plylog_gateway_socket_closes_total{code="1013"}') < 1:
            assert time.monotonic() < deadline, "the gateway did not give up on the slow client"
            time.sleep(0.2)
        messages, code, reason = read_to_close(socket)
    assert code == 1013 and "too slow" in reason and "PLYLOG_SOCKET_QUEUE" in reason, (code, reason)
    seqs = [m["seq"] for m in messages]
    assert seqs == list(range(2, 2 + len(seqs))) and len(seqs) < published, len(seqs)
    assert gateway.metric("plylog_gateway_open_sockets") == 0


def accepted_result(match_id: str, seq: int, event_id: str, player: str) -> dict:
    """A result record as the rules worker writes it to plylog.results (every field checked)."""
    return {
        "v": 1,
        "event_id": event_id,
        "match_id": match_id,
        "player": player,
        "status": "accepted",
        "seq": seq,
        "duplicate": False,
        "at": "2026-11-29T22:00:01.000Z",
        "events": [{"type": "marker", "n": seq}],
        "view": {
            "match_id": match_id,
            "game": "strands",
            "seats": ["alice", "bob"],
            "status": "active",
            "seq": seq,
            "to_move": [seq % 2],
        },
    }


def test_a_socket_takes_results_from_the_topic_before_the_projector_each_once_in_seq_order(gateway):
    """Given a seat socket and no projector, when results are produced to plylog.results, then the
    socket gets them from there; the projector's later announcement of the same result adds
    nothing; a result past the next seq waits for the announcements that fill the gap; records
    nobody here wrote (not JSON, a key that is not their match, a bad seq) are left out."""
    gateway.project("m-early")
    results = KafkaProducer(bootstrap_servers=gateway.bootstrap, acks="all")

    def produce(value: bytes, key: bytes = b"m-early") -> None:
        results.send(gateway.topics.results, value, key=key).get(timeout=10)

    try:
        with open_socket(gateway.url, "m-early", TOKENS.issue("m-early", 0)) as socket:
            assert receive(socket)["seq"] == 1
            socket.send(orjson.dumps({"action": {"type": "place", "cells": [[0, 0]]}, "expected_seq": 1}))
            event_id = moves(gateway, 1)[0]["event_id"]
            mine = accepted_result("m-early", 2, event_id, "alice")
            produce(orjson.dumps(mine))
            assert receive(socket, timeout=10) == {"type": "result", **mine}  # nothing in Redis yet
            gateway.store_accepted("m-early", gateway.entry(2, event_id, "alice"))
            gateway.redis.publish(gateway.keys.live("m-early"), orjson.dumps(mine))  # the projector's copy
            produce(b"not json")
            produce(orjson.dumps(accepted_result("m-early", 3, "forged", "bob")), key=b"m-other")
            produce(orjson.dumps({**accepted_result("m-early", 3, "bad-seq", "bob"), "seq": "3"}))
            rejected = {
                "v": 1,
                "event_id": "bob-x",
                "match_id": "m-early",
                "player": "bob",
                "status": "rejected",
                "seq": 2,
                "events": [],
                "reason": {"code": "illegal", "message": "no"},
            }
            produce(orjson.dumps(rejected))
            assert receive(socket) == {"type": "update", **rejected}
            gateway.redis.publish(gateway.keys.live("m-early"), orjson.dumps(rejected))  # announced too: once
            ahead = accepted_result("m-early", 4, "bob-4", "bob")
            produce(orjson.dumps(ahead))  # seq 3 is not known yet: this one waits
            with pytest.raises(TimeoutError):
                receive(socket, timeout=1.5)
            third = gateway.publish("m-early", 3, "bob-3", "bob")  # the projector's, stored in the log first
            assert receive(socket) == {"type": "update", **third}
            gateway.store_accepted("m-early", gateway.entry(4, "bob-4", "bob"))
            gateway.redis.publish(gateway.keys.live("m-early"), orjson.dumps(ahead))
            assert receive(socket) == {"type": "update", **ahead}
            with pytest.raises(TimeoutError):
                receive(socket, timeout=1.0)
    finally:
        results.close()
    assert gateway.metric("plylog_gateway_early_results_total") == 2  # mine and the rejection
    assert gateway.metric("plylog_gateway_results_feed_records_total") == 6
