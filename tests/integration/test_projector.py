"""The projector on the real broker and Redis: a played match of each game is projected as the
fold says; repeated records change nothing; SIGKILL three times gives the same projection as an
uninterrupted run and as `plylog rebuild`; two projectors share the partitions."""

from __future__ import annotations

import contextlib
import random
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx
import orjson
import pytest
import redis
from kafka import KafkaConsumer, TopicPartition

from bench.logs import random_match_records
from bench.procs import Service
from games.fold import Replayer
from games.registry import GAME_MODULES
from services.common import kafka_auth
from services.common.kafka_auth import KafkaAuth
from services.common.kafka_partition import partition_of
from services.common.kafka_read import read_topic
from services.common.redis_keys import Keys
from services.common.settings import Settings, Topics
from services.projector.glicko2 import Rating
from services.projector.plan import Standing, scored, utc_day
from services.projector.projection import Projection
from services.projector.runner import catch_up
from services.projector.store import Store, all_stored_offsets, dump, without_offsets
from tests.support import record

from .harness import (
    REPO,
    assigned_partitions,
    crash_during,
    free_port,
    mixed_bot_traffic,
    produce,
    rules_worker,
    wait_until_answered,
    wait_until_assigned,
)

pytestmark = pytest.mark.integration
GAMES = list(GAME_MODULES)


def projector(
    bootstrap: str, topics: Topics, home: Path, redis_url: str, prefix: str, name: str = "projector-1", *args: str
) -> Service:
    env = {
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "PLYLOG_TOPIC_PREFIX": topics.prefix,
        "REDIS_URL": redis_url,
        "PLYLOG_REDIS_PREFIX": prefix,
        "PLYLOG_OPS_PORT": str(free_port()),  # /readyz says which partitions it owns
    }
    return Service(name, "services.projector", ("--name", name, *args), env, home)


def wait_for_metrics(service, condition, since: float = 0.0, timeout: float = 30.0) -> dict:
    """The projector's totals (metrics.json in its data dir, written every few seconds) once a
    version written after `since` (epoch s) satisfies `condition`."""
    path = service.dir / "data" / service.name / "metrics.json"
    deadline = time.monotonic() + timeout
    while True:
        if path.exists() and path.stat().st_mtime > since:
            with contextlib.suppress(ValueError):
                totals = orjson.loads(path.read_bytes())
                if condition(totals):
                    return totals
        assert time.monotonic() < deadline, f"{path}: no totals as expected after {timeout:g} s\n{service.tail()}"
        time.sleep(0.3)


def wait_for_redis_failure(service, where: str, timeout: float = 90.0) -> None:
    """Until the projector's /metrics counts a failed call to Redis at `where` (own, batch)."""
    url = f"http://127.0.0.1:{service.env['PLYLOG_OPS_PORT']}/metrics"
    sample = f'plylog_projector_redis_failures_total{{where="{where}"}} '
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(httpx.HTTPError):
            lines = [line for line in httpx.get(url, timeout=3).text.splitlines() if line.startswith(sample)]
            if lines and float(lines[0].split()[-1]) > 0:
                return
        assert time.monotonic() < deadline, f"{service.name}: no failed Redis call ({where}) in {timeout:g} s"
        time.sleep(0.3)


def end_offsets(bootstrap: str, topics: Topics) -> dict[str, int]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, **kafka_auth.kafka_python(KafkaAuth.from_env())
    )
    try:
        tps = [
            TopicPartition(t, p) for t in (topics.results, topics.outcomes) for p in consumer.partitions_for_topic(t)
        ]
        return {f"{tp.topic}:{tp.partition}": end for tp, end in consumer.end_offsets(tps).items() if end}
    finally:
        consumer.close()


def wait_until_projected(
    client: redis.Redis,
    keys: Keys,
    bootstrap: str,
    topics: Topics,
    timeout: float = 90.0,
    workers=(),
    consumer: str = "projector",
) -> None:
    """Until the stored offsets reach the end of every partition of results and outcomes."""
    deadline = time.monotonic() + timeout
    while True:
        ends = end_offsets(bootstrap, topics)
        stored = all_stored_offsets(client, keys, consumer)
        if stored == ends:
            return
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {w.name}:\n{w.tail()}" for w in workers)
            raise AssertionError(f"projection not caught up after {timeout}s: stored {stored}, ends {ends}\n{tails}")
        time.sleep(0.3)


def fold_offline(traffic: list[tuple[bytes, bytes]], partitions: int) -> tuple[list, list, set]:
    """(results, outcomes, match ids) as the rules worker would emit them: (partition, key, value)."""
    replayers = [Replayer() for _ in range(partitions)]
    offsets = [0] * partitions
    results, outcomes = [], []
    for key, raw in traffic:
        p = partition_of(key, partitions)
        taken = replayers[p].feed(raw, {"partition": p, "offset": offsets[p]}, key=key)
        offsets[p] += 1
        results.append((p, taken.result["match_id"], orjson.dumps(taken.result)))
        if taken.outcome is not None:
            outcomes.append((0, taken.outcome["match_id"], orjson.dumps(taken.outcome)))
    return results, outcomes, {match_id for r in replayers for match_id in r.states}


def send(bootstrap: str, topic: str, records, pace_s: float = 0.0) -> None:
    from kafka import KafkaProducer

    sender = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for partition, key, value in records:
        sender.send(topic, key=(key or "").encode(), value=value, partition=partition)
        if pace_s:
            time.sleep(pace_s)
    sender.flush()
    sender.close()


# --- a played match of each game ---------------------------------------------------------------------
def test_played_matches_of_every_game_are_projected_as_the_fold_says(
    kafka_bootstrap, contract_topics, redis_db_url, redis_client, tmp_path
):
    topics, keys = contract_topics(partitions=3), Keys("e2e:", 3)
    moves = [raw for i, game in enumerate(GAMES) for raw in random_match_records(game, 1, seed=20 + i, prefix="e2e-")]
    moves += special_matches()
    traffic = [(orjson.loads(raw)["match_id"].encode(), raw) for raw in moves]
    worker = rules_worker(kafka_bootstrap, topics, tmp_path).start()
    proj = projector(kafka_bootstrap, topics, tmp_path, redis_db_url, keys.prefix).start()
    try:
        produce(kafka_bootstrap, topics.moves, traffic)
        wait_until_answered(kafka_bootstrap, topics, len(traffic), workers=[worker])
        wait_until_projected(redis_client, keys, kafka_bootstrap, topics, workers=[proj])
        assert_projection_is_the_fold(redis_client, keys, traffic, kafka_bootstrap, topics)
        before = dump(redis_client, keys)
        assert_live_channel_announces_every_result(redis_client, keys, kafka_bootstrap, topics, traffic)
        before_repeats = dump(redis_client, keys)
        assert without_offsets(before_repeats) == without_offsets(before)
        repeat_some_results_and_outcomes(kafka_bootstrap, topics)
        wait_until_projected(redis_client, keys, kafka_bootstrap, topics, workers=[proj])
        assert without_offsets(dump(redis_client, keys)) == without_offsets(before)
        # the repeats were read and recognised as such (counted), and changed nothing (above)
        wait_for_metrics(proj, lambda m: m.get("stale", 0) > 0 and m.get("outcomes_repeated", 0) > 0)
    finally:
        proj.stop()
        worker.stop()


def special_matches() -> list[bytes]:
    """A match waiting for a seat, a running clocked match, an aborted one."""
    strands = {"type": "create", "game": "strands", "options": {"layout": "small-4"}}
    return [
        record("e2e-open", "carol", {**strands, "seats": ["carol", None]}, 0),
        record(
            "e2e-clock",
            "carol",
            {**strands, "seats": ["carol", "dave"], "clock": {"initial_s": 300, "increment_s": 5}},
            1,
        ),
        record("e2e-abort", "carol", {**strands, "seats": ["carol", "erin"]}, 2),
        record("e2e-abort", "erin", {"type": "abort"}, 3),
    ]


def assert_projection_is_the_fold(client: redis.Redis, keys: Keys, traffic, bootstrap: str, topics: Topics) -> None:
    offline = Replayer()
    log = defaultdict(list)
    for key, raw in traffic:
        result = offline.feed(raw, key=key).result
        if result["status"] == "accepted" and not result["duplicate"]:
            log[result["match_id"]].append(result)
    activity = defaultdict(Counter)
    for match_id, state in offline.states.items():
        stored = client.hgetall(keys.match(match_id))
        last = log[match_id][-1]
        assert orjson.loads(stored[b"view"]) == last["view"], match_id
        assert int(stored[b"seq"]) == state.seq and stored[b"status"].decode() == state.status
        assert orjson.loads(stored[b"seats"]) == list(state.seats)
        entries = [orjson.loads(m) for m in client.zrange(keys.match_log(match_id), 0, -1)]
        assert [e["seq"] for e in entries] == list(range(1, state.seq + 1))
        assert [e["events"] for e in entries] == [r["events"] for r in log[match_id]]
        listed = {"waiting": "open", "active": "active", "over": "recent"}[state.status]
        home = keys.home(match_id)
        assert client.zscore(keys.matches(listed, None, home), match_id) is not None
        assert client.zscore(keys.matches(listed, state.game, home), match_id) is not None
        counts = activity[(state.game, utc_day(T_DAY_MS))]
        counts["started"] += state.started_at is not None
        counts["finished"] += state.status == "over"
        counts["moves"] += state.game_actions
    assert every_partition(client, keys, lambda p: client.zrange(keys.matches("open", None, p), 0, -1)) == [b"e2e-open"]
    assert every_partition(client, keys, lambda p: client.zrange(keys.matches("active", None, p), 0, -1)) == [
        b"e2e-clock"
    ]
    clock = offline.states["e2e-clock"].clock
    assert every_partition(client, keys, lambda p: client.zrange(keys.deadlines(p), 0, -1, withscores=True)) == [
        (b"e2e-clock", clock.since_ms + clock.remaining_ms[0])
    ]
    for (game, day), counts in activity.items():
        assert summed(client, [keys.activity(game, day, p) for p in keys.all_partitions()]) == dict(counts), game
        assert summed(client, [keys.totals(game, p) for p in keys.all_partitions()]) == dict(counts), game
    assert_standings_follow_the_outcomes_in_log_order(client, keys, bootstrap, topics)


def every_partition(client, keys: Keys, read) -> list:
    """What `read(partition)` gives, over every partition's key (lists are kept per partition)."""
    return [entry for partition in keys.all_partitions() for entry in read(partition)]


def summed(client, names: list[str]) -> dict[str, int]:
    """The counters of several per-partition hashes, added up."""
    total = Counter()
    for name in names:
        total.update({k.decode(): int(v) for k, v in client.hgetall(name).items()})
    return dict(total)


T_DAY_MS = 1_795_989_600_000  # every generated record is on 2026-11-29 (UTC)


def assert_standings_follow_the_outcomes_in_log_order(client, keys, bootstrap, topics) -> None:
    standings: dict[tuple[str, str], Standing] = {}
    outcomes = [orjson.loads(r.value) for r in read_topic(bootstrap, topics.outcomes)]
    assert len(outcomes) == len(GAMES) + 1  # one per game, and the aborted match
    for o in outcomes:
        mark = orjson.loads(client.get(keys.match_outcome(o["match_id"])))
        assert mark["rated"] == o["rated"] and mark["outcome"] == o["outcome"]
        if not o["rated"]:
            assert mark["ratings"] is None
            continue
        before = [standings.get((p, o["game"]), Standing()) for p in o["players"]]
        for player, after in zip(o["players"], scored(before, o["outcome"]["winner"]), strict=False):
            standings[(player, o["game"])] = after
    assert len(standings) == 2 * len(GAMES)
    for (player, game), standing in standings.items():
        held = client.hmget(keys.player(player), [f"{game}:{f}" for f in Standing.FIELDS])
        assert Standing.from_values(held) == standing, (player, game)
        assert client.zscore(keys.leaderboard(game, "rating"), player) == standing.rating.rating
        assert client.zscore(keys.leaderboard(game, "wins"), player) == standing.wins
        assert client.zscore(keys.leaderboard(game, "played"), player) == 1
    assert not client.exists(keys.player("erin")) and not client.exists(keys.player("carol"))
    assert Rating() not in [s.rating for s in standings.values()]


def assert_live_channel_announces_every_result(client, keys, bootstrap, topics, traffic) -> None:
    """A move to a finished match and a client retry: both results are published, nothing changes."""
    pubsub = client.pubsub()
    pubsub.subscribe(keys.live("e2e-abort"))
    assert pubsub.get_message(timeout=5)["type"] == "subscribe"
    late = record("e2e-abort", "carol", {"type": "resign"}, 9)
    produce(bootstrap, topics.moves, [(b"e2e-abort", late), traffic[-1]])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 2 and time.monotonic() < deadline:
        message = pubsub.get_message(timeout=1)
        if message and message["type"] == "message":
            got.append(orjson.loads(message["data"]))
    pubsub.close()
    assert [(r["status"], r["duplicate"]) for r in got] == [("rejected", False), ("accepted", True)]
    assert got[0]["reason"]["code"] == "match_over"
    wait_until_projected(client, keys, bootstrap, topics)


def repeat_some_results_and_outcomes(bootstrap: str, topics: Topics) -> None:
    results = read_topic(bootstrap, topics.results)
    outcomes = read_topic(bootstrap, topics.outcomes)
    again = [(r.partition, r.key.decode(), r.value) for r in results[::3]]
    send(bootstrap, topics.results, again)
    send(bootstrap, topics.outcomes, [(0, r.key.decode(), r.value) for r in outcomes])


# --- crash safety and rebuild -------------------------------------------------------------------------
@pytest.mark.slow
def test_sigkill_three_times_then_rebuild_give_the_uninterrupted_projection(
    kafka_bootstrap, contract_topics, redis_db_url, redis_client, tmp_path
):
    topics = contract_topics(partitions=6)
    crashed, reference = Keys("crash:", 6), Keys("ref:", 6)
    traffic = mixed_bot_traffic(GAMES, matches=200, seed=7, prefix="crash-")
    results, outcomes, matches = fold_offline(traffic, 6)
    rng = random.Random(3)
    results += rng.sample(results, 150)  # repeats on the topic, as after a rules worker crash
    outcomes += rng.sample(outcomes, 20)
    assert len(results) >= 5000 and len(outcomes) >= 150
    proj = projector(kafka_bootstrap, topics, tmp_path, redis_db_url, crashed.prefix).start()
    proj.wait_ready()
    try:
        crash_during(  # outcomes after their results, as the rules worker writes them (the projector checks them)
            proj,
            lambda: (
                send(kafka_bootstrap, topics.results, results, 12.0 / len(results)),
                send(kafka_bootstrap, topics.outcomes, outcomes, 3.0 / len(outcomes)),
            ),
            pause_s=(2.5, 4.5),
            seed=3,
        )
        wait_until_projected(redis_client, crashed, kafka_bootstrap, topics, workers=[proj])
    finally:
        proj.stop()
    assert proj.starts == 4
    crash_dump = dump(redis_client, crashed)
    assert {k.split(":")[2] for k in crash_dump if k.startswith("match:") and k.count(":") == 2} == matches

    uninterrupted = projector(
        kafka_bootstrap,
        topics,
        tmp_path,
        redis_db_url,
        reference.prefix,
        "reference",
        "--group",
        f"{topics.prefix}reference",
    ).start()
    try:
        wait_until_projected(redis_client, reference, kafka_bootstrap, topics, workers=[uninterrupted])
    finally:
        uninterrupted.stop()
    assert dump(redis_client, reference) == crash_dump
    print("\nuninterrupted projector:", (re.findall(r"stopped: .*", uninterrupted.log_text()) or ["?"])[-1])

    started = time.perf_counter()
    rebuilt = cli_rebuild(kafka_bootstrap, topics, redis_db_url, crashed)
    took = time.perf_counter() - started
    assert rebuilt.returncode == 0, rebuilt.stderr
    print(f"plylog rebuild ({took:.1f} s wall, process start included): {rebuilt.stdout.strip()}")
    assert dump(redis_client, crashed) == crash_dump
    check = cli_rebuild(kafka_bootstrap, topics, redis_db_url, crashed, "--check")
    assert check.returncode == 0 and "equals a rebuild" in check.stdout, check.stderr
    changed = next(
        crashed.totals("mana", p) for p in crashed.all_partitions() if redis_client.exists(crashed.totals("mana", p))
    )
    redis_client.hincrby(changed, "moves", 1)
    check = cli_rebuild(kafka_bootstrap, topics, redis_db_url, crashed, "--check")
    assert check.returncode == 1 and "differs from a rebuild in 1 of" in check.stderr
    assert changed[len(crashed.prefix) :] in check.stderr, check.stderr
    assert not redis_client.keys("~*")  # the scratch keys are gone


def cli_rebuild(bootstrap: str, topics: Topics, redis_url: str, keys: Keys, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", "rebuild", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(bootstrap, topics, redis_url, keys),
    )


def cli_env(bootstrap: str, topics: Topics, redis_url: str, keys: Keys) -> dict[str, str]:
    import os

    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "REDIS_URL": redis_url,
        "PLYLOG_TOPIC_PREFIX": topics.prefix,
        "PLYLOG_REDIS_PREFIX": keys.prefix,
    }


# --- two projectors in one group ---------------------------------------------------------------------
def test_two_projectors_share_the_partitions_and_rebuild_waits_for_them(
    kafka_bootstrap, contract_topics, redis_db_url, redis_client, tmp_path
):
    topics, keys = contract_topics(partitions=4), Keys("pair:", 4)
    traffic = mixed_bot_traffic(GAMES, matches=40, seed=9, prefix="pair-")
    results, outcomes, _ = fold_offline(traffic, 4)
    pair = [
        projector(kafka_bootstrap, topics, tmp_path, redis_db_url, keys.prefix, f"projector-{i}").start()
        for i in (1, 2)
    ]
    try:
        for proj in pair:
            wait_until_assigned(proj, timeout=60)
        send(kafka_bootstrap, topics.results, results)
        send(kafka_bootstrap, topics.outcomes, outcomes)
        wait_until_projected(redis_client, keys, kafka_bootstrap, topics, workers=pair)
        owned = [last_assignment(proj) for proj in pair]
        assert all(owned) and not owned[0] & owned[1]
        assert owned[0] | owned[1] == {f"{topics.results}[{p}]" for p in range(4)} | {f"{topics.outcomes}[0]"}
        refused = cli_rebuild(kafka_bootstrap, topics, redis_db_url, keys)
        assert refused.returncode != 0 and "a projector is connected" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        for proj in pair:
            proj.stop()
    reference = Keys("alone:", 4)
    client = redis.Redis.from_url(redis_db_url)
    settings = Settings.from_env(kafka_bootstrap=kafka_bootstrap, topic_prefix=topics.prefix)
    catch_up(Projection(Store(client, reference, "projector", topics.outcomes), settings.topics), kafka_bootstrap)
    assert dump(client, reference) == dump(redis_client, keys)


def last_assignment(proj: Service) -> set[str]:
    return set(assigned_partitions(proj))


def test_results_the_projector_cannot_apply_are_skipped_counted_and_never_wedge_it(
    kafka_bootstrap, contract_topics, redis_db_url, redis_client, tmp_path
):
    """Whoever may write plylog.results can write anything: `view.started_at: true` (Redis refuses
    it), `"clock": [1]` (planning raised), garbage. The projector logs and skips each, counts them,
    applies the good results around them, and a restart does not meet them again."""
    topics, keys = contract_topics(partitions=1), Keys("poison:", 1)
    create = {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": {"layout": "small-4"}}
    replayer = Replayer()
    good = [
        orjson.loads(orjson.dumps(replayer.feed(record("m1", "alice", create, 0)).result)),
        orjson.loads(
            orjson.dumps(replayer.feed(record("m1", "alice", {"type": "place", "cells": [[1, 0]]}, 1)).result)
        ),
    ]
    poison = [
        {**good[1], "view": {**good[1]["view"], "started_at": True}},
        {**good[1], "view": {**good[1]["view"], "clock": [1]}},
        {"status": "accepted", "seq": True},
    ]
    records = [(0, "m1", orjson.dumps(r)) for r in [good[0], *poison, good[1]]] + [(0, "x", b"\xff not json")]
    proj = projector(kafka_bootstrap, topics, tmp_path, redis_db_url, keys.prefix).start()
    try:
        proj.wait_ready()
        send(kafka_bootstrap, topics.results, records)
        wait_until_projected(redis_client, keys, kafka_bootstrap, topics, workers=[proj])
        assert redis_client.hget(keys.match("m1"), "seq") == b"2" and proj.alive
        metrics = tmp_path / "data" / proj.name / "metrics.json"
        deadline = time.monotonic() + 20
        while not (metrics.exists() and orjson.loads(metrics.read_bytes()).get("records") == len(records)):
            assert time.monotonic() < deadline, proj.tail()
            time.sleep(0.5)
        assert orjson.loads(metrics.read_bytes())["unreadable"] == 4
        proj.kill()
        restarted = time.time()
        proj.start().wait_ready()
        # the restarted projector resumes after the records it skipped: it reads none of them again
        again = wait_for_metrics(proj, lambda m: True, since=restarted)
        assert proj.alive and again["records"] == 0 and again.get("unreadable", 0) == 0, again
    finally:
        proj.stop()


def own_redis(port: int, data: Path) -> subprocess.Popen:
    """A Redis of this test's own (it is stopped and started again), its data kept in `data`."""
    from services.cli._redis import ensure_installed

    data.mkdir(exist_ok=True)
    server = subprocess.Popen(
        [
            ensure_installed(),
            "--port",
            str(port),
            "--dir",
            str(data),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            if redis.Redis(port=port).ping():
                return server
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                server.kill()
                raise
            time.sleep(0.1)


def test_partitions_assigned_while_redis_is_away_are_owned_once_it_is_back(kafka_bootstrap, contract_topics, tmp_path):
    """Given two projectors that projected the first half, when their Redis stops and one of them
    dies, the group gives all partitions to the other, which must read their offsets from Redis
    to own them: it does not die on it (librdkafka raises what its callback raises), it waits,
    and once Redis is back it projects the rest, nothing twice."""
    from bench.procs import free_port

    topics, keys, port = contract_topics(partitions=4), Keys("away:", 4), free_port()
    results, outcomes, _ = fold_offline(mixed_bot_traffic(GAMES, matches=16, seed=4, prefix="away-"), 4)
    half = len(results) // 2
    server = own_redis(port, tmp_path / "redis")
    url = f"redis://127.0.0.1:{port}/0"
    first, second = (
        projector(kafka_bootstrap, topics, tmp_path, url, keys.prefix, f"projector-{n}").start() for n in (1, 2)
    )
    try:
        for proj in (first, second):
            wait_until_assigned(proj, timeout=60)
        send(kafka_bootstrap, topics.results, results[:half])
        wait_until_projected(redis.Redis(port=port), keys, kafka_bootstrap, topics, workers=[first, second])
        server.terminate()
        server.wait(timeout=20)
        second.kill()  # its partitions go to the first once its session (10 s) times out
        wait_for_redis_failure(first, "own")  # it took the second's partitions while Redis is away
        server = own_redis(port, tmp_path / "redis")
        send(kafka_bootstrap, topics.results, results[half:])
        send(kafka_bootstrap, topics.outcomes, outcomes)
        client = redis.Redis(port=port)
        wait_until_projected(client, keys, kafka_bootstrap, topics, workers=[first])
        assert first.alive, first.tail()
        assert last_assignment(first) == {f"{topics.results}[{p}]" for p in range(4)} | {f"{topics.outcomes}[0]"}
        reference = Keys("away-reference:", 4)
        settings = Settings.from_env(kafka_bootstrap=kafka_bootstrap, topic_prefix=topics.prefix)
        catch_up(Projection(Store(client, reference, "projector", topics.outcomes), settings.topics), kafka_bootstrap)
        assert dump(client, reference) == dump(client, keys)  # all of it, counters counted once
    finally:
        for proj in (first, second):
            proj.stop()
        server.terminate()
        server.wait(timeout=20)
