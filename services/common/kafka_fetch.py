"""Reading with a librdkafka (confluent-kafka) consumer: one that is assigned partitions and never
joins a group (topic tails and tables), the partitions of a topic, and taking records without
waiting for a batch to fill.

`Consumer.consume(n, timeout)` returns only once it has `n` records or the timeout has passed, so a
lone record waited the whole timeout (the gateway's feed did, at first). `poll` returns the first
record as it comes; what librdkafka has fetched besides is then taken without waiting.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from confluent_kafka import Consumer

from . import kafka_auth
from .kafka_auth import KafkaAuth


def unjoined_consumer(bootstrap: str, name: str, auth: KafkaAuth | None, logger: str, **settings: Any) -> Consumer:
    """A consumer that reads the partitions it is assigned and commits nothing (`settings`: more
    librdkafka settings, e.g. an `error_cb`)."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{name}-{uuid.uuid4().hex[:12]}",  # never joined: assign() only
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "fetch.wait.max.ms": 50,  # the broker answers at once when it has records
            "client.id": name,
            "logger": logging.getLogger(logger),
            **settings,
            **kafka_auth.librdkafka(auth),
        }
    )


def readable_partitions(consumer: Consumer, topic: str) -> list[int]:
    """The partitions of `topic`, in order; RuntimeError when it cannot be read (yet)."""
    metadata = consumer.list_topics(topic, timeout=5).topics.get(topic)
    if metadata is None or metadata.error is not None or not metadata.partitions:
        raise RuntimeError(f"topic {topic} is not readable ({metadata.error if metadata else 'missing'})")
    return sorted(metadata.partitions)


def take_fetched(consumer: Any, most: int, timeout_s: float) -> list:
    """Up to `most` messages (errors included, as librdkafka hands them over): waits up to
    `timeout_s` for a first one, then takes what is already fetched."""
    first = consumer.poll(timeout_s)
    if first is None:
        return []
    return [first, *consumer.consume(most - 1, 0)] if most > 1 else [first]
