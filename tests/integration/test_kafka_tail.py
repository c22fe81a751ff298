"""A tail of a topic (services/common/kafka_tail.py, the gateway's feed of `plylog.results`) on the
real broker: it waits for a topic it cannot read yet without stopping, reads every partition from the end it
found, hands each record to the loop once, and stops cleanly."""

from __future__ import annotations

import asyncio
import time

import pytest
from kafka import KafkaProducer

from services.common import kafka_admin, kafka_tail
from services.common.kafka_tail import TopicTail

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout}s")
        await asyncio.sleep(0.05)


def test_the_feed_waits_for_a_missing_topic_then_reads_each_new_record_once(kafka_bootstrap, topic_prefix, monkeypatch):
    """Given a feed started before its topic exists, when the topic is made, then the feed starts
    reading by itself and hands over every partition's records, each once, on the loop that
    started it; a feed started later hands over only what comes after its start."""
    monkeypatch.setattr(kafka_tail.TopicTail, "RETRY_S", 0.5)
    topic = f"{topic_prefix}results"
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")

    def produce(names: range) -> None:
        for n in names:
            producer.send(topic, b"r-%d" % n, key=b"m-%d" % n, partition=n % 3).get(timeout=10)

    async def run() -> tuple[list, list]:
        loop = asyncio.get_running_loop()
        early, late, on_loop = [], [], []
        first = TopicTail(
            kafka_bootstrap,
            topic,
            lambda records: (early.extend(records), on_loop.append(asyncio.get_running_loop() is loop)),
        )
        first.start()
        second = TopicTail(kafka_bootstrap, topic, late.extend)
        try:
            await asyncio.sleep(1.5)
            assert not first.reading.is_set()  # no topic: retrying, not stopped
            kafka_admin.create_topics(kafka_bootstrap, [kafka_admin.TopicSpec(topic, 3)])
            await wait_for(first.reading.is_set, 20, "the feed did not read the topic once it existed")
            produce(range(0, 6))
            await wait_for(lambda: len(early) >= 6, 20, "the feed did not hand over the records")
            second.start()
            await wait_for(second.reading.is_set, 20, "the second feed did not read the topic")
            produce(range(6, 9))
            await wait_for(lambda: len(early) >= 9 and len(late) >= 3, 20, "the records after were not handed over")
            await asyncio.sleep(0.5)  # and nothing more comes
        finally:
            await asyncio.to_thread(first.stop)
            await asyncio.to_thread(second.stop)
        assert on_loop and all(on_loop)
        return early, late

    try:
        early, late = asyncio.run(run())
    finally:
        producer.close()
        kafka_admin.delete_topics(kafka_bootstrap, [topic])
    assert sorted(early) == sorted((b"m-%d" % n, b"r-%d" % n) for n in range(9))
    assert sorted(late) == sorted((b"m-%d" % n, b"r-%d" % n) for n in range(6, 9))
