"""The rules worker on the real broker: results equal the offline fold, bad input never stops
it, SIGKILL loses and doubles nothing, and two workers share and hand over partitions."""

from __future__ import annotations

import base64
import hashlib
import threading
import time
import zlib
from collections import defaultdict

import confluent_kafka
import orjson
import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from bench.logs import random_match_records
from games.fold import Replayer
from games.registry import GAME_MODULES
from services.cli.audit import audit
from services.common import kafka_admin
from services.common.kafka_partition import partition_of
from services.common.kafka_read import read_topic
from services.common.settings import Settings
from services.rules.core import DEAD_LETTER_RAW_BYTES

from .harness import (
    assigned_partitions,
    crash_during,
    keep_topics_for_diagnosis,
    mixed_bot_traffic,
    produce,
    rules_worker,
    wait_until_answered,
    wait_until_assigned,
)

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
        wait_until_committed_to_the_end(kafka_bootstrap, topics)
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
    outcomes = {
        orjson.loads(r.value)["match_id"]: orjson.loads(r.value) for r in read_topic(kafka_bootstrap, topics.outcomes)
    }
    assert sorted(outcomes) == sorted(expected)
    for match_id, outcome in outcomes.items():
        assert outcome["outcome"] == expected[match_id][-1]["view"]["outcome"]
    report = audit(settings_for(kafka_bootstrap, topics))
    assert report.ok, report.problems


def wait_until_committed_to_the_end(bootstrap: str, topics, timeout: float = 60.0) -> None:
    """The worker's periodic commit brings the group's offsets to the end of every moves partition
    once every move is answered and stored (group.commit_in_thread commits, not only refuses)."""
    ends: dict[int, int] = {}
    for record in read_topic(bootstrap, topics.moves):
        ends[record.partition] = record.offset + 1
    group = settings_for(bootstrap, topics).topics.rules_group
    deadline = time.monotonic() + timeout
    with kafka_admin.admin(bootstrap) as client:
        while True:
            offsets = client.list_group_offsets({group: None})[group]
            committed = {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topics.moves}
            if committed == ends or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    assert committed == ends


def test_bad_input_is_rejected_or_dead_lettered_and_the_worker_goes_on(kafka_bootstrap, contract_topics, worker_home):
    topics = contract_topics(partitions=2)
    good = list(random_match_records("strands", 1, seed=3, prefix="after-bad-"))
    valid_keyed = orjson.loads(good[0])
    match_key = valid_keyed["match_id"].encode()
    bad = [
        (b"k1", b"\x89PNG not json at all"),
        (b"k2", b'["a", "list"]'),
        (b"k3", b'"just a string"'),
        (b"someone-else", orjson.dumps({**valid_keyed, "event_id": "mis-keyed"})),
        (
            valid_keyed["match_id"].encode(),
            orjson.dumps({**valid_keyed, "event_id": "unknown-action", "action": {"type": "teleport"}}),
        ),
        (
            b"big",
            orjson.dumps(
                {
                    **valid_keyed,
                    "match_id": "big",
                    "event_id": "oversized",
                    "action": {"type": "create", "pad": "x" * 70_000},
                }
            ),
        ),
        (b"k4", None),
    ]
    in_its_log = [  # unreadable records of the existing match, in its log: rejected with its seq and view
        (match_key, orjson.dumps({**orjson.loads(good[1]), "event_id": "extra-field", "colour": 1})),
        (match_key, orjson.dumps({**orjson.loads(good[1]), "event_id": "bool-seq", "expected_seq": True})),
    ]
    records = (
        bad
        + [(orjson.loads(r)["match_id"].encode(), r) for r in good[:3]]
        + in_its_log
        + [(orjson.loads(r)["match_id"].encode(), r) for r in good[3:]]
    )
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
    results = {
        orjson.loads(r.value)["event_id"]: orjson.loads(r.value) for r in read_topic(kafka_bootstrap, topics.results)
    }
    assert results["mis-keyed"]["reason"]["code"] == "malformed"
    assert "key" in results["mis-keyed"]["reason"]["message"]
    assert results["unknown-action"]["reason"]["code"] in ("malformed", "unknown_match")
    assert results["oversized"]["reason"]["code"] == "too_large"
    for event_id in ("extra-field", "bool-seq"):
        assert results[event_id]["reason"]["code"] == "malformed" and results[event_id]["seq"] == 3
        assert results[event_id]["view"]["seq"] == 3
    last = orjson.loads(good[-1])
    assert results[last["event_id"]]["view"]["status"] == "over"
    assert audit(settings_for(kafka_bootstrap, topics)).ok


def test_a_batch_kafka_cannot_take_stops_the_worker_and_a_restart_answers_it(
    kafka_bootstrap, contract_topics, worker_home
):
    """Kafka refusing for a reason that is not the record (here: the outcomes topic is gone when
    the first match ends) stops the worker rather than reading on past the batch; a restart, with
    the topic back, answers it."""
    topics = contract_topics(partitions=2)
    records = [
        (orjson.loads(r)["match_id"].encode(), r) for r in random_match_records("strands", 2, seed=4, prefix="refused-")
    ]
    first_end = _first_ending(records)
    worker = rules_worker(kafka_bootstrap, topics, worker_home, PLYLOG_RULES_PRODUCE_TIMEOUT_S="3").start()
    try:
        worker.wait_ready()
        produce(kafka_bootstrap, topics.moves, records[:first_end])
        wait_until_answered(kafka_bootstrap, topics, first_end, workers=[worker])
        kafka_admin.delete_topics(kafka_bootstrap, [topics.outcomes])
        produce(kafka_bootstrap, topics.moves, records[first_end:])
        assert worker.popen.wait(timeout=120) != 0, "the worker must stop, not read on past a failed batch"
        contract_topics(partitions=2)  # the outcomes topic again
        worker.start().wait_ready()
        wait_until_answered(kafka_bootstrap, topics, len(records), workers=[worker])
    finally:
        worker.stop()
    report = audit(settings_for(kafka_bootstrap, topics))
    assert report.ok, "\n".join(report.problems)
    assert report.outcomes == 2


def _first_ending(records: list[tuple[bytes, bytes]]) -> int:
    """Index of the record that ends the first match."""
    replayer = Replayer()
    return next(i for i, (_, raw) in enumerate(records) if replayer.feed(raw).outcome is not None)


def test_records_kafka_refuses_for_their_size_never_stop_the_worker(kafka_bootstrap, contract_topics, worker_home):
    """A ~760 KB record without usable ids gets a dead letter that fits (raw cut to 64 KiB, size and
    SHA-256 kept); with a dead-letter topic too small even for that, a minimal one without raw bytes.
    The worker stays up and answers what comes after."""
    topics = contract_topics(partitions=2)
    huge, big = b"\x01" * 760_000, b"[" * 30_000
    good = [
        (orjson.loads(r)["match_id"].encode(), r) for r in random_match_records("strands", 1, seed=8, prefix="after-")
    ]
    worker = rules_worker(kafka_bootstrap, topics, worker_home).start()
    try:
        worker.wait_ready()
        produce(kafka_bootstrap, topics.moves, [(b"huge", huge), *good[:5]])
        wait_until_answered(kafka_bootstrap, topics, 6, workers=[worker])
        _set_topic_config(kafka_bootstrap, topics.deadletter, "max.message.bytes", "4000")
        produce(kafka_bootstrap, topics.moves, [(b"big", big), *good[5:]])
        wait_until_answered(kafka_bootstrap, topics, 7 + len(good[5:]), workers=[worker])
        assert worker.alive, worker.tail()
    finally:
        worker.stop()
    letters = {
        orjson.loads(r.value)["raw_sha256"]: orjson.loads(r.value)
        for r in read_topic(kafka_bootstrap, topics.deadletter)
    }
    first = letters[hashlib.sha256(huge).hexdigest()]
    assert first["raw_size"] == 760_000 and first["raw_truncated"] and len(base64.b64decode(first["raw_b64"])) == 65_536
    second = letters[hashlib.sha256(big).hexdigest()]
    assert second["raw_b64"] == "" and second["raw_size"] == 30_000 and "refused by Kafka" in second["error"]
    assert audit(settings_for(kafka_bootstrap, topics)).ok


def test_records_with_a_key_as_large_as_kafka_allows_never_stop_the_worker(
    kafka_bootstrap, contract_topics, worker_home
):
    """A key of ~1 MB (Kafka lets a key be as large as a record): quoted whole in the rejection, or
    kept whole as the dead letter's key, the answer was over the producer's request size, which
    stopped the worker at every restart. Now the rejection quotes 100 characters of it and the
    dead letter keeps 64 KiB of it with its size and SHA-256."""
    topics = contract_topics(partitions=2)
    huge = b"k" * 1_010_000
    good = [
        (orjson.loads(r)["match_id"].encode(), r) for r in random_match_records("strands", 1, seed=9, prefix="after-")
    ]
    mis_keyed = orjson.dumps({**orjson.loads(good[0][1]), "event_id": "huge-key"})
    worker = rules_worker(kafka_bootstrap, topics, worker_home).start()
    try:
        worker.wait_ready()
        produce(kafka_bootstrap, topics.moves, [(huge, mis_keyed), (huge, b"\x89 not JSON"), *good])
        wait_until_answered(kafka_bootstrap, topics, 2 + len(good), workers=[worker])
        assert worker.alive, worker.tail()
    finally:
        worker.stop()
    results = {
        orjson.loads(r.value)["event_id"]: orjson.loads(r.value) for r in read_topic(kafka_bootstrap, topics.results)
    }
    assert results["huge-key"]["reason"]["code"] == "malformed"
    assert "(1010000 characters)" in results["huge-key"]["reason"]["message"]
    [letter] = read_topic(kafka_bootstrap, topics.deadletter)
    assert len(letter.key) == DEAD_LETTER_RAW_BYTES and orjson.loads(letter.value)["key_size"] == len(huge)
    assert results[orjson.loads(good[-1][1])["event_id"]]["view"]["status"] == "over"
    assert audit(settings_for(kafka_bootstrap, topics)).ok


def test_a_record_a_librdkafka_client_put_on_another_partition_is_refused_naming_both(
    kafka_bootstrap, contract_topics, worker_home
):
    """librdkafka's default partitioner (CRC32) puts a key elsewhere than Java's murmur2: the
    worker must not apply it (its match lives on its home partition) and says how to fix it."""
    topics = contract_topics(partitions=12)
    records = [
        (orjson.loads(r)["match_id"].encode(), r) for r in random_match_records("strands", 1, seed=2, prefix="rd-")
    ]
    key = records[0][0]
    home, crc = partition_of(key, 12), zlib.crc32(key) % 12
    assert home != crc, "pick a seed whose match id the two partitioners place apart"
    resign = orjson.dumps({**orjson.loads(records[1][1]), "event_id": "kcat-resign", "action": {"type": "resign"}})
    worker = rules_worker(kafka_bootstrap, topics, worker_home).start()
    try:
        produce(kafka_bootstrap, topics.moves, records[:2])
        wait_until_answered(kafka_bootstrap, topics, 2, workers=[worker])
        rdkafka = confluent_kafka.Producer({"bootstrap.servers": kafka_bootstrap})  # default partitioner
        rdkafka.produce(topics.moves, key=key, value=resign)
        assert rdkafka.flush(30) == 0
        wait_until_answered(kafka_bootstrap, topics, 3, workers=[worker])
        fixed = confluent_kafka.Producer({"bootstrap.servers": kafka_bootstrap, "partitioner": "murmur2_random"})
        fixed.produce(topics.moves, key=key, value=resign.replace(b"kcat-resign", b"kcat-fixed"))
        assert fixed.flush(30) == 0
        wait_until_answered(kafka_bootstrap, topics, 4, workers=[worker])
    finally:
        worker.stop()
    results = {
        orjson.loads(r.value)["event_id"]: (r.partition, orjson.loads(r.value))
        for r in read_topic(kafka_bootstrap, topics.results)
    }
    partition, refused = results["kcat-resign"]
    assert partition == crc and refused["status"] == "rejected" and refused["reason"]["code"] == "malformed"
    assert f"partition {crc}" in refused["reason"]["message"] and f"partition {home}" in refused["reason"]["message"]
    assert "partitioner=murmur2_random" in refused["reason"]["message"]
    partition, accepted = results["kcat-fixed"]
    assert partition == home and accepted["status"] == "accepted" and accepted["view"]["outcome"]["reason"] == "resign"
    assert audit(settings_for(kafka_bootstrap, topics)).ok


def _set_topic_config(bootstrap: str, topic: str, name: str, value: str) -> None:
    with kafka_admin.admin(bootstrap) as client:
        client.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={name: value})])


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
    assert worker.starts == 4  # and no record went unanswered: the audit finds each move's result
    assert_audit_clean(kafka_bootstrap, topics, traffic, worker_home / "kept")


def assert_audit_clean(bootstrap: str, topics, traffic, keep_in) -> None:
    """The audit finds nothing, it read every move of `traffic`, and each distinct accepted action
    equals the offline fold; when the audit fails, the stack's records are kept in `keep_in` and
    named in the error (the first 20 problems are shown)."""
    report = audit(settings_for(bootstrap, topics))
    if not report.ok:
        kept = keep_topics_for_diagnosis(bootstrap, topics, keep_in)
        raise AssertionError(f"the records are in {kept}:\n" + "\n".join(report.problems[:20]))
    assert report.moves == len(traffic)
    _distinct_accepted_equal_offline(bootstrap, topics, traffic)


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
            wait_until_assigned(worker)
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
    return sorted(assigned_partitions(worker))


def _wait_for_split(first, second, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        a, b = _last_assignment(first), _last_assignment(second)
        if a and b and sorted(a + b) == list(range(6)) and not set(a) & set(b):
            return
        time.sleep(0.5)
    raise AssertionError(f"partitions not split: {_last_assignment(first)} / {_last_assignment(second)}")


def test_the_worker_makes_its_changelog_before_it_joins_its_group(kafka_bootstrap, contract_topics, worker_home):
    # Faust's first assignment leaves out a changelog topic the metadata does not show yet, and a
    # worker taking partitions over then recovers nothing (Faust adapter workaround 6): the worker makes it first.
    from services.rules.faust_adapter.table import create_changelog_before_joining

    topics = contract_topics(partitions=3)
    settings = Settings.from_env(kafka_bootstrap=kafka_bootstrap, topic_prefix=topics.prefix)
    try:
        assert create_changelog_before_joining(settings, 3) == "created"
        assert create_changelog_before_joining(settings, 3) == "exists"
        assert kafka_admin.partition_counts(kafka_bootstrap, [topics.rules_changelog])[topics.rules_changelog] == 3
        assert kafka_admin.topic_configs(kafka_bootstrap, topics.rules_changelog)["cleanup.policy"] == "compact"
        worker = rules_worker(kafka_bootstrap, topics, worker_home)
        worker.start()
        try:
            worker.wait_ready(timeout=90)  # joined with the changelog made before, not by Faust
        finally:
            worker.stop()
    finally:
        kafka_admin.delete_topics(kafka_bootstrap, [topics.rules_changelog])
