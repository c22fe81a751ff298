"""The gateway process on the real broker and Redis, with the projection written by the test
itself (no rules worker, no projector): auth and errors, rate limit, SSE resume without gaps,
the timekeeper, metrics. End-to-end play through the whole stack is in tests/e2e."""

from __future__ import annotations

import time

import httpx
import orjson
import pytest
from kafka import KafkaConsumer

from games.registry import current_rules
from services.gateway.tokens import SeatTokens
from tests.e2e.gateway_stack import SECRET, StreamReader, auth, gateway_process, unique_redis_prefix

from .gateway_under_test import GatewayUnderTest, running_gateway

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
TOKENS = SeatTokens(SECRET.encode())


class _Gateway(GatewayUnderTest):
    def project(self, match_id: str, seats=("alice", "bob"), seq: int = 1, game: str = "strands", **view) -> None:
        """As the projector leaves it after applying each move: the stored view is the last result's."""
        super().project(match_id, seats, seq, game, **view)
        for n in range(1, seq + 1):
            self.store_accepted(match_id, self.entry(n))

    def append(self, match_id: str, seq: int, publish: bool = True, store: bool = True) -> dict:
        entry = self.entry(seq)
        if store:
            self.store_accepted(match_id, entry)
        result = self.result(match_id, entry)
        if publish:
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
        PLYLOG_SSE_KEEPALIVE_S="0.3",
        PLYLOG_TIMEKEEPER_INTERVAL_S="0.2",
        PLYLOG_WAIT_TIMEOUT_S="0.5",
        PLYLOG_STREAMS_PER_CLIENT="3",
    ) as running:
        yield running


def _error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["code"] == code and body["error"]["message"], body


def test_auth_and_error_answers(gateway):
    gateway.project("m-auth")
    gateway.project("m-other")
    action = {"action": {"type": "resign"}}
    path = "/v1/matches/m-auth/actions"
    _error(gateway.http.post(path, json=action), 401, "unauthorized")
    _error(gateway.http.post(path, json=action, headers=auth("m-auth.0.forged")), 401, "unauthorized")
    _error(
        gateway.http.post(path, json=action, headers=auth(SeatTokens(b"another-secret-xyz").issue("m-auth", 0))),
        401,
        "unauthorized",
    )
    _error(gateway.http.post(path, json=action, headers=auth(TOKENS.issue("m-other", 0))), 403, "forbidden")
    _error(
        gateway.http.post(path, json={**action, "seat": 1}, headers=auth(TOKENS.issue("m-auth", 0))), 403, "forbidden"
    )
    _error(
        gateway.http.get("/v1/matches/m-auth/legal-actions?seat=0", headers=auth(TOKENS.issue("m-auth", 1))),
        403,
        "forbidden",
    )
    _error(gateway.http.get("/v1/matches/m-auth/legal-actions"), 401, "unauthorized")
    _error(
        gateway.http.post("/v1/matches/m-nope/actions", json=action, headers=auth(TOKENS.issue("m-nope", 0))),
        404,
        "unknown_match",
    )
    _error(gateway.http.get("/v1/matches/m-nope"), 404, "unknown_match")
    _error(gateway.http.get("/v1/matches/m-nope/stream"), 404, "unknown_match")
    _error(
        gateway.http.post(
            path, json={"action": {"type": "resign"}, "bogus": 1}, headers=auth(TOKENS.issue("m-auth", 0))
        ),
        422,
        "malformed",
    )
    _error(
        gateway.http.post(path, json={"action": {"no": "type"}}, headers=auth(TOKENS.issue("m-auth", 0))),
        422,
        "malformed",
    )
    _error(
        gateway.http.post(
            path, content=b"not json", headers={**auth(TOKENS.issue("m-auth", 0)), "content-type": "application/json"}
        ),
        422,
        "malformed",
    )
    _error(gateway.http.post("/v1/matches", json={"game": "chess", "seats": ["a", "b"]}), 422, "malformed")
    _error(gateway.http.get("/v1/leaderboards/chess"), 404, "unknown_game")
    _error(gateway.http.get("/v1/players/nobody"), 404, "unknown_player")
    # a valid token for the right match and seat gets through (202: written, not waited for)
    ok = gateway.http.post(path, json=action, headers=auth(TOKENS.issue("m-auth", 0)))
    assert ok.status_code == 202 and ok.json()["status"] == "submitted", ok.text
    record = _moves(gateway, 1)[0]
    assert record["player"] == "alice" and record["match_id"] == "m-auth" and record["action"] == {"type": "resign"}
    assert record["event_id"] == ok.json()["event_id"] and record["at"].endswith("Z") and len(record["at"]) == 24


def test_a_chosen_match_id_the_projection_knows_is_refused_and_nothing_is_written(gateway):
    """The rules worker forgets finished matches and would take a create of the same id as a new
    match; the gateway refuses ids it knows."""
    gateway.project("m-taken", status="over")
    player = gateway.http.post("/v1/players", json={"name": "mallory"}).json()
    taken = gateway.http.post(
        "/v1/matches",
        json={"game": "strands", "seats": ["mallory", None], "match_id": "m-taken"},
        headers=auth(player["token"]),
    )
    _error(taken, 409, "match_exists")
    assert "m-taken" in taken.json()["error"]["message"]
    assert _moves(gateway, 0) == []


def test_a_create_states_the_rules_version_in_force_or_the_one_asked_for(gateway):
    """Every match the gateway creates names its rules version in its create (docs/evolving.md), so
    it folds by that version for its whole life; a version that does not exist is refused at the door."""
    player = gateway.http.post("/v1/players", json={"name": "rulesy"}).json()
    headers = auth(player["token"])
    for body in ({}, {"rules": "strands/2"}):
        created = gateway.http.post(
            "/v1/matches", json={"game": "strands", "seats": [None, None], **body}, headers=headers
        )
        assert created.status_code in (201, 202), created.text
    _error(
        gateway.http.post(
            "/v1/matches", json={"game": "strands", "seats": [None, None], "rules": "strands/9"}, headers=headers
        ),
        422,
        "unknown_rules",
    )
    _error(
        gateway.http.post(
            "/v1/matches", json={"game": "strands", "seats": [None, None], "rules": "mana/1"}, headers=headers
        ),
        422,
        "unknown_rules",
    )
    written = sorted(move["action"]["rules"] for move in _moves(gateway, 2))
    assert written == [current_rules("strands"), "strands/2"]


def test_rate_limit_answers_429_with_retry_after(gateway):
    gateway.project("m-rate")
    headers = auth(TOKENS.issue("m-rate", 1))
    codes = [
        gateway.http.post("/v1/matches/m-rate/actions", json={"action": {"type": "resign"}}, headers=headers)
        for _ in range(6)
    ]
    assert [r.status_code for r in codes[:4]] == [202] * 4  # the burst
    limited = codes[4]
    _error(limited, 429, "rate_limited")
    assert int(limited.headers["Retry-After"]) >= 1
    time.sleep(1.0)  # 2 tokens/s refill
    assert (
        gateway.http.post(
            "/v1/matches/m-rate/actions", json={"action": {"type": "resign"}}, headers=headers
        ).status_code
        == 202
    )
    # another player has a bucket of their own
    assert (
        gateway.http.post(
            "/v1/matches/m-rate/actions", json={"action": {"type": "resign"}}, headers=auth(TOKENS.issue("m-rate", 0))
        ).status_code
        == 202
    )
    metrics = gateway.http.get("/metrics").text
    assert "plylog_gateway_rate_limited_total 2.0" in metrics
    assert (
        'plylog_gateway_requests_total{method="POST",route="/v1/matches/{match_id}/actions",status="429"} 2.0'
        in metrics
    )


def test_stream_resumes_with_last_event_id_without_gaps_or_repeats(gateway):
    gateway.project("m-sse", seq=3)
    first = StreamReader(gateway.url, "m-sse", stop_after=5, validate=False).start()  # synthetic results
    first.wait_for(lambda r: r.accepted_seqs() == [1, 2, 3])
    assert first.results[-1][1]["view"] == {"seq": 3}  # the newest backlog entry carries the current view
    assert first.results[0][1]["view"] is None
    gateway.append("m-sse", 4)
    gateway.append("m-sse", 4)  # a redelivered result: sent once
    gateway.append("m-sse", 5)
    first.wait_for(lambda r: len(r.accepted_seqs()) >= 5)
    first.close()
    assert first.accepted_seqs() == [1, 2, 3, 4, 5]
    # results applied while the client is away, a rejected one, and a live gap the stream fills from the log
    for seq in (6, 7):
        gateway.append("m-sse", seq)
    resumed = StreamReader(gateway.url, "m-sse", last_event_id=5, validate=False).start()
    resumed.wait_for(lambda r: r.accepted_seqs() == [6, 7])
    gateway.redis.publish(
        gateway.keys.live("m-sse"),
        orjson.dumps(
            {
                "v": 1,
                "match_id": "m-sse",
                "status": "rejected",
                "seq": 7,
                "event_id": "bad",
                "reason": {"code": "illegal"},
            }
        ),
    )
    gateway.append("m-sse", 8, publish=False)  # stored, announcement lost
    gateway.append("m-sse", 9)
    resumed.wait_for(lambda r: len(r.accepted_seqs()) >= 4)
    time.sleep(0.5)
    resumed.close()
    assert resumed.accepted_seqs() == [6, 7, 8, 9]
    assert [e for e, _, _ in resumed.results if e == "rejected"] == ["rejected"]
    assert [i for e, _, i in resumed.results if e == "result"] == ["6", "7", "8", "9"]
    assert ": keep-alive" in resumed.raw


def test_timekeeper_claims_run_out_clocks(gateway):
    gateway.project("m-clock")
    keys = gateway.keys
    gateway.redis.zadd(keys.deadlines(keys.home("m-clock")), {"m-clock": int(time.time() * 1000) - 50})
    gateway.redis.zadd(keys.deadlines(keys.home("m-later")), {"m-later": int(time.time() * 1000) + 600_000})
    claims = _moves(gateway, 1)
    assert [(c["match_id"], c["player"], c["action"]) for c in claims] == [
        ("m-clock", "plylog-timekeeper", {"type": "claim_timeout"})
    ]
    time.sleep(1.0)  # still listed (no projector here): not claimed again before RECLAIM_S
    assert len(_moves(gateway, 1, timeout=0.5)) == 1


def test_wait_without_result_answers_202_and_healthz_metrics(gateway):
    gateway.project("m-wait")
    answer = gateway.http.post(
        "/v1/matches/m-wait/actions?wait=true",
        json={"action": {"type": "resign"}},
        headers=auth(TOKENS.issue("m-wait", 0)),
    )
    assert answer.status_code == 202 and answer.json()["status"] == "pending"
    assert gateway.http.get("/healthz").json() == {"status": "ok", "redis": "ok", "kafka": "ok", "live": "ok"}
    assert "plylog_gateway_wait_timeouts_total 1.0" in gateway.http.get("/metrics").text
    assert gateway.http.get("/openapi.json").json()["info"]["title"] == "plylog gateway"
    assert gateway.http.get("/docs").status_code == 200


def _moves(gateway, expect: int, timeout: float = 15.0) -> list[dict]:
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
        if len(got) >= expect:  # anything more arriving shortly after is also reported
            for batch in consumer.poll(timeout_ms=300).values():
                got.extend(orjson.loads(m.value) for m in batch)
    finally:
        consumer.close()
    return got


def test_time_travel_refolds_from_the_partition_start_when_broker_times_mislead(gateway):
    """A producer that stamps records with broker times far before their `at` makes the seek by
    creation time land after the create; the gateway notices (the fold disagrees with the
    projection's accepted event ids) and refolds the partition from its start."""
    from kafka import KafkaProducer

    from games.playout import random_playout_records
    from games.timeutil import to_ms

    played = list(random_playout_records("strands", {"layout": "small-4"}, seed=2, match_id="m-tt"))
    created_ms = to_ms(orjson.loads(played[0][0])["at"])
    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap)
    for number, (raw, _) in enumerate(played):  # the create looks an hour older than it is
        stamp = created_ms - 3_600_000 if number == 0 else created_ms + number
        producer.send(gateway.topics.moves, key=b"m-tt", value=raw, timestamp_ms=stamp)
    producer.flush()
    producer.close()
    _store_projection(gateway, "m-tt", played)  # log entries without offsets, as projectors wrote before
    for _raw, step in played:
        answer = gateway.http.get(f"/v1/matches/m-tt/positions/{step.result['seq']}")
        assert answer.status_code == 200 and answer.json() == step.result["view"], step.result["seq"]
    assert (
        gateway.http.get("/v1/matches/m-tt/legal-actions", headers=auth(TOKENS.issue("m-tt", 0))).json()["status"]
        == "over"
    )


def test_time_travel_reads_only_the_matchs_own_records_when_the_log_names_their_offsets(gateway):
    """With the moves offsets in the projection's log (the projector writes them), a match is
    refolded from its create to its last accepted record, whatever else its partition holds."""
    from kafka import KafkaProducer

    from games.playout import random_playout_records

    noise = [raw for raw, _ in random_playout_records("strands", {"layout": "small-4"}, seed=5, match_id="m-noise")]
    played = list(random_playout_records("strands", {"layout": "small-4"}, seed=3, match_id="m-idx"))
    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap)
    for raw in noise * 20:  # another match's records before ...
        producer.send(gateway.topics.moves, key=b"m-idx", value=raw, partition=_home(gateway, b"m-idx"))
    sent = [
        producer.send(gateway.topics.moves, key=b"m-idx", value=raw, partition=_home(gateway, b"m-idx"))
        for raw, _ in played
    ]
    for raw in noise * 20:  # ... and after it
        producer.send(gateway.topics.moves, key=b"m-idx", value=raw, partition=_home(gateway, b"m-idx"))
    producer.flush()
    offsets = [future.get(10).offset for future in sent]
    producer.close()
    _store_projection(gateway, "m-idx", played, offsets)
    for _raw, step in played:
        assert gateway.http.get(f"/v1/matches/m-idx/positions/{step.result['seq']}").json() == step.result["view"]
    read = gateway.metric("plylog_gateway_history_records_read_total")
    assert read == len(played), f"read {read} records for a match of {len(played)}"


def test_legal_actions_follow_the_log_when_the_projection_is_behind(gateway):
    """A seat socket gets a result from plylog.results before the projector has stored it, and its
    client asks for the legal actions next: the first fold of a match in progress reads its log to
    the end, not to the last record the projection knows (that was a position behind, with the
    other seat to move and no actions listed)."""
    from kafka import KafkaProducer

    from games.playout import random_playout_records

    played = list(random_playout_records("strands", {"layout": "small-4"}, seed=7, match_id="m-ahead"))[:4]
    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap)
    sent = [producer.send(gateway.topics.moves, key=b"m-ahead", value=raw) for raw, _ in played]
    producer.flush()
    offsets = [future.get(10).offset for future in sent]
    producer.close()
    _store_projection(gateway, "m-ahead", played[:2], offsets)  # the projector has stored two of the four so far
    last = played[-1][1].result
    seat = last["view"]["to_move"][0]
    answer = gateway.http.get("/v1/matches/m-ahead/legal-actions", headers=auth(TOKENS.issue("m-ahead", seat))).json()
    assert (answer["seq"], answer["to_move"]) == (last["seq"], last["view"]["to_move"]), answer
    assert answer["actions"], answer


def _store_projection(gateway, match_id: str, known: list, offsets: list[int] | None = None) -> None:
    """The match's hash and log as the projector leaves them after the `known` (record, step)
    pairs; each log entry names its moves offset when `offsets` are given."""
    gateway.redis.hset(
        gateway.keys.match(match_id),
        mapping={
            "game": "strands",
            "seq": len(known),
            "created_at": orjson.loads(known[0][0])["at"],
            "seats": orjson.dumps(["alice", "bob"]),
            "view": orjson.dumps(known[-1][1].result["view"]),
        },
    )
    for number, (_, step) in enumerate(known):
        entry = {k: step.result[k] for k in ("seq", "event_id", "player", "at", "events")}
        if offsets is not None:
            entry["offset"] = offsets[number]
        gateway.redis.zadd(gateway.keys.match_log(match_id), {orjson.dumps(entry): step.result["seq"]})


def _home(gateway, key: bytes) -> int:
    from services.common.kafka_partition import partition_of

    return partition_of(key, 2)


def test_http_edges_oversized_bodies_forged_tokens_and_too_many_streams(gateway):
    gateway.project("m-edge")
    headers = auth(TOKENS.issue("m-edge", 0))
    big = b'{"action": {"type": "resign", "pad": "' + b"x" * 8_000_000 + b'"}}'
    started = time.perf_counter()
    _error(
        gateway.http.post(
            "/v1/matches/m-edge/actions", content=big, headers={**headers, "content-type": "application/json"}
        ),
        413,
        "too_large",
    )
    assert time.perf_counter() - started < 5, "the body must be refused before it is read and parsed"
    chunked = gateway.http.post(
        "/v1/matches/m-edge/actions",
        content=iter([big[:40_000], big[40_000:90_000]]),
        headers={**headers, "content-type": "application/json"},
    )
    _error(chunked, 413, "too_large")
    signature = TOKENS.issue("m-edge", 0).split(".")[2]
    for forged in (f"m-edge.0.{signature[:-2]}é€", "m-edge.0.\u00ff\u00fe", "g1.é.x"):
        response = gateway.http.get(
            "/v1/matches/m-edge/legal-actions", headers={"Authorization": f"Bearer {forged}".encode()}
        )
        _error(response, 401, "unauthorized")
    streams = [httpx.stream("GET", f"{gateway.url}/v1/matches/m-edge/stream", timeout=10) for _ in range(3)]
    opened = [s.__enter__() for s in streams]
    try:
        assert all(r.status_code == 200 for r in opened)
        _error(gateway.http.get("/v1/matches/m-edge/stream"), 429, "rate_limited")
    finally:
        for s in streams:
            s.__exit__(None, None, None)
    time.sleep(0.5)
    with httpx.stream("GET", f"{gateway.url}/v1/matches/m-edge/stream", timeout=10) as again:
        assert again.status_code == 200  # closed streams no longer count


def test_jwt_mode_takes_the_platforms_players_and_refuses_guests(
    kafka_bootstrap, contract_topics, redis_db_url, tmp_path
):
    import jwt

    key = "platform-secret-0123456789abcdef-xyz"
    topics = contract_topics(partitions=2)
    process, url = gateway_process(
        kafka_bootstrap,
        topics,
        redis_db_url,
        unique_redis_prefix(),
        tmp_path,
        PLYLOG_AUTH="jwt",
        PLYLOG_JWT_KEY=key,
        PLYLOG_JWT_AUDIENCE="plylog",
        PLYLOG_WAIT_TIMEOUT_S="0.5",
    )
    process.start()
    try:
        process.wait_ready(timeout=60)
        http = httpx.Client(base_url=url, timeout=10)
        token = jwt.encode({"sub": "u-42", "aud": "plylog", "exp": int(time.time()) + 60}, key, algorithm="HS256")
        assert http.get("/v1/whoami", headers=auth(token)).json() == {"player": "u-42", "via": "jwt"}
        expired = jwt.encode({"sub": "u-42", "aud": "plylog", "exp": int(time.time()) - 5}, key, algorithm="HS256")
        _error(http.get("/v1/whoami", headers=auth(expired)), 401, "unauthorized")
        unsigned = jwt.encode({"sub": "u-42", "aud": "plylog", "exp": int(time.time()) + 60}, None, algorithm="none")
        _error(http.get("/v1/whoami", headers=auth(unsigned)), 401, "unauthorized")
        _error(http.post("/v1/players", json={"name": "ann"}), 403, "forbidden")
        created = http.post("/v1/matches", headers=auth(token), json={"game": "strands", "seats": ["u-42", None]})
        assert created.status_code == 202 and created.json()["status"] == "pending"  # no rules worker here
        assert "tokens" not in created.json()
        assert _moves(_Gateway(url, None, None, topics, kafka_bootstrap, process), 1)[0]["player"] == "u-42"
    finally:
        process.stop()


def test_jwt_player_ids_of_plylogs_own_however_written_or_with_control_characters_are_refused(
    kafka_bootstrap, contract_topics, redis_db_url, tmp_path
):
    import jwt

    key = "platform-secret-0123456789abcdef-xyz"
    process, url = gateway_process(
        kafka_bootstrap, contract_topics(partitions=2), redis_db_url, unique_redis_prefix(), tmp_path,
        PLYLOG_AUTH="jwt", PLYLOG_JWT_KEY=key,
    )  # fmt: skip
    process.start()
    try:
        process.wait_ready(timeout=60)
        http = httpx.Client(base_url=url, timeout=10)

        def whoami(player: str) -> httpx.Response:
            token = jwt.encode({"sub": player, "exp": int(time.time()) + 60}, key, algorithm="HS256")
            return http.get("/v1/whoami", headers=auth(token))

        for player in ("plylog-operator", "ＰＬＹＬＯＧ-operator", "Plylog-timekeeper", "BOT:random", "bot：random"):
            _error(whoami(player), 401, "unauthorized")  # NFKC and case folded: plylog's own
        for player in ("u-42\n", "u\x00", "u\u200b42", "u\u202e24"):  # control and format characters
            _error(whoami(player), 401, "unauthorized")
        assert whoami("u-42").json() == {"player": "u-42", "via": "jwt"}
        assert whoami("Zoë").json()["player"] == "Zoë"
    finally:
        process.stop()
