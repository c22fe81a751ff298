"""Reading with a librdkafka (confluent-kafka) consumer: one that is assigned partitions and never
joins a group (topic tails and tables), the partitions of a topic and their ends, taking records
without waiting for a batch to fill, and the thread that reads (made again after a failure).

`Consumer.consume(n, timeout)` returns only once it has `n` records or the timeout has passed, so a
lone record waited the whole timeout (the gateway's feed did, at first). `poll` returns the first
record as it comes; what librdkafka has fetched besides is then taken without waiting.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

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


def end_offset(consumer: Consumer, topic: str, partition: int) -> int:
    """The offset the next record of `topic`[`partition`] gets; RuntimeError when the broker does
    not say within 5 s (librdkafka then returns None)."""
    watermarks = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=5)
    if watermarks is None:
        raise RuntimeError(f"no end offset of {topic}[{partition}] within 5 s")
    return watermarks[1]


def take_fetched(consumer: Any, most: int, timeout_s: float) -> list:
    """Up to `most` messages (errors included, as librdkafka hands them over): waits up to
    `timeout_s` for a first one, then takes what is already fetched."""
    first = consumer.poll(timeout_s)
    if first is None:
        return []
    return [first, *consumer.consume(most - 1, 0)] if most > 1 else [first]


class ReaderThread:
    """A daemon thread that reads with a consumer of its own (`_consumer`, `_read` in subclasses):
    when Kafka fails it (KafkaException, or RuntimeError from the helpers above), the consumer is
    closed and a new one reads again after RETRY_S, until `stop`."""

    RETRY_S = 2.0

    def __init__(self, name: str, log: logging.Logger):
        self._name, self._log = name, log
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Blocking (call it in a thread): the consumer is closed by its own thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            consumer = None
            try:
                consumer = self._consumer()
                self._read(consumer)
            except (KafkaException, RuntimeError) as error:
                self._log.warning("%s: %s; retrying in %.0f s", self._name, error, self.RETRY_S)
                self._failed()
                self._stop.wait(self.RETRY_S)
            finally:
                if consumer is not None:
                    consumer.close()

    def _consumer(self) -> Consumer:
        raise NotImplementedError

    def _read(self, consumer: Consumer) -> None:
        raise NotImplementedError

    def _failed(self) -> None:
        """Called before the retry wait (a subclass clears what no longer holds)."""
