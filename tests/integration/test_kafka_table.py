"""A compacted topic as a table (services/common/kafka_table.py) on the real broker: what is on
the topic when the table starts is read before `ready`, and records and tombstones written later
by another process (another gateway, say) reach it; what this process `expect`s is seen at once."""

from __future__ import annotations

import pytest
from kafka import KafkaProducer

from services.common import kafka_admin
from services.common.kafka_admin import TopicSpec
from services.common.kafka_table import KafkaTable
from tests.support import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_a_table_reads_the_topic_then_follows_records_and_tombstones(kafka_bootstrap, topic_prefix):
    topic = f"{topic_prefix}player-keys"
    kafka_admin.create_topics(kafka_bootstrap, [TopicSpec(topic, 1, {"cleanup.policy": "compact"})])
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    table = KafkaTable(kafka_bootstrap, topic, name="test-table")
    try:
        producer.send(topic, b"one", key=b"g~ann").get(10)
        producer.send(topic, b"two", key=b"g~ann").get(10)
        producer.send(topic, b"bee", key=b"g~bea").get(10)
        table.start()
        assert table.ready.wait(20)
        assert table.get("g~ann") == b"two" and table.get("g~bea") == b"bee"
        producer.send(topic, None, key=b"g~ann").get(10)  # erased elsewhere
        wait_until(lambda: table.get("g~ann") is None)
        table.expect("g~bea", None)  # erased here: gone before the table reads it back
        assert table.get("g~bea") is None
        producer.send(topic, None, key=b"g~bea").get(10)
        producer.send(topic, b"cid", key=b"g~cid").get(10)
        wait_until(lambda: table.get("g~cid") == b"cid")
        assert table.get("g~bea") is None
    finally:
        table.stop()
        producer.close()
        kafka_admin.delete_topics(kafka_bootstrap, [topic])
