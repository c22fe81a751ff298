"""How long a deleted player key survives on Kafka (docs/personal-data.md, "How long a deleted key
can survive"): on a topic with the personal-data configs (kafka_admin.personal_topic_configs), a
key's record is gone from a read from the beginning once the topic has rolled and been compacted.
The real topics use a step of an hour; this one a second, so that it runs in a test."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaProducer

from services.common import kafka_admin, profiles
from services.common.kafka_admin import TopicSpec, personal_topic_configs
from services.common.kafka_read import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
STEP_MS = 1000
CLEANER_WAIT_S = 90  # the broker's cleaner looks every 15 s (log.cleaner.backoff.ms) and rolls on a write


def _values_of(bootstrap: str, topic: str, key: bytes) -> list[bytes | None]:
    return [r.value for r in read_topic(bootstrap, topic) if r.key == key]


def test_an_erased_key_is_gone_from_the_topic_after_compaction(kafka_bootstrap, topic_prefix):
    topic = f"{topic_prefix}player-keys"
    kafka_admin.create_topics(kafka_bootstrap, [TopicSpec(topic, 1, personal_topic_configs(STEP_MS))])
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    try:
        _, victim_record = profiles.new_key_record()
        _, bystander_record = profiles.new_key_record()
        producer.send(topic, victim_record, key=b"g~victim").get(10)
        producer.send(topic, bystander_record, key=b"g~bystander").get(10)
        producer.send(topic, None, key=b"g~victim").get(10)  # the erasure: a tombstone
        assert victim_record in _values_of(kafka_bootstrap, topic, b"g~victim")  # still there before compaction
        deadline = time.monotonic() + CLEANER_WAIT_S
        n = 0
        while victim_record in _values_of(kafka_bootstrap, topic, b"g~victim") and time.monotonic() < deadline:
            time.sleep(STEP_MS / 1000)
            n += 1  # a segment rolls at a write after segment.ms (another player signing up, say)
            producer.send(topic, bystander_record, key=f"g~filler{n % 3}".encode()).get(10)
        assert victim_record not in _values_of(kafka_bootstrap, topic, b"g~victim")
        assert bystander_record in _values_of(kafka_bootstrap, topic, b"g~bystander")  # others' keys stay
    finally:
        producer.close()
        kafka_admin.delete_topics(kafka_bootstrap, [topic])


def test_plylogs_personal_topics_are_compacted_with_the_bound():
    specs = {s.name: s for s in kafka_admin.contract_topic_specs("p.")}
    for name in ("p.profiles", "p.player-keys"):
        configs = specs[name].configs
        assert configs["cleanup.policy"] == "compact" and specs[name].partitions == 1
        assert int(configs["segment.ms"]) == int(configs["max.compaction.lag.ms"]) == kafka_admin.ERASURE_STEP_MS
