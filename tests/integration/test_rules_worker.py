"""The rules worker on the real broker: results equal the offline fold, bad input never stops
it, SIGKILL loses and doubles nothing, and two workers share and hand over partitions."""
from __future__ import annotations

import threading
import time
from collections import defaultdict

import orjson
import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from bench.logs import random_match_records
from games.fold import Replayer
from games.registry import GAME_MODULES
from services.cli.audit import audit
from services.common import kafka_admin
from services.common.moves_log import read_topic
from services.common.settings import Settings

from .harness import crash_during, mixed_bot_traffic, produce, rules_worker, wait_until_answered

pytestmark = pytest.mark.integration
GAMES = list(GAME_MODULES)


def settings_for(bootstrap: str, topics) -> Settings:
    return Settings.from_env(kafka_bootstrap=bootstrap, topic_prefix=topics.prefix)


@pytest.fixture
def worker_home(tmp_path):
    return tmp_path


def test_one_match_per_game_gives_exactly_the_offline_results(kafka_bootstrap, contract_topics, worker_home):
    topics = contract_topics(partitions=4)
    records = [raw for game in GAMES for raw in random_match_records(game, 1, seed=11, prefix="e2e-")]
    worker = rules_worker(kafka_bootstrap, topics, worker_home).start()
    try:
        produce(kafka_bootstrap, topics.moves, ((orjson.loads(r)["match_id"].encode(), r) for r in records))
        wait_until_answered(kafka_bootstrap, topics, len(records), workers=[worker])
    finally:
        worker.stop()
    emitted = defaultdict(list)
    for rec in read_topic(kafka_bootstrap, topics.results):
        result = orjson.loads(rec.value)
        emitted[result["match_id"]].append(result)
    offline = Replayer()
    expected = defaultdict(list)
    for raw in records:
        result = offline.feed(raw).result
        expected[result["match_id"]].append(result)
    assert sorted(emitted) == sorted(expected) and len(expected) == len(GAMES)
    for match_id, results in expected.items():
        got = sorted(emitted[match_id], key=lambda r: r["seq"])
        assert [{**r, "source": None} for r in got] == results, match_id
        assert got[-1]["view"]["status"] == "over"
    outcomes = {orjson.loads(r.value)["match_id"]: orjson.loads(r.value) for r in read_topic(kafka_bootstrap, topics.outcomes)}
    assert sorted(outcomes) == sorted(expected)
    for match_id, outcome in outcomes.items():
        assert outcome["outcome"] == expected[match_id][-1]["view"]["outcome"]
    report = audit(settings_for(kafka_bootstrap, topics))
    assert report.ok, report.problems


def test_bad_input_is_rejected_or_dead_lettered_and_the_worker_goes_on(kafka_bootstrap, contract_topics, worker_home):
    topics = contract_topics(partitions=2)
    good = list(random_match_records("strands", 1, seed=3, prefix="after-bad-"))
    valid_keyed = orjson.loads(good[0])
    bad = [
        (b"k1", b"\x89PNG not json at all"),
        (b"k2", b'["a", "list"]'),
        (b"k3", b'"just a string"'),
        (b"someone-else", orjson.dumps({**valid_keyed, "event_id": "mis-keyed"})),
        (valid_keyed["match_id"].encode(), orjson.dumps({**valid_keyed, "event_id": "unknown-action",
                                                          "action": {"type": "teleport"}})),
        (b"big", orjson.dumps({**valid_keyed, "match_id": "big", "event_id": "oversized",
                               "action": {"type": "create", "pad": "x" * 70_000}})),
        (b"k4", None),
    ]
    records = bad + [(orjson.loads(r)["match_id"].encode(), r) for r in good]
    worker = rules_worker(kafka_bootstrap, topics, worker_home).start()
    try:
        produce(kafka_bootstrap, topics.moves, records)
        wait_until_answered(kafka_bootstrap, topics, len(records), workers=[worker])
        assert worker.alive, worker.tail()
    finally:
        worker.stop()
    letters = [orjson.loads(r.value) for r in read_topic(kafka_bootstrap, topics.deadletter)]
    assert len(letters) == 4
    assert {letter["error"].split(":")[0] for letter in letters} >= {"malformed", "record has no value (a tombstone)"}
    results = {orjson.loads(r.value)["event_id"]: orjson.loads(r.value) for r in read_topic(kafka_bootstrap, topics.results)}
    assert results["mis-keyed"]["reason"]["code"] == "malformed"
    assert "key" in results["mis-keyed"]["reason"]["message"]
    assert results["unknown-action"]["reason"]["code"] in ("malformed", "unknown_match")
    assert results["oversized"]["reason"]["code"] == "too_large"
    last = orjson.loads(good[-1])
    assert results[last["event_id"]]["view"]["status"] == "over"
    assert audit(settings_for(kafka_bootstrap, topics)).ok


def test_a_batch_kafka_refuses_stops_the_worker_and_a_restart_answers_it(kafka_bootstrap, contract_topics, worker_home):
    topics = contract_topics(partitions=2)
    records = [(orjson.loads(r)["match_id"].encode(), r) for r in random_match_records("strands", 2, seed=4, prefix="refused-")]
    worker = rules_worker(kafka_bootstrap, topics, worker_home).start()
    try:
        worker.wait_ready()
        produce(kafka_bootstrap, topics.moves, records[:20])
        wait_until_answered(kafka_bootstrap, topics, 20, workers=[worker])
        _set_results_max_bytes(kafka_bootstrap, topics, "300")  # no result fits any more
        produce(kafka_bootstrap, topics.moves, records[20:])
        assert worker.popen.wait(timeout=60) != 0, "the worker must stop, not read on past a failed batch"
        assert "MessageSizeTooLargeError" in worker.log_text()
        _set_results_max_bytes(kafka_bootstrap, topics, "1048588")
        worker.start().wait_ready()
        wait_until_answered(kafka_bootstrap, topics, len(records), workers=[worker])
    finally:
        worker.stop()
    report = audit(settings_for(kafka_bootstrap, topics))
    assert report.ok, "\n".join(report.problems)


def _set_results_max_bytes(bootstrap: str, topics, value: str) -> None:
    with kafka_admin.admin(bootstrap) as client:
        client.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topics.results,
                                             configs={"max.message.bytes": value})])


@pytest.mark.slow
def test_sigkill_three_times_loses_nothing_and_applies_nothing_twice(kafka_bootstrap, contract_topics, worker_home):
    topics = contract_topics(partitions=6)
    traffic = mixed_bot_traffic(GAMES, matches=200, seed=5, prefix="crash-")
    assert len(traffic) >= 5000 and len({k for k, _ in traffic}) >= 200
    worker = rules_worker(kafka_bootstrap, topics, worker_home).start()
    worker.wait_ready()
    pace = 25.0 / len(traffic)  # spread the traffic over ~25 s so the kills land mid-stream
    try:
        crash_during(worker, lambda: produce(kafka_bootstrap, topics.moves, traffic, pace))
        wait_until_answered(kafka_bootstrap, topics, len(traffic), timeout=240, workers=[worker])
    finally:
        worker.stop()
    assert worker.starts == 4
    assert "hold no records" not in worker.log_text(), "the worker went on past records it never answered"
    report = audit(settings_for(kafka_bootstrap, topics))
    assert report.ok, "\n".join(report.problems)
    assert report.moves == len(traffic)
    _distinct_accepted_equal_offline(kafka_bootstrap, topics, traffic)


def _distinct_accepted_equal_offline(bootstrap, topics, traffic) -> None:
    """Per match, the distinct accepted results are the offline fold's: no gap, nothing twice."""
    emitted = defaultdict(dict)
    for rec in read_topic(bootstrap, topics.results):
        result = orjson.loads(rec.value)
        if result["status"] == "accepted" and not result["duplicate"]:
            previous = emitted[result["match_id"]].setdefault(result["seq"], rec.value)
            assert orjson.loads(previous)["event_id"] == result["event_id"], "two different records got one seq"
    offline = Replayer()
    expected = defaultdict(dict)
    for key, raw in traffic:
        result = offline.feed(raw, key=key).result
        if result["status"] == "accepted" and not result["duplicate"]:
            expected[result["match_id"]][result["seq"]] = result["event_id"]
    got = {m: {seq: orjson.loads(v)["event_id"] for seq, v in seqs.items()} for m, seqs in emitted.items()}
    assert got == dict(expected)


@pytest.mark.slow
def test_two_workers_share_partitions_and_the_survivor_takes_over(kafka_bootstrap, contract_topics, worker_home):
    topics = contract_topics(partitions=6)
    traffic = mixed_bot_traffic(GAMES, matches=80, seed=9, prefix="scale-")
    first = rules_worker(kafka_bootstrap, topics, worker_home, "rules-1").start()
    second = rules_worker(kafka_bootstrap, topics, worker_home, "rules-2").start()
    try:
        for worker in (first, second):
            worker.wait_for_log("assigned partitions of", timeout=90)
        _wait_for_split(first, second)
        sender = threading.Thread(target=produce, args=(kafka_bootstrap, topics.moves, traffic, 12.0 / len(traffic)))
        sender.start()
        time.sleep(5)
        second.kill()
        sender.join()
        wait_until_answered(kafka_bootstrap, topics, len(traffic), timeout=240, workers=[first])
        assert _last_assignment(first) == list(range(6)), first.tail()
    finally:
        first.stop()
        second.stop()
    report = audit(settings_for(kafka_bootstrap, topics))
    assert report.ok, "\n".join(report.problems)
    _distinct_accepted_equal_offline(kafka_bootstrap, topics, traffic)


def _last_assignment(worker) -> list[int]:
    lines = [line for line in worker.log_text().splitlines() if "assigned partitions of" in line]
    return orjson.loads(lines[-1].rsplit(": ", 1)[1]) if lines else []


def _wait_for_split(first, second, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        a, b = _last_assignment(first), _last_assignment(second)
        if a and b and sorted(a + b) == list(range(6)) and not set(a) & set(b):
            return
        time.sleep(0.5)
    raise AssertionError(f"partitions not split: {_last_assignment(first)} / {_last_assignment(second)}")
